//go:build go1.25

package pool

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// lockStore is a store whose buckets note each read (Snapshot) made while
// a pool's lock is held, as a store shared by a fleet's processes would
// be read across the network (fleet's Redis store reads a bucket with a
// round trip, and its client may wait for a connection).
type lockStore struct {
	state.Store
	p             atomic.Pointer[Pool] // the pool whose lock is looked at
	reads, locked atomic.Int32         // reads while p is set; those with its lock held
}

func (s *lockStore) Bucket(_ string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return &lockBucket{Bucket: bucket.New(spec, now), s: s}
}

// lockBucket is a bucket of a lockStore: the memory store's, whose
// Snapshot notes whether the pool's lock is held as it is read.
type lockBucket struct {
	*bucket.Bucket
	s *lockStore
}

func (b *lockBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	if p := b.s.p.Load(); p != nil {
		b.s.reads.Add(1)
		if p.mu.TryLock() {
			p.mu.Unlock()
		} else {
			b.s.locked.Add(1)
		}
	}
	return b.Bucket.Snapshot(now)
}

// The pool asks the governor about its queues (Governor.Delay) without
// its lock held: Delay reads the governor's store, which a fleet shares
// across the network, and a read under the pool's lock blocks every Go
// (tasks submitting their pages), every task's end and every other
// worker for the round trip, one round trip per queue a worker's pass
// asks about; Go does not block. Only the pool's one worker runs here
// while the store is looked at, so that the lock found held is its own.
func TestThePoolReadsTheGovernorsStoreWithoutItsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &lockStore{Store: resilience.MemoryStore()}
		g := newGov(t, 100, resilience.Config{}, resilience.WithStateStore(store))
		scopes := []resilience.Scope{scope("a"), scope("b"), scope("c")}
		for _, s := range scopes {
			if err := call(g, s, 0)(context.Background()); err != nil { // the scopes' state, which Delay reads
				t.Fatal(err)
			}
		}
		p, ctx := New(context.Background(), Workers(1), WithGovernor(g))
		store.p.Store(p)
		for range 3 {
			for _, s := range scopes {
				p.Go(ctx, s, call(g, s, 0))
			}
		}
		synctest.Wait() // the tasks run, and the one worker ends
		store.p.Store(nil)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if n := store.locked.Load(); n > 0 || store.reads.Load() == 0 {
			t.Errorf("the pool read the governor's store %d times of %d with its lock held", n, store.reads.Load())
		}
		if pr := p.Progress(); pr.Done != 9 {
			t.Fatalf("progress %v, want 9 done", pr)
		}
	})
}
