package observe_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// throttled is a provider's throttling answer, as an SDK's error reports
// it.
type throttled struct{}

func (throttled) Error() string     { return "Throttling: Rate exceeded" }
func (throttled) ErrorCode() string { return "Throttling" }

// An observer sees each step of a call: here one throttled attempt, what
// the governor learned from it, and the retry that succeeded. The retry's
// backoff (50 ms) outlasts a token of the halved rate (50 rps, one every
// 20 ms), so that the retry takes its token without a wait event, however
// slow the machine: with a shorter backoff, whether it waits would depend
// on how soon it came.
func Example() {
	obs := observe.Func(func(e observe.Event) {
		switch e.Kind {
		case observe.RateChange:
			fmt.Printf("%s %s: %.0f -> %.0f rps\n", e.Kind, e.Scope, e.OldRate, e.Rate)
		case observe.Retry:
			fmt.Printf("%s %s: retry %d\n", e.Kind, e.Scope, e.Retry)
		default:
			fmt.Println(e.Kind, e.Scope)
		}
	})
	cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 100, Burst: 100}}}}
	g, err := resilience.NewGovernor(cfg, resilience.WithObserver(obs))
	if err != nil {
		panic(err)
	}
	scope := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
	attempts := 0
	err = resilience.Do(context.Background(), scope, func(context.Context) error {
		if attempts++; attempts == 1 {
			return throttled{}
		}
		return nil
	}, resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{BaseDelay: 50 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}))
	fmt.Println("error:", err)
	// Output:
	// call aws/123456789012/us-east-1/ec2/DescribeVpcs
	// throttle aws/123456789012/us-east-1/ec2/DescribeVpcs
	// rate_change aws/123456789012/us-east-1/ec2/DescribeVpcs: 100 -> 50 rps
	// retry aws/123456789012/us-east-1/ec2/DescribeVpcs: retry 1
	// call aws/123456789012/us-east-1/ec2/DescribeVpcs
	// error: <nil>
}
