package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// What the local limits learned while Redis did not answer reaches the
// fleet when Redis answers again before Close, even if the heartbeat,
// which writes it back at its next tick, has not ticked since: Close
// writes it back (a breaker's failure, a bucket's pause), within its
// deadline. (Close stopped the heartbeat and let go of it: a process
// that closed within a heartbeat of Redis's return lost what the outage
// taught it, the fleet's breaker showing no failure and its bucket no
// pause.) TestCloseIsBoundedWhileRedisDoesNotAnswer (package fleet) is
// its other half: Redis still gone, Close is bounded all the same.
func TestCloseWritesBackWhatAnOutageTaught(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		p := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour),
			fleet.WithTimeout(200*time.Millisecond))
		fallsBack(p) // the outage: the proxy goes down under it
		spec := state.BreakerSpec{Threshold: 3, Cooldown: time.Minute, MaxCooldown: 4 * time.Minute}
		bspec := state.BucketSpec{Rate: 10, Burst: 10}
		br := p.Breaker("closeback/brk", spec)
		bk := p.Bucket("closeback/bkt", bspec, 0)
		px.Down()
		// Redis silent for a timeout: the process goes on local limits
		// (the first operation alone may fail fast on a connection the
		// proxy closed, and the next, sent at once, is not yet a timeout
		// after it).
		untilLocal(t, p)
		bk.Reserve(0)            // a token of the local limits
		br.Failure(0)            // counted by the local breaker alone
		bk.Pause(0, time.Minute) // set on the local limits
		if err := px.Up(); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil { // before the heartbeat's next tick, an hour away
			t.Fatal(err)
		}
		q := newProcess(t, be, prefix, resilience.Config{})
		if s := q.store.Breaker("closeback/brk", spec).Snapshot(0); s.State != state.Closed || s.Failures != 1 {
			t.Errorf("a failure counted during an outage, Redis back, then Close: the fleet's breaker %+v, want closed with 1 failure", s)
		}
		if s := q.store.Bucket("closeback/bkt", bspec, 0).Snapshot(0); s.Paused < 30*time.Second {
			t.Errorf("a one-minute pause set during an outage, Redis back, then Close: the fleet's bucket %+v, want paused for most of a minute", s)
		}
	})
}
