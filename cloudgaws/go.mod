module github.com/cloudg/cloudg/cloudgaws

go 1.26.0

require (
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/aws/smithy-go v1.28.9
	github.com/cloudg/cloudg v0.0.0
	go.yaml.in/yaml/v3 v3.0.6
)

replace github.com/cloudg/cloudg => ../
