package test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/internal/clocktest"
	"github.com/cloudg/cloudg/resilience"
)

// The governor's reclaimer drops a scope whose breaker learned something
// during an outage once nothing of it is left to keep: when what it
// learned was written back and the fleet's breaker is pristine (a failure,
// then a success that reset it, written back when Redis answers again),
// and, once the store is closed while Redis was still gone, when its local
// breaker is pristine again (a success after Close). Until then it keeps
// it. (The breaker-level rule is
// TestAClosedStoresBreakerIsPristineOnceItsLocalBreakerIs, in package
// fleet; before it, a closed store's scope that learned something during
// an outage was kept for as long as the governor lived.)
func TestTheReclaimerDropsAScopeOnceItsBreakerHoldsNothing(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		for _, c := range []string{"written back", "pristine after Close"} {
			t.Run(c, func(t *testing.T) {
				px, _ := proxied(t, be)
				prefix := uniquePrefix(t)
				cfg := resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 3, BreakerCooldownSeconds: 60, BreakerMaxCooldownSeconds: 240}}
				clock := clocktest.Start(time.Now())
				rdb := at(px.Addr()).client()
				st := fleet.New(rdb, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(50*time.Millisecond),
					fleet.WithTimeout(100*time.Millisecond))
				t.Cleanup(func() {
					st.Close()
					rdb.Close()
				})
				g, err := resilience.NewGovernor(cfg, resilience.WithStateStore(st), resilience.WithClock(clock),
					resilience.WithReclaimAfter(time.Minute))
				if err != nil {
					t.Fatal(err)
				}
				p := &process{store: st, gov: g, rdb: rdb}
				other := vpcs
				other.Operation = "DescribeSubnets"
				// held reports whether the governor holds vpcs, after the
				// reclaimer's steps, taken by calls of another scope, with
				// vpcs idle past WithReclaimAfter.
				held := func() bool {
					t.Helper()
					clock.Advance(2 * time.Minute)
					for range 3 {
						if err := p.do(t, other, ok); err != nil {
							t.Fatal(err)
						}
					}
					for sc := range g.Scopes() {
						if sc == vpcs {
							return true
						}
					}
					return false
				}

				px.Down()
				waitFor(t, 3*time.Second, "local limits", func() bool { return st.Stats().Degraded })
				if err := p.do(t, vpcs, func(context.Context) error { return transient }, once); err == nil {
					t.Fatal("the failing call succeeded")
				}
				switch c {
				case "written back":
					if err := p.do(t, vpcs, ok); err != nil { // resets the failure, on the local breaker
						t.Fatal(err)
					}
					if !held() {
						t.Fatal("a scope whose breaker learned a failure and a success during an outage, not written back yet, was dropped")
					}
					if err := px.Up(); err != nil {
						t.Fatal(err)
					}
					waitFor(t, 3*time.Second, "back on the shared state", func() bool { return !st.Stats().Degraded })
				case "pristine after Close":
					st.Close() // Redis still gone: nothing written back
					if !held() {
						t.Fatal("a scope whose breaker counted a failure during an outage, the store closed, was dropped with the failure")
					}
					if err := p.do(t, vpcs, ok); err != nil { // resets the failure, on the local breaker
						t.Fatal(err)
					}
				}
				if held() {
					t.Errorf("%s: the scope's breaker holds nothing (Inspect: %+v), and the governor still holds the scope idle past WithReclaimAfter",
						c, g.Inspect(vpcs).Breaker)
				}
				runtime.KeepAlive(g)
			})
		}
	})
}
