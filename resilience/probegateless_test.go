//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// A call of Begin put in a context of the caller's own (no gate) that
// lent the half-open breaker's probe to a call nested in its attempt
// gets nothing back when that borrower is dropped without End and
// collected: its attempt cannot be read from the collector's goroutine.
// The breaker does not stall for it: the lender's next attempt asks the
// breaker as a probe's retry does and goes as the probe, whose answer is
// the verdict; and a call no lease reaches is let through as the probe
// once the borrowed lease (one cooldown) is over.
func TestAGatelessLendersDroppedBorrowerStallsNoBreaker(t *testing.T) {
	for _, next := range []string{"the lender's retry", "another call after the lease"} {
		t.Run(next, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{BreakerThreshold: 1, BreakerCooldownSeconds: 60}})
				ctx := context.Background()
				sdkLoop(ctx, g, ec2Vpcs, 1, func() error { return transientErr() })
				time.Sleep(time.Minute) // the cooldown: the next call is the probe

				lender, _ := g.Begin(ctx, ec2Vpcs, WithPolicy(RetryPolicy{MaxAttempts: 3}))
				if err := lender.Enter(ctx); err != nil {
					t.Fatalf("the probe: %v", err)
				}
				func() {
					borrower, _ := g.Begin(&loopCtx{Context: ctx, gd: lender}, ec2Vpcs)
					if err := borrower.Enter(&loopCtx{Context: ctx, gd: lender}); err != nil {
						t.Fatalf("a call nested in the probe's attempt: %v; want it through on the probe it borrows", err)
					}
					// dropped: no After, no End
				}()
				for range 3 {
					runtime.GC()
				}
				lender.After(errors.New("local: the attempt's body could not be read")) // no verdict
				switch next {
				case "the lender's retry":
					if _, err := lender.Retry(0); err != nil {
						t.Fatal(err)
					}
					if err := lender.Enter(ctx); err != nil {
						t.Fatalf("the lender's retry, its borrower dropped: %v; want it through as the probe", err)
					}
					lender.After(nil)
					lender.End(nil)
				case "another call after the lease":
					lender.End(errors.New("local: the attempt's body could not be read"))
					time.Sleep(time.Minute) // the borrowed lease, one cooldown
					if err := Do(ctx, ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
						t.Fatalf("a call once the borrowed lease is over: %v; want it through as the probe", err)
					}
				}
				if s := g.Inspect(ec2Vpcs).Breaker.State; s != state.Closed {
					t.Errorf("the breaker is %v after the probe's success, want closed", s)
				}
			})
		})
	}
}
