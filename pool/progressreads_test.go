//go:build go1.25

package pool

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// readStore is a state store, shared as a fleet's is (the governor reads
// it for what other processes taught), that counts the reads of each
// bucket and breaker (Snapshot) by key: with fleet's Redis store each is
// a round trip. Its state is the memory store's.
type readStore struct {
	state.Store

	mu                sync.Mutex
	buckets, breakers map[string]int
}

func newReadStore() *readStore {
	return &readStore{Store: resilience.MemoryStore(), buckets: map[string]int{}, breakers: map[string]int{}}
}

func (s *readStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return readBucket{s.Store.Bucket(key, spec, now), s, key}
}

func (s *readStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return readBreaker{s.Store.Breaker(key, spec), s, key}
}

// counts returns the reads counted so far, and forgets them.
func (s *readStore) counts() (buckets, breakers map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buckets, breakers = s.buckets, s.breakers
	s.buckets, s.breakers = map[string]int{}, map[string]int{}
	return buckets, breakers
}

type readBucket struct {
	state.Bucket
	s   *readStore
	key string
}

func (b readBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	b.s.mu.Lock()
	b.s.buckets[b.key]++
	b.s.mu.Unlock()
	return b.Bucket.Snapshot(now)
}

type readBreaker struct {
	state.Breaker
	s   *readStore
	key string
}

func (b readBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	b.s.mu.Lock()
	b.s.breakers[b.key]++
	b.s.mu.Unlock()
	return b.Breaker.Snapshot(now)
}

// Progress reads each bucket of the governor's store once per call: each
// scope's leaf and breaker, each account's bucket once for all the
// account's scopes, and the provider's provider-wide bucket
// (global_max_rps) once for all the provider's: with a fleet's store
// each read is a round trip. Its figures are those of the same pool on a
// governor of its own process. Here ten operations of one account, and
// five of another, half of them used before (the governor holds their
// state) and half not (read from the store), wait in a pool whose one
// worker is busy. Before, Progress asked Delay and Inspect of each scope,
// both reading the account's and the provider's buckets: the provider
// bucket was read 30 times in one Progress.
func TestProgressReadsEachBucketOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rps, acctRPS := 50.0, 20.0
		cfg := func() resilience.Config {
			return resilience.Config{AWS: resilience.ProviderConfig{GlobalMaxRPS: &rps, GlobalBurst: 5, AccountMaxRPS: &acctRPS, AccountBurst: 3}}
		}
		store := newReadStore()
		shared := newGov(t, 2, cfg(), resilience.WithStateStore(store))
		local := newGov(t, 2, cfg())
		var scopes []resilience.Scope
		for a, n := range []int{10, 5} {
			for i := range n {
				sc := scope(fmt.Sprint("op", i))
				sc.Account = fmt.Sprint(111111111111 * (a + 1))
				scopes = append(scopes, sc)
			}
		}
		var buckets, breakers map[string]int // what the shared governor's Progress read
		progress := func(g *resilience.Governor, store *readStore) Progress {
			for i, sc := range scopes {
				if i%2 == 0 { // used before: the governor holds its state
					if err := call(g, sc, 0)(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
			p, ctx := New(context.Background(), Workers(1), WithGovernor(g))
			release, started := make(chan struct{}), make(chan struct{})
			p.Go(ctx, resilience.Scope{}, func(context.Context) error {
				close(started)
				<-release
				return nil
			})
			<-started
			for i, sc := range scopes {
				for range 3 + i {
					p.Go(ctx, sc, func(context.Context) error { return nil })
				}
			}
			synctest.Wait()
			if store != nil {
				store.counts()
			}
			pr := p.Progress()
			if store != nil {
				buckets, breakers = store.counts()
			}
			close(release)
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			return pr
		}
		got := progress(shared, store)
		if len(buckets) == 0 || len(breakers) == 0 {
			t.Fatalf("setup: Progress read no bucket (%v) or no breaker (%v) of the store", buckets, breakers)
		}
		for _, m := range []map[string]int{buckets, breakers} {
			for _, key := range slices.Sorted(maps.Keys(m)) {
				if n := m[key]; n != 1 {
					t.Errorf("one Progress of %d scopes read %s %d times, want once", len(scopes), key, n)
				}
			}
		}
		if want := progress(local, nil); !reflect.DeepEqual(got, want) {
			t.Errorf("Progress on the shared store:\n%+v\nwant, as on a governor of its own process:\n%+v", got, want)
		}
		if got.ETA == 0 {
			t.Errorf("setup: an ETA of 0 (%+v)", got)
		}
	})
}

// Progress reads the breaker of a scope with no task queued once, as it
// read it before the pool's Progress went through a resilience.Survey: it
// needs the scope's snapshot, not Delay's answer, which reads a breaker
// that is not pristine a second time (with a fleet's store, a round trip
// each). Here a scope whose one task's call failed (its breaker no longer
// pristine, closed), nothing queued: one Progress reads its breaker once.
func TestProgressReadsAnIdleScopesBreakerOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newReadStore()
		g := newGov(t, 2, resilience.Config{}, resilience.WithStateStore(store))
		sc := scope("op")
		p, ctx := New(context.Background(), Workers(1), WithGovernor(g))
		p.Go(ctx, sc, func(ctx context.Context) error {
			return resilience.Do(ctx, sc, func(context.Context) error { return &apiErr{code: "InternalError", status: 500} },
				resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		})
		synctest.Wait()
		store.counts()
		pr := p.Progress()
		_, breakers := store.counts()
		if pr.Failed != 1 || pr.Queued != 0 {
			t.Fatalf("setup: %+v; want the task failed, none queued", pr)
		}
		if n := breakers[sc.Key()]; n != 1 {
			t.Errorf("one Progress read the breaker of %v, idle, %d times; want once", sc, n)
		}
		p.Wait()
	})
}
