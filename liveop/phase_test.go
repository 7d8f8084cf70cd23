package liveop

import (
	"errors"
	"fmt"
	"testing"
)

// effects is what a verb left of an operation and its guard.
type effects struct {
	phase     phase
	waiters   int
	result    string // what the callers got: "" (nothing yet), "v", "err", "timeout"
	joinable  bool   // in g.flights
	slots     int    // slots the guard holds
	cooling   bool   // its scope cools down
	delivered bool   // leave: the leaving caller takes the result
	abandoned bool   // leave: it is to be cancelled
	panicked  bool
}

// opIn returns a guard (a failure starts no cooldown, so that whether the
// operation failed shows) holding one operation on aws/1 with two
// callers, set in phase p as the guard's verbs leave it.
func opIn(t *testing.T, p phase) (*Guard, *flight) {
	t.Helper()
	g := newGuard(t, Config{CooldownAfterFailure: ptr(false)})
	f := &flight{key: "k", scopes: []string{"aws/1"}, waiters: 2, done: make(chan struct{})}
	g.flights["k"], g.running[f], g.active["aws/1"], g.total = f, struct{}{}, 1, 1
	switch p {
	case phaseTimedOut:
		g.timeOut(f)
	case phaseAbandoned:
		g.leave(f)
		g.leave(f)
	case phaseEnded:
		g.finish(f, "v", nil, true)
		delete(g.cooling, "aws/1")
	}
	if f.phase != p {
		t.Fatalf("set up %v, got %v", p, f.phase)
	}
	return g, f
}

func effectsOf(g *Guard, f *flight) effects {
	fx := effects{phase: f.phase, waiters: f.waiters, joinable: g.flights[f.key] == f, slots: g.total}
	_, fx.cooling = g.cooling["aws/1"]
	select {
	case <-f.done:
		switch {
		case errors.Is(f.err, ErrTimeout):
			fx.result = "timeout"
		case f.err != nil:
			fx.result = "err"
		default:
			fx.result = fmt.Sprint(f.val)
		}
	default:
	}
	return fx
}

// TestOperationTransitions drives every verb of an operation's life from
// every phase and states the phase and the effects it leaves: a verb that
// cannot happen in a phase panics under the cloudgdebug build (the
// project's tests), whose rows a release build does not drive.
func TestOperationTransitions(t *testing.T) {
	verbs := map[string]func(g *Guard, f *flight) (delivered, abandoned bool){
		"join":        func(g *Guard, f *flight) (bool, bool) { g.join(f); return false, false },
		"timeOut":     func(g *Guard, f *flight) (bool, bool) { g.timeOut(f); return false, false },
		"leave":       func(g *Guard, f *flight) (bool, bool) { return g.leave(f) },
		"finish(v)":   func(g *Guard, f *flight) (bool, bool) { g.finish(f, "v", nil, true); return false, false },
		"finish(err)": func(g *Guard, f *flight) (bool, bool) { g.finish(f, nil, errors.New("x"), true); return false, false },
	}
	rows := []struct {
		from phase
		verb string
		fx   effects
	}{
		{phaseRunning, "join", effects{phase: phaseRunning, waiters: 3, joinable: true, slots: 1}},
		{phaseRunning, "timeOut", effects{phase: phaseTimedOut, waiters: 2, result: "timeout", slots: 1}},
		{phaseRunning, "leave", effects{phase: phaseRunning, waiters: 1, joinable: true, slots: 1}},
		{phaseRunning, "finish(v)", effects{phase: phaseEnded, waiters: 2, result: "v", cooling: true}},
		{phaseRunning, "finish(err)", effects{phase: phaseEnded, waiters: 2, result: "err"}},

		{phaseTimedOut, "join", effects{phase: phaseTimedOut, waiters: 2, result: "timeout", slots: 1, panicked: true}},
		{phaseTimedOut, "timeOut", effects{phase: phaseTimedOut, waiters: 2, result: "timeout", slots: 1}},
		{phaseTimedOut, "leave", effects{phase: phaseTimedOut, waiters: 2, result: "timeout", slots: 1, delivered: true}},
		{phaseTimedOut, "finish(v)", effects{phase: phaseEnded, waiters: 2, result: "timeout"}},
		{phaseTimedOut, "finish(err)", effects{phase: phaseEnded, waiters: 2, result: "timeout"}},

		{phaseAbandoned, "join", effects{phase: phaseAbandoned, slots: 1, panicked: true}},
		{phaseAbandoned, "timeOut", effects{phase: phaseAbandoned, slots: 1}},
		{phaseAbandoned, "leave", effects{phase: phaseAbandoned, slots: 1, panicked: true}},
		{phaseAbandoned, "finish(v)", effects{phase: phaseEnded}},
		{phaseAbandoned, "finish(err)", effects{phase: phaseEnded}},

		{phaseEnded, "join", effects{phase: phaseEnded, waiters: 2, result: "v", panicked: true}},
		{phaseEnded, "timeOut", effects{phase: phaseEnded, waiters: 2, result: "v"}},
		{phaseEnded, "leave", effects{phase: phaseEnded, waiters: 2, result: "v", delivered: true}},
		{phaseEnded, "finish(v)", effects{phase: phaseEnded, waiters: 2, result: "v", panicked: true}},
		{phaseEnded, "finish(err)", effects{phase: phaseEnded, waiters: 2, result: "v", panicked: true}},
	}
	covered := map[string]bool{}
	for _, r := range rows {
		covered[fmt.Sprintf("%v/%s", r.from, r.verb)] = true
		if r.fx.panicked && !checkPhases {
			continue // a release build does not check the moves
		}
		t.Run(fmt.Sprintf("%v/%s", r.from, r.verb), func(t *testing.T) {
			g, f := opIn(t, r.from)
			var got effects
			func() {
				defer func() { got.panicked = recover() != nil }()
				got.delivered, got.abandoned = verbs[r.verb](g, f)
			}()
			panicked, delivered, abandoned := got.panicked, got.delivered, got.abandoned
			got = effectsOf(g, f)
			got.panicked, got.delivered, got.abandoned = panicked, delivered, abandoned
			if got != r.fx {
				t.Errorf("%v --%s-->\n got %+v\nwant %+v", r.from, r.verb, got, r.fx)
			}
		})
	}
	for v := range verbs {
		for p := range numPhases {
			if !covered[fmt.Sprintf("%v/%s", p, v)] {
				t.Errorf("the table does not drive %s from %v", v, p)
			}
		}
	}
	// The last caller to leave a running operation abandons it.
	g, f := opIn(t, phaseRunning)
	g.leave(f)
	if _, abandoned := g.leave(f); !abandoned || f.phase != phaseAbandoned || g.flights["k"] != nil {
		t.Fatalf("the last caller left: abandoned %v, %v, joinable %v", abandoned, f.phase, g.flights["k"] != nil)
	}
}

// TestOperationIllegalTransitionPanics: the one writer of the phase refuses
// a move its table does not list; under the cloudgdebug build the tests
// use, it panics.
func TestOperationIllegalTransitionPanics(t *testing.T) {
	for _, m := range [][2]phase{{phaseTimedOut, phaseAbandoned}, {phaseAbandoned, phaseTimedOut}, {phaseEnded, phaseRunning}, {phaseEnded, phaseEnded}, {phaseTimedOut, phaseRunning}} {
		if legal[m[0]].has(m[1]) {
			t.Errorf("%v -> %v is listed as legal", m[0], m[1])
		}
	}
	panicked := func() (p bool) {
		defer func() { p = recover() != nil }()
		g := newGuard(t, Config{})
		g.to(&flight{phase: phaseEnded}, phaseRunning)
		return false
	}()
	if panicked != checkPhases {
		t.Fatalf("ended -> running panicked: %v; the check is on: %v", panicked, checkPhases)
	}
}
