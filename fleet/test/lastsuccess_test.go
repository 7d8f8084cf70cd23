package test

import (
	"context"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/internal/clocktest"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// clockedProcess is newProcess whose governor reads clock, so that a test
// moves the governor's time (a streak of failures spanning
// breaker_dead_seconds, a view going stale) without sleeping. Redis keeps
// its own clock.
func clockedProcess(t *testing.T, be backend, prefix string, cfg resilience.Config, clock *clocktest.Manual, opts ...fleet.Option) *process {
	t.Helper()
	rdb := be.client()
	opts = append([]fleet.Option{fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(100 * time.Millisecond)}, opts...)
	st := fleet.New(rdb, opts...)
	t.Cleanup(func() {
		st.Close()
		rdb.Close()
	})
	onRedis(t, st)
	g, err := resilience.NewGovernor(cfg, resilience.WithStateStore(st), resilience.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	return &process{store: st, gov: g, rdb: rdb}
}

// TestASuccessOfAProcessThatSawNoFailureEndsAnothersStreak: process B's
// calls to a scope are answered with throttling, each in its retries (none
// given up, so the fleet's breaker counts no failure), while process A's
// call to it succeeds in the middle of B's streak. A's success reaches
// Redis (the first of its WithBreakerStaleness period) and is the scope's
// last success for every process (LastSuccess): B's streak, which began
// before it, is over, and B's next failed answer, breaker_dead_seconds
// after its first, does not find the scope dead nor open the fleet's
// breaker. (Before, a success that found the fleet's count of failures at
// zero wrote nothing: B found the scope dead and opened the breaker for
// the fleet, A's calls with it, though A's call had just succeeded.)
func TestASuccessOfAProcessThatSawNoFailureEndsAnothersStreak(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		dead := 4.0
		cfg := resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 2, BreakerCooldownSeconds: 60, BreakerDeadSeconds: &dead}}
		clock := clocktest.Start(time.Now())
		a := clockedProcess(t, be, prefix, cfg, clock)
		b := clockedProcess(t, be, prefix, cfg, clock)
		throttled := &apiErr{code: "Throttling", status: 400}
		var gds []*resilience.Guard
		t.Cleanup(func() {
			for _, gd := range gds {
				gd.End(throttled)
			}
		})
		fail := func(at time.Duration) {
			t.Helper()
			gd := b.begin(t)
			gds = append(gds, gd)
			if err := gd.Enter(context.Background()); err != nil {
				t.Fatalf("B's call %v in: %v", at, err)
			}
			gd.Release()
			gd.After(throttled)
		}
		start := clock.Now()
		fail(0)
		clock.Advance(2 * time.Second)
		fail(2 * time.Second)
		if err := a.do(t, vpcs, ok); err != nil {
			t.Fatalf("A's call: %v", err)
		}
		clock.Advance(start.Add(4300 * time.Millisecond).Sub(clock.Now()))
		fail(4300 * time.Millisecond) // 4.3 s of B's failures, from 3 calls
		if dead := b.gov.Inspect(vpcs).Dead; dead != "" {
			t.Errorf("B's Inspect: Dead %q after A's call succeeded within B's streak; want none", dead)
		}
		if s := a.gov.Inspect(vpcs).Breaker; s.State != state.Closed {
			t.Errorf("the fleet's breaker is %v (%s) after A's call succeeded within B's streak; want closed", s.State, a.gov.Inspect(vpcs).OpenReason)
		}
	})
}
