package fleet

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

// A failure Redis refused to count is kept for the write-back however the
// local breaker is made again meanwhile (a newer view): none is lost to a
// rebuild between the local breaker's lookup and the failure's note.
func TestNoFailureIsLostToARebuild(t *testing.T) {
	h := &successRedis{}
	rdb := unreachable()
	rdb.AddHook(h)
	defer rdb.Close()
	// No operation times out (one might have been counted by Redis).
	s := New(rdb, WithLogger(quiet), WithHeartbeat(time.Hour), WithTimeout(time.Minute))
	defer s.Close()
	spec := state.BreakerSpec{Threshold: 1 << 20, Cooldown: time.Minute, MaxCooldown: time.Minute}
	b := s.Breaker("aws/1/us-east-1/ec2/DescribeVpcs", spec).(*sharedBreaker)
	const workers, each = 8, 1000
	var stop atomic.Bool
	var views sync.WaitGroup
	views.Add(1)
	go func() { // newer views, each making the local breaker again at its next use
		defer views.Done()
		for !stop.Load() {
			toldClosed(b)
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				b.Failure(0) // refused
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	views.Wait()
	b.localMu.Lock()
	fails := len(b.fails) + b.older // the latest times, and the count of those before
	b.localMu.Unlock()
	if st := s.Stats(); st.Degraded {
		t.Fatalf("a Redis that refuses every operation: on local limits (%+v)", st)
	}
	if fails != workers*each {
		t.Errorf("%d failures Redis refused to count, the view renewed meanwhile: %d kept for the write-back, want all", workers*each, fails)
	}
}
