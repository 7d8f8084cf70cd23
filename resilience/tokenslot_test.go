//go:build go1.25

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A retry an SDK readies without Enter, on the slot its Guard holds across
// the SDK's retries (cloudgaws), that waits for a token (held by its
// leaf's pause, another call's Retry-After or its own throttle's) does not
// hold the account's slot meanwhile: Enter takes its tokens before its
// slot, as the spec's rate limiter comes before its bulkhead. It gives
// the slot back and takes one again once its token is due, so that with
// max_concurrency 1 another leaf of the account, not paused, goes at
// once, and the retry goes as the pause ends.
func TestARetryWaitingForItsTokenDoesNotHoldTheAccountsSlot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func() error // the retried attempt's answer
		pause  bool         // another call's Retry-After pauses the leaf
		ready  func(*Guard, context.Context) error
	}{
		{"Pace after a transient error, the leaf paused", transientErr, true, (*Guard).Pace},
		{"Admit after a transient error, the leaf paused", transientErr, true, (*Guard).Admit},
		{"Admit after a throttle, the leaf paused", throttle, true, (*Guard).Admit},
		{"Pace after its own throttle with a Retry-After", func() error { return throttleAfter(60 * time.Second) }, false, (*Guard).Pace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
				var fl flights
				start := time.Now()
				gd, err := g.Begin(context.Background(), ec2Vpcs)
				if err != nil {
					t.Fatal(err)
				}
				if err := gd.Enter(context.Background()); err != nil {
					t.Fatal(err)
				}
				gd.After(tc.answer()) // the slot held across the SDK's retries
				if _, err := gd.Retry(0); err != nil {
					t.Fatal(err)
				}
				if tc.pause {
					pauseScopeBy(g, "Retry-After", 60*time.Second)
				}
				time.Sleep(time.Second) // the SDK's own backoff, within the pause
				done := make(chan error, 1)
				var sent time.Duration
				go func() {
					err := tc.ready(gd, context.Background())
					sent = time.Since(start)
					if err == nil {
						fl.work(time.Second)(context.Background())
						gd.After(nil)
					}
					gd.End(nil)
					done <- err
				}()
				synctest.Wait() // the retry waits for its token
				asked := time.Since(start)
				var other time.Duration
				if err := Do(context.Background(), ec2Subnets, func(ctx context.Context) error {
					other = time.Since(start)
					return fl.work(time.Second)(ctx)
				}, WithGovernor(g)); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Fatalf("the DescribeVpcs retry: %v", err)
				}
				if other != asked {
					t.Errorf("DescribeSubnets (another leaf, not paused) asked at %v, sent at %v; want at once: the account's only slot was held by a DescribeVpcs retry waiting for its token", asked, other)
				}
				if sent < 60*time.Second || sent > 61*time.Second {
					t.Errorf("the DescribeVpcs retry sent at %v; want within a second after its leaf's pause ends at 60s", sent)
				}
				if fl.most() != 1 {
					t.Errorf("%d calls in flight at once, want 1: the account's cap is 1", fl.most())
				}
				if used, waiting := g.provider("aws").scopes.accountBulkhead(ec2Vpcs.Account).InUse(); used != 0 || waiting != 0 {
					t.Fatalf("bulkhead %d used, %d waiting after the calls; want 0, 0", used, waiting)
				}
			})
		})
	}
}

// Nor does one that a provider waiting for its breakers' verdicts
// (breaker_wait) holds until the verdict of a breaker another call's
// failure opened: with max_concurrency 1, another leaf of the account
// goes at once, and the retry goes as the probe once the cooldown is over.
func TestARetryHeldForTheVerdictDoesNotHoldTheAccountsSlot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ready func(*Guard, context.Context) error
	}{{"Pace", (*Guard).Pace}, {"Admit", (*Guard).Admit}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1, BreakerWait: true, BreakerThreshold: 1}})
				var fl flights
				start := time.Now()
				gd, err := g.Begin(context.Background(), ec2Vpcs)
				if err != nil {
					t.Fatal(err)
				}
				if err := gd.Enter(context.Background()); err != nil {
					t.Fatal(err)
				}
				gd.After(transientErr()) // the slot held across the SDK's retries
				if _, err := gd.Retry(0); err != nil {
					t.Fatal(err)
				}
				other, _ := g.Begin(context.Background(), ec2Vpcs)
				other.After(transientErr())
				other.End(transientErr()) // opens the breaker (threshold 1)
				done := make(chan error, 1)
				var sent time.Duration
				go func() {
					err := tc.ready(gd, context.Background())
					sent = time.Since(start)
					if err == nil {
						fl.work(time.Second)(context.Background())
						gd.After(nil)
					}
					gd.End(nil)
					done <- err
				}()
				synctest.Wait() // the retry waits for the verdict
				asked := time.Since(start)
				var subnets time.Duration
				if err := Do(context.Background(), ec2Subnets, func(ctx context.Context) error {
					subnets = time.Since(start)
					return fl.work(time.Second)(ctx)
				}, WithGovernor(g)); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Fatalf("the DescribeVpcs retry: %v", err)
				}
				if subnets != asked {
					t.Errorf("DescribeSubnets (another leaf, its breaker closed) asked at %v, sent at %v; want at once: the account's only slot was held by a DescribeVpcs retry waiting for its breaker's verdict", asked, subnets)
				}
				if cooldown := 60 * time.Second; sent < cooldown || sent > cooldown+time.Second {
					t.Errorf("the DescribeVpcs retry sent at %v; want as the probe, within a second after the cooldown's end at %v", sent, cooldown)
				}
				if fl.most() != 1 {
					t.Errorf("%d calls in flight at once, want 1: the account's cap is 1", fl.most())
				}
				if used, waiting := g.provider("aws").scopes.accountBulkhead(ec2Vpcs.Account).InUse(); used != 0 || waiting != 0 {
					t.Fatalf("bulkhead %d used, %d waiting after the calls; want 0, 0", used, waiting)
				}
			})
		})
	}
}

// The resend of an attempt that failed before it was sent, on the slot
// its Guard holds across the SDK's retries (cloudgaws's), held by its
// leaf's pause or by a breaker_wait breaker until its verdict, does not
// hold the account's slot meanwhile either, as Pace's and Admit's retries
// do not: with max_concurrency 1 another leaf of the account goes at
// once, and the resend goes once the pause or the cooldown is over.
func TestAResendWaitingForItsTokenOrVerdictDoesNotHoldTheAccountsSlot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   ProviderConfig
		block func(g *Governor)
	}{
		{"the leaf paused", ProviderConfig{MaxConcurrency: 1}, func(g *Governor) { pauseScopeBy(g, "Retry-After", 60*time.Second) }},
		{"breaker_wait, the breaker open", ProviderConfig{MaxConcurrency: 1, BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 60},
			func(g *Governor) {
				// Another call of the operation, sent by an SDK without
				// Enter, fails: the breaker (threshold 1) opens for 60 s.
				other, _ := g.Begin(context.Background(), ec2Vpcs)
				other.After(transientErr())
				other.End(transientErr())
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: tc.cfg})
				var fl flights
				start := time.Now()
				gd, err := g.Begin(context.Background(), ec2Vpcs)
				if err != nil {
					t.Fatal(err)
				}
				if err := gd.Enter(context.Background()); err != nil {
					t.Fatal(err)
				}
				// The attempt fails before it is sent; the Guard keeps its
				// slot, as across the SDK's retries, and its scope is held
				// meanwhile.
				tc.block(g)
				done := make(chan error, 1)
				var sent time.Duration
				go func() {
					err := gd.readyResend(context.Background())
					sent = time.Since(start)
					if err == nil {
						fl.work(time.Second)(context.Background())
						gd.After(nil)
					}
					gd.End(nil)
					done <- err
				}()
				synctest.Wait()
				asked := time.Since(start)
				var other time.Duration
				if err := Do(context.Background(), ec2Subnets, func(ctx context.Context) error {
					other = time.Since(start)
					return fl.work(time.Second)(ctx)
				}, WithGovernor(g)); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Fatalf("the DescribeVpcs resend: %v", err)
				}
				if other != asked {
					t.Errorf("DescribeSubnets (another leaf) asked at %v, sent at %v; want at once: the account's only slot was held by a DescribeVpcs resend", asked, other)
				}
				if sent < 60*time.Second || sent > 61*time.Second {
					t.Errorf("the DescribeVpcs resend sent at %v; want within a second after 60s", sent)
				}
			})
		})
	}
}
