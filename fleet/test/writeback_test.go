package test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/internal/clocktest"
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
		setup := func(t *testing.T, key string, spec state.BreakerSpec) fleetOfTwo {
			px, _ := proxied(t, be)
			f := fleetOfTwo{px: px, prefix: uniquePrefix(t)}
			f.p = newProcess(t, at(px.Addr()), f.prefix, resilience.Config{}, fleet.WithTimeout(100*time.Millisecond))
			fallsBack(f.p.store) // outage takes the proxy down under it
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
			f := setup(t, "writeback/dead", spec)
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
			f := setup(t, "writeback/alive", spec)
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
			f := setup(t, "writeback/doubled", spec)
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
			f := setup(t, "writeback/newer", spec)
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

		// The failures a local breaker counted without changing its state
		// are written back too: they count toward the fleet's threshold
		// as if Redis had answered (before, the fleet's count left them
		// out, and its breaker opened later than the failures warranted).
		spec3 := state.BreakerSpec{Threshold: 3, Cooldown: time.Minute, MaxCooldown: 4 * time.Minute}
		t.Run("failures below the threshold", func(t *testing.T) {
			f := setup(t, "writeback/failures", spec3)
			pb, qb := f.pb, f.qb
			outage(t, f, func() {
				pb.Failure(0)
				pb.Failure(0)
			})
			if s := qb.Snapshot(0); s.State != state.Closed || s.Failures != 2 {
				t.Fatalf("after p counted 2 failures during an outage: the fleet's breaker %+v, want closed with 2 failures", s)
			}
			if !qb.Failure(0) {
				t.Fatal("a third failure, after 2 counted during an outage, did not open the fleet's breaker (threshold 3)")
			}
			runtime.KeepAlive(pb)
		})

		// Each process counted failures of its own calls: the fleet's count
		// is their sum, not the largest. Two processes with 2 failures each
		// against a threshold of 4 open it.
		t.Run("failures of several processes add up", func(t *testing.T) {
			spec4 := state.BreakerSpec{Threshold: 4, Cooldown: time.Minute, MaxCooldown: 4 * time.Minute}
			f := setup(t, "writeback/sum", spec4)
			p2 := newProcess(t, at(f.px.Addr()), f.prefix, resilience.Config{}, fleet.WithTimeout(100*time.Millisecond))
			fallsBack(p2.store) // on the same proxy as p: the outage
			pb, p2b, qb := f.pb, p2.store.Breaker("writeback/sum", spec4), f.qb
			outage(t, f, func() {
				waitFor(t, 3*time.Second, "local limits", func() bool { return p2.store.Stats().Degraded })
				pb.Failure(0)
				pb.Failure(0)
				p2b.Failure(0)
				p2b.Failure(0)
			})
			waitFor(t, 3*time.Second, "back on the shared state", func() bool { return !p2.store.Stats().Degraded })
			if s := qb.Snapshot(0); s.State != state.Open || s.Wait < 55*time.Second {
				t.Fatalf("after two processes counted 2 failures each during an outage (threshold 4): the fleet's breaker %+v, want open for about 60 s", s)
			}
			runtime.KeepAlive(pb)
			runtime.KeepAlive(p2b)
		})

		// A success during the outage resets the count: the failures before
		// it, the fleet's among them, are not consecutive with those after.
		t.Run("a success during the outage resets the count", func(t *testing.T) {
			f := setup(t, "writeback/reset", spec3)
			pb, qb := f.pb, f.qb
			pb.Failure(0)
			pb.Failure(0) // the fleet's count: 2 of 3
			outage(t, f, func() {
				// The write-back sends the success as of the earliest it may
				// have come, p's 100 ms operation timeout before its time
				// read on Redis's clock: it comes later than that after the
				// fleet's failures.
				time.Sleep(150 * time.Millisecond)
				pb.Success()
				pb.Failure(0)
			})
			if s := qb.Snapshot(0); s.State != state.Closed || s.Failures != 1 {
				t.Fatalf("2 failures, then a success and a failure during an outage: the fleet's breaker %+v, want closed with 1 failure", s)
			}
			runtime.KeepAlive(pb)
		})

		// A success the fleet counted after the local failures breaks their
		// run: they are not added.
		t.Run("a later success of the fleet drops older failures", func(t *testing.T) {
			f := setup(t, "writeback/later", spec3)
			pb, qb := f.pb, f.qb
			outage(t, f, func() {
				pb.Failure(0)
				pb.Failure(0)
				time.Sleep(150 * time.Millisecond) // as above: later on Redis's clock than the write-back can place them
				qb.Failure(0)
				qb.Success() // resets the fleet's count, after p's failures
			})
			if s := qb.Snapshot(0); s.State != state.Closed || s.Failures != 0 {
				t.Fatalf("p's 2 failures, then a failure and a success of another process: the fleet's breaker %+v, want closed with no failure", s)
			}
			// Written back, p's breaker is pristine again: the governor
			// asks Redis nothing more for it than before the outage.
			if !pb.Pristine() {
				t.Fatal("p's breaker is not pristine after its write-back")
			}
			runtime.KeepAlive(pb)
		})

		// What Redis holds is not trusted: a reset an hour ahead of Redis's
		// clock, which would make every failure written back older than it,
		// counts as absent, and a list of failure times that is not one
		// counts them as of unknown time.
		t.Run("an invalid reset or list of times", func(t *testing.T) {
			f := setup(t, "writeback/invalid", spec3)
			pb, qb := f.pb, f.qb
			key := f.prefix + ":{writeback/invalid}:breaker"
			ctx := context.Background()
			now, err := f.q.rdb.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			if err := f.q.rdb.HSet(ctx, key, "state", "closed", "failures", 0, "cooldown", time.Minute.Microseconds(),
				"until", 0, "reset", now.Add(time.Hour).UnixMicro(), "ft", "junk nan 1e300").Err(); err != nil {
				t.Fatal(err)
			}
			outage(t, f, func() {
				pb.Failure(0)
				pb.Failure(0)
			})
			if s := qb.Snapshot(0); s.State != state.Closed || s.Failures != 2 {
				t.Fatalf("2 failures during an outage, written back to a breaker reset an hour ahead: the fleet's breaker %+v, want closed with 2 failures", s)
			}
			runtime.KeepAlive(pb)
		})

		// A failure whose script Redis ran and whose answer was lost is
		// counted by the local breaker too; it is not written back, so that
		// it counts once.
		t.Run("a failure whose answer was lost counts once", func(t *testing.T) {
			spec2 := state.BreakerSpec{Threshold: 2, Cooldown: time.Minute, MaxCooldown: time.Minute}
			f := setup(t, "writeback/lost", spec2)
			pb, qb := f.pb, f.qb
			f.p.store.Breaker("warm", spec2).Failure(0) // Redis holds the script: EVALSHA, not EVAL
			f.px.DropAnswer()
			errs := f.p.store.Stats().RedisErrors
			pb.Failure(0)
			waitFor(t, 3*time.Second, "the lost answer counted", func() bool { return f.p.store.Stats().RedisErrors > errs })
			waitFor(t, 3*time.Second, "back on the shared state", func() bool { return !f.p.store.Stats().Degraded })
			if s := qb.Snapshot(0); s.State != state.Closed || s.Failures != 1 {
				t.Fatalf("one failure against a threshold of 2, its answer lost: the fleet's breaker %+v, want closed with 1 failure", s)
			}
			runtime.KeepAlive(pb)
		})

		// A failure whose script Redis refused (it is loading its data,
		// restarted after a crash: the failure finds the outage) was never
		// counted by Redis: it is written back.
		t.Run("a failure Redis refused is written back", func(t *testing.T) {
			if be.mr == nil {
				t.Skip("needs miniredis's SetError")
			}
			spec3 := state.BreakerSpec{Threshold: 3, Cooldown: time.Minute, MaxCooldown: time.Minute}
			f := setup(t, "writeback/refused", spec3)
			pb, qb := f.pb, f.qb
			be.mr.SetError("LOADING Redis is loading the dataset in memory")
			pb.Failure(0) // refused: finds the outage
			if st := f.p.store.Stats(); !st.Degraded || st.Fallbacks != 1 {
				t.Fatalf("after a failure Redis refused: %+v, want on local limits", st)
			}
			pb.Failure(0)
			be.mr.SetError("")
			waitFor(t, 3*time.Second, "back on the shared state", func() bool {
				return !f.p.store.Stats().Degraded && !f.q.store.Stats().Degraded
			})
			if s := qb.Snapshot(0); s.State != state.Closed || s.Failures != 2 {
				t.Fatalf("two failures against a threshold of 3, neither run by Redis: the fleet's breaker %+v, want closed with 2 failures", s)
			}
			runtime.KeepAlive(pb)
		})
	})
}

// A scope whose breaker learned something while Redis did not answer is
// kept until it is written back: the governor does not drop it when it goes
// idle during the outage, and its failure reaches the fleet when Redis
// answers. (The governor dropped such a scope, its breaker with it, and
// what the breaker had learned was lost.)
func TestAScopeIdleDuringAnOutageIsWrittenBack(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 3, BreakerCooldownSeconds: 60, BreakerMaxCooldownSeconds: 240}}
		clock := clocktest.Start(time.Now())
		rdb := at(px.Addr()).client()
		st := fleet.New(rdb, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(100*time.Millisecond),
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
		q := newProcess(t, be, prefix, cfg)

		px.Down()
		waitFor(t, 3*time.Second, "local limits", func() bool { return st.Stats().Degraded })
		if err := p.do(t, vpcs, func(context.Context) error { return transient }, once); err == nil {
			t.Fatal("the failing call succeeded")
		}
		clock.Advance(2 * time.Minute) // vpcs idle past WithReclaimAfter
		other := vpcs
		other.Operation = "DescribeSubnets"
		for range 3 { // calls take the reclaimer's steps
			if err := p.do(t, other, ok); err != nil {
				t.Fatal(err)
			}
		}
		runtime.GC() // a dropped scope's breaker is gone
		runtime.GC()
		if err := px.Up(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 3*time.Second, "back on the shared state", func() bool { return !st.Stats().Degraded })
		if s := q.gov.Inspect(vpcs).Breaker; s.State != state.Closed || s.Failures != 1 {
			t.Fatalf("after p counted a failure of a scope that then went idle during an outage: the fleet's breaker %+v, want closed with 1 failure", s)
		}
		runtime.KeepAlive(g) // as a program keeps its governor
	})
}

// A breaker that learned something while Redis did not answer is written
// back when Redis answers again, even when the governor dropped its scope
// meanwhile: a Reset, or a Configure that changed the breaker's settings
// (the scope's entry then holds a breaker of the new settings), and the
// garbage collector ran before Redis came back. (The store held such a
// breaker by a weak pointer alone: it wrote its failure back only when
// the collector had not taken it yet, which it had after a Reset and
// two collections.)
func TestABreakerDroppedDuringAnOutageIsWrittenBack(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		cfg := resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 3, BreakerCooldownSeconds: 60, BreakerMaxCooldownSeconds: 240}}
		changed := cfg
		changed.AWS.BreakerThreshold = 4
		for _, c := range []struct {
			name string
			drop func(g *resilience.Governor) error
		}{
			{"Reset", func(g *resilience.Governor) error { g.Reset(); return nil }},
			{"Configure of the breaker's settings", func(g *resilience.Governor) error { return g.Configure(changed) }},
		} {
			t.Run(c.name, func(t *testing.T) {
				px, _ := proxied(t, be)
				prefix := uniquePrefix(t)
				p := newProcess(t, at(px.Addr()), prefix, cfg, fleet.WithTimeout(100*time.Millisecond))
				fallsBack(p.store) // the outage: the proxy goes down under it
				q := newProcess(t, be, prefix, cfg)
				if err := p.do(t, vpcs, ok); err != nil { // the scope's breaker, on the shared state
					t.Fatal(err)
				}
				px.Down()
				waitFor(t, 3*time.Second, "local limits", func() bool { return p.store.Stats().Degraded })
				if err := p.do(t, vpcs, func(context.Context) error { return transient }, once); err == nil {
					t.Fatal("the failing call succeeded")
				}
				if err := c.drop(p.gov); err != nil {
					t.Fatal(err)
				}
				for range 3 { // the dropped breaker is the collector's to take
					runtime.GC()
				}
				if err := px.Up(); err != nil {
					t.Fatal(err)
				}
				waitFor(t, 3*time.Second, "back on the shared state", func() bool { return !p.store.Stats().Degraded })
				if s := q.gov.Inspect(vpcs).Breaker; s.State != state.Closed || s.Failures != 1 {
					t.Fatalf("after p counted a failure during an outage, then its governor's %s dropped the scope and the collector ran: the fleet's breaker %+v, want closed with 1 failure", c.name, s)
				}
				runtime.KeepAlive(p.gov) // as a program keeps its governor
			})
		}
	})
}
