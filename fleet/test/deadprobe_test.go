package test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// TestAScopeFoundDeadIsAliveAfterTheFleetsProbe: process A finds a scope
// dead (every answer throttled for breaker_dead_seconds, from
// breaker_threshold calls) and opens the fleet's breaker; after the
// cooldown, B's call is the fleet's probe, and its success closes the
// breaker. The scope is alive: A's next call is sent, and neither A's
// Delay nor its Inspect says otherwise, though A saw no answer since its
// streak of failures (before, A opened the fleet's breaker again at once,
// with no new answer, refusing its own call and B's, each cooldown until
// its last failure was half of breaker_dead_seconds old).
func TestAScopeFoundDeadIsAliveAfterTheFleetsProbe(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		dead := 4.0
		cfg := resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 2, BreakerCooldownSeconds: 1, BreakerDeadSeconds: &dead}}
		a := newProcess(t, be, prefix, cfg)
		b := newProcess(t, be, prefix, cfg)
		throttled := &apiErr{code: "Throttling", status: 400}
		// Three calls of A answered with throttling, 0, 2 and 4.3 s in,
		// each in its retries (its backoff), none given up.
		start := time.Now()
		var gds []*resilience.Guard
		for _, at := range []time.Duration{0, 2000 * time.Millisecond, 4300 * time.Millisecond} {
			time.Sleep(time.Until(start.Add(at)))
			gd := a.begin(t)
			if err := gd.Enter(context.Background()); err != nil {
				t.Fatal(err)
			}
			gd.Release()
			gd.After(throttled)
			gds = append(gds, gd)
		}
		t.Cleanup(func() {
			for _, gd := range gds {
				gd.End(throttled)
			}
		})
		time.Sleep(time.Until(start.Add(4500 * time.Millisecond))) // dead: 4 s of failures, the last recent
		probedAlive(t, named{a, "A"}, named{b, "B"}, named{a, "A"})
	})
}

// TestAScopeAnotherProcessFoundDeadIsAliveAfterTheFleetsProbe: processes A
// and B both saw every answer of a scope throttled for
// breaker_dead_seconds; A found it dead first and opened the fleet's
// breaker, so that B's streak never opened it. After the cooldown, C's
// call is the fleet's probe, and its success closes the breaker. The scope
// is alive for B too: B's next call is sent, and neither B's Delay nor its
// Inspect says otherwise, though B saw no answer since its streak.
func TestAScopeAnotherProcessFoundDeadIsAliveAfterTheFleetsProbe(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		dead := 4.0
		cfg := resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 2, BreakerCooldownSeconds: 1, BreakerDeadSeconds: &dead}}
		a := newProcess(t, be, prefix, cfg)
		b := newProcess(t, be, prefix, cfg)
		c := newProcess(t, be, prefix, cfg)
		throttled := &apiErr{code: "Throttling", status: 400}
		// Three calls of A and three of B answered with throttling, 0, 2
		// and 4.3 s in, each in its retries, none given up.
		start := time.Now()
		var gds []*resilience.Guard
		for _, at := range []time.Duration{0, 2000 * time.Millisecond, 4300 * time.Millisecond} {
			time.Sleep(time.Until(start.Add(at)))
			var now []*resilience.Guard
			for _, p := range []*process{a, b} {
				gd := p.begin(t)
				if err := gd.Enter(context.Background()); err != nil {
					t.Fatal(err)
				}
				gd.Release()
				now = append(now, gd)
			}
			for _, gd := range now { // A's last answer finds the scope dead
				gd.After(throttled)
			}
			gds = append(gds, now...)
		}
		t.Cleanup(func() {
			for _, gd := range gds {
				gd.End(throttled)
			}
		})
		time.Sleep(time.Until(start.Add(4500 * time.Millisecond))) // dead for both
		probedAlive(t, named{a, "A"}, named{c, "C"}, named{b, "B"})
	})
}

// named is a process and its name in a test's messages.
type named struct {
	*process
	name string
}

// probedAlive has opener, which finds the scope vpcs dead, open the
// fleet's breaker with its call; after the cooldown, prober's call is the
// fleet's probe, and its success closes the breaker. It then checks that
// checked, whose streak of failures no answer of its own has ended, finds
// the scope alive: its Inspect and Delay say so, its next call is sent and
// leaves the fleet's breaker closed.
func probedAlive(t *testing.T, opener, prober, checked named) {
	t.Helper()
	var coe *resilience.CircuitOpenError
	if err := opener.do(t, vpcs, ok); !errors.As(err, &coe) {
		t.Fatalf("%s's call to the dead scope: %v, want refused", opener.name, err)
	}
	time.Sleep(1100 * time.Millisecond) // the cooldown
	if err := prober.do(t, vpcs, ok); err != nil {
		t.Fatalf("%s's probe: %v", prober.name, err)
	}
	if st := prober.gov.Inspect(vpcs).Breaker.State; st != state.Closed {
		t.Fatalf("the breaker is %v after %s's probe succeeded, want closed", st, prober.name)
	}
	if dead := checked.gov.Inspect(vpcs).Dead; dead != "" {
		t.Errorf("%s's Inspect after the fleet's probe succeeded: Dead %q, want none", checked.name, dead)
	}
	if d, why := checked.gov.Delay(vpcs); why != nil {
		t.Errorf("%s's Delay after the fleet's probe succeeded: %v, %v; want it can go", checked.name, d, why)
	}
	sent := 0
	if err := checked.do(t, vpcs, func(context.Context) error { sent++; return nil }); err != nil || sent != 1 {
		t.Errorf("%s's call after the fleet's probe succeeded: %v, %d sent; want sent", checked.name, err, sent)
	}
	if st := prober.gov.Inspect(vpcs).Breaker.State; st != state.Closed {
		t.Errorf("the fleet's breaker is %v after %s's call, want closed", st, checked.name)
	}
}
