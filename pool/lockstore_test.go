//go:build go1.25

package pool

import (
	"context"
	"slices"
	"strings"
	"sync"
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
// round trip, and its client may wait for a connection). With a latency,
// each read while p is set takes as long as it says for the bucket's key
// (a round trip, in the bubble's virtual time) and is noted in readAt, by
// when it began.
type lockStore struct {
	state.Store
	p             atomic.Pointer[Pool]           // the pool whose lock is looked at
	reads, locked atomic.Int32                   // reads while p is set; those with its lock held
	latency       func(key string) time.Duration // how long a read of the bucket of key takes while p is set
	epoch         time.Time                      // readAt counts from then

	mu     sync.Mutex
	readAt []time.Duration // when each read while p is set began, since epoch
}

// readTimes returns when the reads made while p was set began.
func (s *lockStore) readTimes() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.readAt)
}

func (s *lockStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return &lockBucket{Bucket: bucket.New(spec, now), s: s, key: key}
}

// lockBucket is a bucket of a lockStore: the memory store's, whose
// Snapshot notes whether the pool's lock is held as it is read.
type lockBucket struct {
	*bucket.Bucket
	s   *lockStore
	key string
}

func (b *lockBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	if p := b.s.p.Load(); p != nil {
		b.s.reads.Add(1)
		if p.mu.TryLock() {
			p.mu.Unlock()
		} else {
			b.s.locked.Add(1)
		}
		if b.s.latency != nil {
			b.s.mu.Lock()
			b.s.readAt = append(b.s.readAt, time.Since(b.s.epoch))
			b.s.mu.Unlock()
			time.Sleep(b.s.latency(b.key))
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

// A queue parked for its scope's token is asked about again when the
// governor said the token comes, not a read of its store later: Delay's
// wait counts from when it was asked, and the pool, which asks with its
// lock released while the store is read across the network, parked the
// queue for that wait from when the answer came back, a round trip late,
// then asked again (another round trip) before it ran the task; a scope
// paced at r calls a second went at r/(1+r*RTT), the lost round trip
// one per token.
func TestAParkedQueueIsAskedAgainWhenItsTokenComes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const latency = 10 * time.Millisecond
		store := &lockStore{Store: resilience.MemoryStore(), epoch: time.Now()}
		store.latency = func(string) time.Duration { return latency }
		g := newGov(t, 1, resilience.Config{}, resilience.WithStateStore(store)) // 1 rps, burst 1
		s := scope("a")
		if err := call(g, s, 0)(context.Background()); err != nil { // takes the token: the next comes at 1s
			t.Fatal(err)
		}
		p, ctx := New(context.Background(), Workers(1), WithGovernor(g))
		store.p.Store(p)
		var started atomic.Int64
		p.Go(ctx, s, func(ctx context.Context) error {
			started.Store(int64(time.Since(store.epoch)))
			return call(g, s, 0)(ctx)
		})
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		reads := store.readTimes()
		if len(reads) < 2 || reads[0] != 0 {
			t.Fatalf("the store was read at %v: want a read at 0s, when the task was queued, and more once its token came", reads)
		}
		// The reads of the ask that found the token there: the last ones,
		// begun by the task's start.
		if again := reads[len(reads)-1]; again > time.Second {
			t.Errorf("the pool asked about the queue again at %v (the task started at %v), its token due at 1s: a read of the store takes %v (reads at %v)",
				again, time.Duration(started.Load()), latency, reads)
		}
	})
}

// Queues due at the same time for a token of a bucket their scopes share
// take it in the order they were in turn, whatever order the governor's
// answers about them come back in: the workers ask about them at once,
// their lock released, and a read of the store across the network takes
// as long as it takes. Here three operations share an account bucket at
// 1 rps; the store answers about C first and A last, though A was in turn
// first. Before, each queue was parked behind those whose answers came
// back before its own, and a queue whose store reads were slow (or whose
// worker was scheduled late) lost its turn to the others, pass after pass.
func TestQueuesDueAtOnceTakeASharedTokenInTheirTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		one := 1.0
		cfg := resilience.Config{}
		cfg.AWS.AccountMaxRPS, cfg.AWS.AccountBurst = &one, 1
		store := &lockStore{Store: resilience.MemoryStore(), epoch: time.Now()}
		slow := map[string]time.Duration{"A": 30 * time.Millisecond, "B": 20 * time.Millisecond, "C": 10 * time.Millisecond}
		store.latency = func(key string) time.Duration {
			return slow[key[strings.LastIndexByte(key, '/')+1:]] // a leaf's, by its operation
		}
		g := newGov(t, 100, cfg, resilience.WithStateStore(store)) // leaves at 100 rps, the account at 1
		ops := []string{"A", "B", "C"}
		for _, op := range ops { // the scopes' leaves, which Delay reads; the last takes the account's token
			if err := call(g, scope(op), 0)(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		p, ctx := New(context.Background(), Workers(3), WithGovernor(g))
		store.p.Store(p)
		var sent sendLog
		for _, op := range ops {
			p.Go(ctx, scope(op), sent.call(g, scope(op)))
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if order := sent.order(); !slices.Equal(order, ops) {
			t.Errorf("the scopes took the account's tokens in the order %v, want %v, the order they were in turn (the store answers about A in 30ms, B in 20ms, C in 10ms)", order, ops)
		}
	})
}
