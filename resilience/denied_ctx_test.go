//go:build go1.25

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
)

// A call whose context ended as the provider's denial came is still lost
// as denied: the caller was handed the answer with no error (cloudghttp's
// GitHub refusal of another quota), so that a ledger that did not list it
// would call the task complete. Nothing is learned from the answer once
// the context is done: the breaker's failures stay as they were, whether
// After saw the answer or not.
func TestEndDeniedOnceTheContextEndedStillLosesTheCall(t *testing.T) {
	for _, after := range []bool{true, false} {
		name := "After did not see it"
		if after {
			name = "After read the answer"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				n := 0
				for range 2 {
					Do(context.Background(), ec2Vpcs, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
				}
				failures := g.Inspect(ec2Vpcs).Breaker.Failures
				if failures == 0 {
					t.Fatal("no breaker failures to keep")
				}
				ctx, cancel := context.WithCancel(context.Background())
				ctx, stats := WithStats(ctx)
				ctx, ledger := WithLedger(ctx, "vpcs")
				gd, _ := g.Begin(ctx, ec2Vpcs)
				if err := gd.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				gd.Release()
				cancel()
				if after {
					gd.After(accessDenied())
				}
				gd.EndDenied(accessDenied())
				if c := g.Summary(stats).Totals; c.Denied != 1 || c.Lost() != 1 || ledger.Count(LossDenied) != 1 {
					t.Errorf("totals %v, ledger %q: want the call lost as denied", c, ledger.Describe())
				}
				if f := g.Inspect(ec2Vpcs).Breaker.Failures; f != failures {
					t.Errorf("the breaker's failures %d after the context ended, want %d: nothing learned", f, failures)
				}
			})
		})
	}
}
