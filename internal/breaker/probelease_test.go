package breaker

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

// ProbeLease tells the time left in a half-open breaker's probe's lease,
// as Snapshot's Wait does, and nothing in any other state or once the
// lease is over.
func TestProbeLeaseIsTheSnapshotsWaitWhileHalfOpen(t *testing.T) {
	b := New(state.BreakerSpec{Threshold: 1, Cooldown: time.Minute})
	if left, ok := b.ProbeLease(0); ok {
		t.Errorf("closed: ProbeLease %v, true; want false", left)
	}
	b.Failure(0)
	if left, ok := b.ProbeLease(time.Second); ok {
		t.Errorf("open: ProbeLease %v, true; want false", left)
	}
	if _, ok, probe := b.Allow(time.Minute); !ok || !probe {
		t.Fatal("the probe was not let through after the cooldown")
	}
	for _, at := range []time.Duration{time.Minute, 90 * time.Second} {
		left, ok := b.ProbeLease(at)
		if s := b.Snapshot(at); !ok || left != s.Wait || left != 2*time.Minute-at {
			t.Errorf("half-open at %v: ProbeLease %v, %v; want the snapshot's wait %v", at, left, ok, s.Wait)
		}
	}
	if left, ok := b.ProbeLease(2 * time.Minute); ok {
		t.Errorf("the lease over: ProbeLease %v, true; want false", left)
	}
}
