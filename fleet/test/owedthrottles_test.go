package test

import (
	"testing"
	"time"
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
