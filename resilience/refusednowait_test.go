//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// refusingStore is the memory store whose breakers are open and refuse
// every call with the wait given, as a Store of the user's may answer:
// no wait (0, or a negative one) or one near a Duration's largest. Its
// breakers count the calls Allow answered, and let the call through
// after spin of them, so that a wait that asks again and again at once
// ends (in a synctest bubble a loop that sleeps for nothing never lets
// time pass).
type refusingStore struct {
	state.Store
	wait  time.Duration
	asked *atomic.Int64
}

const spin = 100_000

func (s refusingStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return refusingBreaker{s.Store.Breaker(key, spec), s}
}

type refusingBreaker struct {
	state.Breaker
	s refusingStore
}

func (b refusingBreaker) Allow(now time.Duration) (time.Duration, bool, bool) {
	if b.s.asked.Add(1) > spin {
		return 0, true, false
	}
	return b.s.wait, false, false
}

func (b refusingBreaker) AllowProbe(now time.Duration) (time.Duration, bool) {
	return b.s.wait, false
}

func (b refusingBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	s := b.Breaker.Snapshot(now)
	s.State, s.Wait = state.Open, b.s.wait
	return s
}

func (refusingBreaker) Pristine() bool { return false }

// A call of a provider that waits for its breaker's verdict (breaker_wait)
// whose breaker refuses it with a wait that is none (0, negative) waits
// within its deadline without asking the breaker again at once, over
// and over (it spun, a core at full speed, until its deadline); one
// whose breaker refuses it for longer than its deadline leaves (a
// Duration near its largest, added to the time, wrapped around and had
// the call wait out its deadline for nothing).
func TestABreakerWaitCallRefusedWithNoWaitOrAHugeOneDoesNotSpinNorWaitInVain(t *testing.T) {
	for _, w := range []time.Duration{0, -1, math.MinInt64, math.MaxInt64, math.MaxInt64 - time.Second} {
		t.Run(fmt.Sprint(int64(w)), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var asked atomic.Int64
				g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: true}}, WithStateStore(refusingStore{MemoryStore(), w, &asked}))
				time.Sleep(time.Minute) // the governor's clock past its epoch
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				start := time.Now()
				err := Do(ctx, ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g))
				took := time.Since(start)
				if n := asked.Load(); n > 1000 {
					t.Fatalf("the breaker was asked %d times in %v: the call spun", n, took)
				}
				if !errors.Is(err, state.ErrCircuitOpen) && !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("the call ended with %v, want a refusal", err)
				}
				if w > 5*time.Second && took != 0 {
					t.Errorf("a breaker refusing the call for %v held it %v: want it refused at once", w, took)
				}
			})
		})
	}
}
