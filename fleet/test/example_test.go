package test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// Two processes of a fleet share one Redis: a throttle seen by the first
// halves the rate the second sends at.
func Example_twoProcesses() {
	mr, _ := miniredis.Run() // in production: rediss://user:pass@redis:6379/0
	defer mr.Close()
	vpcs := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}

	var govs []*resilience.Governor
	for range 2 {
		store, err := fleet.Open("redis://" + mr.Addr() + "/0")
		if err != nil {
			fmt.Println(err)
			return
		}
		defer store.Close()
		gov, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(store))
		govs = append(govs, gov)
	}

	throttled := func(context.Context) error { return throttling{} }
	err := resilience.Do(context.Background(), vpcs, throttled,
		resilience.WithGovernor(govs[0]), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
	fmt.Println(err)
	fmt.Println(govs[1].Inspect(vpcs).Leaf.Rate, "rps of", govs[1].Inspect(vpcs).Leaf.Ceiling)
	// Output:
	// Rate exceeded
	// 10 rps of 20
}

// throttling is a provider's throttling answer.
type throttling struct{}

func (throttling) Error() string     { return "Rate exceeded" }
func (throttling) ErrorCode() string { return "Throttling" }
