package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// While Redis does not answer, a process's local limits start from its
// share of the fleet's last rate and climb from there as the configured
// controller does, up to its share of the ceiling, slowing on its own
// throttles: a process whose Redis is gone for good does about as well as
// one that never had fleet mode. Two processes, a ceiling of 20 rps, the
// fleet's rate lowered by a throttle, then Redis gone: two minutes of
// successes with no throttle (on the callers' clock) take the local rate
// to 10 rps, half the ceiling, and a throttle then halves it.
func TestLocalLimitsClimbToTheShareOfTheCeiling(t *testing.T) {
	for _, c := range []struct {
		name string
		spec state.BucketSpec
	}{
		{"AIMD", state.BucketSpec{Rate: 20, Burst: 20, Adaptive: true}},
		{"goodput", state.BucketSpec{Rate: 20, Burst: 20, Goodput: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachSingleNode(t, func(t *testing.T, be backend) {
				px, _ := proxied(t, be)
				prefix := uniquePrefix(t)
				a := newProcess(t, at(px.Addr()), prefix, resilience.Config{})
				o := newProcess(t, at(px.Addr()), prefix, resilience.Config{})
				fallsBack(a.store) // the proxy goes down under both: the outage the test is about
				fallsBack(o.store)
				time.Sleep(250 * time.Millisecond) // two heartbeats: both count two live processes
				if n := a.store.Stats().Processes; n != 2 {
					t.Fatalf("%d live processes counted, want 2", n)
				}
				b := a.store.Bucket(vpcsKey, c.spec, 0)
				fleetRate, dec := b.Throttle(0, 0)
				if !dec || fleetRate >= c.spec.Rate {
					t.Fatalf("a throttle on the shared state: the fleet's rate %v, decreased %v; want below %v", fleetRate, dec, c.spec.Rate)
				}
				px.Down()
				untilLocal(t, a.store)
				start := b.Snapshot(0).Rate
				if !a.store.Stats().Degraded || start != fleetRate/2 {
					t.Fatalf("Redis gone: the local rate %v (degraded %v), want half the fleet's last %v", start, a.store.Stats().Degraded, fleetRate)
				}
				const long = 2 * time.Minute
				for now := time.Duration(0); now <= long; now += 100 * time.Millisecond {
					b.Success(now)
				}
				want := c.spec.Rate / 2
				if got := b.Snapshot(long).Rate; got != want {
					t.Fatalf("Redis gone, then %v of successes with no throttle: the local rate %v, want %v (half the ceiling of %v); it started at %v (half the fleet's last %v)",
						long, got, want, c.spec.Rate, start, fleetRate)
				}
				if r, dec := b.Throttle(long+time.Second, 0); !dec || r >= want {
					t.Fatalf("a throttle on the local limits after they climbed: rate %v, decreased %v; want below %v", r, dec, want)
				}
			})
		})
	}
}
