package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// throttlingError stands in for an SDK's API error: the governor reads its
// code and status through these methods.
type throttlingError struct{ status int }

func (e *throttlingError) Error() string       { return "Throttling: Rate exceeded" }
func (e *throttlingError) ErrorCode() string   { return "Throttling" }
func (e *throttlingError) HTTPStatusCode() int { return e.status }

func ExampleCall() {
	// A fast EC2 leaf, so that the example does not wait for tokens.
	gov, _ := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{
		Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1000, Burst: 1000}},
	}})
	scope := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcs"}
	quick := resilience.WithPolicy(resilience.RetryPolicy{BaseDelay: time.Millisecond, MaxBackoff: 2 * time.Millisecond})

	attempts := 0
	vpcs, err := resilience.Call(context.Background(), scope, func(ctx context.Context) ([]string, error) {
		attempts++
		if attempts == 1 {
			return nil, &throttlingError{status: 400}
		}
		return []string{"vpc-0a1b2c3d"}, nil
	}, resilience.WithGovernor(gov), quick)
	fmt.Println(vpcs, err, "after", attempts, "attempts")
	// Output: [vpc-0a1b2c3d] <nil> after 2 attempts
}

func ExampleClassify() {
	fmt.Println(resilience.Classify(&throttlingError{status: 400}))
	fmt.Println(resilience.Classify(fmt.Errorf("list: %w", context.DeadlineExceeded)))
	fmt.Println(resilience.Classify(errors.New("AccessDenied")))
	fmt.Println(resilience.Classify(errors.New("Rate exceeded for this account")))
	kind, ok := resilience.ClassifyStrict(errors.New("Rate exceeded for this account"))
	fmt.Println(kind, ok)
	d, _ := resilience.ParseRetryAfter("Mon, 30 Nov 2026 12:00:30 GMT", time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	fmt.Println(d)
	fmt.Println(resilience.HeaderRetryAfter(http.Header{"X-Ms-Retry-After-Ms": {"1500"}}, 429))
	// Output:
	// THROTTLED
	// TRANSIENT
	// FATAL
	// THROTTLED
	// FATAL false
	// 30s
	// 1.5s true
}

func ExampleWithStats() {
	// A fast EC2 leaf, so that the example does not wait for tokens.
	gov, _ := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{
		Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1000, Burst: 1000}},
	}})
	quick := resilience.WithPolicy(resilience.RetryPolicy{BaseDelay: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
	scope := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "eu-west-1", Service: "ec2", Operation: "DescribeSubnets"}

	ctx, stats := resilience.WithStats(context.Background())
	ctx, ledger := resilience.WithLedger(ctx, "ec2")
	for range 3 {
		resilience.Do(ctx, scope, func(context.Context) error { return &throttlingError{status: 400} },
			resilience.WithGovernor(gov), resilience.WithPolicy(resilience.RetryPolicy{MaxRetries: resilience.NoRetries}))
	}
	resilience.Do(ctx, scope, func(context.Context) error { return nil }, resilience.WithGovernor(gov), quick)

	for _, line := range stats.Messages() {
		fmt.Println(line)
	}
	totals := gov.Summary(stats).Totals
	fmt.Println("calls", totals.Calls, "throttled", totals.Throttled, "gave up", totals.GaveUp)
	fmt.Println(ledger.Degraded())
	fmt.Println(ledger.Describe())
	// Output:
	// aws/123456789012/eu-west-1/ec2: throttled 3x, slowed to 500.0 rps, gave up on 3 calls
	// calls 4 throttled 3 gave up 3
	// true
	// throttled: 3 call(s) gave up after retries (aws/123456789012/eu-west-1/ec2/DescribeSubnets: throttled: Throttling: Rate exceeded)
}
