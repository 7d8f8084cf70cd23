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
		// p reaches Redis through a proxy, q directly; pb and qb are
		// their breakers of key.
		type fleetOfTwo struct {
			p, q   *process
			pb, qb state.Breaker
			px     *redisproxy.Proxy
			prefix string
		}
		setup := func(t *testing.T, key string) fleetOfTwo {
			px, err := redisproxy.Start(be.addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(px.Close)
			f := fleetOfTwo{px: px, prefix: uniquePrefix(t)}
			f.p = newProcess(t, at(px.Addr()), f.prefix, resilience.Config{}, fleet.WithTimeout(100*time.Millisecond))
			f.q = newProcess(t, be, f.prefix, resilience.Config{})
			f.pb, f.qb = f.p.store.Breaker(key, spec), f.q.store.Breaker(key, spec)
			return f
		}
		// outage takes Redis away from p, runs during, and waits until p
		// is back on the shared state.
		outage := func(t *testing.T, f fleetOfTwo, during func()) {
			t.Helper()
			f.px.Down()
			waitFor(t, 3*time.Second, "local limits", func() bool { return f.p.store.Stats().Degraded })
			during()
			if err := f.px.Up(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 3*time.Second, "back on the shared state", func() bool { return !f.p.store.Stats().Degraded })
		}

		t.Run("found dead", func(t *testing.T) {
			f := setup(t, "writeback/dead")
			pb, qb := f.pb, f.qb
			outage(t, f, func() {
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
			f := setup(t, "writeback/alive")
			pb, qb := f.pb, f.qb
			if !pb.Failure(0) { // the fleet's breaker opens for 60 s
				t.Fatal("did not open")
			}
			outage(t, f, func() {
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
			f := setup(t, "writeback/doubled")
			pb, qb := f.pb, f.qb
			if !pb.Failure(0) {
				t.Fatal("did not open")
			}
			outage(t, f, func() {
				pb.Allow(time.Minute)   // the local probe
				pb.Failure(time.Minute) // fails: open for 120 s
			})
			if s := qb.Snapshot(0); s.State != state.Open || s.Cooldown != 2*time.Minute || s.Wait < 115*time.Second {
				t.Fatalf("after p's probe failed during an outage: the fleet's breaker %+v, want open for 120 s", s)
			}
			runtime.KeepAlive(pb)
		})

		t.Run("the fleet's newer state wins", func(t *testing.T) {
			f := setup(t, "writeback/newer")
			pb, qb := f.pb, f.qb
			outage(t, f, func() {
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
				now, err := f.q.rdb.Time(ctx).Result()
				if err != nil {
					t.Fatal(err)
				}
				f.q.rdb.HSet(ctx, f.prefix+":{writeback/newer}:breaker", "state", "closed", "failures", 0,
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
