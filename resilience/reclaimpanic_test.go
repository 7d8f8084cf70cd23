//go:build go1.25

package resilience

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// idlePanics is the memory store whose buckets' Idle panics while armed:
// a Store of the user's with a bug in the method the reclaimer asks.
type idlePanics struct {
	state.Store
	armed *atomic.Bool
}

func (s idlePanics) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return idlePanicsBucket{s.Store.Bucket(key, spec, now), s.armed}
}

type idlePanicsBucket struct {
	state.Bucket
	armed *atomic.Bool
}

func (b idlePanicsBucket) Idle(now, minIdle time.Duration) bool {
	if b.armed.Load() {
		panic("boom in Idle")
	}
	return b.Bucket.Idle(now, minIdle)
}

// A panic of the Store's during the reclaimer's step a call takes after
// it took its slot goes on to the caller, as a panic of the governor's
// log handler does, and ends the call as EndPanicked does: the slot goes
// back (under a cap of one, the next call takes it at once) and the
// call is lost as panicked. The slot stayed taken for good: every later
// call of the account waited out its deadline.
func TestAStorePanicInTheReclaimStepGivesTheSlotBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var armed atomic.Bool
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}}, WithStateStore(idlePanics{MemoryStore(), &armed}))
		ok := func(context.Context) error { return nil }
		if err := Do(context.Background(), iamUsers, ok, WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute) // a pass of the reclaimer is due, and iamUsers idle
		armed.Store(true)
		var panicked any
		func() {
			defer func() { panicked = recover() }()
			Do(context.Background(), ec2Vpcs, ok, WithGovernor(g))
		}()
		armed.Store(false)
		if panicked != "boom in Idle" {
			t.Fatalf("the call's reclaim step panicked with %v, want the store's panic", panicked)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		if err := Do(ctx, ec2Vpcs, ok, WithGovernor(g)); err != nil {
			t.Fatalf("the next call of the account: %v after %v; want it through at once", err, time.Since(start))
		}
		if s := g.Inspect(ec2Vpcs); s.InFlight != 0 {
			t.Errorf("%d slots in use after the calls ended", s.InFlight)
		}
		tot, _ := g.Lifetime()
		if tot.Panicked != 1 {
			t.Errorf("%d calls lost as panicked, want the one whose step panicked", tot.Panicked)
		}
	})
}
