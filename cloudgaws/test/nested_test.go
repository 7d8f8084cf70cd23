package test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// A call made while another governed call holds its slot (credentials
// fetched through an instrumented STS client while signing) does not wait
// for a slot its own caller holds: with a cap of 1 it goes ahead without
// one instead of deadlocking.
func TestNestedCallDoesNotDeadlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}})
		stsClient := sts.NewFromConfig(cfg)
		outer := cfg.Copy()
		outer.Credentials = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
			if err := getCallerIdentity(ctx, stsClient); err != nil {
				return aws.Credentials{}, err
			}
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}, nil
		})
		ctx, stats := resilience.WithStats(context.Background())
		if err := describeVpcs(ctx, ec2.NewFromConfig(outer)); err != nil {
			t.Fatal(err)
		}
		if f.count("GetCallerIdentity") != 1 || f.count("DescribeVpcs") != 1 {
			t.Fatalf("sent %d GetCallerIdentity, %d DescribeVpcs", f.count("GetCallerIdentity"), f.count("DescribeVpcs"))
		}
		if tot := g.Summary(stats).Totals; tot.Calls != 2 {
			t.Fatalf("totals %+v: both calls are governed", tot)
		}
		if got := freeSlots(g); got != 1 {
			t.Fatalf("%d slots free", got)
		}
	})
}

// A call made inside another one's attempt (credentials from STS while
// signing) that the governor stops is charged to its own scope only: the
// outer scope is neither slowed nor paused, since nothing was sent to it.
func TestNestedGovernorErrorNotChargedToTheOuterScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("GetCallerIdentity", stsThrottle, stsThrottle, stsThrottle, stsThrottle, stsThrottle)
		cfg, g := governed(t, f, resilience.Config{}, cloudgaws.WithMaxRetries(0))
		stsClient := sts.NewFromConfig(cfg)
		for range 5 { // five give-ups open the STS breaker
			getCallerIdentity(context.Background(), stsClient)
		}
		outer := cfg.Copy()
		outer.Credentials = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
			if err := getCallerIdentity(ctx, stsClient); err != nil {
				return aws.Credentials{}, err
			}
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}, nil
		})
		before := g.Inspect(vpcsScope).Leaf
		err := describeVpcs(context.Background(), ec2.NewFromConfig(outer))
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || coe.Scope.Service != "sts" {
			t.Fatalf("err %v, want the STS breaker's error", err)
		}
		if f.count("DescribeVpcs") != 0 {
			t.Fatal("DescribeVpcs was sent without credentials")
		}
		// The outer call took its token; its rate and pause are untouched.
		if after := g.Inspect(vpcsScope).Leaf; after.Rate != before.Rate || after.Ceiling != before.Ceiling || after.Paused != before.Paused {
			t.Fatalf("DescribeVpcs leaf %+v -> %+v: charged for the STS breaker", before, after)
		}
		if s := g.Summary(nil).Scopes[mustScope("aws/"+testAccount+"/us-east-1/ec2")]; s.Throttled != 0 || s.TransientErrors != 0 {
			t.Fatalf("ec2 stats %+v", s)
		}
	})
}

// A call made inside another one's attempt (credentials from STS while
// signing) that fails on its provider's answer, a throttle or an internal
// error, is charged to its own scope only, as one the governor stops is:
// the answer is STS's, and nothing was sent to the outer scope, whose rate,
// pause, counters and breaker stay as they were, however often the SDK
// retries the outer call.
func TestNestedProviderErrorNotChargedToTheOuterScope(t *testing.T) {
	for _, rep := range []reply{stsThrottle, {status: 500, code: "InternalError", msg: "We encountered an internal error."}} {
		t.Run(rep.code, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.always("GetCallerIdentity", rep)
				g, _ := resilience.NewGovernor(resilience.Config{})
				stsCfg := awsConfig(f, nil)
				if err := cloudgaws.Install(&stsCfg, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithMaxRetries(0)); err != nil {
					t.Fatal(err)
				}
				stsClient := sts.NewFromConfig(stsCfg)
				outer := awsConfig(f, nil)
				outer.Credentials = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
					if err := getCallerIdentity(ctx, stsClient); err != nil {
						return aws.Credentials{}, err
					}
					return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}, nil
				})
				if err := cloudgaws.Install(&outer, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithMaxRetries(2),
					cloudgaws.WithRetryMode(aws.RetryModeStandard)); err != nil {
					t.Fatal(err)
				}
				before := g.Inspect(vpcsScope).Leaf
				ctx, stats := resilience.WithStats(context.Background())
				var apiErr smithy.APIError
				if err := describeVpcs(ctx, ec2.NewFromConfig(outer)); !errors.As(err, &apiErr) || apiErr.ErrorCode() != rep.code {
					t.Fatalf("err %v, want STS's %s", err, rep.code)
				}
				if f.count("DescribeVpcs") != 0 || f.count("GetCallerIdentity") == 0 {
					t.Fatalf("sent %d DescribeVpcs, %d GetCallerIdentity", f.count("DescribeVpcs"), f.count("GetCallerIdentity"))
				}
				if after := g.Inspect(vpcsScope).Leaf; after.Rate != before.Rate || after.Paused != before.Paused {
					t.Fatalf("DescribeVpcs leaf %+v -> %+v: charged for STS's answer", before, after)
				}
				if s := scopeStats(g, stats, ec2Key); s.Throttled != 0 || s.TransientErrors != 0 || s.GaveUp != 0 || s.Failed != 0 {
					t.Fatalf("ec2 stats %+v: charged for STS's answer", s)
				}
				if b, ok := g.Summary(nil).Breakers[mustScope(ec2Key+"/DescribeVpcs")]; ok {
					t.Fatalf("ec2 breaker %+v: charged for STS's answer", b)
				}
				if s := scopeStats(g, stats, "aws/"+testAccount+"/"+testRegion+"/sts"); s.GaveUp+s.Failed != int64(f.count("GetCallerIdentity")) {
					t.Fatalf("sts stats %+v, want each of its %d calls lost", s, f.count("GetCallerIdentity"))
				}
			})
		})
	}
}

// A call two levels down (role chaining: credentials fetched through an
// STS client whose own credentials come from another STS client, each
// governed) whose bulkhead is full goes without a slot when any enclosing
// call holds one: with a cap of 1, held by the outermost call, neither
// nested call waits for it.
func TestTwoLevelNestedCallDoesNotDeadlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}})
		credsFrom := func(c *sts.Client) aws.CredentialsProvider {
			return aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
				if err := getCallerIdentity(ctx, c); err != nil {
					return aws.Credentials{}, err
				}
				return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}, nil
			})
		}
		middle := cfg.Copy()
		middle.Credentials = credsFrom(sts.NewFromConfig(cfg))
		outer := cfg.Copy()
		outer.Credentials = credsFrom(sts.NewFromConfig(middle))
		ctx, stats := resilience.WithStats(context.Background())
		if err := describeVpcs(ctx, ec2.NewFromConfig(outer)); err != nil {
			t.Fatal(err)
		}
		if f.count("GetCallerIdentity") != 2 || f.count("DescribeVpcs") != 1 {
			t.Fatalf("sent %d GetCallerIdentity, %d DescribeVpcs", f.count("GetCallerIdentity"), f.count("DescribeVpcs"))
		}
		if tot := g.Summary(stats).Totals; tot.Calls != 3 {
			t.Fatalf("totals %+v: the three calls are governed", tot)
		}
		if got := freeSlots(g); got != 1 {
			t.Fatalf("%d slots free", got)
		}
	})
}

// A call made with the context of another call's attempt once that
// attempt is over is nested in it no more: a goroutine the credentials
// provider started keeps the context it was given (as net/http's dialer
// keeps a request's, without its cancellation) and makes its governed
// call while the SDK sleeps before a retry. The call whose context it is
// holds the account's only slot across the SDK's retries, which the late
// call does not borrow while the SDK sleeps: it waits for a slot, as any
// call does. As the retry's attempt begins, the call is nested in it and
// may borrow its slot (the core's rule since c8d1d73, so that a retry
// that waits for what the goroutine fetches, a credentials cache's
// refresh, does not wait for it for good); it goes with the retry or
// once the call whose context it kept has ended, whichever it finds
// first, never before the retry.
func TestACallMadeWithAnAttemptsContextOnceTheAttemptIsOverIsNotNested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeVpcs", ec2Throttle, ok)
		f.hold = func(r *http.Request) {
			if r.Form.Get("Action") == "GetCallerIdentity" {
				time.Sleep(30 * time.Second)
			}
		}
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}}, slowRetryer(2))
		stsClient := sts.NewFromConfig(cfg)
		outer := cfg.Copy()
		var wg sync.WaitGroup
		var once sync.Once
		var late error
		outer.Credentials = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
			kept := context.WithoutCancel(ctx)
			once.Do(func() {
				wg.Go(func() {
					time.Sleep(10 * time.Second) // into the SDK's 20 s sleep before its retry
					late = getCallerIdentity(kept, stsClient)
				})
			})
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}, nil
		})
		if err := describeVpcs(context.Background(), ec2.NewFromConfig(outer)); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if late != nil {
			t.Fatalf("the late call: %v", late)
		}
		if f.count("DescribeVpcs") != 2 || f.count("GetCallerIdentity") != 1 {
			t.Fatalf("sent %d DescribeVpcs, %d GetCallerIdentity; want 2, 1", f.count("DescribeVpcs"), f.count("GetCallerIdentity"))
		}
		vpcs, gci := f.sentAt("DescribeVpcs"), f.sentAt("GetCallerIdentity")
		if at, retry := gci[0].Sub(vpcs[0]), vpcs[1].Sub(vpcs[0]); at < retry {
			t.Fatalf("the late call went at %v, the retry at %v: it borrowed the slot of a call between its attempts, while the SDK slept", at, retry)
		}
		if got := freeSlots(g); got != 1 {
			t.Fatalf("%d slots free after the calls, want 1", got)
		}
	})
}
