//go:build go1.25

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

// A half-open breaker lets one probe out at a time. The probe's lease is
// one cooldown: a probe that has not answered by then (an attempt slower
// than the cooldown) loses it, and the next call that asks becomes the
// probe. The first probe's retry, once its lease has run out, is a call
// like any other: it asks the breaker, which refuses it while the second
// probe's lease runs (it fails with ErrCircuitOpen, or with breaker_wait
// waits for that probe's verdict), rather than go beside the second
// probe as a probe still. Here the first probe's attempt lasts 10 s and
// fails with a transient error, and its retry comes 55 s later, 5 s after
// its lease (the cooldown, 60 s) ran out; the second call asks 1 s after
// the lease ran out, and its attempt lasts 30 s.
func TestAProbeWhoseLeaseRanOutRetriesAsAnyCall(t *testing.T) {
	for _, wait := range []bool{false, true} {
		name := "breaker_wait=false"
		if wait {
			name = "breaker_wait=true"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: wait, BreakerThreshold: 1, BreakerCooldownSeconds: 60, DeadlineSeconds: 3600}})
				sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return transientErr() })
				time.Sleep(time.Minute) // the cooldown: the next call is the probe
				start := time.Now()
				var inFlight, most atomic.Int32
				send := func(d time.Duration, err error) error {
					n := inFlight.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(d)
					inFlight.Add(-1)
					return err
				}
				firstDone := make(chan error, 1)
				attempts := 0
				go func() {
					firstDone <- Do(context.Background(), ec2Vpcs, func(context.Context) error {
						if attempts++; attempts == 1 {
							return send(10*time.Second, transientErr())
						}
						return send(time.Second, nil)
					}, WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 3, BaseDelay: 55 * time.Second, MaxBackoff: 55 * time.Second}))
				}()
				time.Sleep(61*time.Second - time.Since(start))
				if s := g.Inspect(ec2Vpcs).Breaker; s.State != state.HalfOpen {
					t.Fatalf("at 61 s: breaker %v; want half-open, its probe's lease run out", s.State)
				}
				second := Do(context.Background(), ec2Vpcs, func(context.Context) error {
					return send(30*time.Second, nil)
				}, WithGovernor(g))
				first := <-firstDone
				if m := most.Load(); m > 1 {
					t.Errorf("%d attempts were sent at once while the breaker was half-open; want one probe at a time", m)
				}
				if second != nil {
					t.Errorf("the second call, the probe once the first's lease ran out: %v; want a success", second)
				}
				if wait && (first != nil || attempts != 2) {
					t.Errorf("the first call, breaker_wait: %v after %d attempts; want a success at its retry, once the second probe's verdict closed the breaker", first, attempts)
				}
				if !wait && (!errors.Is(first, ErrCircuitOpen) || attempts != 1) {
					t.Errorf("the first call: %v after %d attempts; want ErrCircuitOpen at its retry, refused while the second probe's lease runs", first, attempts)
				}
			})
		})
	}
}

// A call nested in the attempt of a probe whose lease ran out borrows no
// probe from it: the breaker may have let another call through as the
// probe since. Here the probe's attempt (a Do WithNestedCalls) lasts past
// its lease, another call becomes the probe 1 s after it ran out, and the
// attempt makes its nested call 2 s after, while that probe's attempt
// runs: the nested call is refused (ErrCircuitOpen) and not sent.
func TestACallNestedInAProbeWhoseLeaseRanOutBorrowsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BreakerThreshold: 1, BreakerCooldownSeconds: 60, DeadlineSeconds: 3600}})
		sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return transientErr() })
		time.Sleep(time.Minute) // the cooldown: the next call is the probe
		var nested error
		sent := false
		firstDone := make(chan error, 1)
		go func() {
			firstDone <- Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
				time.Sleep(62 * time.Second) // past the lease: 60 s
				nested = Do(ctx, ec2Vpcs, func(context.Context) error {
					sent = true
					return nil
				}, WithGovernor(g))
				return nil
			}, WithGovernor(g), WithNestedCalls())
		}()
		time.Sleep(61 * time.Second)
		second := Do(context.Background(), ec2Vpcs, func(context.Context) error {
			time.Sleep(30 * time.Second)
			return nil
		}, WithGovernor(g))
		<-firstDone
		if sent || !errors.Is(nested, ErrCircuitOpen) {
			t.Errorf("the call nested in the probe's attempt 2 s after its lease ran out, another call the probe since: sent %v, %v; want refused with ErrCircuitOpen, not sent", sent, nested)
		}
		if second != nil {
			t.Errorf("the second probe: %v; want a success", second)
		}
	})
}
