module github.com/cloudg/cloudg/fleet

go 1.24.0

require (
	github.com/cloudg/cloudg v0.1.0
	github.com/redis/go-redis/v9 v9.22.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.41.0 // indirect
)

replace github.com/cloudg/cloudg => ../
