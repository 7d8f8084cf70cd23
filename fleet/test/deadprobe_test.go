package test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
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
		a := newProcess(t, be, prefix, cfg, patient)
		b := newProcess(t, be, prefix, cfg, patient)
		// Two calls of A answered with throttling, 4.3 s apart, each in
		// its retries (its backoff), none given up: dead, 4 s of
		// failures, the last recent.
		failForDead(t, a)
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
		a := newProcess(t, be, prefix, cfg, patient)
		b := newProcess(t, be, prefix, cfg, patient)
		c := newProcess(t, be, prefix, cfg, patient)
		// Two calls of A and two of B answered with throttling, 4.3 s
		// apart, each in its retries, none given up: dead for both; A's
		// last answer finds the scope dead first.
		failForDead(t, a, b)
		probedAlive(t, named{a, "A"}, named{c, "C"}, named{b, "B"})
	})
}

// failForDead has each of procs (whose scope vpcs has a threshold of 2
// and breaker_dead_seconds of 4 s) make two calls answered with
// throttling, each in its retries (its backoff), none given up: a first
// at once, and a second 4.3 s in, or 4 s after the first calls' answers
// were recorded when a loaded machine ran them late. No call's admission
// finds the scope dead: the streak spans less than 4 s before the second
// calls' answers, and their admission comes 4 s after the last failure,
// more than half of breaker_dead_seconds (2 s), which a streak's last
// failure must be within. Their answers find the scope dead, 4 s of
// failures the last now, and open the fleet's breaker: those of procs[0]
// first. (Before, a third round of calls ran 2 s in, at a fixed time:
// its answers, recorded late on a loaded machine, came less than 2 s
// before the last calls, whose admission then found the scope dead,
// "round at 2s answered 2.338797434s"; or more than 4 s after the first,
// and opened the breaker themselves, "round 3, 7.189s in (the last
// answers 2.35s before): circuit open".)
func failForDead(t *testing.T, procs ...*process) {
	t.Helper()
	throttled := &apiErr{code: "Throttling", status: 400}
	start := time.Now()
	var gds []*resilience.Guard
	t.Cleanup(func() {
		for _, gd := range gds {
			gd.End(throttled)
		}
	})
	var first time.Time // when the first calls' answers were recorded
	for round, at := range []time.Time{start, start.Add(4300 * time.Millisecond)} {
		if round == 1 && first.Add(4*time.Second).After(at) {
			at = first.Add(4 * time.Second)
		}
		time.Sleep(time.Until(at))
		var now []*resilience.Guard
		for _, p := range procs {
			gd := p.begin(t)
			if err := gd.Enter(context.Background()); err != nil {
				t.Fatalf("round %d, %v in: %v", round+1, time.Since(start).Round(time.Millisecond), err)
			}
			gd.Release()
			now = append(now, gd)
		}
		for _, gd := range now {
			gd.After(throttled)
		}
		gds = append(gds, now...)
		if round == 0 {
			first = time.Now()
		}
	}
}

// patient is the operation timeout of the processes of the tests above,
// which are not about outages: under -race on a loaded 2-core machine,
// Redis (miniredis above all, in the test's own process) answered past
// the 250 ms default, and the store that waited went on local limits,
// where its breaker is the view it last read (A's, open) and Inspect
// said Dead "throttled for good" after the fleet's probe had succeeded.
var patient = fleet.WithTimeout(2 * time.Second)

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
	if st := checked.store.Stats(); st.Fallbacks > 0 {
		t.Fatalf("%s's store went on local limits (%+v): Redis left an operation unanswered past the timeout, and what the fleet's probe found is not %s's to know", checked.name, st, checked.name)
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
