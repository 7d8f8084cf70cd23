package breaker

import (
	"fmt"
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

// TestTransitions drives every verb from every position of a breaker
// (threshold 3, cooldown 60 s doubling up to 600 s), at 100 s, and states
// what it answers and where the breaker is after it (spec 2.6).
func TestTransitions(t *testing.T) {
	const s = time.Second
	sp := state.BreakerSpec{Threshold: 3, Cooldown: 60 * s, MaxCooldown: 600 * s}
	const now = 100 * s
	from := map[string]func() *Breaker{
		"closed": func() *Breaker { return New(sp) },
		"closed, one failure short": func() *Breaker {
			b := New(sp)
			b.Failure(0)
			b.Failure(0)
			return b
		},
		"open in its cooldown": func() *Breaker { // until 150 s
			b := New(sp)
			b.Trip(90 * s)
			return b
		},
		"open past its cooldown": func() *Breaker { // until 60 s
			b := New(sp)
			b.Trip(0)
			return b
		},
		"half-open in the lease": func() *Breaker { // lease until 120 s
			b := New(sp)
			b.Trip(0)
			b.Allow(60 * s)
			return b
		},
		"half-open past the lease": func() *Breaker { // lease until 20 s
			b := New(sp)
			b.Trip(-100 * s)
			b.Allow(-40 * s)
			return b
		},
	}
	closed := func(f int) state.BreakerSnapshot {
		return state.BreakerSnapshot{State: state.Closed, Failures: f, Cooldown: 60 * s}
	}
	open := func(cd, wait time.Duration) state.BreakerSnapshot {
		return state.BreakerSnapshot{State: state.Open, Cooldown: cd, Wait: wait}
	}
	half := func(wait time.Duration) state.BreakerSnapshot {
		return state.BreakerSnapshot{State: state.HalfOpen, Cooldown: 60 * s, Wait: wait}
	}
	verbs := map[string]func(b *Breaker) string{
		"Allow": func(b *Breaker) string {
			w, ok, probe := b.Allow(now)
			return fmt.Sprintf("%v %v %v", w, ok, probe)
		},
		"AllowProbe": func(b *Breaker) string {
			w, ok := b.AllowProbe(now)
			return fmt.Sprintf("%v %v", w, ok)
		},
		"Success": func(b *Breaker) string { return fmt.Sprint(b.Success()) },
		"Failure": func(b *Breaker) string {
			opened, st := b.FailureFrom(now)
			return fmt.Sprintf("%v %v", opened, st)
		},
		"Trip": func(b *Breaker) string { return fmt.Sprint(b.Trip(now)) },
	}
	type row struct {
		from, verb string
		answer     string
		after      state.BreakerSnapshot
	}
	rows := []row{
		{"closed", "Allow", "0s true false", closed(0)},
		{"closed", "AllowProbe", "0s true", closed(0)},
		{"closed", "Success", "false", closed(0)},
		{"closed", "Failure", "false closed", closed(1)},
		{"closed", "Trip", "true", open(60*s, 60*s)},

		{"closed, one failure short", "Allow", "0s true false", closed(2)},
		{"closed, one failure short", "AllowProbe", "0s true", closed(2)},
		{"closed, one failure short", "Success", "false", closed(0)},
		{"closed, one failure short", "Failure", "true closed", open(60*s, 60*s)},
		{"closed, one failure short", "Trip", "true", open(60*s, 60*s)},

		{"open in its cooldown", "Allow", "50s false false", open(60*s, 50*s)},
		{"open in its cooldown", "AllowProbe", "50s false", open(60*s, 50*s)},
		{"open in its cooldown", "Success", "false", open(60*s, 50*s)},
		{"open in its cooldown", "Failure", "false open", open(60*s, 50*s)},
		{"open in its cooldown", "Trip", "false", open(60*s, 50*s)},

		{"open past its cooldown", "Allow", "0s true true", half(60 * s)},
		{"open past its cooldown", "AllowProbe", "0s false", open(60*s, 0)},
		{"open past its cooldown", "Success", "false", open(60*s, 0)},
		{"open past its cooldown", "Failure", "false open", open(60*s, 0)},
		{"open past its cooldown", "Trip", "false", open(60*s, 0)},

		{"half-open in the lease", "Allow", "20s false false", half(20 * s)},
		{"half-open in the lease", "AllowProbe", "0s true", half(20 * s)},
		{"half-open in the lease", "Success", "true", closed(0)},
		{"half-open in the lease", "Failure", "true half_open", open(120*s, 120*s)},
		{"half-open in the lease", "Trip", "true", open(120*s, 120*s)},

		{"half-open past the lease", "Allow", "0s true true", half(60 * s)},
		{"half-open past the lease", "AllowProbe", "0s true", half(0)},
		{"half-open past the lease", "Success", "true", closed(0)},
		{"half-open past the lease", "Failure", "true half_open", open(120*s, 120*s)},
		{"half-open past the lease", "Trip", "true", open(120*s, 120*s)},
	}
	seen := map[[2]string]bool{}
	for _, r := range rows {
		seen[[2]string{r.from, r.verb}] = true
		b := from[r.from]()
		if got := verbs[r.verb](b); got != r.answer {
			t.Errorf("%s, %s: answered %q; want %q", r.from, r.verb, got, r.answer)
		}
		if got := b.Snapshot(now); got != r.after {
			t.Errorf("%s, %s: then %+v; want %+v", r.from, r.verb, got, r.after)
		}
	}
	for f := range from {
		for v := range verbs {
			if !seen[[2]string{f, v}] {
				t.Errorf("no row for %s, %s", f, v)
			}
		}
	}
}
