package test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// backoffOf is the standard retryer with a backoff of d.
func backoffOf(d time.Duration) cloudgaws.Option {
	return cloudgaws.WithBaseRetryer(func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.RateLimiter = ratelimit.None
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return d, nil })
		})
	})
}

// The SDK's retry of an answer (a transient one, a throttle), whose
// backoff sleep ends at the context's deadline before the timer due then
// has run, ends the call as the context's end does: a canceled request
// (*aws.RequestCanceledError) that is also the deadline's error, which
// the SDK does not retry, recorded as cancelled, the retry not sent.
// Before, the governor's read of the deadline as come (Guard.Pace's
// context error joined to the last answer) came back as an error the SDK
// does not retry, and no canceled request, depending on which of the
// governor and the timer read the deadline first.
func TestARetryAtItsDeadlineEndsAsACanceledRequest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer reply
	}{
		{"transient", ec2Internal},
		{"throttled", ec2Throttle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.script("DescribeVpcs", tc.answer, ok)
				cfg, _ := governed(t, f, resilience.Config{}, backoffOf(5*time.Second))
				start := time.Now()
				ctx, ledger := resilience.WithLedger(deadlineAt{context.Background(), start.Add(5 * time.Second), make(chan struct{})}, "vpcs")
				err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
				var rc *aws.RequestCanceledError
				if !errors.As(err, &rc) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("err %v; want a canceled request (*aws.RequestCanceledError) of the deadline's error, as the context's end gives", err)
				}
				if n := f.count("DescribeVpcs"); n != 1 {
					t.Fatalf("DescribeVpcs sent %d times, want once: the retry at the deadline is not sent", n)
				}
				if ledger.Count(resilience.LossCancelled) != 1 || ledger.Lost() != 1 {
					t.Fatalf("ledger %q; want the call lost as cancelled", ledger.Describe())
				}
			})
		})
	}
}
