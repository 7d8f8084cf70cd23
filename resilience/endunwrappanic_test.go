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
		gd, _ := g.Begin(r.ctx, ec2Subnets)
		if err := gd.Enter(r.ctx); err != nil {
			t.Fatal(err)
		}
		gd.Release()
		if k := gd.After(&brokenCause{code: "Throttling", status: 400, msg: "Rate exceeded"}); k != Throttled {
			t.Fatalf("After = %v, want THROTTLED", k)
		}
		if _, err := gd.Retry(0); err != nil {
			t.Fatal(err)
		}
		openBreaker(t, g)
		err := gd.TryEnter()
		var coe *CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("TryEnter on an open breaker: %v", err)
		}
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
