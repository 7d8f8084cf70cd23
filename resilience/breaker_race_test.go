//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// tripStore is a store whose breakers can be made to open right after they
// let a call through, as another call's failure would at the same instant
// from another goroutine.
type tripStore struct {
	state.Store
	trip atomic.Bool

	mu   sync.Mutex
	leaf state.Bucket // the last bucket made (the leaf, with no provider or account limit), for a test to move its queue
}

func (s *tripStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	b := s.Store.Bucket(key, spec, now)
	s.mu.Lock()
	s.leaf = b
	s.mu.Unlock()
	return b
}

func (s *tripStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return &tripOnAllow{Breaker: s.Store.Breaker(key, spec), s: s}
}

type tripOnAllow struct {
	state.Breaker
	s *tripStore
}

// Verdict is the breaker's own: a wait hears of the verdict the trip
// gives, as it would of another call's.
func (b *tripOnAllow) Verdict() <-chan struct{} {
	if v, ok := b.Breaker.(verdicts); ok {
		return v.Verdict()
	}
	return nil
}

func (b *tripOnAllow) Allow(now time.Duration) (time.Duration, bool, bool) {
	wait, ok, probe := b.Breaker.Allow(now)
	if ok && b.s.trip.CompareAndSwap(true, false) {
		for !b.Breaker.Failure(now) {
		}
	}
	return wait, ok, probe
}

// tripGovernor returns a governor over a tripStore whose ec2
// scope allows 1 rps (burst 1) and opens its breaker at one failure, with
// its burst taken by one call: the next call waits 1 s for its token. n
// counts the calls sent.
func tripGovernor(t *testing.T) (*tripStore, *Governor, *int) {
	t.Helper()
	store := &tripStore{Store: MemoryStore()}
	g := newGov(t, Config{AWS: ProviderConfig{BreakerThreshold: 1,
		Services: map[string]ServiceConfig{"ec2": {MaxRPS: 1, MinRPS: 1, Burst: 1}}}}, WithStateStore(store))
	n := new(int)
	if err := Do(context.Background(), ec2Vpcs, always(n, nil), WithGovernor(g)); err != nil {
		t.Fatal(err)
	}
	return store, g, n
}

// A call the breaker let through, which must then wait for its token, is
// refused if the breaker opened between its answer and the wait: it asks
// again once it can hear of the next verdict. It slept until its token
// and was sent to a scope the breaker had just closed off (cloudgaws's
// dead-operation test saw one such request, once in a loaded run).
func TestBreakerOpenedBeforeTheTokenWaitRefusesTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, g, n := tripGovernor(t)
		store.trip.Store(true)
		err := Do(context.Background(), ec2Vpcs, always(n, nil), WithGovernor(g))
		var coe *CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("the call after the breaker opened: %v, want *CircuitOpenError", err)
		}
		if *n != 1 {
			t.Fatalf("%d calls sent, want 1: the second went to an open breaker", *n)
		}
	})
}

// A call waiting for its token that its queue wakes (a pause, a rate
// change) asks the breaker, and a breaker that opens right after that
// answer (another call's failure at the same instant) refuses the call
// too: the wait asks again whenever it takes the next verdict's channel,
// not only the first time. It slept on until its token and was sent to the
// open breaker (cloudgaws's dead-operation test saw one such request in
// about one run of fifty).
func TestBreakerOpenedWhileTheQueueWokeTheWaitRefusesTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, g, n := tripGovernor(t)
		done := make(chan error, 1)
		go func() { done <- Do(context.Background(), ec2Vpcs, always(n, nil), WithGovernor(g)) }()
		synctest.Wait() // the second call waits for its token
		store.mu.Lock()
		leaf := store.leaf
		store.mu.Unlock()
		if leaf == nil {
			t.Fatal("no bucket made")
		}
		// The pause moves the queue and wakes the wait, whose breaker
		// check then opens the breaker right after it answers.
		store.trip.Store(true)
		leaf.Pause(g.now(), 100*time.Millisecond)
		err := <-done
		var coe *CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("the call after the breaker opened: %v, want *CircuitOpenError", err)
		}
		if *n != 1 {
			t.Fatalf("%d calls sent, want 1: the second went to an open breaker", *n)
		}
		if store.trip.Load() {
			t.Fatal("the breaker was not asked after the queue woke the wait")
		}
	})
}
