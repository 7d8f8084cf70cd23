package test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// What a process's local breaker learns while Redis does not answer it is
// written back when Redis answers again, so that the fleet neither forgets
// a scope the process found dead (another process let calls through it)
// nor keeps open one it found alive (another process refused calls for the
// rest of a cooldown a successful probe had ended). The newer knowledge
// wins: a breaker the fleet changed after the local one did keeps the
// fleet's state.
func TestTheLocalBreakerIsWrittenBack(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		spec := state.BreakerSpec{Threshold: 1, Cooldown: time.Minute, MaxCooldown: 4 * time.Minute}
		// p reaches Redis through a proxy, q directly.
		setup := func(t *testing.T) (p, q *process, px *redisproxy.Proxy, prefix string) {
			px, err := redisproxy.Start(be.addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(px.Close)
			prefix = uniquePrefix(t)
			p = newProcess(t, at(px.Addr()), prefix, resilience.Config{}, fleet.WithTimeout(100*time.Millisecond))
			q = newProcess(t, be, prefix, resilience.Config{})
			return p, q, px, prefix
		}
		wait := func(t *testing.T, p *process, degraded bool) {
			t.Helper()
			deadline := time.Now().Add(3 * time.Second)
			for p.store.Stats().Degraded != degraded { // the heartbeat notices
				if time.Now().After(deadline) {
					t.Fatalf("degraded is not %v", degraded)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		outage := func(t *testing.T, p *process, px *redisproxy.Proxy, during func()) {
			t.Helper()
			px.Down()
			wait(t, p, true)
			during()
			if err := px.Up(); err != nil {
				t.Fatal(err)
			}
			wait(t, p, false)
		}

		t.Run("found dead", func(t *testing.T) {
			p, q, px, _ := setup(t)
			pb, qb := p.store.Breaker("writeback/dead", spec), q.store.Breaker("writeback/dead", spec)
			outage(t, p, px, func() {
				if !pb.Failure(0) {
					t.Fatal("the local breaker did not open")
				}
			})
			if w, ok, _ := qb.Allow(0); ok || w < 55*time.Second {
				t.Fatalf("after p found the scope dead during an outage: another process's Allow: ok %v, wait %v; want refused for about 60 s", ok, w)
			}
			runtime.KeepAlive(pb) // as a governor keeps its scopes' breakers
		})

		t.Run("found alive", func(t *testing.T) {
			p, q, px, _ := setup(t)
			pb, qb := p.store.Breaker("writeback/alive", spec), q.store.Breaker("writeback/alive", spec)
			if !pb.Failure(0) { // the fleet's breaker opens for 60 s
				t.Fatal("did not open")
			}
			outage(t, p, px, func() {
				if _, ok, probe := pb.Allow(time.Minute); !ok || !probe {
					t.Fatal("no local probe at the end of the cooldown")
				}
				if !pb.Success() {
					t.Fatal("the local probe's success did not close the local breaker")
				}
			})
			if w, ok, _ := qb.Allow(0); !ok {
				t.Fatalf("after p's probe found the scope alive during an outage: another process's Allow refused for %v", w)
			}
			runtime.KeepAlive(pb)
		})

		t.Run("a doubled cooldown", func(t *testing.T) {
			p, q, px, _ := setup(t)
			pb, qb := p.store.Breaker("writeback/doubled", spec), q.store.Breaker("writeback/doubled", spec)
			if !pb.Failure(0) {
				t.Fatal("did not open")
			}
			outage(t, p, px, func() {
				pb.Allow(time.Minute)   // the local probe
				pb.Failure(time.Minute) // fails: open for 120 s
			})
			if s := qb.Snapshot(0); s.State != state.Open || s.Cooldown != 2*time.Minute || s.Wait < 115*time.Second {
				t.Fatalf("after p's probe failed during an outage: the fleet's breaker %+v, want open for 120 s", s)
			}
			runtime.KeepAlive(pb)
		})

		t.Run("the fleet's newer state wins", func(t *testing.T) {
			p, q, px, prefix := setup(t)
			pb, qb := p.store.Breaker("writeback/newer", spec), q.store.Breaker("writeback/newer", spec)
			outage(t, p, px, func() {
				if !pb.Failure(0) {
					t.Fatal("the local breaker did not open")
				}
				// The local change's time is read on Redis's clock within a
				// round trip, less than the 100 ms operation timeout: the
				// fleet's change comes later than that.
				time.Sleep(150 * time.Millisecond)
				// Meanwhile the fleet found it alive: a probe of another
				// process closed it.
				ctx := context.Background()
				now, err := q.rdb.Time(ctx).Result()
				if err != nil {
					t.Fatal(err)
				}
				q.rdb.HSet(ctx, prefix+":{writeback/newer}:breaker", "state", "closed", "failures", 0,
					"cooldown", time.Minute.Microseconds(), "until", 0, "since", now.UnixMicro())
			})
			if w, ok, _ := qb.Allow(0); !ok {
				t.Fatalf("an older local change replaced the fleet's newer state: Allow refused for %v", w)
			}
			if _, ok, _ := pb.Allow(0); !ok {
				t.Fatal("p's view did not take the fleet's newer state")
			}
		})
	})
}
