package test

import (
	"runtime"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/state"
)

// Redis's record of the last write-back of a process's breaker it applied
// lives as long as the process may send that write-back again (the keys'
// TTL less the operation timeout after its first send), even when the
// write-back changed nothing of the breaker: the failure a process's local
// breaker counted while Redis was away came before a success of the fleet
// that reset its count, and its write-back, whose answer was lost, is
// sent again after the key the fleet's last change wrote has expired.
// Redis applied it once, and counted no failure: sent again, it counts
// none. (The record went with the key, which a write-back that changed
// nothing gave no new TTL, and the write-back sent again counted the
// failure on a new breaker.) On redis-server alone, whose keys age with
// the time the process's resend window counts: miniredis's age only when
// a test says so (FastForward), and the process's window does not.
func TestAWriteBacksRecordLivesWhileItMayBeSentAgain(t *testing.T) {
	be, ok := redisServer(t)
	if !ok {
		t.Skip("needs redis-server (./scripts/test starts it)")
	}
	t.Run(be.name, func(t *testing.T) {
		const ttl, heartbeat, timeout = 3 * time.Second, 500 * time.Millisecond, 250 * time.Millisecond
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		a := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(heartbeat),
			fleet.WithTimeout(timeout), fleet.WithKeyTTL(ttl))
		fallsBack(a) // the test takes the proxy down under it: the outage
		o := openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour),
			fleet.WithKeyTTL(ttl))
		const key = "writeback/record/ttl"
		spec := state.BreakerSpec{Threshold: 3, Cooldown: time.Minute, MaxCooldown: time.Minute}
		ab, ob := a.Breaker(key, spec), o.Breaker(key, spec)
		down := func() {
			t.Helper()
			px.Down()
			waitFor(t, 3*time.Second, "local limits", func() bool { return a.Stats().Degraded })
		}
		up := func() {
			t.Helper()
			if err := px.Up(); err != nil {
				t.Fatal(err)
			}
		}
		// A first outage's write-back, answered, so that Redis holds the
		// script (EVALSHA): a NOSCRIPT reply lost is a script Redis did
		// not run.
		down()
		a.Breaker(key+"/warm", spec).Failure(0)
		up()
		waitFor(t, 5*time.Second, "back on the shared state", func() bool { return !a.Stats().Degraded })

		down()
		ab.Failure(0) // A's local breaker alone counts it
		ob.Failure(0)
		ob.Success() // the fleet's count reset after A's failure: the key lives ttl from now
		written := time.Now()
		time.Sleep(heartbeat + timeout + 500*time.Millisecond) // A's write-back comes well within the key's life
		loseNextAnswerNaming(t, px, key, up)
		px.Down() // A sends it again once the key the fleet's success wrote has expired
		time.Sleep(time.Until(written.Add(ttl + 50*time.Millisecond)))
		up()
		waitFor(t, 5*time.Second, "back on the shared state", func() bool { return !a.Stats().Degraded })
		if snap := ob.Snapshot(0); snap.State != state.Closed || snap.Failures != 0 {
			t.Errorf("a failure before the fleet's reset, its write-back's answer lost and sent again after the key expired: the fleet's breaker %+v, want closed with no failure", snap)
		}
		runtime.KeepAlive(ab) // as a governor keeps its scopes' breakers
	})
}
