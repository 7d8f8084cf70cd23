//go:build go1.25

package resilience

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// droppingStore is the memory store whose buckets are state.Droppers: it
// records, by key, each bucket's Drop, and whether one of the governor's
// locks was held when it came.
type droppingStore struct {
	state.Store
	g      *Governor
	tables []*scopeTable

	mu      sync.Mutex
	dropped []string
	locked  []string
}

func (s *droppingStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return &droppingBucket{Bucket: s.Store.Bucket(key, spec, now), key: key, s: s}
}

type droppingBucket struct {
	state.Bucket
	key string
	s   *droppingStore
}

func (b *droppingBucket) Drop(now time.Duration) {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropped = append(s.dropped, b.key)
	held := func(what string, l sync.Locker, try func() bool) {
		if try() {
			l.Unlock()
		} else {
			s.locked = append(s.locked, b.key+" under "+what)
		}
	}
	held("the reclaimer's lock", &s.g.reclaim.mu, s.g.reclaim.mu.TryLock)
	held("the governor's lock", &s.g.mu, s.g.mu.TryLock)
	for _, t := range s.tables {
		held("the lock of "+t.set.name+"'s scope table", &t.mu, t.mu.TryLock)
	}
}

// The reclaimer tells each bucket it drops (state.Dropper), once, after
// it has dropped it and outside its locks: an idle scope's leaf, the
// bucket of an account none of its scopes uses any more, and a forgotten
// provider's bucket, never a bucket still in use.
func TestTheReclaimerTellsTheBucketsItDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &droppingStore{Store: MemoryStore()}
		account, global := 10.0, 5.0
		g := newGov(t, Config{
			AWS:       ProviderConfig{AccountMaxRPS: &account},
			Providers: map[string]ProviderConfig{"p1": {GlobalMaxRPS: &global}},
		}, WithStateStore(st))
		st.g = g
		ok := func(context.Context) error { return nil }
		quiet := Scope{Provider: "aws", Account: "1", Service: "iam"}
		other := Scope{Provider: "p1", Service: "rest"}
		hot := Scope{Provider: "aws", Account: "hot", Service: "iam"}
		for _, sc := range []Scope{quiet, other, hot} {
			if err := Do(context.Background(), sc, ok, WithGovernor(g)); err != nil {
				t.Fatal(err)
			}
		}
		st.tables = []*scopeTable{g.provider("aws").scopes, g.provider("p1").scopes}
		for range 120 { // a call a second for two minutes, to hot only
			time.Sleep(time.Second)
			Do(context.Background(), hot, ok, WithGovernor(g))
		}
		if n := g.liveScopes(); n != 1 {
			t.Fatalf("%d live scopes after two intervals, want the one in use", n)
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		slices.Sort(st.dropped)
		want := []string{accountKey(quiet), quiet.Key(), providerKey("p1"), other.Key()}
		slices.Sort(want)
		if !slices.Equal(st.dropped, want) {
			t.Errorf("the buckets told they were dropped: %q; want %q (the quiet scope's leaf and account, the forgotten provider's leaf and its own bucket, once each)", st.dropped, want)
		}
		if len(st.locked) > 0 {
			t.Errorf("Drop called under a lock: %q", st.locked)
		}
	})
}
