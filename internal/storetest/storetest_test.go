//go:build go1.25

package storetest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/storetest"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// A throttle and a pause take the store's delay, and are recorded.
func TestSlowPausesTakeTheirTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := storetest.SlowPauses(resilience.MemoryStore(), 5*time.Millisecond)
		b := s.Bucket("aws/1/r/ec2", state.BucketSpec{Rate: 10, Burst: 10}, 0)
		start := time.Now()
		b.Throttle(0, time.Minute)
		b.Pause(0, 2*time.Minute)
		if took := time.Since(start); took != 10*time.Millisecond {
			t.Errorf("a throttle and a pause took %v, want 10ms", took)
		}
		if p := b.Snapshot(0).Paused; p != 2*time.Minute {
			t.Errorf("the bucket is paused for %v, want 2m", p)
		}
	})
}

// A read of a budget's tokens runs the hook set, once, after the read.
func TestBudgetReadsRunTheHookOnce(t *testing.T) {
	s := storetest.HookBudgetReads(resilience.MemoryStore())
	if !s.Ran() {
		t.Error("a store with no hook set says its hook has yet to run")
	}
	b := s.Budget("aws", 10)
	runs := 0
	s.OnNextRead(func() {
		runs++
		b.Take()
	})
	if s.Ran() {
		t.Error("the hook set ran before a read")
	}
	if left := b.Remaining(); left != 10 {
		t.Errorf("the hooked read returned %v tokens, want 10, read before the hook ran", left)
	}
	if left := b.Remaining(); left != 9 || runs != 1 {
		t.Errorf("the next read returned %v tokens with the hook run %d times, want 9 (the hook's Take) and once", left, runs)
	}
	if !s.Ran() {
		t.Error("the hook ran and the store says it has not")
	}
}
