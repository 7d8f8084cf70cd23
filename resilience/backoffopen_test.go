//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// openForEver is the memory store whose breakers let the first call
// through and then say they are open for as long as a Duration holds, as
// a Store of the user's may for a scope it holds shut.
type openForEver struct{ state.Store }

func (s openForEver) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return &openForEverBreaker{Breaker: s.Store.Breaker(key, spec)}
}

type openForEverBreaker struct {
	state.Breaker
	asked atomic.Int32
}

func (b *openForEverBreaker) Allow(now time.Duration) (time.Duration, bool, bool) {
	if b.asked.Add(1) == 1 {
		return 0, true, false
	}
	return math.MaxInt64, false, false
}

func (b *openForEverBreaker) AllowProbe(now time.Duration) (time.Duration, bool) {
	return math.MaxInt64, false
}

func (b *openForEverBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	if b.asked.Load() == 0 {
		return b.Breaker.Snapshot(now)
	}
	return state.BreakerSnapshot{State: state.Open, Wait: math.MaxInt64, Cooldown: time.Minute}
}

func (b *openForEverBreaker) Pristine() bool { return b.asked.Load() == 0 }

// A call whose retry's backoff ends long before its breaker lets a probe
// through (open for as long as a Duration holds) is refused as its
// backoff begins, not once it has slept it: the breaker's wait added to
// the time wrapped around, and the breaker read as one that lets the
// retry through.
func TestABackoffEndsAtOnceBeforeABreakerOpenForAsLongAsADurationHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{}, WithStateStore(openForEver{MemoryStore()}))
		time.Sleep(time.Minute) // the governor's clock past its epoch
		var backoffFrom time.Time
		n := 0
		err := Do(context.Background(), ec2Vpcs, func(context.Context) error {
			n++
			backoffFrom = time.Now()
			return transientErr()
		}, WithGovernor(g))
		if !errors.Is(err, state.ErrCircuitOpen) || n != 1 {
			t.Fatalf("Do: %v after %d attempts, want refused by the breaker after one", err, n)
		}
		if took := time.Since(backoffFrom); took != 0 {
			t.Errorf("the call slept %v of its backoff before its breaker refused it, want none", took)
		}
	})
}
