package test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// A read of a scope through handles made for the read (the governor's
// Inspect of a scope it holds no entry of: another governor's on the same
// store, or an Inspect that races the scope's first call) leaves the
// breaker the scope's entry holds the store's: what it learns while Redis
// does not answer is written back when Redis answers again, whether the
// read came before the scope's first call or after it. (The store kept
// one breaker per key, the last one made: the read's replaced the live
// one, whose failure during the outage was never written back.)
func TestAReadOfAScopeKeepsItsLiveBreakerWrittenBack(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		for _, order := range []string{"the call, then the read", "the read, then the call"} {
			t.Run(order, func(t *testing.T) {
				px, _ := proxied(t, be)
				prefix := uniquePrefix(t)
				cfg := resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 3, BreakerCooldownSeconds: 60, BreakerMaxCooldownSeconds: 240}}
				p := newProcess(t, at(px.Addr()), prefix, cfg, fleet.WithTimeout(100*time.Millisecond))
				fallsBack(p.store) // the outage: the proxy goes down under it
				// A second governor of p's process on p's store: the scope
				// is not its, and its Inspect reads it from the store.
				reader, err := resilience.NewGovernor(cfg, resilience.WithStateStore(p.store))
				if err != nil {
					t.Fatal(err)
				}
				q := newProcess(t, be, prefix, cfg)
				read := func() {
					if s := reader.Inspect(vpcs).Breaker; s.State != state.Closed || s.Failures != 0 {
						t.Fatalf("the read: breaker %+v, want closed with no failure", s)
					}
				}
				if order == "the read, then the call" {
					read()
				}
				if err := p.do(t, vpcs, ok); err != nil { // the scope's first call
					t.Fatal(err)
				}
				if order == "the call, then the read" {
					read()
				}
				runtime.GC() // the read's handles are gone
				runtime.GC()
				px.Down()
				waitFor(t, 3*time.Second, "local limits", func() bool { return p.store.Stats().Degraded })
				if err := p.do(t, vpcs, func(context.Context) error { return transient }, once); err == nil {
					t.Fatal("the failing call succeeded")
				}
				if err := px.Up(); err != nil {
					t.Fatal(err)
				}
				waitFor(t, 3*time.Second, "back on the shared state", func() bool { return !p.store.Stats().Degraded })
				if s := q.gov.Inspect(vpcs).Breaker; s.State != state.Closed || s.Failures != 1 {
					t.Fatalf("after p counted a failure during an outage (%s): the fleet's breaker %+v, want closed with 1 failure", order, s)
				}
				runtime.KeepAlive(p.gov) // as a program keeps its governor
			})
		}
	})
}

// A lease request's answer refreshes the view of the breaker a scope's
// entry holds, whatever handles of the same scope were made after it
// (Store.Breaker again): a read's (the governor's Inspect of a scope it
// holds no entry of), or one of other settings that something holds (a
// read that raced a Configure of the breaker's settings, another governor
// on the store configured otherwise), so that the live breaker sees at
// once a breaker another process opened. (The store refreshed only the
// breaker made last: the live breaker's view stayed closed for
// WithBreakerStaleness.)
func TestAReadOfAScopeKeepsItsLiveBreakerRefreshed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		spec := state.BreakerSpec{Threshold: 1, Cooldown: time.Minute, MaxCooldown: 4 * time.Minute}
		other := spec
		other.Threshold = 2
		for _, c := range []struct {
			name string
			spec state.BreakerSpec
			held bool // kept after the read
		}{
			{"a read's handle", spec, false},
			{"a held handle of other settings", other, true},
		} {
			t.Run(c.name, func(t *testing.T) {
				prefix := uniquePrefix(t)
				key := "refresh/read"
				p := newProcess(t, be, prefix, resilience.Config{}, fleet.WithBreakerStaleness(time.Hour))
				q := newProcess(t, be, prefix, resilience.Config{})
				live := p.store.Breaker(key, spec)
				bucket := p.store.Bucket(key, state.BucketSpec{Rate: 1, Burst: 1}, 0)
				if _, ok, _ := live.Allow(0); !ok { // the view: closed, fresh for an hour
					t.Fatal("a new breaker refused a call")
				}
				later := p.store.Breaker(key, c.spec)
				later.Snapshot(0)
				if !c.held {
					later = nil
				}
				if !q.store.Breaker(key, spec).Failure(0) {
					t.Fatal("q's failure did not open the fleet's breaker")
				}
				bucket.Reserve(0) // a lease request: its answer carries the breaker
				if w, ok, _ := live.Allow(0); ok {
					t.Fatalf("after %s, a lease answer that carried the breaker q opened: the live breaker let a call through; want refused for about 60 s", c.name)
				} else if w < 55*time.Second {
					t.Fatalf("the live breaker refused a call for %v; want about 60 s", w)
				}
				runtime.KeepAlive(later)
				runtime.KeepAlive(bucket)
			})
		}
	})
}
