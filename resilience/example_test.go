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

// httpError stands in for an HTTP client's error: a status and headers.
type httpError struct {
	status int
	header http.Header
}

func (e *httpError) Error() string       { return http.StatusText(e.status) }
func (e *httpError) HTTPStatusCode() int { return e.status }
func (e *httpError) Header() http.Header { return e.header }

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
	fmt.Println(resilience.RetryAfter(&httpError{status: 429, header: http.Header{"X-Ms-Retry-After-Ms": {"1500"}}}))
	// Output:
	// THROTTLED
	// TRANSIENT
	// FATAL
	// THROTTLED
	// FATAL false
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
			resilience.WithGovernor(gov), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
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
	// aws/123456789012/eu-west-1/ec2: throttled 3x, slowed to 500.0 rps, 3 calls gave up
	// calls 4 throttled 3 gave up 3
	// true
	// throttled: 3 call(s) gave up after retries (aws/123456789012/eu-west-1/ec2/DescribeSubnets: throttled: Throttling: Rate exceeded)
}

// An SDK that runs its own retry loop drives a Guard from its hooks: the
// AWS, Azure and Google integrations are written this way. Here the "SDK"
// retries up to three times and sleeps 10 ms between attempts; the governor
// paces, counts and classifies each attempt and may veto a retry.
func ExampleGuard() {
	gov, _ := resilience.NewGovernor(resilience.Config{})
	scope := resilience.Scope{Provider: "github", Account: "my-org", Service: "rest"}
	ctx, stats := resilience.WithStats(context.Background())
	answers := []error{&httpError{status: 503}, &httpError{status: 502}, nil}

	gd, _ := gov.Begin(ctx, scope, resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 3}))
	var err error
	for attempt := 0; ; attempt++ {
		if err = gd.Enter(ctx); err != nil { // breaker, deadline, count, token, slot
			break
		}
		err = answers[attempt] // the SDK sends the request
		gd.Release()
		gd.After(err) // classified once: 503 throttles, 502 is transient
		if err == nil {
			break
		}
		delay, rerr := gd.Retry(10 * time.Millisecond) // attempts, deadline, budget
		if rerr != nil {
			err = rerr
			break
		}
		time.Sleep(delay)
	}
	gd.End(err)
	fmt.Println("err:", err)
	for _, line := range stats.Messages() {
		fmt.Println(line)
	}
	// Output:
	// err: <nil>
	// github/my-org/*/rest: throttled 1x, slowed to 10.0 rps, 2 retries
}

// WrapArg is the decorator form: the scope comes from each call's argument.
func ExampleWrapArg() {
	gov, _ := resilience.NewGovernor(resilience.Config{})
	secretScope := func(name string) resilience.Scope {
		return resilience.Scope{Provider: "aws", Account: "123456789012", Region: "eu-west-1",
			Service: "secretsmanager", Operation: "DescribeSecret"}
	}
	describeSecret := resilience.WrapArg(secretScope, func(ctx context.Context, name string) (string, error) {
		return "arn:aws:secretsmanager:eu-west-1:123456789012:secret:" + name, nil
	}, resilience.WithGovernor(gov))

	arn, err := describeSecret(context.Background(), "app-1")
	fmt.Println(arn, err)
	// Output: arn:aws:secretsmanager:eu-west-1:123456789012:secret:app-1 <nil>
}

// ParseConfig reads the ratelimit section of a YAML or JSON document, and
// names the key path of every mistake.
func ExampleParseConfig() {
	cfg, err := resilience.ParseConfig([]byte(`
ratelimit:
  aws:
    max_concurrency: 64
    services:
      ec2.DescribeInstances: {max_rps: 5, burst: 10}
`))
	fmt.Println(cfg.AWS.MaxConcurrency, cfg.AWS.Services["ec2.DescribeInstances"].MaxRPS, err)

	_, err = resilience.ParseConfig([]byte("ratelimit:\n  aws:\n    services:\n      ec2: {brust: 100}\n"))
	fmt.Println(err)

	gov, _ := resilience.NewGovernor(cfg)
	fmt.Println(gov.Policy("aws").MaxAttempts)
	// Output:
	// 64 5 <nil>
	// ratelimit.aws.services.ec2.brust: unknown key (did you mean burst?)
	// 9
}

// A provider other than aws, azure and gcp, here github (which package
// cloudghttp governs), is tuned under providers; a rate that cannot serve
// a call is refused with the reason.
func ExampleParseConfig_providers() {
	cfg, err := resilience.ParseConfig([]byte(`
ratelimit:
  providers:
    github: {max_rps: 1.4, burst: 10, max_concurrency: 8, max_attempts: 4}
`))
	gov, _ := resilience.NewGovernor(cfg)
	leaf := gov.Inspect(resilience.Scope{Provider: "github", Account: "octo", Service: "rest"}).Leaf
	fmt.Println(leaf.Rate, leaf.Tokens, gov.Policy("github").MaxAttempts, err)

	_, err = resilience.ParseConfig([]byte("aws: {max_rps: 1e-9}\n"))
	fmt.Println(err)
	_, err = resilience.ParseConfig([]byte("aws: {min_rps: 1, services: {iam: {max_rps: 0.5}}}\n"))
	fmt.Println(err)
	// Output:
	// 1.4 10 4 <nil>
	// ratelimit.aws.max_rps: 1e-09 rps is a token every 1e+09 s, longer than deadline_seconds (900 s, the default): a call that waits for one would be refused; set it to 0.00112 rps or more, or ratelimit.aws.deadline_seconds to 1.01e+09 s or more
	// ratelimit.aws.services.iam.max_rps: 0.5 rps is below the floor of the adaptive rate in force here (1 rps, ratelimit.aws.min_rps): set min_rps here at or below it to go this low
}
