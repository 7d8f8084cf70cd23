package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// Successes reset the fleet's count of consecutive failures, even those of
// a process whose view shows none: with a threshold of 3, B fails twice,
// A (its view read before, closed with no failure) succeeds 10 times, and
// B's next failure is the first of a new streak, not the third. (A sent
// nothing, its view pristine, and the breaker opened.)
func TestSuccessesResetFailuresTheViewDoesNotShow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		a := newProcess(t, be, prefix, resilience.Config{})
		b := newProcess(t, be, prefix, resilience.Config{})
		spec := state.BreakerSpec{Threshold: 3, Cooldown: time.Minute, MaxCooldown: time.Minute}
		ba := a.store.Breaker("success/reset", spec)
		bb := b.store.Breaker("success/reset", spec)
		ba.Allow(0) // A's view: closed, fresh for a second
		bb.Failure(0)
		bb.Failure(0)
		for range 10 {
			if _, ok, _ := ba.Allow(time.Millisecond); !ok {
				t.Fatal("refused")
			}
			ba.Success()
		}
		if bb.Failure(0) {
			t.Fatalf("a failure after 10 successes opened the breaker: %+v", ba.Snapshot(0))
		}
	})
}

// What it costs: while its view shows no failure, a process tells Redis of
// one success per WithBreakerStaleness, not of each.
func TestSuccessesOfAPristineBreakerCostOneRoundTripPerStaleness(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		p := newProcess(t, be, uniquePrefix(t), resilience.Config{}, fleet.WithHeartbeat(time.Hour), fleet.WithBreakerStaleness(time.Hour))
		br := p.store.Breaker("success/cost", state.BreakerSpec{Threshold: 3, Cooldown: time.Minute, MaxCooldown: time.Minute})
		br.Allow(0)
		before := p.store.Stats().RedisCalls
		for range 1000 {
			br.Success()
		}
		if n := p.store.Stats().RedisCalls - before; n != 1 {
			t.Fatalf("1000 successes of a pristine breaker made %d Redis calls, want 1", n)
		}
	})
}
