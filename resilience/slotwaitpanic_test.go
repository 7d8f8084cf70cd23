//go:build go1.25

package resilience

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// snapshotPanics is the memory store whose buckets' Snapshot panics
// while armed: a Store of the user's with a bug in that method.
type snapshotPanics struct {
	state.Store
	armed *atomic.Bool
}

func (s snapshotPanics) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return snapshotPanicsBucket{s.Store.Bucket(key, spec, now), s.armed}
}

type snapshotPanicsBucket struct {
	state.Bucket
	armed *atomic.Bool
}

func (b snapshotPanicsBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	if b.armed.Load() {
		panic("boom in Snapshot")
	}
	return b.Bucket.Snapshot(now)
}

// A call that waited for its account's slot reads, once it has it,
// whether a pause came meanwhile (a Store's bucket by its Snapshot): a
// panic of the Store's there goes on to the caller and gives the slot
// back, as a panic in the reclaimer's step does. The slot stayed taken
// for good: the next call of the account waited out its deadline.
func TestAStorePanicAfterASlotWaitGivesTheSlotBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var armed atomic.Bool
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}}, WithStateStore(snapshotPanics{MemoryStore(), &armed}))
		release := make(chan struct{})
		first := make(chan struct{})
		go func() {
			defer func() { recover() }() // its own record may read a Snapshot too
			Do(context.Background(), ec2Vpcs, func(context.Context) error {
				close(first)
				<-release
				return nil
			}, WithGovernor(g))
		}()
		<-first
		panicked := make(chan any)
		go func() {
			defer func() { panicked <- recover() }()
			Do(context.Background(), ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g))
		}()
		synctest.Wait() // the second call waits for the slot
		armed.Store(true)
		close(release)
		if r := <-panicked; r != "boom in Snapshot" {
			t.Fatalf("the call that waited for the slot panicked with %v, want the store's panic", r)
		}
		armed.Store(false)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		if err := Do(ctx, ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
			t.Fatalf("the next call of the account: %v after %v; want it through at once", err, time.Since(start))
		}
	})
}
