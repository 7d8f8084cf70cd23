package test

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/state"
)

// A write-back whose answer is lost is sent again at the next heartbeat,
// the same, and Redis applies it once, whether the first send ran or not:
// the failure a process's local breaker counted while Redis was away
// reaches the fleet's breaker, counted once. lose arms the proxy to lose
// the first write-back of key (its command, or its answer).
func lostWriteBack(t *testing.T, key string, lose func(px *redisproxy.Proxy, match func([]byte) bool)) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, a, o := outagePair(t, be)
		spec := state.BreakerSpec{Threshold: 3, Cooldown: time.Minute, MaxCooldown: time.Minute}
		ab, ob := a.Breaker(key, spec), o.Breaker(key, spec)
		// outage counts a failure on br while Redis is away, and waits
		// until the process is back on the shared state.
		outage := func(br state.Breaker, during func()) {
			t.Helper()
			px.Down()
			waitFor(t, 3*time.Second, "local limits", func() bool { return a.Stats().Degraded })
			if br.Failure(0) {
				t.Fatal("one failure against a threshold of 3 opened the local breaker")
			}
			during()
			if err := px.Up(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, "back on the shared state", func() bool { return !a.Stats().Degraded })
		}
		// A first outage's write-back, answered, so that Redis holds the
		// script (EVALSHA): a NOSCRIPT reply lost is a script Redis did
		// not run.
		outage(a.Breaker(key+"/warm", spec), func() {})
		outage(ab, func() { lose(px, func(cmd []byte) bool { return bytes.Contains(cmd, []byte(key+"}")) }) })
		if snap := ob.Snapshot(0); snap.State != state.Closed || snap.Failures != 1 {
			t.Fatalf("one failure counted during an outage, its write-back's answer lost: the fleet's breaker %+v, want closed with 1 failure", snap)
		}
		runtime.KeepAlive(ab) // as a governor keeps its scopes' breakers
	})
}

// Redis did not run the first write-back (the command was lost on its
// way, the connection reset): the second, sent again, counts the failure.
// (It was lost: a write-back whose answer did not come back was not sent
// again, Redis having perhaps run it, and the fleet's breaker counted no
// failure.)
func TestALostWriteBackRedisDidNotRunIsSentAgain(t *testing.T) {
	lostWriteBack(t, "writeback/lost/notrun", func(px *redisproxy.Proxy, match func([]byte) bool) { px.DropCommandTo(match) })
}

// Redis ran the first write-back and its answer was lost (the connection
// reset after it): the second, sent again, changes nothing, and the
// failure counts once, not twice.
func TestALostWriteBackRedisRanCountsOnce(t *testing.T) {
	lostWriteBack(t, "writeback/lost/ran", func(px *redisproxy.Proxy, match func([]byte) bool) { px.DropAnswerTo(match) })
}
