//go:build go1.25

package statuspage

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// A page load costs what it shows and a pass over the scopes: ten times
// more live scopes (two thousand, then twenty thousand) with the same
// ten rows and accounts shown cost far fewer allocations than the scopes added, and
// far fewer bytes than a row (with its snapshot and counters) for each,
// whatever the format.
func TestPageLoadCostsWhatItShows(t *testing.T) {
	const small, large = 2_000, 20_000
	cost := func(n int, target string) (allocs float64, bytes uint64) {
		h := New(WithGovernor(many(t, n)), WithLimit(10))
		load := func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
			if w.Code != http.StatusOK {
				t.Fatal(w.Code)
			}
		}
		load()
		allocs = testing.AllocsPerRun(3, load)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		load()
		runtime.ReadMemStats(&after)
		return allocs, after.TotalAlloc - before.TotalAlloc
	}
	for _, target := range []string{"/", "/?format=json"} {
		a1, b1 := cost(small, target)
		a2, b2 := cost(large, target)
		t.Logf("%s: %.0f allocations and %d bytes per page load of %d scopes, %.0f and %d of %d", target, a1, b1, small, a2, b2, large)
		added := large - small
		if a2-a1 > float64(added/20) {
			t.Errorf("%s: %.0f more allocations for %d more scopes, want at most %d", target, a2-a1, added, added/20)
		}
		if int64(b2)-int64(b1) > int64(250*added) {
			t.Errorf("%s: %d more bytes for %d more scopes (%d a scope), want at most 250 a scope", target, int64(b2)-int64(b1), added, (int64(b2)-int64(b1))/int64(added))
		}
	}
}

// With a shared store (fleet mode, where each snapshot is a round trip
// to Redis), a page load reads each scope's bucket and breaker from the
// store once, for its status, and no more: not again for a summary the
// page does not show.
func TestPageLoadReadsEachScopeOnceFromTheStore(t *testing.T) {
	const n = 300
	st := &countingStore{Store: resilience.MemoryStore(), reads: map[string]int{}}
	g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(st), resilience.WithReclaimAfter(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	gov := resilience.WithGovernor(g)
	for i := range n {
		sc := resilience.Scope{Provider: "aws", Account: fmt.Sprintf("%012d", i/100), Region: "eu-west-1", Service: fmt.Sprintf("svc%d", i%100)}
		fn := func(context.Context) error { return nil }
		if i%10 == 3 {
			fn = func(context.Context) error { return throttled }
		}
		resilience.Do(context.Background(), sc, fn, gov, once)
	}
	for _, target := range []string{"/", "/?format=json"} {
		st.reset()
		w := httptest.NewRecorder()
		New(WithGovernor(g), WithLimit(20)).ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
		if w.Code != http.StatusOK {
			t.Fatal(w.Code)
		}
		buckets, breakers := 0, 0
		for key, reads := range st.snapshot() {
			if reads > 1 {
				t.Errorf("%s: %s read %d times", target, key, reads)
			}
			switch key[:strings.IndexByte(key, ' ')] {
			case "bucket":
				buckets++
			case "breaker":
				breakers++
			}
		}
		if buckets != n || breakers != n {
			t.Errorf("%s: %d buckets and %d breakers read, want the %d scopes'", target, buckets, breakers, n)
		}
	}
}

// countingStore counts the snapshots read from its buckets and breakers,
// by kind and key.
type countingStore struct {
	state.Store
	mu    sync.Mutex
	reads map[string]int
	total int
	// onRead, when set, is called with the reads since the last reset
	// after each read.
	onRead func(reads int)
}

func (s *countingStore) read(key string) {
	s.mu.Lock()
	s.reads[key]++
	s.total++
	total, f := s.total, s.onRead
	s.mu.Unlock()
	if f != nil {
		f(total)
	}
}

func (s *countingStore) reset() {
	s.mu.Lock()
	clear(s.reads)
	s.total = 0
	s.mu.Unlock()
}

func (s *countingStore) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.reads)
}

func (s *countingStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return countingBucket{s.Store.Bucket(key, spec, now), s, "bucket " + key}
}

func (s *countingStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return countingBreaker{s.Store.Breaker(key, spec), s, "breaker " + key}
}

type countingBucket struct {
	state.Bucket
	s   *countingStore
	key string
}

func (b countingBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	b.s.read(b.key)
	return b.Bucket.Snapshot(now)
}

type countingBreaker struct {
	state.Breaker
	s   *countingStore
	key string
}

func (b countingBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	b.s.read(b.key)
	return b.Breaker.Snapshot(now)
}

// A request whose context ends while the page reads the scopes (its
// client went away, or gave up on a page that takes long to read from a
// shared store) stops the reading there: the rest of the scopes are not
// read from the store for a page nobody will see, and the request is
// answered 503 rather than with a page of what was read.
func TestCancelledRequestStopsReadingTheStore(t *testing.T) {
	const n, cancelAt = 300, 10
	st := &countingStore{Store: resilience.MemoryStore(), reads: map[string]int{}}
	g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(st), resilience.WithReclaimAfter(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		sc := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "eu-west-1", Service: fmt.Sprintf("svc%d", i)}
		resilience.Do(context.Background(), sc, func(context.Context) error { return nil }, resilience.WithGovernor(g))
	}
	for _, target := range []string{"/", "/?format=json"} {
		ctx, cancel := context.WithCancel(context.Background())
		st.reset()
		st.onRead = func(reads int) {
			if reads == cancelAt {
				cancel()
			}
		}
		w := httptest.NewRecorder()
		New(WithGovernor(g)).ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil).WithContext(ctx))
		st.onRead = nil
		cancel()
		reads := 0
		for _, r := range st.snapshot() {
			reads += r
		}
		if reads > 2*cancelAt {
			t.Errorf("%s: %d snapshots read from the store for a request cancelled at the %dth", target, reads, cancelAt)
		}
		if w.Code != http.StatusServiceUnavailable {
			t.Errorf("%s: a cancelled request answered %d, want 503", target, w.Code)
		}
	}
}
