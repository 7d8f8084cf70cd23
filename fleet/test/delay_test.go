package test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// TestDelaySaysOfABreakerAnotherProcessOpened: Delay reports
// ErrCircuitOpen for a scope whose breaker another process opened, once
// this process's view of it (closed) is past WithBreakerStaleness, as the
// next call, which asks Redis then, is refused.
func TestDelaySaysOfABreakerAnotherProcessOpened(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{BreakerCooldownSeconds: 5}}
		a := newProcess(t, be, prefix, cfg, fleet.WithBreakerStaleness(200*time.Millisecond))
		b := newProcess(t, be, prefix, cfg, fleet.WithBreakerStaleness(200*time.Millisecond))
		if err := b.do(t, vpcs, ok); err != nil { // B's view: closed
			t.Fatal(err)
		}
		for range 5 {
			a.do(t, vpcs, throttl, once)
		}
		if st := a.gov.Inspect(vpcs).Breaker.State; st != state.Open {
			t.Fatalf("the breaker is %v after 5 give-ups in A, want open", st)
		}
		time.Sleep(250 * time.Millisecond)
		d, why := b.gov.Delay(vpcs)
		sent := 0
		err := b.do(t, vpcs, func(context.Context) error { sent++; return nil })
		if !errors.Is(err, state.ErrCircuitOpen) || sent != 0 {
			t.Fatalf("B's call: %v, %d sent; want refused by the breaker A opened", err, sent)
		}
		if !errors.Is(why, resilience.ErrCircuitOpen) || d <= 4*time.Second || d > 5*time.Second {
			t.Fatalf("B's Delay before that call: %v, %v; want ErrCircuitOpen for the rest of the 5 s cooldown", d, why)
		}
	})
}
