package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// Two processes whose settings of a scope differ in the cooldown (a
// rolling deploy that shortens it) share its breaker all the same: a
// cooldown longer than this process's longest, or a wait past it, that
// another process's settings gave is brought down to this process's
// longest, and the breaker stays open. Before, the process with the
// shorter cooldown read the fleet's open breaker as one no settings could
// have written: it let its calls through to the scope the fleet had found
// down, and its look deleted the breaker, closing it for every process.
func TestAShorterCooldownKeepsTheFleetsOpenBreaker(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// 2 s for Redis, not 250 ms: an operation past it on a loaded host
		// reads the local breaker, not the fleet's.
		a := newProcess(t, be, prefix, resilience.Config{}, fleet.WithTimeout(2*time.Second))
		b := newProcess(t, be, prefix, resilience.Config{}, fleet.WithTimeout(2*time.Second))
		c := newProcess(t, be, prefix, resilience.Config{}, fleet.WithTimeout(2*time.Second))
		long := state.BreakerSpec{Threshold: 1, Cooldown: 5 * time.Minute, MaxCooldown: 10 * time.Minute}
		short := state.BreakerSpec{Threshold: 1, Cooldown: time.Minute, MaxCooldown: time.Minute}
		a.store.Breaker(vpcsKey, long).Failure(0) // opens it for 5 minutes
		bb := b.store.Breaker(vpcsKey, short)
		if wait, ok, _ := bb.Allow(0); ok || wait <= 30*time.Second || wait > 2*time.Minute {
			t.Errorf("B, whose cooldown is a minute, was given (wait %v, allowed %v) by the breaker A opened for 5 minutes; want it refused, for its longest cooldown at most (with the clock skew allowed)", wait, ok)
		}
		if s := bb.Snapshot(0); s.State != state.Open || s.Cooldown != time.Minute {
			t.Errorf("B reads the breaker A opened as %+v, want open with its own longest cooldown, 1m", s)
		}
		if s := c.store.Breaker(vpcsKey, long).Snapshot(0); s.State != state.Open || s.Wait <= 30*time.Second {
			t.Errorf("after B's look, a third process reads the breaker as %+v, want it open still", s)
		}
	})
}
