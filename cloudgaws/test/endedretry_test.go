package test

import (
	"context"
	"errors"
	"net/http"
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

// nestedStopClient is an HTTP client that makes a governed call of its
// own for the first request (a transport of the caller's, governed by
// another scope), which the governor refuses: the attempt ends with that
// call's stop. Later requests go to the fake.
type nestedStopClient struct {
	n    int
	next memClient
}

func (c *nestedStopClient) Do(req *http.Request) (*http.Response, error) {
	if c.n++; c.n == 1 {
		return nil, &resilience.CircuitOpenError{Scope: resilience.Scope{Provider: "aws", Service: "sts"}, Wait: time.Second}
	}
	return c.next.Do(req)
}

// An attempt that ends with another call's stop (a call made inside it,
// refused by the governor) ends the call: the core reads it as that
// call's, records nothing of it, and retries nothing. The SDK's retryer
// retries it all the same (its code is Throttling); the retry is refused
// by the guard, with a *resilience.CallEndedError wrapping the other
// call's refusal, and nothing is sent. Before, the retry went out at
// once, with no token, counted as no retry, and the call succeeded.
func TestAnAttemptEndedByAnotherCallsStopIsNotRetriedUnpaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeVpcs", ok)
		g, err := resilience.NewGovernor(resilience.Config{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := awsConfig(f, nil)
		cfg.HTTPClient = &nestedStopClient{next: memClient{f}}
		if err := cloudgaws.Install(&cfg, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithRetryMode(aws.RetryModeStandard)); err != nil {
			t.Fatal(err)
		}
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "vpcs")
		err = describeVpcs(ctx, ec2.NewFromConfig(cfg))
		tot := g.Summary(stats).Totals
		var coe *resilience.CircuitOpenError
		if !errors.Is(err, resilience.ErrCallEnded) || !errors.As(err, &coe) || coe.Scope.Service != "sts" ||
			f.count("DescribeVpcs") != 0 || tot.Calls != 1 || tot.Retries != 0 || ledger.Lost() != 0 {
			t.Fatalf("the call ended with %v; %d requests sent, %d calls and %d retries counted, ledger %q; "+
				"want a *resilience.CallEndedError wrapping sts's refusal, nothing sent, 1 call, no retry, nothing lost",
				err, f.count("DescribeVpcs"), tot.Calls, tot.Retries, ledger.Describe())
		}
	})
}
