//go:build go1.26

package resilience

import (
	"context"
	"errors"
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
}

func (s *tripStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return &tripOnAllow{Breaker: s.Store.Breaker(key, spec), s: s}
}

type tripOnAllow struct {
	state.Breaker
	s *tripStore
}

func (b *tripOnAllow) Allow(now time.Duration) (time.Duration, bool, bool) {
	wait, ok, probe := b.Breaker.Allow(now)
	if ok && b.s.trip.CompareAndSwap(true, false) {
		for !b.Breaker.Failure(now) {
		}
	}
	return wait, ok, probe
}

// A call the breaker let through, which must then wait for its token, is
// refused if the breaker opened between its answer and the wait: it asks
// again once it can hear of the next verdict. It slept until its token
// and was sent to a scope the breaker had just closed off (cloudgaws's
// dead-operation test saw one such request, once in a loaded run).
func TestBreakerOpenedBeforeTheTokenWaitRefusesTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &tripStore{Store: MemoryStore()}
		g := newGov(t, Config{AWS: ProviderConfig{BreakerThreshold: 1,
			Services: map[string]ServiceConfig{"ec2": {MaxRPS: 1, MinRPS: 1, Burst: 1}}}}, WithStateStore(store))
		n := 0
		if err := Do(context.Background(), ec2Vpcs, always(&n, nil), WithGovernor(g)); err != nil {
			t.Fatal(err) // takes the burst: the next token is 1 s away
		}
		store.trip.Store(true)
		err := Do(context.Background(), ec2Vpcs, always(&n, nil), WithGovernor(g))
		var coe *CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("the call after the breaker opened: %v, want *CircuitOpenError", err)
		}
		if n != 1 {
			t.Fatalf("%d calls sent, want 1: the second went to an open breaker", n)
		}
	})
}
