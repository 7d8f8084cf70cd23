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
	twice   []string // the keys of the buckets told more than once
}

func (s *droppingStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return &droppingBucket{Bucket: s.Store.Bucket(key, spec, now), key: key, s: s}
}

type droppingBucket struct {
	state.Bucket
	key   string
	s     *droppingStore
	drops int // guarded by s.mu
}

func (b *droppingBucket) Drop(now time.Duration) {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropped = append(s.dropped, b.key)
	if b.drops++; b.drops == 2 {
		s.twice = append(s.twice, b.key)
	}
	held := func(what string, l sync.Locker, try func() bool) {
		if try() {
			l.Unlock()
		} else {
			s.locked = append(s.locked, b.key+" under "+what)
		}
	}
	held("the reclaimer's lock", &s.g.reclaim.mu, s.g.reclaim.mu.TryLock)
	held("the governor's lock", &s.g.mu, s.g.mu.TryLock)
	tables := s.tables
	for _, name := range []string{"aws", "azure", "gcp", "p1"} { // and those in force now
		if p := s.g.existing(name); p != nil {
			tables = append(tables, p.scopes)
		}
	}
	for _, t := range tables {
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

// takeDropped returns the keys of the buckets told they were dropped since
// the last call, sorted, and forgets them.
func (s *droppingStore) takeDropped() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dropped
	s.dropped = nil
	slices.Sort(d)
	return d
}

// inForceDropped returns the keys of the buckets of providers' tables in
// force (provider buckets, account buckets, live leaves) told they were
// dropped.
func (s *droppingStore) inForceDropped(providers ...string) []string {
	var bs []state.Bucket
	for _, name := range providers {
		t := s.g.existing(name).scopes
		t.mu.Lock()
		bs = append(bs, t.global)
		for _, a := range t.accounts {
			bs = append(bs, a.bucket, a.global)
		}
		t.mu.Unlock()
		for _, e := range t.live() {
			bs = append(bs, e.leaf, e.acct.bucket)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for _, b := range bs {
		if d, ok := b.(*droppingBucket); ok && d.drops > 0 && !slices.Contains(keys, d.key) {
			keys = append(keys, d.key)
		}
	}
	return keys
}

// A Configure that changes a provider's bucket settings, and a Reset,
// replace its buckets: each bucket replaced (state.Dropper) is told so,
// once, outside the governor's and the tables' locks, as the reclaimer
// tells those it drops; a bucket a Configure keeps (one that changes the
// cap or the breakers only), and the buckets in force after either, are
// not. A call in flight through the change still ends.
func TestConfigureAndResetTellTheBucketsTheyReplace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &droppingStore{Store: MemoryStore()}
		account, global := 10.0, 5.0
		cfg := Config{
			AWS:       ProviderConfig{AccountMaxRPS: &account},
			Providers: map[string]ProviderConfig{"p1": {GlobalMaxRPS: &global}},
		}
		g := newGov(t, cfg, WithStateStore(st))
		st.g = g
		ok := func(context.Context) error { return nil }
		a := Scope{Provider: "aws", Account: "1", Service: "iam"}
		other := Scope{Provider: "p1", Service: "rest"}
		for _, sc := range []Scope{a, other} {
			if err := Do(context.Background(), sc, ok, WithGovernor(g)); err != nil {
				t.Fatal(err)
			}
		}
		release := make(chan struct{})
		inFlight := make(chan error, 1)
		go func() { // holds its slot and the bucket it took its token of through every change
			inFlight <- Do(context.Background(), a, func(context.Context) error { <-release; return nil }, WithGovernor(g))
		}()
		synctest.Wait()
		all := []string{accountKey(a), a.Key(), providerKey("p1"), other.Key()}
		slices.Sort(all)
		step := func(what string, change func(), want []string) {
			t.Helper()
			st.mu.Lock()
			st.tables = []*scopeTable{g.existing("aws").scopes, g.existing("p1").scopes}
			st.mu.Unlock()
			change()
			if got := st.takeDropped(); !slices.Equal(got, want) {
				t.Errorf("the buckets told they were dropped after %s: %q; want %q", what, got, want)
			}
			if got := st.inForceDropped("aws", "p1"); len(got) > 0 {
				t.Errorf("after %s, buckets in force were told they were dropped: %q", what, got)
			}
		}
		step("a Configure of the cap and the breakers (buckets kept)", func() {
			cfg.AWS.MaxConcurrency = 7
			cfg.Providers["p1"] = ProviderConfig{GlobalMaxRPS: &global, BreakerThreshold: 9}
			if err := g.Configure(cfg); err != nil {
				t.Fatal(err)
			}
		}, nil)
		step("a Configure of aws's account rate and p1's provider rate", func() {
			account, global := 20.0, 6.0
			cfg.AWS.AccountMaxRPS = &account
			cfg.Providers["p1"] = ProviderConfig{GlobalMaxRPS: &global, BreakerThreshold: 9}
			if err := g.Configure(cfg); err != nil {
				t.Fatal(err)
			}
		}, all)
		step("a Configure that changes nothing", func() {
			if err := g.Configure(cfg); err != nil {
				t.Fatal(err)
			}
		}, nil)
		step("a Reset", g.Reset, all)
		close(release)
		if err := <-inFlight; err != nil {
			t.Errorf("the call in flight through the changes: %v", err)
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if len(st.twice) > 0 {
			t.Errorf("buckets told more than once they were dropped: %q", st.twice)
		}
		if len(st.locked) > 0 {
			t.Errorf("Drop called under a lock: %q", st.locked)
		}
	})
}
