module github.com/cloudg/cloudg/fleet

go 1.26.0

require github.com/cloudg/cloudg v0.0.0

replace github.com/cloudg/cloudg => ../
