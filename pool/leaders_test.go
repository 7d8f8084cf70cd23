//go:build go1.25

package pool

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// leaderStore is a readStore whose reads of an account's bucket, while p
// is set, take latency (a fleet's round trip, in the bubble's virtual
// time) and note the most queues of the account leading its queues held
// back (queue.leads) at once, as each read begins.
type leaderStore struct {
	*readStore
	p       atomic.Pointer[Pool]
	latency time.Duration

	mu      sync.Mutex
	leaders int
}

func (s *leaderStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return leaderBucket{s.readStore.Bucket(key, spec, now), s, key}
}

type leaderBucket struct {
	state.Bucket
	s   *leaderStore
	key string
}

func (b leaderBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	if p := b.s.p.Load(); p != nil && b.key == "aws/123456789012" {
		p.mu.Lock()
		n := 0
		for _, q := range p.scopes {
			if q.leads {
				n++
			}
		}
		p.mu.Unlock()
		b.s.mu.Lock()
		b.s.leaders = max(b.s.leaders, n)
		b.s.mu.Unlock()
		time.Sleep(b.s.latency)
	}
	return b.Bucket.Snapshot(now)
}

// The queues of an account held back for one another's first calls
// (holdBack) have one leader at a time, asked for them all (unholdBack):
// a task's end, or another first call decided, while the leader is in
// turn or being asked about, does not make another, which would read the
// account's bucket again (with a fleet's store, a round trip) for what
// the leader's answer tells. Here heldBackReads' scan (200 tasks over 50
// operations of an account with four slots, one held outside the pool,
// four workers), each read of the store taking 5 ms.
func TestHeldBackQueuesHaveOneLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &leaderStore{readStore: newReadStore(), latency: 5 * time.Millisecond}
		g := cappedGov(t, 4,
			resilience.WithStateStore(store))
		outside := takeSlot(t, g)
		defer outside.Release()
		defer outside.End(nil)
		store.counts()
		start := time.Now()
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		store.p.Store(p)
		const tasks = 200
		for i := range tasks {
			sc := scope(fmt.Sprint("op", i%50))
			p.Go(ctx, sc, func(ctx context.Context) error {
				time.Sleep(5 * time.Millisecond)
				return resilience.Do(ctx, sc, func(context.Context) error {
					time.Sleep(10 * time.Millisecond)
					return nil
				}, resilience.WithGovernor(g))
			})
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		store.p.Store(nil)
		buckets, _ := store.counts()
		t.Logf("%.2f reads a task, makespan %v", float64(buckets["aws/123456789012"])/tasks, time.Since(start))
		if store.leaders > 1 {
			t.Fatalf("%d queues of the account led its queues held back at once; want one", store.leaders)
		}
	})
}
