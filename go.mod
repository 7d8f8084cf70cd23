module github.com/cloudg/cloudg

go 1.24.0

require go.yaml.in/yaml/v3 v3.0.6

require pgregory.net/rapid v1.3.0
