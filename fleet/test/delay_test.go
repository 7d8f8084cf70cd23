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

// TestDelayCountsTheTokensOfTheProcesssLease: a token the process's lease
// holds, usable at once, is one the next call takes at once (no Redis
// operation); Delay says the call can go, though the tokens the lease
// borrowed are gone from the bucket in Redis.
func TestDelayCountsTheTokensOfTheProcesssLease(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 100, Burst: 10}}}}
		p := newProcess(t, be, prefix, cfg)
		if err := p.do(t, vpcs, ok); err != nil { // borrows a lease
			t.Fatal(err)
		}
		d, why := p.gov.Delay(vpcs)
		ops := p.store.Stats().RedisCalls
		start := time.Now()
		if err := p.do(t, vpcs, ok); err != nil {
			t.Fatal(err)
		}
		took, used := time.Since(start), p.store.Stats().RedisCalls-ops
		if used != 0 || took > 100*time.Millisecond {
			t.Fatalf("the next call took %v and %d Redis operations; want a token of the lease, at once", took, used)
		}
		if why != nil || d != 0 {
			t.Fatalf("Delay: %v, %v; the next call took a token of the lease at once (the bucket in Redis: %+v)", d, why, p.gov.Inspect(vpcs).Leaf)
		}
	})
}

// TestDelaySaysOfAPauseOfAnotherProcess: a pause another process set (a
// throttle's Retry-After) holds this process's next call, whatever tokens
// its lease holds, and Delay says so.
func TestDelaySaysOfAPauseOfAnotherProcess(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 100, Burst: 10}}}}
		a := newProcess(t, be, prefix, cfg)
		b := newProcess(t, be, prefix, cfg)
		if err := b.do(t, vpcs, ok); err != nil { // B borrows a lease
			t.Fatal(err)
		}
		a.do(t, vpcs, func(context.Context) error { return &apiErr{code: "Throttling", status: 400, retry: "2"} }, once)
		d, why := b.gov.Delay(vpcs)
		if !errors.Is(why, resilience.ErrNoToken) || d < 1500*time.Millisecond || d > 2100*time.Millisecond {
			t.Fatalf("B's Delay after A's throttle with a Retry-After of 2 s: %v, %v; want ErrNoToken for about 2 s", d, why)
		}
	})
}
