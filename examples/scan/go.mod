module github.com/cloudg/cloudg/examples/scan

go 1.26.0

require (
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/aws/aws-sdk-go-v2/credentials v1.21.1
	github.com/aws/aws-sdk-go-v2/service/dynamodb v1.74.0
	github.com/aws/aws-sdk-go-v2/service/ec2 v1.344.3
	github.com/aws/aws-sdk-go-v2/service/iam v1.66.0
	github.com/aws/aws-sdk-go-v2/service/secretsmanager v1.50.12
	github.com/aws/smithy-go v1.28.9
	github.com/cloudg/cloudg v0.1.0
	github.com/cloudg/cloudg/cloudgaws v0.1.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/v4a v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.13.25 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/endpoint-discovery v1.13.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/presigned-url v1.14.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/sts v1.52.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)

replace (
	github.com/cloudg/cloudg => ../../
	github.com/cloudg/cloudg/cloudgaws => ../../cloudgaws
)
