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
	"github.com/aws/smithy-go"

	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// fixedStandard is the SDK's standard retryer with 5 attempts, 1 s apart,
// and no retry quota.
func fixedStandard() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = 5
		o.RateLimiter = ratelimit.None
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Second, nil })
	})
}

// A retry the governor refuses inside the SDK's loop ends the call there,
// whatever the client's retryer says of the refusal: a retryer of the
// caller's that retries error codes (retry.AddWithErrorCodes, checked
// before any RetryableError method) wrapped around the governed one, or
// put in its place, with the refusal's own code (Throttling) or the
// provider's it wraps (RequestLimitExceeded). EC2 at 0.1 rps, burst 1:
// the call's first attempt is throttled, and its retry, 1 s later, would
// wait some 19 s for a token, past its max wait of 2 s (a refusal, a
// *resilience.WouldWaitError, lost as refused) or its deadline at 3 s
// (the provider's last answer, as the call gave up): the call ends at
// 1 s, after one request, lost once, as it does with the governed
// retryer alone, and is not sent later, unpaced, by the SDK's next
// attempt.
func TestARetryTheGovernorRefusedIsNotRetriedByTheCallersCodes(t *testing.T) {
	wrapped := func(codes ...string) func(*ec2.Options) {
		return func(o *ec2.Options) { o.Retryer = retry.AddWithErrorCodes(o.Retryer, codes...) }
	}
	for _, tc := range []struct {
		name     string
		opt      func(*ec2.Options)
		deadline bool               // a deadline at 3 s, not a max wait of 2 s
		took     time.Duration      // when the call ends, if not at 1 s
		base     func() aws.Retryer // the governed retryer's base, if not fixedStandard
	}{
		{"governed retryer alone", nil, false, 0, nil},
		{"wrapped with the code Throttling", wrapped("Throttling"), false, 0, nil},
		{"wrapped with the provider's code", wrapped("RequestLimitExceeded"), false, 0, nil},
		{"replaced, with the code Throttling", func(o *ec2.Options) {
			o.Retryer = retry.AddWithErrorCodes(fixedStandard(), "Throttling")
		}, false, 0, nil},
		// A retryer that retries every error, whatever its RetryableError
		// says, put in the governed one's place: each later attempt, after
		// its sleep, ends at once, sending nothing; as the governed
		// retryer's base, the governed retryer does not retry.
		{"replaced by one that retries every error", func(o *ec2.Options) {
			o.Retryer = retryAll{fixedStandard().(aws.RetryerV2)}
		}, false, 4 * time.Second, nil},
		{"governing one that retries every error", nil, false, 0, func() aws.Retryer {
			return retryAll{fixedStandard().(aws.RetryerV2)}
		}},
		{"deadline, governed retryer alone", nil, true, 0, nil},
		{"deadline, wrapped with the provider's code", wrapped("RequestLimitExceeded"), true, 0, nil},
		{"deadline, replaced, with the provider's code", func(o *ec2.Options) {
			o.Retryer = retry.AddWithErrorCodes(fixedStandard(), "RequestLimitExceeded")
		}, true, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := tc.base
				if base == nil {
					base = fixedStandard
				}
				f := newFake(t)
				f.script("DescribeVpcs", ec2Throttle, ok)
				cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
					"ec2": {MaxRPS: 0.1, MinRPS: 0.05, Burst: 1},
				}}}, cloudgaws.WithBaseRetryer(base))
				var opts []func(*ec2.Options)
				if tc.opt != nil {
					opts = append(opts, tc.opt)
				}
				client := ec2.NewFromConfig(cfg, opts...)
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "vpcs")
				if tc.deadline {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, 3*time.Second)
					defer cancel()
				} else {
					ctx = resilience.WithMaxWait(ctx, 2*time.Second)
				}
				start := time.Now()
				err := describeVpcs(ctx, client)
				took := time.Since(start)
				var ww *resilience.WouldWaitError
				var api smithy.APIError
				stopped := !tc.deadline && errors.As(err, &ww) ||
					tc.deadline && errors.As(err, &api) && api.ErrorCode() == "RequestLimitExceeded"
				want := time.Second
				if tc.took != 0 {
					want = tc.took
				}
				if took != want || !stopped || f.count("DescribeVpcs") != 1 {
					t.Fatalf("the call ended after %v with %v, %d requests sent (at %v), ledger %q; "+
						"want its retry refused at 1s, ended at %v, 1 request, nothing sent after", took, err,
						f.count("DescribeVpcs"), sentSince(start, f.sentAt("DescribeVpcs")), ledger.Describe(), want)
				}
				var mae *retry.MaxAttemptsError
				if errors.As(err, &mae) {
					t.Fatalf("err = %v: the SDK's attempts ran out and it is their error, not the governor's", err)
				}
				loss := resilience.LossGaveUp
				if !tc.deadline {
					refusedShape(t, err, resilience.ErrNoToken, 0)
					loss = resilience.LossRefused
				}
				lostOnly(t, g, stats, ledger, loss, 1)
				if left := g.Inspect(mustScope(ec2Key + "/DescribeVpcs")).RetryBudget; left != 500 {
					t.Fatalf("retry budget %v after the call; want 500, untouched", left)
				}
			})
		})
	}
}

// sentSince is the times of requests since start.
func sentSince(start time.Time, at []time.Time) []time.Duration {
	var ds []time.Duration
	for _, t := range at {
		ds = append(ds, t.Sub(start))
	}
	return ds
}

// retryAll is a retryer of the caller's that retries every error.
type retryAll struct{ aws.RetryerV2 }

func (retryAll) IsErrorRetryable(error) bool { return true }
