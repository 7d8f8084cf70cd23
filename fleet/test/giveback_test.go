package test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// TestACancelGivesTheLocalLimitsItsTokenOnce: a token a caller gives back
// (Cancel) that the local limits were not charged for is not given to
// them. The local limits of an outage are charged, when made, for the
// tokens the process took and has yet to use; a token given back before
// they are made is not among those, and a Cancel of it on top put them a
// token ahead of the callers queued: whether the give-back to Redis failed
// (Redis gone as it went) or the store was on local limits already.
func TestACancelGivesTheLocalLimitsItsTokenOnce(t *testing.T) {
	for _, tc := range []struct {
		name      string
		heartbeat time.Duration // the outage is found by the give-back, or by the heartbeat first
	}{
		{"its give-back fails", time.Hour},
		{"on local limits", 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachSingleNode(t, func(t *testing.T, be backend) {
				px, url := proxied(t, be)
				prefix := uniquePrefix(t)
				a := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(tc.heartbeat))
				fallsBack(a) // the proxy goes down under its give-back
				// 0.5 rps with a burst of 1: leases of one token; five
				// callers take the burst's token and the next four, 2 s
				// apart, the last 8 s ahead.
				spec := state.BucketSpec{Rate: 0.5, Burst: 1}
				ab := a.Bucket(vpcsKey, spec, 0)
				for range 5 {
					ab.Reserve(0)
				}
				px.Down()
				if tc.heartbeat < time.Second {
					waitFor(t, 2*time.Second, "A on local limits", func() bool { return a.Stats().Degraded })
				}
				ab.Cancel(0) // the last caller gives its token back
				untilLocal(t, a)
				time.Sleep(100 * time.Millisecond) // the give-back's goroutine, done with the local limits
				// The local limits, charged with their burst (A took a token
				// in the burst's time) and the three callers still queued:
				// -3 tokens, and their refill.
				if snap := ab.Snapshot(0); snap.Tokens > -2.5 {
					t.Errorf("A's local limits hold %.2f tokens; want -3 and their refill (a burst drained, three callers queued): the token given back before they were made was given to them too", snap.Tokens)
				}
			})
		})
	}
}

// TestATokenOfTheLocalLimitsGoesBackToThem: a token a caller took of the
// local limits while the store was on the shared state (Redis refused the
// lease request once) goes back to the local
// limits when the caller gives it back, not to Redis, which never gave it:
// given to Redis, it raised the fleet's balance by a token.
func TestATokenOfTheLocalLimitsGoesBackToThem(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		a := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour))
		fallsBack(a) // the proxy refuses its lease request (RefuseNext)
		// 0.2 rps with a burst of 5: leases of one token; A takes three.
		spec := state.BucketSpec{Rate: 0.2, Burst: 5}
		ab := a.Bucket(vpcsKey, spec, 0)
		for range 3 {
			ab.Reserve(0)
		}
		other := newProcess(t, be, prefix, resilience.Config{}).store.Bucket(vpcsKey, spec, 0)
		px.RefuseNext([]byte("-ERR refused by the test\r\n"))
		ab.Reserve(0) // Redis refuses the lease request: a token of the local limits
		if a.Stats().Degraded {
			t.Fatal("one refusal took the store to local limits")
		}
		before := time.Now()
		was := other.Snapshot(0).Tokens
		ab.Cancel(0)
		time.Sleep(200 * time.Millisecond) // a give-back's operation, if one goes
		now := other.Snapshot(0).Tokens
		if refill := time.Since(before).Seconds() * spec.Rate; now-was-refill > 0.5 {
			t.Errorf("Redis's balance went from %.2f to %.2f (%.2f of it refill) when A gave back the token it took of its local limits: Redis gained a token it never gave", was, now, refill)
		}
	})
}

// TestAnEndedLeaseIsNotCountedInTheProcesssSnapshot: the tokens of a
// lease no caller took are counted in the process's snapshot as the
// bucket's while the lease lasts, its callers' to take; once it ended,
// none of them is any caller's (they go back with the next request, if one
// comes), and the process reads the balance Redis holds, as every other
// process does. Counted on, they showed the process a lease more than the
// fleet had, for as long as it made no call.
func TestAnEndedLeaseIsNotCountedInTheProcesssSnapshot(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// 10 rps with a burst of 10 and a lease window of 500 ms: a lease
		// of 5 tokens, all usable at once.
		spec := state.BucketSpec{Rate: 10, Burst: 10}
		opts := []fleet.Option{fleet.WithLeaseWindow(500 * time.Millisecond)}
		a := newProcess(t, be, prefix, resilience.Config{}, opts...)
		ab := a.store.Bucket(vpcsKey, spec, 0)
		ab.Reserve(0) // 4 tokens left in A's lease
		time.Sleep(700 * time.Millisecond)
		// Another process drains the bucket, so that its balance is below
		// its capacity, and a third, with no lease, reads it.
		b := newProcess(t, be, prefix, resilience.Config{}, opts...).store.Bucket(vpcsKey, spec, 0)
		for range 25 {
			b.Reserve(0)
		}
		c := newProcess(t, be, prefix, resilience.Config{}, opts...).store.Bucket(vpcsKey, spec, 0)
		fleetReads := c.Snapshot(0).Tokens
		own := ab.Snapshot(0).Tokens
		if fleetReads > 0 {
			t.Fatalf("the bucket holds %.2f tokens after 25 taken; want it drained", fleetReads)
		}
		// 10 rps: a tenth of a token per 10 ms between the two readings.
		if own-fleetReads > 0.5 {
			t.Errorf("A's snapshot reads %.2f tokens, the fleet's %.2f: A's lease, ended, was counted as the bucket's", own, fleetReads)
		}
	})
}

// TestABucketIsNotIdleWithTokensToGiveBack: a bucket holding tokens of
// Redis's that no caller will take (here the lease a pause another
// process set dropped) is not idle until they went back: dropped as idle,
// its tokens stayed spent in Redis, the fleet's first tokens after the
// pause a lease later. They go back at once, so that the bucket is idle
// soon after.
func TestABucketIsNotIdleWithTokensToGiveBack(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// 100 rps with a burst of 20 and a lease window of 500 ms: a lease
		// of 50 tokens, 20 of them usable at once.
		a := openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour),
			fleet.WithLeaseWindow(500*time.Millisecond))
		spec := state.BucketSpec{Rate: 100, Burst: 20}
		ab := a.Bucket(vpcsKey, spec, 0)
		ab.Reserve(0) // A borrows a lease: 49 tokens left in it
		other := newProcess(t, be, prefix, resilience.Config{}).store.Bucket(vpcsKey, spec, 0)
		other.Pause(0, 5*time.Second)
		// A lease window later, A reads the pause and drops its lease.
		time.Sleep(600 * time.Millisecond)
		if p, err := ab.(pauseReader).PausedFor(context.Background()); err != nil || p < 4*time.Second {
			t.Fatalf("A's PausedFor: %v, %v; want most of the other process's 5 s pause", p, err)
		}
		waitFor(t, 2*time.Second, "A's bucket idle", func() bool { return ab.Idle(0, 0) })
		// The pause leaves no token stored at its end, and moved the 30 of
		// A's lease past it; given back, the balance at its end is full
		// but for the one A took.
		if tokens := other.Snapshot(0).Tokens; tokens < 10 {
			t.Errorf("A's bucket went idle with the 49 tokens of the lease the pause dropped not given back: the bucket holds %.1f tokens at the pause's end; want 19", tokens)
		}
	})
}

// testStart is about when the fleet package's monotonic clock began (the
// test binary's start).
var testStart = time.Now()

// TestALocalTokenGivenBackAfterARedisOneGoesToTheLocalLimits pins which
// limits a token given back goes to when the latest the process took was
// Redis's and usable at once, which the token log does not keep (only its
// time), while the latest logged is the local limits'. Here a caller took
// a token of the local limits (Redis refused its lease request) while
// another's request was in flight, which Redis then answered with a token
// usable at once; the first gives its token back. It goes to the local
// limits, which gave it: read by its time, the latest token was Redis's,
// and Redis was given a token it never gave.
func TestALocalTokenGivenBackAfterARedisOneGoesToTheLocalLimits(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		a := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour),
			fleet.WithTimeout(2*time.Second))
		fallsBack(a) // the proxy refuses a caller's lease request (RefuseNext)
		// 1 rps with a burst of 1: the local limits made for the refusal
		// hold their burst when the process took no token in the last
		// second (on the fleet package's clock: its first second counts as
		// one with a token taken).
		time.Sleep(time.Until(testStart.Add(1100 * time.Millisecond)))
		spec := state.BucketSpec{Rate: 1, Burst: 1}
		// Lease requests are answered 200 ms late. Two at once, before the
		// test's, open the two connections its two requests go on (a
		// connection opened later sends its handshake first, which the
		// refusal below would hit), and leave the scripts in Redis.
		px.SlowAnswers(func(answer []byte) bool { return strings.HasPrefix(string(answer), "*14\r\n") }, 200*time.Millisecond)
		t.Cleanup(func() { px.SlowAnswers(nil, 0) })
		var warm sync.WaitGroup
		for _, key := range []string{"warm1", "warm2"} {
			warm.Go(func() { a.Bucket(key, spec, 0).Reserve(0) })
		}
		warm.Wait()
		reader := newProcess(t, be, prefix, resilience.Config{}).store.Bucket(vpcsKey, spec, 0)
		ab := a.Bucket(vpcsKey, spec, 0)
		// The try's request is answered with the bucket's one token, usable
		// at once; meanwhile Redis refuses the other caller's lease
		// request, which takes a token of the local limits.
		tried := make(chan bool)
		go func() { tried <- ab.TryReserve(0) }()
		time.Sleep(50 * time.Millisecond)
		px.RefuseNext([]byte("-ERR refused by the test\r\n"))
		if w := ab.Reserve(0); w > 0 {
			t.Fatalf("the local limits' token waits %v; want it usable at once", w)
		}
		if !<-tried {
			t.Fatal("the try took no token of Redis")
		}
		ab.Cancel(0)                       // the local limits' token
		time.Sleep(100 * time.Millisecond) // a give-back's operation, if one goes
		// Redis's one token taken, and its refill since, a third of one.
		if tokens := reader.Snapshot(0).Tokens; tokens > 0.75 {
			t.Errorf("Redis's bucket holds %.2f tokens after its one token was taken and the local limits' token given back; want its refill, about 0.3: Redis was given the local limits' token", tokens)
		}
	})
}
