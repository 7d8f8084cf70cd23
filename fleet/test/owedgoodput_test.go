package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/state"
)

// goodputScene opens A, through a proxy, and an observer O on the same
// fleet, with a heartbeat of hb for A, and returns the goodput bucket of
// one scope as each sees it, the fleet's bucket counting from now.
func goodputScene(t *testing.T, be backend, hb time.Duration) (*redisproxy.Proxy, *fleet.Store, state.Bucket, state.Bucket) {
	t.Helper()
	px, url := proxied(t, be)
	prefix := uniquePrefix(t)
	a := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(hb))
	fallsBack(a) // each test makes the proxy refuse A's operations (LOADING) or go down: an outage
	o := openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour))
	spec := state.BucketSpec{Rate: 100, Burst: 10, Goodput: true}
	ab, ob := a.Bucket(vpcsKey, spec, 0), o.Bucket(vpcsKey, spec, 0)
	ab.Reserve(0) // the fleet's bucket starts counting
	return px, a, ab, ob
}

// The goodput controller measures each congestion event of an outage,
// written back, by the successes served before it since the event before,
// as the local limits did: two events 1.1 s apart, 400 successes in the
// second before each, move the fleet's rate where they moved the local
// limits (each to 0.97 of the rate before it, as 400 successes in a
// second measure more). (Only the first measured the successes, all of them, and each
// later one, measuring nothing, halved the rate.)
func TestEachOwedEventMeasuresItsOwnSuccesses(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, a, ab, ob := goodputScene(t, be, time.Hour)
		px.RefuseNext(loading)
		a.Bucket("aws/123456789012/us-east-1/ec2/DescribeSubnets", state.BucketSpec{Rate: 100, Burst: 10}, 0).Reserve(0) // an outage
		if !a.Stats().Degraded {
			t.Fatal("an operation Redis did not run (LOADING): not on local limits")
		}
		ab.Reserve(0) // the local limits start counting
		start := time.Now()
		for _, now := range []time.Duration{1200 * time.Millisecond, 2300 * time.Millisecond} {
			time.Sleep(now - time.Since(start))
			for range 400 {
				ab.Success(now)
			}
			ab.Throttle(now, 0)
		}
		local := ab.Snapshot(2300 * time.Millisecond).Rate
		if local < 90 {
			t.Fatalf("two events 1.1s apart, 400 successes in the second before each, during an outage: the local limits' rate %v, want more than 90", local)
		}
		a.Close() // writes back what the heartbeat has not yet
		if got := ob.Snapshot(0).Rate; got < 0.99*local {
			t.Errorf("two events 1.1s apart, 400 successes in the second before each, during an outage, then A closed: the fleet's rate %v rps, want the local limits' %v (each event measuring the successes before it)", got, local)
		}
	})
}
