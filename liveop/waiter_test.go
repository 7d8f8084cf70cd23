package liveop

import (
	"fmt"
	"testing"
)

// waitEffects is what an event left of a waiting caller and its guard.
type waitEffects struct {
	phase    waitPhase
	closed   bool // its ready is closed (or was never made): it looks again
	held     int  // slots kept for it per scope (Guard.held), of its scope aws/1
	heldAll  int  // and of the total
	kept     int  // slots kept for it while it waits for another scope (Guard.kept), of aws/1
	queued   bool // in Guard.queue
	panicked bool
}

// waiterIn returns a guard with one waiting caller for aws/1, set in phase
// p as the guard's events leave it: waitWoken as it first looks, asleep
// keeping aws/1's free slot (as when another of its scopes is full),
// handed its slots, or gone.
func waiterIn(t *testing.T, p waitPhase) (*Guard, *waiter) {
	t.Helper()
	g := newGuard(t, Config{})
	w := g.enqueue(req("w", "aws/1"), []string{"aws/1"}, nil)
	switch p {
	case waitAsleep:
		g.sleep(w, nesting{known: true})
		g.keep(w)
	case waitHanded:
		g.hold(w)
	case waitGone:
		g.unqueue(w)
	}
	if w.phase != p {
		t.Fatalf("set up %v, got %v", p, w.phase)
	}
	return g, w
}

func waitEffectsOf(g *Guard, w *waiter) waitEffects {
	fx := waitEffects{phase: w.phase, closed: true, held: g.held["aws/1"], heldAll: g.heldAll, kept: g.kept["aws/1"]}
	if w.ready != nil {
		select {
		case <-w.ready:
		default:
			fx.closed = false
		}
	}
	for _, x := range g.queue {
		fx.queued = fx.queued || x == w
	}
	return fx
}

// Every event of a waiting caller from every phase: the phase it leaves
// the caller in and what it does to the guard, or the panic (under the
// cloudgdebug build tag) of a move the transition table does not allow.
// The events are the only writers of a waiter's phase, through
// Guard.toWait.
func TestWaiterTransitions(t *testing.T) {
	events := map[string]func(*Guard, *waiter){
		"sleep":   func(g *Guard, w *waiter) { g.sleep(w, nesting{known: true}) },
		"wake":    (*Guard).wake,
		"hold":    (*Guard).hold,
		"unhold":  func(g *Guard, w *waiter) { g.unhold(w) },
		"unqueue": (*Guard).unqueue,
	}
	woken := waitEffects{phase: waitWoken, closed: true, queued: true}
	asleep := waitEffects{phase: waitAsleep, kept: 1, queued: true}
	handed := waitEffects{phase: waitHanded, closed: true, held: 1, heldAll: 1, queued: true}
	gone := waitEffects{phase: waitGone, closed: true}
	panics := func(fx waitEffects) waitEffects { fx.panicked = true; return fx }
	rows := []struct {
		from  waitPhase
		event string
		fx    waitEffects
	}{
		{waitWoken, "sleep", waitEffects{phase: waitAsleep, queued: true}},
		{waitWoken, "wake", woken},
		{waitWoken, "hold", handed},
		{waitWoken, "unhold", woken},
		{waitWoken, "unqueue", gone},

		{waitAsleep, "sleep", panics(asleep)},
		{waitAsleep, "wake", waitEffects{phase: waitWoken, closed: true, kept: 1, queued: true}},
		{waitAsleep, "hold", handed}, // in place of the free slot kept for it
		{waitAsleep, "unhold", waitEffects{phase: waitAsleep, queued: true}},
		{waitAsleep, "unqueue", gone},

		{waitHanded, "sleep", panics(handed)},
		{waitHanded, "wake", handed},
		{waitHanded, "hold", panics(handed)},
		{waitHanded, "unhold", woken},
		{waitHanded, "unqueue", gone},

		{waitGone, "sleep", panics(gone)},
		{waitGone, "wake", panics(gone)},
		{waitGone, "hold", panics(gone)},
		{waitGone, "unhold", gone},
		{waitGone, "unqueue", panics(gone)},
	}
	covered := map[string]bool{}
	for _, r := range rows {
		covered[fmt.Sprintf("%v/%s", r.from, r.event)] = true
		if r.fx.panicked && !checkPhases {
			continue // a release build does not check the moves
		}
		t.Run(fmt.Sprintf("%v/%s", r.from, r.event), func(t *testing.T) {
			g, w := waiterIn(t, r.from)
			panicked := func() (p bool) {
				defer func() { p = recover() != nil }()
				events[r.event](g, w)
				return false
			}()
			got := waitEffectsOf(g, w)
			got.panicked = panicked
			if got != r.fx {
				t.Errorf("%v --%s-->\n got %+v\nwant %+v", r.from, r.event, got, r.fx)
			}
		})
	}
	for p := range numWaitPhases {
		for e := range events {
			if !covered[fmt.Sprintf("%v/%s", p, e)] {
				t.Errorf("no row for %s from %v", e, p)
			}
		}
	}
}

// The transition table allows no move it does not list: a waiter gone
// moves no more, and one handed its slots lets go of them (waitWoken)
// before it sleeps or leaves.
func TestWaiterTransitionTable(t *testing.T) {
	want := map[waitPhase][]waitPhase{
		waitWoken:  {waitAsleep, waitHanded, waitGone},
		waitAsleep: {waitWoken, waitHanded, waitGone},
		waitHanded: {waitWoken},
		waitGone:   nil,
	}
	for from := range numWaitPhases {
		for to := range numWaitPhases {
			allowed := false
			for _, p := range want[from] {
				allowed = allowed || p == to
			}
			if legalWait[from][to] != allowed {
				t.Errorf("%v -> %v: legal %v, want %v", from, to, legalWait[from][to], allowed)
			}
		}
	}
}
