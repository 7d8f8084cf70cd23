//go:build go1.26

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/observe"
)

// The Retry event's Wait is the delay before the retry (the longer of
// the delay Retry gave and the time from Retry to the retry's Enter or
// Pace), not the token wait the retry makes once the SDK's sleep is
// over: here the scope gives a token every 10 s and the SDK sleeps
// 100 ms (2 s before a throttle's Pace), so that the retry waits for its
// token most of 10 s more, which
// Wait must not count (a rule TestARetrysDelayIsTheSleepBeforeIt states
// with no token wait to tell it from). So for a call nested in another's
// attempt (WithNestedCalls), whose Retry event is its own: Do sleeps the
// delay Retry gave, and the token wait after it stays out of Wait too.
func TestARetrysWaitLeavesOutTheTokenWaitAfterTheSleep(t *testing.T) {
	cfg := Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"ec2": {MaxRPS: 0.1, MinRPS: 0.1, Burst: 1}}}}
	for _, tc := range []struct {
		verb   string
		answer error
		sleep  time.Duration
	}{
		{"Enter", transientErr(), 100 * time.Millisecond},
		{"Pace", throttle(), 2 * time.Second}, // Pace takes a token after a throttle
	} {
		verb := tc.verb
		t.Run(verb, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				g := newGov(t, cfg, WithObserver(rec))
				ctx := context.Background()
				gd, _ := g.Begin(ctx, ec2Vpcs)
				if err := gd.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				gd.After(tc.answer)
				if _, err := gd.Retry(0); err != nil {
					t.Fatal(err)
				}
				time.Sleep(tc.sleep) // the SDK's sleep
				start := time.Now()
				send := gd.Enter
				if verb == "Pace" {
					send = gd.Pace
				}
				if err := send(ctx); err != nil {
					t.Fatal(err)
				}
				if waited := time.Since(start); waited < 10*time.Second-tc.sleep-time.Second {
					t.Fatalf("the retry waited %v for its token, want about %v: the test's premise", waited, 10*time.Second-tc.sleep)
				}
				gd.After(nil)
				gd.End(nil)
				if r := rec.first(observe.Retry); r.Retry != 1 || r.Wait != tc.sleep {
					t.Errorf("the Retry event: retry %d, Wait %v; want retry 1, Wait %v (the sleep, not the token wait after it)", r.Retry, r.Wait, tc.sleep)
				}
			})
		})
	}
	t.Run("nested", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := &recorder{}
			g := newGov(t, cfg, WithObserver(rec))
			var nestedDelay time.Duration
			err := Do(context.Background(), iamUsers, func(ctx context.Context) error {
				attempts := 0
				var retriedAt time.Time
				return Do(ctx, ec2Vpcs, func(context.Context) error {
					if attempts++; attempts == 1 {
						retriedAt = time.Now()
						return transientErr()
					}
					nestedDelay = time.Since(retriedAt)
					return nil
				}, WithGovernor(g), WithPolicy(RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}))
			}, WithGovernor(g), WithNestedCalls())
			if err != nil {
				t.Fatal(err)
			}
			if nestedDelay < 9*time.Second {
				t.Fatalf("the nested call's retry came %v after its first attempt, want about 10 s (a token every 10 s): the test's premise", nestedDelay)
			}
			r := rec.first(observe.Retry)
			if r.Retry != 1 || r.Scope != ec2Vpcs || r.Wait <= 0 || r.Wait > time.Second {
				t.Errorf("the nested call's Retry event: %v retry %d, Wait %v; want retry 1 of %v, Wait the backoff Do slept (100 ms at most, jittered), not the token wait after it", r.Scope, r.Retry, r.Wait, ec2Vpcs)
			}
		})
	})
}
