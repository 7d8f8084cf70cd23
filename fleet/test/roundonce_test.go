package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
)

// A process's write-backs of one outage count once in its round, the
// latest standing for it: its local limits' rate, which it tells again,
// lower, when they slowed since its first. Here the first write-back's
// answer is lost, and the process, on local limits until it sends it
// again, is throttled once more, a second congestion event (its local
// limits halve again, 50 rps to 25): that event's write-back, in the round
// the first began, leaves the fleet's rate at 25, as the throttle would
// have on the shared state. (The round took the process's two write-backs
// for two processes' and left the mean of what they told, 37.5, above the
// rate Redis had just halved to 25.)
func TestAProcesssWriteBacksCountOnceInTheirRound(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, a, ab, ob := throttleScene(t, be, fleet.WithHeartbeat(time.Second))
		up := func() {
			t.Helper()
			if err := px.Up(); err != nil {
				t.Fatal(err)
			}
		}
		px.Down()
		untilLocal(t, a)
		start := time.Now()
		if r, _ := ab.Throttle(0, 0); r != 50 {
			t.Fatalf("the first throttle on local limits: rate %v, want 50", r)
		}
		loseNextAnswerNaming(t, px, vpcsKey, up)
		px.Down() // A stays on local limits
		time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
		if r, _ := ab.Throttle(1500*time.Millisecond, 0); r != 25 {
			t.Fatalf("a second congestion event on local limits: rate %v, want 25", r)
		}
		up()
		waitFor(t, 5*time.Second, "back on the shared state", func() bool { return !a.Stats().Degraded })
		if got := ob.Snapshot(0).Rate; got != 25 {
			t.Errorf("one process's two congestion events, its first write-back's answer lost: the fleet's rate %v, want 25", got)
		}
	})
}
