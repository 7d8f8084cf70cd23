package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// A closed store's calls go to the local breaker, which starts from the
// fleet's breaker as the process last read it once what an earlier outage
// taught was written back: not from that outage's local breaker, whose
// cooldown the fleet may have ended since. Here p's local breaker opens
// during an outage (at 0 on p's clock), is written back when Redis
// answers again, another process's probe closes the fleet's breaker at the
// end of its cooldown (Redis's clock), p reads it, closes its store, and
// asks before the end of the cooldown on its own clock.
// (TestTheLocalBreakerStartsFromTheViewOnceWrittenBack, in package fleet,
// states the rule for an operation Redis refuses too.) (The outage's local
// breaker was reused after Close: open, it refused the scope's calls for
// the rest of a cooldown the fleet had ended.)
func TestAClosedStoresBreakerStartsFromTheFleets(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		const cooldown = 300 * time.Millisecond
		spec := state.BreakerSpec{Threshold: 1, Cooldown: cooldown, MaxCooldown: cooldown}
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		p := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(50*time.Millisecond),
			fleet.WithTimeout(200*time.Millisecond), fleet.WithBreakerStaleness(10*time.Millisecond))
		fallsBack(p) // the outage: the proxy goes down under it
		pb := p.Breaker("stalelocal/brk", spec)
		px.Down()
		waitFor(t, 3*time.Second, "local limits", func() bool { return p.Stats().Degraded })
		if !pb.Failure(0) {
			t.Fatal("a failure during an outage did not open the local breaker")
		}
		if err := px.Up(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 3*time.Second, "back on the shared state", func() bool { return !p.Stats().Degraded })
		q := newProcess(t, be, prefix, resilience.Config{})
		qb := q.store.Breaker("stalelocal/brk", spec)
		start := time.Now() // q's clock
		if _, ok, _ := qb.Allow(0); ok {
			t.Fatal("p's local breaker opened during an outage, Redis back: the fleet's breaker is not open")
		}
		waitFor(t, 3*time.Second, "a probe at the end of the cooldown", func() bool {
			_, ok, probe := qb.Allow(time.Since(start))
			return ok && probe
		})
		if !qb.Success() {
			t.Fatal("the fleet's probe succeeded: the breaker did not close")
		}
		if s := pb.Snapshot(0); s.State != state.Closed {
			t.Fatalf("the fleet's probe closed the breaker: p reads %+v", s)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if wait, ok, _ := pb.Allow(cooldown / 3); !ok {
			t.Errorf("p's local breaker opened during an outage and written back, the fleet's breaker closed since and read by p, then Close: Allow refused the call for %v, want the fleet's closed breaker", wait)
		}
	})
}

// A closed store's calls go to a local bucket made from the fleet's rate
// as the process last read it, not to the local bucket of an outage that
// ended before Close, at the rate the throttles during that outage left:
// of those, the fleet takes the latest only, written back when Redis
// answers again (TestAThrottleRedisDidNotRunReachesTheFleet), so that two
// throttles of two congestion events during the outage leave the fleet at
// half its rate, and the outage's local bucket at a quarter.
// (TestTheLocalBucketStartsFromTheViewAfterAnOutage, in package fleet,
// states the rule for an operation Redis refuses too.) (The outage's local
// bucket was reused after Close, at a quarter of the fleet's first rate.)
func TestAClosedStoresBucketStartsFromTheFleets(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		spec := state.BucketSpec{Rate: 10, Burst: 10, Adaptive: true}
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		p := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(50*time.Millisecond),
			fleet.WithTimeout(200*time.Millisecond))
		fallsBack(p) // the outage: the proxy goes down under it
		bk := p.Bucket("stalelocal/bkt", spec, 0)
		px.Down()
		waitFor(t, 3*time.Second, "local limits", func() bool { return p.Stats().Degraded })
		bk.Throttle(0, 0)
		bk.Throttle(2*time.Second, 0) // another congestion event
		if r := bk.Snapshot(2 * time.Second).Rate; r != spec.Rate/4 {
			t.Fatalf("two throttles during an outage, 2s apart: the local bucket's rate %v, want %v", r, spec.Rate/4)
		}
		if err := px.Up(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 3*time.Second, "back on the shared state", func() bool { return !p.Stats().Degraded })
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if s := bk.Snapshot(3 * time.Second); s.Rate != spec.Rate/2 {
			t.Errorf("two throttles during an outage that ended, the latest written back, then Close: the local bucket %+v, want the fleet's rate %v", s, spec.Rate/2)
		}
	})
}
