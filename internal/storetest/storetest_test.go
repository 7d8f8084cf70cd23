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
