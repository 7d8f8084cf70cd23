package test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cloudg/cloudg/cloudgotel"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// A collection whose context ends while the gauges read the scopes (an
// exporter's timeout passed on a governor whose state is in a shared
// store, where each read is a round trip) stops the reading there: the
// rest of the scopes are not read from the store for a collection the
// exporter has given up on, and the collection fails with the context's
// error rather than exporting the scopes read so far as all there are.
func TestACancelledCollectionStopsReadingTheStore(t *testing.T) {
	const n, cancelAt = 300, 10
	st := &countingStore{Store: resilience.MemoryStore()}
	m := newMeter()
	obs, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(m))
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Unregister()
	g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(obs), resilience.WithStateStore(st), resilience.WithReclaimAfter(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		sc := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "eu-west-1", Service: fmt.Sprintf("svc%d", i)}
		resilience.Do(context.Background(), sc, ok, resilience.WithGovernor(g))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st.reset(func(reads int) {
		if reads == cancelAt {
			cancel()
		}
	})
	var rm metricdata.ResourceMetrics
	err = m.reader.Collect(ctx, &rm)
	reads := st.reset(nil)
	if reads > 2*cancelAt {
		t.Errorf("%d snapshots read from the store for a collection cancelled at the %dth", reads, cancelAt)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled collection returned %v, want context.Canceled", err)
	}
	// The next collection reads every scope.
	st.reset(nil)
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if reads := st.reset(nil); reads < 2*n {
		t.Errorf("%d snapshots read for a collection of %d scopes", reads, n)
	}
}

// countingStore counts the snapshots read from its buckets and breakers,
// and calls onRead with the count after each.
type countingStore struct {
	state.Store
	mu     sync.Mutex
	reads  int
	onRead func(reads int)
}

// reset sets onRead and the count to 0, and returns the count before.
func (s *countingStore) reset(onRead func(reads int)) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.reads
	s.reads, s.onRead = 0, onRead
	return n
}

func (s *countingStore) read() {
	s.mu.Lock()
	s.reads++
	n, f := s.reads, s.onRead
	s.mu.Unlock()
	if f != nil {
		f(n)
	}
}

func (s *countingStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return countingBucket{s.Store.Bucket(key, spec, now), s}
}

func (s *countingStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return countingBreaker{s.Store.Breaker(key, spec), s}
}

type countingBucket struct {
	state.Bucket
	s *countingStore
}

func (b countingBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	b.s.read()
	return b.Bucket.Snapshot(now)
}

type countingBreaker struct {
	state.Breaker
	s *countingStore
}

func (b countingBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	b.s.read()
	return b.Breaker.Snapshot(now)
}

// A breaker state that is none of the three positions (a Store's, decoded
// from a corrupt record) is not reported as closed: cloudg.breaker.state,
// whose numbers are the positions' (0 closed, 1 half-open, 2 open), reads
// the state's number as it is, as its String names it
// state.BreakerState(n).
func TestAnUnknownBreakerStateIsNotReportedClosed(t *testing.T) {
	for _, bad := range []state.BreakerState{3, -1} {
		m := newMeter()
		obs, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(m))
		if err != nil {
			t.Fatal(err)
		}
		defer obs.Unregister()
		st := &badBreakerStore{resilience.MemoryStore(), bad}
		g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(obs), resilience.WithStateStore(st))
		if err != nil {
			t.Fatal(err)
		}
		resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g))
		if got := gauge[int64](t, m.collect(t)["cloudg.breaker.state"])[key(scopeKV(vpcs)...)]; got != int64(bad) {
			t.Errorf("a store's breaker in %v: cloudg.breaker.state %d, want %d", bad, got, int64(bad))
		}
	}
}

// badBreakerStore's breakers report the state bad in their snapshots.
type badBreakerStore struct {
	state.Store
	bad state.BreakerState
}

func (s *badBreakerStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return badBreaker{s.Store.Breaker(key, spec), s.bad}
}

type badBreaker struct {
	state.Breaker
	bad state.BreakerState
}

func (b badBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	snap := b.Breaker.Snapshot(now)
	snap.State = b.bad
	return snap
}
