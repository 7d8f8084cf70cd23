//go:build go1.26

package resilience

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestTwoThrottlesASecondApartEndAtFiveRPS(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BaseDelaySeconds: 1.2}})
		n := 0
		if err := Do(context.Background(), ec2Vpcs, failing(&n, throttle(), throttle()), WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if r := rate(g, ec2Vpcs); r != 5 {
			t.Fatalf("rate %v, want 5", r)
		}
		if got := g.Summary(nil).Messages; len(got) != 1 || got[0] != "aws/123456789012/us-east-1/ec2: throttled 2x, slowed to 5.0 rps, 2 retries" {
			t.Fatalf("messages %q", got)
		}
	})
}

func TestRecoveryBackToCeilingAfter75s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BaseDelaySeconds: 1.2}})
		n := 0
		Do(context.Background(), ec2Vpcs, failing(&n, throttle(), throttle()), WithGovernor(g))
		last := time.Now() // just after the second throttle... plus the backoff
		ok := func(context.Context) error { return nil }
		for rate(g, ec2Vpcs) < 20 {
			time.Sleep(100 * time.Millisecond)
			Do(context.Background(), ec2Vpcs, ok, WithGovernor(g))
			if time.Since(last) > 120*time.Second {
				t.Fatal("not back at 20 rps after 120 s")
			}
		}
		if el := time.Since(last); el < 70*time.Second || el > 76*time.Second {
			t.Fatalf("back at 20 rps after %v, want about 75s", el)
		}
	})
}

func TestFortySimultaneousThrottlesHalveOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		var wg sync.WaitGroup
		release := make(chan struct{})
		for range 40 {
			wg.Go(func() {
				Do(context.Background(), ec2Vpcs, func(context.Context) error {
					<-release
					return throttle()
				}, WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
			})
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if r := rate(g, ec2Vpcs); r != 10 {
			t.Fatalf("rate %v after 40 simultaneous throttles, want 10", r)
		}
	})
}

func TestRetryAfterPausesTheScopeForEveryCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		Do(context.Background(), iamUsers, func(context.Context) error { return throttleAfter(30 * time.Second) },
			WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		start := time.Now()
		Do(context.Background(), iamUsers, func(context.Context) error { return nil }, WithGovernor(g))
		// The 30 s pause, then the first token of the drained bucket at 5 rps.
		if w := time.Since(start); w != 30200*time.Millisecond {
			t.Fatalf("next caller waited %v, want 30.2s", w)
		}
	})
}

func TestRetryAfterCappedAt300s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		Do(context.Background(), iamUsers, func(context.Context) error { return throttleAfter(1e6 * time.Second) },
			WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		start := time.Now()
		Do(context.Background(), iamUsers, func(context.Context) error { return nil }, WithGovernor(g))
		if w := time.Since(start); w != 300200*time.Millisecond {
			t.Fatalf("waited %v, want the 300s cap (and 0.2 s for a token)", w)
		}
	})
}

func TestAzureAccountBucketHoldsEverySubscriptionCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{Azure: ProviderConfig{AccountMaxRPS: new(2.0), AccountBurst: 2}})
		var wg sync.WaitGroup
		start := time.Now()
		for _, svc := range []string{"compute", "network", "storage", "web"} {
			wg.Go(func() {
				Do(context.Background(), Scope{Provider: "azure", Account: "sub", Service: svc}, func(context.Context) error { return nil }, WithGovernor(g))
			})
		}
		wg.Wait()
		// Four calls to four providers share the subscription's 2 rps burst 2.
		if el := time.Since(start); el != time.Second {
			t.Fatalf("took %v, want 1s", el)
		}
	})
}
