package fleet

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

// A local breaker made again from the view counts the failures before
// the latest 64 the process alone counted (older, all as of the last of
// them) at once, not one by one: with a high threshold and a long outage,
// one count per failure, up to the threshold (2^28 allowed), held the
// scope's locks for seconds at each rebuild and each Snapshot read from
// the view. The count is the same, and the failure that reaches the
// threshold opens it as of its time.
func TestARebuildCountsTheOlderFailuresAtOnce(t *testing.T) {
	rdb := unreachable()
	defer rdb.Close()
	s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour))
	defer s.Close()
	const threshold = 1 << 28
	b := s.Breaker("aws/123456789012/us-east-1/ec2/DescribeVpcs", state.BreakerSpec{Threshold: threshold, Cooldown: time.Minute, MaxCooldown: time.Minute}).(*sharedBreaker)
	toldClosed(b)
	for range 100 {
		b.Failure(0) // refused: 36 before the latest 64
	}
	rebuild := func(older int) (failures int, st state.BreakerState, openedAt time.Duration, took time.Duration) {
		b.localMu.Lock()
		defer b.localMu.Unlock()
		b.older = older // as many failures before the latest 64 as an outage of hours counts
		b.mu.Lock()
		defer b.mu.Unlock()
		start := time.Now()
		l, _, at := b.fromView(0)
		took = time.Since(start)
		snap := l.Snapshot(0)
		return snap.Failures, snap.State, at, took
	}
	if n, st, _, took := rebuild(1 << 24); st != state.Closed || n != 1<<24+64 || took > time.Second {
		t.Errorf("2^24 failures before the latest 64, a threshold of 2^28: the local breaker made again %v with %d failures in %v, want closed with %d in well under a second", st, n, took, 1<<24+64)
	}
	b.localMu.Lock()
	th := b.fails[9] // with threshold-10 before them, the 10th latest reaches the threshold
	b.localMu.Unlock()
	if _, st, at, took := rebuild(threshold - 10); st != state.Open || at != th || took > time.Second {
		t.Errorf("2^28-10 failures before the latest 64, a threshold of 2^28: the local breaker made again %v as of %v in %v, want open as of the 10th of the latest, %v, in well under a second", st, at, took, th)
	}
	b.localMu.Lock()
	last := b.olderLast
	b.localMu.Unlock()
	if _, st, at, _ := rebuild(threshold); st != state.Open || at != last {
		t.Errorf("2^28 failures before the latest 64, a threshold of 2^28: the local breaker made again %v as of %v, want open as of the last of them, %v", st, at, last)
	}
}
