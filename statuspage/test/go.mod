module github.com/cloudg/cloudg/statuspage/test

go 1.26.0

require github.com/cloudg/cloudg v0.1.0

require go.yaml.in/yaml/v3 v3.0.6 // indirect

replace github.com/cloudg/cloudg => ../../
