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
		px, a, o := outagePair(t, be)
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

// A success a process saw during an outage ends only the fleet's failures
// that came before it: one older than the fleet's last reset (a success
// another process sent since) ends none of the fleet's run, however many
// of its failures Redis keeps no time of (it keeps the latest 64).
func TestAnOlderLocalSuccessLeavesTheFleetsUntimedFailures(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		if got := olderLocalSuccess(t, be, 0); got.State != state.Closed || got.Failures != 90 {
			t.Errorf("a local success during an outage, then another process's success and its 90 failures, written back: the fleet's breaker %v with %d failures, want closed with 90 (the local success older than the fleet's)", got.State, got.Failures)
		}
	})
}

// A local success is read on Redis's clock by its age when the
// write-back's script runs, which is later than when the process sent it
// by the time the write-back took to reach Redis: up to the operation
// timeout. A success the write-back cannot place after the fleet's last
// reset, that close to it, may have come before it, and is taken as
// older: it ends none of the fleet's failures. Here A's write-back takes
// 50 ms to reach Redis (its timeout 1 s), and O's reset comes right after
// A's success. (Read as of its age when the script ran, A's success came
// 50 ms late, after O's reset and some or all of O's 90 failures, and
// ended those, the 26 whose times Redis does not keep among them.)
func TestALocalSuccessNotSurelyAfterTheFleetsResetEndsNone(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		if got := olderLocalSuccess(t, be, 50*time.Millisecond, fleet.WithTimeout(time.Second)); got.State != state.Closed || got.Failures != 90 {
			t.Errorf("a local success during an outage, then another process's success and its 90 failures, written back 50 ms on its way: the fleet's breaker %v with %d failures, want closed with 90 (the local success not surely after the fleet's)", got.State, got.Failures)
		}
	})
}

// olderLocalSuccess runs the two tests above: during A's outage (A opened
// with aOpts after outagePair's), A's failure and success, then right
// after them O's failure, success (the fleet's last reset) and 90
// failures; A comes back, its write-back delay on its way to Redis, and
// olderLocalSuccess returns the fleet's breaker as O reads it then.
func olderLocalSuccess(t *testing.T, be backend, delay time.Duration, aOpts ...fleet.Option) state.BreakerSnapshot {
	px, a, o := outagePair(t, be, aOpts...)
	spec := state.BreakerSpec{Threshold: 100, Cooldown: time.Minute, MaxCooldown: time.Minute}
	br := a.Breaker(vpcsKey, spec)
	br.Allow(0)
	px.Down()
	waitFor(t, 2*time.Second, "degraded", func() bool { return a.Stats().Degraded })
	br.Failure(0)
	br.Success() // the local success, to be written back
	ob := o.Breaker(vpcsKey, spec)
	ob.Failure(0)
	ob.Success() // the fleet's last reset, right after the local success
	for range 90 {
		ob.Failure(0)
	}
	px.SetDelay(delay) // each way
	if err := px.Up(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "back on the shared state", func() bool { return !a.Stats().Degraded })
	return o.Breaker(vpcsKey, spec).Snapshot(0)
}

// Failures of two processes, each more than the 64 whose times are kept,
// add up to open the fleet's breaker at the write-back: 100 counted in
// Redis during A's outage and A's 150 against a threshold of 200.
func TestTwoProcessesManyFailuresOpenTheFleetsBreaker(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, a, o := outagePair(t, be)
		spec := state.BreakerSpec{Threshold: 200, Cooldown: time.Minute, MaxCooldown: time.Minute}
		br := a.Breaker(vpcsKey, spec)
		br.Allow(0)
		px.Down()
		waitFor(t, 2*time.Second, "degraded", func() bool { return a.Stats().Degraded })
		for range 150 {
			br.Failure(0)
		}
		ob := o.Breaker(vpcsKey, spec)
		for range 100 {
			ob.Failure(0)
		}
		if err := px.Up(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 3*time.Second, "back on the shared state", func() bool { return !a.Stats().Degraded })
		if got := o.Breaker(vpcsKey, spec).Snapshot(0); got.State != state.Open {
			t.Errorf("100 failures in Redis and 150 during an outage, written back, against a threshold of 200: the fleet's breaker %v with %d failures, want open", got.State, got.Failures)
		}
	})
}

// A breaker the write-back opens on failures of unknown times (more than
// the threshold of them on both sides) opens no earlier than the latest
// time the threshold-th of them may have come: its cooldown runs from then,
// not from the first failure of an outage, which would open the scope in
// the past and end its cooldown early. Threshold 200, cooldown 2 s: A's
// first failure during its outage, 2 s later its 198 others and 199
// counted in Redis, A back: the threshold-th failure came 2 s after A's
// first, and the breaker waits most of its cooldown.
func TestAnOpeningOnFailuresOfUnknownTimesKeepsItsCooldown(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, a, o := outagePair(t, be)
		spec := state.BreakerSpec{Threshold: 200, Cooldown: 2 * time.Second, MaxCooldown: 2 * time.Second}
		br := a.Breaker(vpcsKey, spec)
		br.Allow(0)
		px.Down()
		waitFor(t, 2*time.Second, "degraded", func() bool { return a.Stats().Degraded })
		br.Failure(0)
		time.Sleep(2 * time.Second) // A's first failure, then the others 2 s later (real time: Redis's clock)
		for range 198 {
			br.Failure(0)
		}
		ob := o.Breaker(vpcsKey, spec)
		for range 199 {
			ob.Failure(0)
		}
		if err := px.Up(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 3*time.Second, "back on the shared state", func() bool { return !a.Stats().Degraded })
		if got := o.Breaker(vpcsKey, spec).Snapshot(0); got.State != state.Open || got.Wait < time.Second {
			t.Errorf("A's first failure, 2 s later its 198 others and 199 in Redis, written back against a threshold of 200 and a cooldown of 2 s: the fleet's breaker %v waiting %v, want open waiting more than 1s (opened as of the threshold-th failure, not A's first)", got.State, got.Wait)
		}
	})
}
