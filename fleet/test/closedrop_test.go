package test

import (
	"strings"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// TestAStoreClosedAfterADropWithARequestInFlightKeepsNoLease: a bucket a
// Configure or Reset replaced (Drop) with a lease request in flight gives
// the answer's tokens beyond its caller back (dispatch); Close, right
// after, must wait for that answer as it does for a live bucket's
// (TestAStoreClosedWithARequestInFlightKeepsNoLease), or the give-back,
// sent after Close, is dropped. It fails on 18ebd54 (review of
// 322d8df/bab2b2c: a demonstration, no fix).
func TestAStoreClosedAfterADropWithARequestInFlightKeepsNoLease(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		a, err := fleet.Open(url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour),
			fleet.WithLeaseWindow(5*time.Second), fleet.WithTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		spec := state.BucketSpec{Rate: 10, Burst: 20}
		reader := newProcess(t, be, prefix, resilience.Config{}).store.Bucket(vpcsKey, spec, 0)
		reader.Snapshot(0)
		px.SlowAnswers(func(answer []byte) bool { return strings.HasPrefix(string(answer), "*14\r\n") }, 300*time.Millisecond)
		t.Cleanup(func() { px.SlowAnswers(nil, 0) })
		ab := a.Bucket(vpcsKey, spec, 0)
		done := make(chan struct{})
		go func() {
			ab.Reserve(0) // its request asks for a lease of 50
			close(done)
		}()
		time.Sleep(100 * time.Millisecond)
		ab.(state.Dropper).Drop(0) // a Configure or Reset replaced it
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		<-done
		time.Sleep(500 * time.Millisecond) // for any give-back in the background
		if tokens := reader.Snapshot(0).Tokens; tokens <= 15 {
			t.Errorf("the bucket holds %.1f tokens after Close, whose store had a lease request in flight for a bucket the governor dropped just before; want 19: the answer's lease was not given back", tokens)
		}
	})
}
