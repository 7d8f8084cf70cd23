package test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// Nothing an SDK sends after the governor ended its call goes out, and
// the call it ended stays ended: the ledger's loss is the call's outcome,
// never followed by a success the governor did not see. EC2 at 0.1 rps,
// burst 1, a max wait of 2 s: the call's first attempt is throttled, and
// its retry, 1 s later, is refused (its token some 19 s off). A retryer
// of the caller's that retries what the governor refused (by its code,
// Throttling, or the provider's it wraps, RequestLimitExceeded, or every
// error), wrapped around the governed retryer or put in its place, has
// the SDK try again, as often as its attempts allow: each later attempt
// is refused by the guard itself (resilience.Guard.Pace on a call that
// ended returns a *resilience.CallEndedError), whatever the integration
// hands the SDK's loop for the refusal. One request is sent, one call is
// counted, no retry, one refusal in the stats and the ledger, and the
// call returns an error.
func TestNothingIsSentAfterTheGovernorEndedTheCall(t *testing.T) {
	wrapped := func(codes ...string) func(*ec2.Options) {
		return func(o *ec2.Options) { o.Retryer = retry.AddWithErrorCodes(o.Retryer, codes...) }
	}
	replaced := func(codes ...string) func(*ec2.Options) {
		return func(o *ec2.Options) { o.Retryer = retry.AddWithErrorCodes(fixedStandard(), codes...) }
	}
	for _, tc := range []struct {
		name string
		opt  func(*ec2.Options)
	}{
		{"wrapped with the code Throttling", wrapped("Throttling")},
		{"wrapped with the provider's code", wrapped("RequestLimitExceeded")},
		{"replaced, with the code Throttling", replaced("Throttling")},
		{"replaced, with the provider's code", replaced("RequestLimitExceeded")},
		{"replaced by one that retries every error", func(o *ec2.Options) {
			o.Retryer = retryAll{fixedStandard().(aws.RetryerV2)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.script("DescribeVpcs", ec2Throttle, ok)
				cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
					"ec2": {MaxRPS: 0.1, MinRPS: 0.05, Burst: 1},
				}}}, cloudgaws.WithBaseRetryer(fixedStandard))
				client := ec2.NewFromConfig(cfg, tc.opt)
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "vpcs")
				ctx = resilience.WithMaxWait(ctx, 2*time.Second)
				start := time.Now()
				err := describeVpcs(ctx, client)
				tot := g.Summary(stats).Totals
				if err == nil || f.count("DescribeVpcs") != 1 || tot.Calls != 1 || tot.Retries != 0 {
					t.Fatalf("the call ended after %v with %v; %d requests sent (at %v), %d calls and %d retries counted, ledger %q; "+
						"want an error, 1 request, 1 call, no retry: nothing sent once the governor refused the retry",
						time.Since(start), err, f.count("DescribeVpcs"), sentSince(start, f.sentAt("DescribeVpcs")),
						tot.Calls, tot.Retries, ledger.Describe())
				}
				lostOnly(t, g, stats, ledger, resilience.LossRefused, 1)
			})
		})
	}
}
