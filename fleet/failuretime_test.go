package fleet

import (
	"strconv"
	"testing"
	"time"
)

// ago moves the times the breaker holds on mono (the failures the local
// breaker alone counted, and the mono reading of the callers' clock) d
// earlier, as if d had passed on mono since they were read: the callers'
// clock then reads d more than it did at those failures.
func ago(b *sharedBreaker, d time.Duration) {
	b.localMu.Lock()
	for i := range b.fails {
		b.fails[i] -= d
	}
	b.localMu.Unlock()
	b.mu.Lock()
	b.clockMono -= d
	b.readBack -= d
	b.mu.Unlock()
}

// A local breaker made again from a newer view counts the failures the
// local breaker alone counted at the times they came, not at the time it
// is made again: when they open it, with the view's failures, it opens as
// of the failure that reached the threshold, its cooldown running from
// then, as the write-back opens the fleet's (and as one local breaker
// that counted them all as they came would have). Here 2 failures Redis
// refused at 0, then a view read at 0 with another process's failure (3
// of a threshold of 3), and the next call 40s later. (The local breaker
// made again at 40s opened then, and refused the calls until 100s where
// the spec's cooldown from the third failure ends at 60s: a call at 70s
// was refused for 30s more instead of going as the probe.)
func TestCarriedFailuresCountAtTheirTime(t *testing.T) {
	b := carriedFailures(t)
	// Another process's failure, in the answer to a request in flight.
	b.update(0, reading{st: "closed", failures: "1", cooldown: strconv.FormatInt(unwrittenSpec.Cooldown.Microseconds(), 10),
		wait: "0", at: strconv.FormatInt(time.Now().UnixMicro(), 10), sent: mono()})
	ago(b, 40*time.Second)
	wait40, ok40, _ := b.Allow(40 * time.Second)
	b.localMu.Lock()
	learned := b.learned
	b.localMu.Unlock()
	_, ok70, probe70 := b.Allow(70 * time.Second)
	if ok40 || wait40 > 20*time.Second+time.Second || !ok70 || !probe70 {
		t.Errorf("2 failures Redis refused at 0, a view read at 0 with a third, threshold 3, cooldown %v: at 40s allowed %v with a wait of %v, at 70s allowed %v (probe %v); want refused for about 20s at 40s, the probe at 70s",
			unwrittenSpec.Cooldown, ok40, wait40, ok70, probe70)
	}
	if since := mono() - learned; learned == 0 || since < 39*time.Second {
		t.Errorf("the local breaker opened by the carried failures: its change written back as %v ago, want about 40s (the third failure's time)", since)
	}
}

// The failures the local breaker alone counted open a local breaker made
// again from a newer view as of the failure that reached the threshold in
// time, as the write-back opens the fleet's (Redis sorts the failures it
// is told of with those it holds): when the view's failures reach it, the
// breaker opens as of the latest time they may have come, when the view
// was read, not as of the carried failure counted last, which came before
// them. Here 2 failures Redis refused at 0, a view read at 30s with
// another process's failure (3 of a threshold of 3), and the next call at
// 40s: the cooldown of 1m runs from 30s, to 90s.
func TestCarriedFailuresOpenAsOfTheViewsLaterFailure(t *testing.T) {
	b := carriedFailures(t)
	ago(b, 30*time.Second)
	// Another process's failure, in the answer to a request in flight, read at 30s.
	b.update(30*time.Second, reading{st: "closed", failures: "1", cooldown: strconv.FormatInt(unwrittenSpec.Cooldown.Microseconds(), 10),
		wait: "0", at: strconv.FormatInt(time.Now().UnixMicro(), 10), sent: mono()})
	ago(b, 10*time.Second)
	wait40, ok40, _ := b.Allow(40 * time.Second)
	b.localMu.Lock()
	learned := b.learned
	b.localMu.Unlock()
	_, ok70, probe70 := b.Allow(70 * time.Second)
	if ok40 || wait40 < 50*time.Second-time.Second || wait40 > 50*time.Second+time.Second || ok70 || probe70 {
		t.Errorf("2 failures Redis refused at 0, a view read at 30s with a third, threshold 3, cooldown %v: at 40s allowed %v with a wait of %v, at 70s allowed %v (probe %v); want refused for about 50s at 40s, and at 70s",
			unwrittenSpec.Cooldown, ok40, wait40, ok70, probe70)
	}
	if since := mono() - learned; learned == 0 || since < 9*time.Second || since > 11*time.Second {
		t.Errorf("the local breaker opened by the carried failures with the view's: its change written back as %v ago, want about 10s (when the view's failure was read)", since)
	}
}

// carriedFailures returns a breaker of a store back on the shared state
// after an outage, Redis refusing every operation, told closed, with one
// failure fewer than unwrittenSpec's threshold counted at 0 by the local
// breaker alone, for the write-back. The store is closed as the test ends.
func carriedFailures(t *testing.T) *sharedBreaker {
	t.Helper()
	s, h := inOutage(t)
	t.Cleanup(func() { s.Close() })
	b := s.Breaker("aws/1/us-east-1/ec2/DescribeVpcs", unwrittenSpec).(*sharedBreaker)
	h.down.Store(false)
	s.heartbeat() // refused: back on the shared state, every operation refused
	if s.Stats().Degraded {
		t.Fatal("a Redis that refuses the heartbeat: on local limits")
	}
	toldClosed(b)
	for range unwrittenSpec.Threshold - 1 {
		b.Failure(0) // refused: counted by the local breaker alone, for the write-back
	}
	return b
}
