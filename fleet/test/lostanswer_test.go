package test

import (
	"context"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// proxied starts a proxy to be's Redis, whose URL Open takes.
func proxied(t *testing.T, be backend) (*redisproxy.Proxy, string) {
	px, err := redisproxy.Start(be.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	return px, "redis://" + px.Addr() + "/0"
}

// outagePair opens the two processes of an outage's write-back tests on
// one prefix: a, through a proxy to be's Redis that the test takes down
// for the outage (heartbeat 200 ms, timeout 100 ms), and o, straight to
// be's Redis, which counts what the fleet does meanwhile. aOpts come after
// a's defaults (a test's own WithTimeout replaces the 100 ms). Both are
// closed as the test ends; o must stay on Redis (onRedis), a may not.
func outagePair(t *testing.T, be backend, aOpts ...fleet.Option) (px *redisproxy.Proxy, a, o *fleet.Store) {
	px, url := proxied(t, be)
	prefix := uniquePrefix(t)
	a = openStore(t, url, append([]fleet.Option{fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(200 * time.Millisecond), fleet.WithTimeout(100 * time.Millisecond)}, aOpts...)...)
	fallsBack(a) // the test takes the proxy down under it: the outage
	o = openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour))
	return px, a, o
}

// A script runs at most once per call: one whose answer is lost is not
// sent again (go-redis's default MaxRetries would send it up to 3 more
// times), since the scripts are not idempotent. One failure against a
// threshold of 2 is one failure, whether the answer came back or not.
func TestALostAnswerCountsAFailureOnce(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		s := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour))
		fallsBack(s) // the proxy drops the failure's answer: an operation Redis did not answer
		spec := state.BreakerSpec{Threshold: 2, Cooldown: time.Minute, MaxCooldown: time.Minute}
		s.Breaker("warm", spec).Failure(0) // Redis holds the script: EVALSHA, not EVAL
		br := s.Breaker("lost/failure", spec)
		px.DropAnswer()
		br.Failure(0)
		other := newProcess(t, be, prefix, resilience.Config{}) // reads the fleet's breaker
		if snap := other.store.Breaker("lost/failure", spec).Snapshot(0); snap.State != state.Closed || snap.Failures != 1 {
			t.Fatalf("one failure against a threshold of 2, its answer lost: the fleet's breaker is %v with %d failures, want closed with 1",
				snap.State, snap.Failures)
		}
	})
}

// The same for a token given back: Cancel of one token gives back one,
// however its answer fared.
func TestALostAnswerGivesATokenBackOnce(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		s := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour), fleet.WithMaxLease(1))
		fallsBack(s) // the proxy drops the give-back's answer: an operation Redis did not answer
		spec := state.BucketSpec{Rate: 1, Burst: 1}
		w := s.Bucket("warm", spec, 0)
		w.Reserve(0)
		w.Cancel(0) // Redis holds the scripts: EVALSHA, not EVAL
		time.Sleep(100 * time.Millisecond)
		b := s.Bucket("lost/give", spec, 0)
		for range 5 {
			b.Reserve(0) // 1 at once, then 4 queued: the balance at -4
		}
		other := newProcess(t, be, prefix, resilience.Config{}) // reads the fleet's bucket
		ob := other.store.Bucket("lost/give", spec, 0)
		before := ob.Snapshot(0).Tokens
		px.DropAnswer()
		b.Cancel(0)
		time.Sleep(300 * time.Millisecond)
		after := ob.Snapshot(0).Tokens
		if d := after - before; d > 1.5 {
			t.Fatalf("one token given back, its answer lost, raised the fleet's balance by %.2f (from %.2f to %.2f)", d, before, after)
		}
	})
}

// The same for the refunds of successes to the retry budget: a token's
// worth of refunds whose answer was lost (Redis may have added them) is
// not sent again when Redis answers again.
func TestALostAnswerRefundsTheBudgetOnce(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		// A timeout well above a loaded machine's Redis round trips, so
		// that only the dropped answer goes on local limits.
		s := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(200*time.Millisecond), fleet.WithTimeout(2*time.Second))
		fallsBack(s) // the proxy drops the refund's answer: an operation Redis did not answer
		rdb := be.client()
		defer rdb.Close()
		b := s.Budget("aws", 10)
		for b.Take() { // spends the 10 tokens; Redis holds the script: EVALSHA, not EVAL
		}
		for range 9 {
			b.Succeed() // a tenth of a token each, kept until a whole token's worth
		}
		if v, err := rdb.Get(context.Background(), prefix+":{budget:aws}").Float64(); err != nil || v != 0 || s.Stats().Fallbacks != 0 {
			t.Fatalf("before the lost answer: the fleet's budget holds %v tenths (%v), %d fallbacks; want 0 and none", v, err, s.Stats().Fallbacks)
		}
		px.DropAnswer()
		b.Succeed() // the tenth: the refund of a token goes to Redis, its answer lost
		waitFor(t, 10*time.Second, "the lost answer counted", func() bool { return s.Stats().RedisErrors > 0 })
		waitFor(t, 10*time.Second, "back on the shared state", func() bool { return !s.Stats().Degraded })
		s.Close() // sends whatever refund is pending
		v, err := rdb.Get(context.Background(), prefix+":{budget:aws}").Float64()
		if err != nil {
			t.Fatal(err)
		}
		if v != 10 { // tenths
			t.Fatalf("ten successes refunded one token, its answer lost: the fleet's budget holds %.1f tokens, want 1", v/10)
		}
	})
}
