package cloudgaws_test

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
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// STS's awsQuery Throttling (400) is a throttled attempt: counted, retried
// by the SDK, and the success that follows records no give-up. The scope
// is the botocore name sts.
func TestSTSThrottlingThenSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("GetCallerIdentity", stsThrottle, ok)
		cfg, g := governed(t, f, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		out, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err != nil || aws.ToString(out.Account) != testAccount {
			t.Fatalf("GetCallerIdentity = %+v, %v", out, err)
		}
		if got := f.count("GetCallerIdentity"); got != 2 {
			t.Fatalf("sent %d times", got)
		}
		st := scopeStats(g, stats, "aws/"+testAccount+"/"+testRegion+"/sts")
		if st.Calls != 1 || st.Throttled != 1 || st.Retries != 1 || st.GaveUp != 0 {
			t.Fatalf("stats = %+v", st)
		}
		if rate := g.BucketState(resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: "sts"}); rate.RateRPS >= rate.CeilingRPS {
			t.Fatalf("the throttle did not slow the sts leaf: %+v", rate)
		}
	})
}

// Secrets Manager speaks awsJson1.1: its ThrottlingException is counted
// under .../secretsmanager, and the give-up after max_retries is recorded.
func TestJSONProtocolThrottling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("GetSecretValue", jsonThrottle)
		cfg, g := governed(t, f, resilience.Config{}, cloudgaws.WithMaxRetries(2))
		ctx, stats := resilience.WithStats(context.Background())
		err := getSecret(ctx, secretsmanager.NewFromConfig(cfg))
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ThrottlingException" {
			t.Fatalf("err = %v", err)
		}
		if got := f.count("GetSecretValue"); got != 3 {
			t.Fatalf("sent %d times", got)
		}
		st := scopeStats(g, stats, "aws/"+testAccount+"/"+testRegion+"/secretsmanager")
		if st.Calls != 1 || st.Throttled != 3 || st.Retries != 2 || st.GaveUp != 1 {
			t.Fatalf("stats = %+v", st)
		}
	})
}

// A 429 with Retry-After pauses the scope for that long: the SDK's own
// backoff ignores Retry-After (at most 1 s for a first throttled retry),
// the governor holds the retry until the pause is over, and every other
// call of the scope with it. x-amz-retry-after (milliseconds), which the SDK
// clamps to its backoff + 5 s, pauses the scope too.
func TestRetryAfterPausesTheScope(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first reply
		pause time.Duration
	}{
		{"429 Retry-After", tooManyRequests("7"), 7 * time.Second},
		{"x-amz-retry-after", amzRetryAfterThrott("30000"), 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.script("GetSecretValue", tc.first, ok)
				cfg, g := governed(t, f, resilience.Config{})
				client := secretsmanager.NewFromConfig(cfg)
				ctx, stats := resilience.WithStats(context.Background())
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := getSecret(ctx, client); err != nil {
						t.Error(err)
					}
				}()
				time.Sleep(time.Second) // the first call was throttled
				if err := getSecret(ctx, client); err != nil {
					t.Fatal(err)
				}
				wg.Wait()
				at := f.sentAt("GetSecretValue")
				if len(at) != 3 {
					t.Fatalf("sent %d times", len(at))
				}
				for i, sent := range at[1:] {
					if gap := sent.Sub(at[0]); gap < tc.pause {
						t.Fatalf("request %d sent %v after the throttle, before the %v the server asked for", i+2, gap, tc.pause)
					}
				}
				st := scopeStats(g, stats, "aws/"+testAccount+"/"+testRegion+"/secretsmanager")
				if st.Calls != 2 || st.Throttled != 1 || st.Retries != 1 || st.Waits < 2 {
					t.Fatalf("stats = %+v", st)
				}
			})
		})
	}
}

// A throttled retry waits for a fresh rate token on top of the SDK's
// backoff (the throttle halved the rate and drained the bucket); a
// transient retry does not.
func TestThrottledRetryWaitsForAToken(t *testing.T) {
	rc := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
		"ec2": {MaxRPS: 0.5, Burst: 1},
	}}}
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeVpcs", ec2Throttle, ok)
		cfg, _ := governed(t, f, rc)
		if err := describeVpcs(context.Background(), ec2.NewFromConfig(cfg)); err != nil {
			t.Fatal(err)
		}
		at := f.sentAt("DescribeVpcs")
		// 0.5 rps halved to 0.25: a token every 4 s; the SDK's first
		// throttled backoff is at most 1 s.
		if gap := at[1].Sub(at[0]); gap < 3*time.Second {
			t.Fatalf("throttled retry sent %v after the first attempt", gap)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeSubnets", ec2Internal, ok)
		cfg, _ := governed(t, f, rc)
		if _, err := ec2.NewFromConfig(cfg).DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{}); err != nil {
			t.Fatal(err)
		}
		at := f.sentAt("DescribeSubnets")
		if gap := at[1].Sub(at[0]); gap > time.Second {
			t.Fatalf("transient retry held %v", gap)
		}
	})
}

// Sixty-four goroutines sharing one config never have more requests in
// flight than the account's bulkhead allows, and all of them get through.
func TestConcurrencyCapShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.hold = func(*http.Request) { time.Sleep(100 * time.Millisecond) }
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 8}})
		ctx, stats := resilience.WithStats(context.Background())
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Clients of every kind, all from the one config.
				switch i % 3 {
				case 0:
					errs <- describeVpcs(ctx, ec2.NewFromConfig(cfg))
				case 1:
					errs <- getCallerIdentity(ctx, sts.NewFromConfig(cfg))
				default:
					errs <- getSecret(ctx, secretsmanager.NewFromConfig(cfg))
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := f.maxInFlight(); got != 8 {
			t.Fatalf("max in flight %d, want the cap of 8", got)
		}
		if tot := g.Summary(stats).Totals; tot.Calls != 64 {
			t.Fatalf("totals %+v", tot)
		}
	})
}

// freeSlots counts the free slots of the account's bulkhead by taking
// them with probe guards, and gives them back.
func freeSlots(t *testing.T, g *resilience.Governor) int {
	t.Helper()
	var held []*resilience.Guard
	defer func() {
		for _, gd := range held {
			gd.End()
		}
	}()
	for {
		gd, err := g.Begin(context.Background(), resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: "probe"})
		if err != nil {
			t.Fatal(err)
		}
		if !gd.TryAcquire() {
			gd.End()
			return len(held)
		}
		held = append(held, gd)
		if len(held) > 100 {
			t.Fatal("unbounded bulkhead")
		}
	}
}

// The slot a call holds across the SDK's retries is released exactly once,
// whether the call succeeds, fails or is cancelled in flight or while
// waiting for a slot: with one slot held by someone else, the slots free
// after the call are the cap minus one, never fewer (a leak) nor more (a
// double release).
func TestSlotReleasedExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, f *fakeAWS, c *ec2.Client, cap int, g *resilience.Governor)
	}{
		{"success after retries", func(t *testing.T, f *fakeAWS, c *ec2.Client, _ int, _ *resilience.Governor) {
			f.script("DescribeVpcs", ec2Throttle, ec2Internal, ok)
			if err := describeVpcs(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		}},
		{"provider error", func(t *testing.T, f *fakeAWS, c *ec2.Client, _ int, _ *resilience.Governor) {
			f.always("DescribeVpcs", ec2Unauthorized)
			if err := describeVpcs(context.Background(), c); err == nil {
				t.Fatal("no error")
			}
		}},
		{"given up", func(t *testing.T, f *fakeAWS, c *ec2.Client, _ int, _ *resilience.Governor) {
			f.always("DescribeVpcs", ec2Throttle)
			if err := describeVpcs(context.Background(), c); err == nil {
				t.Fatal("no error")
			}
		}},
		{"cancelled in flight", func(t *testing.T, f *fakeAWS, c *ec2.Client, _ int, _ *resilience.Governor) {
			ctx, cancel := context.WithCancel(context.Background())
			f.hold = func(r *http.Request) { cancel(); <-r.Context().Done() }
			err := describeVpcs(ctx, c)
			f.hold = nil
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v", err)
			}
		}},
		{"cancelled waiting for a slot", func(t *testing.T, f *fakeAWS, c *ec2.Client, cap int, g *resilience.Governor) {
			// Fill the bulkhead, then give up waiting.
			var held []*resilience.Guard
			for range cap - 1 {
				gd, _ := g.Begin(context.Background(), resilience.Scope{Provider: "aws", Account: testAccount, Service: "filler"})
				if !gd.TryAcquire() {
					t.Fatal("no slot to fill")
				}
				held = append(held, gd)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := describeVpcs(ctx, c)
			for _, gd := range held {
				gd.End()
			}
			if !errors.Is(err, context.DeadlineExceeded) || f.count("DescribeVpcs") != 0 {
				t.Fatalf("err = %v, sent %d", err, f.count("DescribeVpcs"))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const cap = 3
				f := newFake(t)
				cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: cap}})
				other, _ := g.Begin(context.Background(), resilience.Scope{Provider: "aws", Account: testAccount, Service: "other"})
				if !other.TryAcquire() {
					t.Fatal("no slot")
				}
				tc.run(t, f, ec2.NewFromConfig(cfg), cap, g)
				if got := freeSlots(t, g); got != cap-1 {
					t.Fatalf("%d slots free after the call, want %d", got, cap-1)
				}
				other.End()
				if got := freeSlots(t, g); got != cap {
					t.Fatalf("%d slots free at the end, want %d", got, cap)
				}
			})
		})
	}
}

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
		if got := freeSlots(t, g); got != 1 {
			t.Fatalf("%d slots free", got)
		}
	})
}

// Every page a paginator fetches is one governed call; a throttled page is
// retried inside its call and the listing completes.
func TestPaginator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.vpcPages = 3
		f.script("DescribeVpcs", ok, ec2Throttle, ok)
		cfg, g := governed(t, f, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		p := ec2.NewDescribeVpcsPaginator(ec2.NewFromConfig(cfg), &ec2.DescribeVpcsInput{})
		var vpcs []string
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range page.Vpcs {
				vpcs = append(vpcs, aws.ToString(v.VpcId))
			}
		}
		if len(vpcs) != 3 || vpcs[0] != "vpc-1" || vpcs[2] != "vpc-3" {
			t.Fatalf("vpcs = %v", vpcs)
		}
		st := scopeStats(g, stats, ec2Key)
		if st.Calls != 3 || st.Throttled != 1 || st.Retries != 1 || st.GaveUp != 0 || f.count("DescribeVpcs") != 4 {
			t.Fatalf("stats = %+v, sent %d", st, f.count("DescribeVpcs"))
		}
	})
}

// With the provider disabled the clients work as if nothing were
// installed: nothing is counted, and the SDK retries as configured.
func TestDisabledProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", ec2Throttle)
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{Enabled: ptr(false), RetryBudget: ptr(0)}},
			cloudgaws.WithMaxRetries(3))
		ctx, stats := resilience.WithStats(context.Background())
		err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "RequestLimitExceeded" || f.count("DescribeVpcs") != 4 {
			t.Fatalf("err = %v, sent %d", err, f.count("DescribeVpcs"))
		}
		if tot := g.Summary(stats).Totals; tot.Calls != 0 || tot.Throttled != 0 {
			t.Fatalf("totals %+v", tot)
		}
	})
}

// A wait for the scope's token that would pass the call's context
// deadline is not made: before the first attempt the call fails at once
// with the core's DeadlineExceededError and sends nothing; before a retry
// the call ends with the provider's error, recorded as a give-up.
func TestWaitBeyondTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("GetSecretValue", tooManyRequests("60"))
		cfg, g := governed(t, f, resilience.Config{})
		client := secretsmanager.NewFromConfig(cfg)
		ctx, stats := resilience.WithStats(context.Background())

		// Sent once, paused for 60 s; the retry would wait past 5 s.
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		start := time.Now()
		err := getSecret(tctx, client)
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ThrottlingException" || f.count("GetSecretValue") != 1 {
			t.Fatalf("err = %v, sent %d", err, f.count("GetSecretValue"))
		}
		if waited := time.Since(start); waited > 2*time.Second {
			t.Fatalf("waited %v for a retry that could not be made in time", waited)
		}
		if st := scopeStats(g, stats, "aws/"+testAccount+"/"+testRegion+"/secretsmanager"); st.GaveUp != 1 || st.Throttled != 1 {
			t.Fatalf("stats = %+v", st)
		}

		// The next call, inside the pause, sends nothing.
		tctx2, cancel2 := context.WithTimeout(ctx, 5*time.Second)
		defer cancel2()
		err = getSecret(tctx2, client)
		var de *resilience.DeadlineExceededError
		if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) || f.count("GetSecretValue") != 1 {
			t.Fatalf("err = %v, sent %d", err, f.count("GetSecretValue"))
		}
		if waited := time.Since(start); waited > 2*time.Second {
			t.Fatalf("waited %v", waited)
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
		vpcsScope := resilience.Scope{Provider: "aws", Account: testAccount, Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
		before := g.BucketState(vpcsScope)
		err := describeVpcs(context.Background(), ec2.NewFromConfig(outer))
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || coe.Scope.Service != "sts" {
			t.Fatalf("err %v, want the STS breaker's error", err)
		}
		if f.count("DescribeVpcs") != 0 {
			t.Fatal("DescribeVpcs was sent without credentials")
		}
		if after := g.BucketState(vpcsScope); after != before {
			t.Fatalf("DescribeVpcs leaf %+v -> %+v: charged for the STS breaker", before, after)
		}
		if s := g.Summary(nil).Scopes["aws/"+testAccount+"/us-east-1/ec2"]; s.Throttled != 0 || s.TransientErrors != 0 {
			t.Fatalf("ec2 stats %+v", s)
		}
	})
}

// WithServiceName names a service ServiceName does not know.
func TestWithServiceName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{}, cloudgaws.WithServiceName("EC2", "compute"))
		ctx, stats := resilience.WithStats(context.Background())
		if err := describeVpcs(ctx, ec2.NewFromConfig(cfg)); err != nil {
			t.Fatal(err)
		}
		if s := g.Summary(stats).Scopes["aws/"+testAccount+"/"+testRegion+"/compute"]; s.Calls != 1 {
			t.Fatalf("scopes %v: the call is not under the configured name", g.Summary(stats).Scopes)
		}
	})
}
