module github.com/cloudg/cloudg/bench

go 1.26.0

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)

require (
	github.com/cloudg/cloudg v0.1.0
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/sony/gobreaker/v2 v2.4.0
	golang.org/x/time v0.16.0
)

replace github.com/cloudg/cloudg => ../
