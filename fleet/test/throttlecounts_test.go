package test

import (
	"bytes"
	"testing"
	"time"
)

// The success counts a throttle takes along are kept when Redis surely
// did not run it (it answered LOADING): the throttle is written back when
// Redis answers again, and its event measures them. (They were lost: the
// write-back measured nothing and halved the rate, 100 rps to 50, where
// 400 successes measure more.)
func TestTheCountsOfAThrottleRedisDidNotRunAreKept(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, a, ab, ob := goodputScene(t, be, 300*time.Millisecond)
		for range 400 {
			ab.Success(0)
		}
		px.RefuseNext(loading)
		ab.Throttle(0, 0)
		if !a.Stats().Degraded {
			t.Fatal("a throttle Redis did not run (LOADING): not on local limits")
		}
		deadline := time.Now().Add(5 * time.Second)
		for a.Stats().Degraded && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if a.Stats().Degraded {
			t.Fatal("A still on local limits 5s after Redis answers again")
		}
		if got := ob.Snapshot(0).Rate; got <= 50 {
			t.Errorf("400 successes, then a throttle Redis did not run (LOADING), written back: the fleet's rate %v rps, want more than 50 (the goodput controller measuring the successes)", got)
		}
	})
}

// The success counts a flush sends (flushServed: a slot after the first of
// them, when no other script took them along) are kept when Redis surely
// did not run it (it answered LOADING), and sent when it answers again, so
// that the fleet's next congestion event measures them. (They were lost:
// the event measured nothing and halved the rate, 100 rps to 50.)
func TestTheCountsOfAFlushRedisDidNotRunAreKept(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, a, ab, ob := goodputScene(t, be, 300*time.Millisecond)
		px.RefuseNextMatching(func(cmd []byte) bool {
			return bytes.Contains(cmd, []byte(vpcsKey)) // the flush, not the heartbeat
		}, loading)
		for range 400 {
			ab.Success(0)
		}
		waitFor(t, 2*time.Second, "the flush refused: on local limits", func() bool { return a.Stats().Degraded })
		waitFor(t, 5*time.Second, "back on the shared state", func() bool { return !a.Stats().Degraded })
		time.Sleep(300 * time.Millisecond) // the flush after it
		if got, _ := ob.Throttle(0, 0); got <= 50 {
			t.Errorf("400 successes, their flush not run (LOADING), Redis back, then a throttle: the fleet's rate %v rps, want more than 50 (the goodput controller measuring the successes)", got)
		}
	})
}

// The success counts a lease request takes along are kept when Redis
// surely did not run it (it answered LOADING), and sent when it answers
// again, so that the fleet's next congestion event measures them. (They
// were lost: the event measured nothing and halved the rate, 100 rps to
// 50.)
func TestTheCountsOfALeaseRequestRedisDidNotRunAreKept(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, a, ab, ob := goodputScene(t, be, 300*time.Millisecond)
		for range 400 {
			ab.Success(0)
		}
		px.RefuseNextMatching(func(cmd []byte) bool {
			return bytes.Contains(cmd, []byte(vpcsKey)) // the lease request, not the heartbeat
		}, loading)
		for i := 0; !a.Stats().Degraded && i < 100; i++ {
			ab.Reserve(0) // the lease's tokens, then a lease request
		}
		if !a.Stats().Degraded {
			t.Fatal("100 reservations: no lease request refused")
		}
		waitFor(t, 5*time.Second, "back on the shared state", func() bool { return !a.Stats().Degraded })
		time.Sleep(300 * time.Millisecond) // the flush after it
		if got, _ := ob.Throttle(0, 0); got <= 50 {
			t.Errorf("400 successes, a lease request not run (LOADING), Redis back, then a throttle: the fleet's rate %v rps, want more than 50 (the goodput controller measuring the successes)", got)
		}
	})
}
