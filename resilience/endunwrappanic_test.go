//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// End reads the refusal a caller ends a call with (TryEnter's, for the
// call or its retry) to record it as the refusal it is, and that read
// runs the methods of the errors of the caller's chain, as the
// classifier's does: an error there whose Unwrap panics (brokenCause,
// the provider's answer a refusal carries, or an error the caller joined
// to the refusal) is the error's panic, not the governor's. End records
// the call, as it records one whose error reads whole, and does not
// panic.
func TestEndReadsARefusalWhoseChainPanics(t *testing.T) {
	ends := func(t *testing.T, gd *Guard, err error) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("End(%T) panicked: %v", err, r)
			}
		}()
		gd.End(err)
	}
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})

		// A retry an open breaker refuses, its last answer a throttle
		// whose Unwrap panics: the call failed after its retries.
		r := newRun(context.Background())
		gd := throttledRetryBy(t, g, r.ctx, ec2Subnets, &brokenCause{code: "Throttling", status: 400, msg: "Rate exceeded"})
		err := retryOpenBreakerRefuses(t, g, gd)
		ends(t, gd, err)
		r.lost(t, g, LossGaveUp, 1)

		// A call TryEnter refused for a wait, ended with the refusal
		// joined to an error whose Unwrap panics: refused.
		pauseScope(t, g, ec2Vpcs, 60*time.Second)
		r = newRun(context.Background())
		gd, _ = g.Begin(r.ctx, ec2Vpcs)
		err = gd.TryEnter()
		if !errors.Is(err, ErrNoToken) {
			t.Fatalf("TryEnter on a paused scope: %v, want no token", err)
		}
		ends(t, gd, fmt.Errorf("%w; and %w", err, &brokenCause{code: "Oops", msg: "broken"}))
		r.lost(t, g, LossRefused, 1)
	})
}

// The refusal TryEnter gave a call's retry, joined by the caller after an
// error whose Unwrap panics (errors.Join(callerErr, refusal)), is the
// refusal all the same: the panic ends the read of that error's causes
// only, not of the errors beside it. Before, End found no refusal there,
// and counted a retry the open breaker had refused, never sent, as one
// the SDK sent without telling After.
func TestEndFindsARefusalJoinedAfterAnErrorWhoseUnwrapPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})

		// A retry an open breaker refused, joined after such an error:
		// the call failed after its retries, and no retry was sent.
		r := newRun(context.Background())
		gd := throttledRetryBy(t, g, r.ctx, ec2Subnets, &brokenCause{code: "Throttling", status: 400, msg: "Rate exceeded"})
		err := retryOpenBreakerRefuses(t, g, gd)
		gd.End(errors.Join(&brokenCause{code: "Oops", msg: "broken"}, err))
		r.lost(t, g, LossGaveUp, 1)
		if s := g.Summary(r.stats).Totals; s.Retries != 0 {
			t.Errorf("a retry the breaker refused: %v; want no retry counted", s)
		}
	})
}
