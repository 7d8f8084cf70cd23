package test

import (
	"bytes"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/state"
)

// loading is Redis's answer while it loads its data set: it does not run
// the command, and fleet mode counts it as an outage.
var loading = []byte("-LOADING Redis is loading the dataset in memory\r\n")

// Each congestion event of an outage reaches the fleet: two throttles
// more than bucket.DecreaseInterval apart while Redis does not answer
// halve the local limits twice, and their write-back halves the fleet's
// rate twice too (100 rps to 25), as Redis would have had it run them;
// a throttle within the interval of the event's first is of that event.
// (Only the latest was owed: the fleet's rate went to 50.)
func TestAnOutagesThrottlesReachTheFleetEach(t *testing.T) {
	for _, c := range []struct {
		name string
		gaps []time.Duration // before each throttle after the first
	}{
		{"two throttles 1.1s apart", []time.Duration{1100 * time.Millisecond}},
		{"three throttles, the first two 0.3s apart", []time.Duration{300 * time.Millisecond, 1100 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachSingleNode(t, func(t *testing.T, be backend) {
				px, a, ab, ob := throttleScene(t, be)
				px.RefuseNext(loading) // an outage
				start := time.Now()
				ab.Throttle(0, 0)
				if !a.Stats().Degraded {
					t.Fatal("a throttle Redis did not run (LOADING): not on local limits")
				}
				var now time.Duration
				for _, g := range c.gaps {
					now += g
					time.Sleep(now - time.Since(start))
					ab.Throttle(now, 0)
				}
				if r := ab.Snapshot(now).Rate; r != 25 {
					t.Fatalf("%s during an outage: the local limits' rate %v, want 25", c.name, r)
				}
				a.Close() // writes back what the heartbeat has not yet
				if got := ob.Snapshot(0).Rate; got != 25 {
					t.Errorf("%s during an outage, then A closed: the fleet's rate %v rps, want 25 (halved for each event)", c.name, got)
				}
			})
		})
	}
}

// The success counts of an outage go with the throttle written back,
// whose event the goodput controller measures by them, when Redis runs
// it, however many write-backs it takes: a write-back Redis did not run
// (it answered LOADING) keeps them for the next. (They were taken for the
// first and lost: the next measured nothing, and halved the rate, 100 rps
// to 50, where 400 successes within a second or so measure more.)
func TestTheCountsOfAThrottleWriteBackRedisDidNotRunAreKept(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		a, err := fleet.Open(url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		o, err := fleet.Open(be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		spec := state.BucketSpec{Rate: 100, Burst: 10, Goodput: true}
		ab, ob := a.Bucket(vpcsKey, spec, 0), o.Bucket(vpcsKey, spec, 0)
		ab.Reserve(0) // the fleet's bucket starts counting
		px.RefuseNext(loading)
		a.Bucket("aws/123456789012/us-east-1/ec2/DescribeSubnets", spec, 0).Reserve(0) // an outage
		if !a.Stats().Degraded {
			t.Fatal("an operation Redis did not run (LOADING): not on local limits")
		}
		for range 400 {
			ab.Success(0)
		}
		ab.Throttle(0, 0)
		px.RefuseNextMatching(func(cmd []byte) bool {
			return bytes.Contains(cmd, []byte(":bucket")) // the write-back, not the heartbeat
		}, loading)
		deadline := time.Now().Add(5 * time.Second)
		for a.Stats().Degraded && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if a.Stats().Degraded {
			t.Fatal("A still on local limits 5s after Redis answers again")
		}
		if got := ob.Snapshot(0).Rate; got <= 50 {
			t.Errorf("400 successes and a throttle during an outage, the throttle's first write-back not run (LOADING), the next run: the fleet's rate %v rps, want more than 50 (the goodput controller measuring the successes)", got)
		}
	})
}
