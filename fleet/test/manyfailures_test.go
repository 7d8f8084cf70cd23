package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/state"
)

// An outage's failures, more than the 64 whose times a process and
// Redis keep, are all written back: against a threshold of 200, 50
// failures counted in Redis and 149 during an outage make 199 once Redis
// is back, the breaker closed, and the next failure opens it, at exactly
// the threshold.
func TestAnOutagesManyFailuresAreWrittenBackEach(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		a, err := fleet.Open(url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(200*time.Millisecond), fleet.WithTimeout(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		o, err := fleet.Open(be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		spec := state.BreakerSpec{Threshold: 200, Cooldown: time.Minute, MaxCooldown: time.Minute}
		br := a.Breaker(vpcsKey, spec)
		for range 50 {
			br.Failure(0)
		}
		px.Down()
		waitFor(t, 2*time.Second, "degraded", func() bool { return a.Stats().Degraded })
		for range 149 {
			if br.Failure(0) {
				t.Fatal("199 failures against a threshold of 200: the local breaker opened")
			}
		}
		if err := px.Up(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 3*time.Second, "back on the shared state", func() bool { return !a.Stats().Degraded })
		ob := o.Breaker(vpcsKey, spec)
		if got := ob.Snapshot(0); got.State != state.Closed || got.Failures != 199 {
			t.Fatalf("50 failures, then 149 during an outage, written back, against a threshold of 200: the fleet's breaker %v with %d failures, want closed with 199", got.State, got.Failures)
		}
		if !ob.Failure(0) {
			t.Errorf("the 200th failure against a threshold of 200: the fleet's breaker %v, want open", ob.Snapshot(0).State)
		}
	})
}
