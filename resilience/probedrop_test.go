package resilience

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/clocktest"
)

// A call of Begin that borrowed its half-open breaker's probe from the
// call whose attempt it is nested in, and is dropped without End (an SDK
// hook that never fired), gives the probe back to that attempt when it
// is garbage collected, as it gives back the slot it holds: no verdict
// will come from it, and a second call nested in the attempt borrows the
// probe then, rather than be refused (or wait out the probe's lease with
// breaker_wait). The collector runs on its own goroutine, so this test
// runs on a manual clock (it loops on runtime.GC, it does not sleep).
func TestADroppedBorrowerGivesTheProbeBackWhenCollected(t *testing.T) {
	c := clocktest.Start(time.Unix(1e9, 0))
	g := newGov(t, Config{AWS: ProviderConfig{BreakerThreshold: 1, BreakerCooldownSeconds: 60}}, WithClock(c))
	sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return transientErr() })
	c.Advance(time.Minute) // the cooldown: the next call is the probe
	var second error
	err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
		lender := ctx.Value(g).(*Guard)
		func() {
			gd, err := g.Begin(ctx, ec2Vpcs)
			if err != nil {
				t.Fatal(err)
			}
			if err := gd.Enter(ctx); err != nil {
				t.Fatalf("the nested call of Begin: %v; want it through on the probe it borrows", err)
			}
			// dropped: no After, no End
		}()
		for i := 0; lease(atomic.LoadUint32((*uint32)(&lender.lease))) != leaseProbe && i < 1000; i++ {
			runtime.GC()
		}
		second = Do(ctx, ec2Vpcs, func(context.Context) error { return nil },
			WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		return second
	}, WithGovernor(g), WithNestedCalls())
	if err != nil {
		t.Errorf("a second call nested in the probe's attempt, once the call that borrowed the probe was dropped without End and collected: %v; want it through as the probe", second)
	}
}
