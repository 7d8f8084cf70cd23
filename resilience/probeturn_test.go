//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A call nested in an attempt that borrowed the half-open breaker's probe
// and ends with no verdict gives it back to that attempt only
// (giveProbeBack), not to a later attempt of the same call, which asked
// the breaker again and may have lent the probe to another nested call:
// given back there, the call would hold the probe while that nested call
// does, and a third nested call would borrow it again, two probes out.
// The attempts' leases are told apart by their turns, which other calls'
// probe leases, taken between, must not bring back to the same number:
// here 65534 of them, as many as brought a 16-bit count taken across the
// process back to the turn the first attempt lent (a run in which
// thousands of scopes' breakers go half-open at once takes as many
// within the minute a retry's backoff may last).
func TestAProbeGivenBackFindsOnlyTheAttemptThatLentIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BreakerThreshold: 1, BreakerCooldownSeconds: 60}})
		ctx := context.Background()
		sdkLoop(ctx, g, ec2Vpcs, 1, func() error { return transientErr() })
		time.Sleep(time.Minute) // the cooldown: the next call is the probe

		outer, _ := g.Begin(ctx, ec2Vpcs, WithPolicy(RetryPolicy{MaxAttempts: 5}))
		if err := outer.Enter(ctx); err != nil {
			t.Fatalf("the probe's first attempt: %v", err)
		}
		attempt := &loopCtx{Context: ctx, gd: outer} // the attempt's context
		first, _ := g.Begin(attempt, ec2Vpcs)
		if err := first.Enter(attempt); err != nil {
			t.Fatalf("a call nested in the first attempt: %v; want it through on the probe it borrows", err)
		}
		// The first attempt ends with a local error (no verdict), and the
		// nested call goes on. Other calls take probe leases meanwhile.
		outer.After(errors.New("local: the attempt's body could not be read"))
		other := new(Guard)
		for range 1<<16 - 2 {
			other.holdProbe()
		}
		if _, err := outer.Retry(0); err != nil {
			t.Fatalf("Retry: %v", err)
		}
		if err := outer.Enter(ctx); err != nil {
			t.Fatalf("the probe's retry: %v; want it through as the probe", err)
		}
		second, _ := g.Begin(attempt, ec2Vpcs)
		if err := second.Enter(attempt); err != nil {
			t.Fatalf("a call nested in the retry: %v; want it through on the probe it borrows", err)
		}
		// The first nested call ends with no verdict: its loan was the
		// first attempt's, which is over.
		first.End(context.Canceled)
		third, _ := g.Begin(attempt, ec2Vpcs)
		var coe *CircuitOpenError
		if err := third.TryEnter(); !errors.As(err, &coe) {
			t.Errorf("a third call nested in the retry, the second holding the probe: TryEnter = %v, want a *CircuitOpenError: the probe given back by the first attempt's borrower went to the retry, two probes out", err)
		}
		third.End(nil)
		second.End(nil)
		outer.End(nil)
	})
}
