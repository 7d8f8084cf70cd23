module github.com/cloudg/cloudg/cloudghttp/test

go 1.26.0

require (
	github.com/cloudg/cloudg v0.1.0
	github.com/google/go-github/v84 v84.0.0
)

require (
	github.com/google/go-querystring v1.2.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)

replace github.com/cloudg/cloudg => ../../
