// Command pacedcalls sends its own cloud calls through the governor's
// shared limiter, breakers and retries: the README's worked example,
// which prints the figures cloudg's Python version printed for it.
//
// describeVPCs fails twice with a throttling error shaped like an SDK's
// (an error code and an HTTP status), then answers; describeSecret stands
// in for another SDK call. The configuration caps one service at 2
// requests per second, and six concurrent calls show the limiter queueing
// them. It needs no credentials and sends nothing anywhere.
package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

const account = "123456789012"

// apiError stands in for an SDK's API error: the governor reads its code
// and status through the ErrorCode and HTTPStatusCode methods.
type apiError struct {
	code, message string
	status        int
}

func (e *apiError) Error() string       { return e.code + ": " + e.message }
func (e *apiError) ErrorCode() string   { return e.code }
func (e *apiError) HTTPStatusCode() int { return e.status }

type vpc struct{ VpcID string }

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pacedcalls:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	// A process governor with a fixed random source, so that the backoff
	// between the two throttles is the same on every run (over a second:
	// two congestion events, 20 -> 10 -> 5 rps).
	gov, err := resilience.NewGovernor(resilience.Config{}, resilience.WithRandom(rand.NewPCG(4, 4)))
	if err != nil {
		return err
	}
	resilience.SetDefault(gov)

	// 2 rps for this one service; every other AWS service keeps the defaults.
	cfg, err := resilience.ParseConfig([]byte(`
aws:
  services:
    secretsmanager: {max_rps: 2, burst: 2}
`))
	if err != nil {
		return err
	}
	if err := resilience.Configure(cfg); err != nil {
		return err
	}

	attempts := 0
	describeVPCs := func(context.Context) ([]vpc, error) {
		attempts++
		if attempts <= 2 {
			return nil, &apiError{code: "RequestLimitExceeded", message: "Rate exceeded", status: 503}
		}
		return []vpc{{VpcID: "vpc-0a1b2c3d"}}, nil
	}

	// The decorator form: the scope comes from the argument of each call.
	describeSecret := resilience.WrapArg(
		func(string) resilience.Scope {
			return resilience.Scope{Provider: "aws", Account: account, Region: "eu-west-1", Service: "secretsmanager", Operation: "DescribeSecret"}
		},
		func(_ context.Context, name string) (string, error) {
			return "arn:aws:secretsmanager:eu-west-1:" + account + ":secret:" + name, nil
		},
		// Three attempts (two retries) within 30 s.
		resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 3, Deadline: 30 * time.Second}),
	)

	ctx, stats := resilience.WithStats(context.Background())
	ec2 := resilience.Scope{Provider: "aws", Account: account, Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcs"}
	vpcs, err := resilience.Call(ctx, ec2, describeVPCs)
	if err != nil {
		return err
	}

	start := time.Now()
	arns := make([]string, 6)
	errs := make([]error, 6)
	var wg sync.WaitGroup
	for i := range arns {
		wg.Go(func() { arns[i], errs[i] = describeSecret(ctx, fmt.Sprintf("app-%d", i)) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return err
		}
	}

	fmt.Fprintf(w, "%+v after %d attempts\n", vpcs, attempts)
	fmt.Fprintf(w, "%d secrets in %.1fs at 2 rps\n", len(arns), elapsed.Seconds())
	for _, line := range stats.Messages() {
		fmt.Fprintln(w, " ", line)
	}
	summary := resilience.Default().Summary(stats)
	fmt.Fprintln(w, "totals:", summary.Totals)
	scopes := make([]resilience.Scope, 0, len(summary.SlowedBuckets))
	for sc := range summary.SlowedBuckets {
		scopes = append(scopes, sc)
	}
	slices.SortFunc(scopes, func(a, b resilience.Scope) int { return strings.Compare(a.Key(), b.Key()) })
	fmt.Fprint(w, "slowed:")
	for _, sc := range scopes {
		fmt.Fprintf(w, " %s: %.1f rps", sc, summary.SlowedBuckets[sc].Rate)
	}
	fmt.Fprintln(w)
	return nil
}
