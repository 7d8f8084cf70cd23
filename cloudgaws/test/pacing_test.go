package test

import (
	"context"
	"errors"
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
		if leaf := g.Inspect(resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: "sts"}).Leaf; leaf.Rate >= leaf.Ceiling {
			t.Fatalf("the throttle did not slow the sts leaf: %+v", leaf)
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

// slowEC2 has EC2's operations at 0.5 rps, burst 1: a throttle halves
// the rate to a token every 4 s, which a retry waits for.
var slowEC2 = resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
	"ec2": {MaxRPS: 0.5, Burst: 1},
}}}

// A throttled retry waits for a fresh rate token on top of the SDK's
// backoff (the throttle halved the rate and drained the bucket); a
// transient retry does not.
func TestThrottledRetryWaitsForAToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeVpcs", ec2Throttle, ok)
		cfg, _ := governed(t, f, slowEC2)
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
		cfg, _ := governed(t, f, slowEC2)
		if _, err := ec2.NewFromConfig(cfg).DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{}); err != nil {
			t.Fatal(err)
		}
		at := f.sentAt("DescribeSubnets")
		if gap := at[1].Sub(at[0]); gap > time.Second {
			t.Fatalf("transient retry held %v", gap)
		}
	})
}

// A wait that would pass the call's context deadline is not made: before
// the first attempt the call fails at once with the core's
// DeadlineExceededError and sends nothing; before a retry (here, for the
// provider's Retry-After) the call ends with the provider's error,
// recorded as a give-up.
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
		// The provider's error, not the core's deadline error wrapping it.
		var de *resilience.DeadlineExceededError
		if errors.As(err, &de) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the provider's error, not a deadline error", err)
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
		if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) || f.count("GetSecretValue") != 1 {
			t.Fatalf("err = %v, sent %d", err, f.count("GetSecretValue"))
		}
		if waited := time.Since(start); waited > 2*time.Second {
			t.Fatalf("waited %v", waited)
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

// A throttled retry whose fresh token would come after the context's
// deadline is not sent: the call ends with the provider's error, at once
// and recorded as a give-up, and the SDK does not retry it.
func TestRetryTokenBeyondTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", ec2Throttle)
		cfg, g := governed(t, f, slowEC2)
		ctx, stats := resilience.WithStats(context.Background())
		// Halved to 0.25 rps, the next token is 4 s away.
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		start := time.Now()
		err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "RequestLimitExceeded" || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the provider's RequestLimitExceeded", err)
		}
		if got := f.count("DescribeVpcs"); got != 1 {
			t.Fatalf("sent %d times", got)
		}
		if waited := time.Since(start); waited > 2*time.Second {
			t.Fatalf("waited %v for a token that would come too late", waited)
		}
		if st := scopeStats(g, stats, ec2Key); st.Calls != 1 || st.Throttled != 1 || st.Retries != 0 || st.GaveUp != 1 {
			t.Fatalf("stats = %+v", st)
		}
	})
}
