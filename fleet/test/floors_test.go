package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// Two processes whose settings of a scope differ in the floor (a rolling
// deploy that raises it) share its bucket all the same: the rate another
// process's throttles left below this process's floor is brought up to it,
// as one above its ceiling is brought down, and the bucket keeps its pause
// and its queue. Before, the process with the higher floor read such a
// rate as one no settings could have written: it deleted the bucket and
// started it afresh, full at its ceiling, ending the pause a Retry-After
// had set for the whole fleet.
func TestAHigherFloorKeepsTheFleetsPause(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// 2 s for Redis, not 250 ms: an operation past it on a loaded host
		// reads the local limits, not the fleet's bucket.
		a := newProcess(t, be, prefix, resilience.Config{}, fleet.WithTimeout(2*time.Second))
		b := newProcess(t, be, prefix, resilience.Config{}, fleet.WithTimeout(2*time.Second))
		ba := a.store.Bucket(vpcsKey, state.BucketSpec{Rate: 100, Burst: 10, Adaptive: true}, 0)
		bb := b.store.Bucket(vpcsKey, state.BucketSpec{Rate: 100, Burst: 10, Floor: 60, Adaptive: true}, 0)
		if r, _ := ba.Throttle(0, 30*time.Second); r != 50 {
			t.Fatalf("a throttle of A left the rate at %v, want 50", r)
		}
		if w := bb.Reserve(0); w < 20*time.Second {
			t.Errorf("B, whose floor is 60 rps, was given a token after %v within the fleet's 30 s pause", w)
		}
		if snap := ba.Snapshot(0); snap.Paused < 20*time.Second || snap.Rate > 60 {
			t.Errorf("after B's token, A reads the bucket paused %v at %v rps; want the 30 s pause kept, and at most B's floor, 60 rps", snap.Paused, snap.Rate)
		}
		if snap := bb.Snapshot(0); snap.Rate != 60 {
			t.Errorf("B reads the fleet's rate as %v rps, want its floor, 60", snap.Rate)
		}
	})
}
