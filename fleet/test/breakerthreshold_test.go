package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

// The fleet's breaker reads a BreakerSpec's threshold as its local
// breaker does (below 1 as 1; above state's MaxThreshold as that), so
// that the two agree across an outage: with a threshold of 0, a local
// breaker that opened at a failure during an outage and closed after its
// probe succeeded is written back closed, as it is. (Redis read the raw
// threshold: the write-back's run of no failures reached a threshold of
// 0, and the fleet's breaker was left open.)
func TestTheFleetsBreakerReadsTheThresholdAsTheLocalOne(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, a, o := outagePair(t, be)
		spec := state.BreakerSpec{Threshold: 0, Cooldown: time.Second, MaxCooldown: time.Second}
		br := a.Breaker(vpcsKey, spec)
		br.Allow(0)
		px.Down()
		waitFor(t, 2*time.Second, "degraded", func() bool { return a.Stats().Degraded })
		if !br.Failure(0) {
			t.Fatal("a threshold of 0 (read as 1): a failure during an outage did not open the local breaker")
		}
		if _, ok, probe := br.Allow(2 * time.Second); !ok || !probe {
			t.Fatal("after the cooldown: no local probe")
		}
		if !br.Success() {
			t.Fatal("the local probe's success did not close the local breaker")
		}
		if err := px.Up(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 3*time.Second, "back on the shared state", func() bool { return !a.Stats().Degraded })
		if st := o.Breaker(vpcsKey, spec).Snapshot(0).State; st != state.Closed {
			t.Errorf("a threshold of 0: the local breaker opened, then closed after its probe during an outage, written back: the fleet's breaker %v, want closed, as the local one", st)
		}
	})
}
