package test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// What one process learns, the others of the fleet know: the leaf's rate,
// its pauses, its breaker and the provider's retry budget.

func TestThrottleInOneProcessSlowsTheFleet(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		a := newProcess(t, be, prefix, resilience.Config{})
		b := newProcess(t, be, prefix, resilience.Config{})
		a.do(t, vpcs, throttl, once)
		if r := b.gov.Inspect(vpcs).Leaf.Rate; r != 10 {
			t.Fatalf("process B sees %v rps after A was throttled, want 10", r)
		}
		// The same congestion event: B's throttle within a second changes nothing.
		b.do(t, vpcs, throttl, once)
		if r := a.gov.Inspect(vpcs).Leaf.Rate; r != 10 {
			t.Fatalf("%v rps after two throttles within a second, want 10", r)
		}
		time.Sleep(1100 * time.Millisecond)
		b.do(t, vpcs, throttl, once)
		if r := a.gov.Inspect(vpcs).Leaf.Rate; r != 5 {
			t.Fatalf("%v rps after a second congestion event, want 5", r)
		}
		// Other operations are other leaves.
		sub := vpcs
		sub.Operation = "DescribeSubnets"
		if r := b.gov.Inspect(sub).Leaf.Rate; r != 20 {
			t.Fatalf("DescribeSubnets at %v rps", r)
		}
	})
}

func TestRetryAfterPausesTheFleet(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		a := newProcess(t, be, prefix, resilience.Config{})
		b := newProcess(t, be, prefix, resilience.Config{})
		a.do(t, vpcs, func(context.Context) error { return &apiErr{code: "Throttling", status: 400, retry: "3"} }, once)
		p := b.gov.Inspect(vpcs).Leaf.Paused
		if p < 2500*time.Millisecond || p > 3*time.Second {
			t.Fatalf("process B paused for %v, want about 3s", p)
		}
		start := time.Now()
		if err := b.do(t, vpcs, ok); err != nil {
			t.Fatal(err)
		}
		if w := time.Since(start); w < 2500*time.Millisecond {
			t.Fatalf("B's call went after %v, inside A's 3 s pause", w)
		}
	})
}

func TestBreakerOpenedByOneProcessRejectsInAnother(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{BreakerCooldownSeconds: 1}}
		a := newProcess(t, be, prefix, cfg, fleet.WithBreakerStaleness(200*time.Millisecond))
		b := newProcess(t, be, prefix, cfg, fleet.WithBreakerStaleness(200*time.Millisecond))
		// B has seen the breaker closed (its cache is warm).
		if err := b.do(t, vpcs, ok); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			a.do(t, vpcs, throttl, once)
		}
		if st := a.gov.Inspect(vpcs).Breaker.State; st != state.Open {
			t.Fatalf("the breaker is %v after 5 give-ups in A, want open", st)
		}
		// B trusts its view of a closed breaker for at most the staleness.
		time.Sleep(250 * time.Millisecond)
		sent := 0
		err := b.do(t, vpcs, func(context.Context) error { sent++; return nil })
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || !errors.Is(err, state.ErrCircuitOpen) || sent != 0 {
			t.Fatalf("process B: %v, %d sent; want rejected by the breaker A opened", err, sent)
		}
		// After the cooldown, one probe for the whole fleet.
		time.Sleep(1100 * time.Millisecond)
		probing, release := make(chan struct{}), make(chan struct{})
		var released sync.Once
		free := func() { released.Do(func() { close(release) }) }
		t.Cleanup(free) // a failure before the release does not leave the probe waiting
		done := make(chan error, 1)
		go func() {
			done <- a.do(t, vpcs, func(context.Context) error { close(probing); <-release; return nil })
		}()
		<-probing
		if st := b.gov.Inspect(vpcs).Breaker.State; st != state.HalfOpen {
			t.Fatalf("B sees the breaker %v during A's probe, want half_open", st)
		}
		if err := b.do(t, vpcs, ok); !errors.As(err, &coe) {
			t.Fatalf("process B during A's probe: %v, want rejected", err)
		}
		free()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := b.do(t, vpcs, ok); err != nil {
			t.Fatalf("after the probe closed the breaker: %v", err)
		}
	})
}

func TestRetryBudgetIsShared(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: new(3)}}
		a := newProcess(t, be, prefix, cfg)
		b := newProcess(t, be, prefix, cfg)
		gd := a.begin(t)
		for i := range 5 { // 2 free, 3 paid
			if err := failAndRetry(gd); err != nil {
				t.Fatalf("A's retry %d refused: %v", i+1, err)
			}
		}
		gd.End(transient)
		gb := b.begin(t)
		failAndRetry(gb)
		failAndRetry(gb)
		err := failAndRetry(gb)
		var rbe *resilience.RetryBudgetExhaustedError
		if !errors.As(err, &rbe) || !errors.Is(err, state.ErrBudgetExhausted) || !errors.Is(err, transient) {
			t.Fatalf("B's paid retry after A emptied the budget: %v", err)
		}
		gb.End(err)
		if r := b.gov.Inspect(vpcs).RetryBudget; r != 0 {
			t.Fatalf("B sees %v left", r)
		}
		// Ten successes in A refund a token the fleet can spend, once A
		// sent its refunds (a token's worth at a time, or each heartbeat).
		for range 10 {
			a.do(t, vpcs, ok)
		}
		time.Sleep(250 * time.Millisecond)
		gc := b.begin(t)
		defer gc.End(transient)
		failAndRetry(gc)
		failAndRetry(gc)
		if err := failAndRetry(gc); err != nil {
			t.Fatalf("the refunded token was not spendable: %v", err)
		}
	})
}

// A process that never retried still refunds the shared budget: its view
// of the budget is refreshed each heartbeat.
func TestRefundsFromAProcessThatNeverRetried(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: new(3)}}
		a := newProcess(t, be, prefix, cfg)
		b := newProcess(t, be, prefix, cfg)
		gb := b.begin(t)
		for range 5 { // 2 free, 3 paid: the budget is empty
			failAndRetry(gb)
		}
		gb.End(transient)
		time.Sleep(250 * time.Millisecond) // A's heartbeat sees it empty
		for range 30 {
			a.do(t, vpcs, ok)
		}
		time.Sleep(250 * time.Millisecond) // A's refunds reach Redis
		gc := b.begin(t)
		defer gc.End(transient)
		failAndRetry(gc)
		failAndRetry(gc)
		if err := failAndRetry(gc); err != nil {
			t.Fatalf("B's paid retry after 30 successes in A: %v", err)
		}
	})
}

// A pause leaves no stored burst in the fleet's bucket either: at 2 rps
// with a burst of 2, not adaptive, after a throttle with a 3 s hint, the
// next three tokens (taken by two processes in turn) wait 3.5, 4.0 and
// 4.5 s, not 3, 3 and 3.5.
func TestSharedPauseLeavesNoStoredBurst(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		a := newProcess(t, be, prefix, resilience.Config{})
		b := newProcess(t, be, prefix, resilience.Config{})
		spec := state.BucketSpec{Rate: 2, Burst: 2}
		ba, bb := a.store.Bucket(vpcsKey, spec, 0), b.store.Bucket(vpcsKey, spec, 0)
		start := time.Now()
		ba.Throttle(0, 3*time.Second)
		for i, c := range []struct {
			b    state.Bucket
			want time.Duration
		}{{ba, 3500 * time.Millisecond}, {bb, 4 * time.Second}, {ba, 4500 * time.Millisecond}} {
			// Redis's clock runs on while the test talks to it.
			w := c.b.Reserve(0) + time.Since(start)
			if w < c.want || w > c.want+100*time.Millisecond {
				t.Errorf("token %d usable %v after the throttle, want %v", i+1, w, c.want)
			}
		}
	})
}

// A retry budget too large to count in tenths of a token saturates: the
// fleet's budget reads positive and a call still gets its 8 retries.
func TestHugeSharedRetryBudgetSaturates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		cfg := resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: new(math.MaxInt64), BaseDelaySeconds: 0.001, MaxBackoffSeconds: 0.001}}
		p := newProcess(t, be, uniquePrefix(t), cfg)
		if r := p.gov.Inspect(vpcs).RetryBudget; r <= 0 {
			t.Fatalf("a new budget of MaxInt64 tokens reads %v", r)
		}
		gd := p.begin(t)
		defer gd.End(transient)
		for i := range 8 {
			if err := failAndRetry(gd); err != nil {
				t.Fatalf("retry %d refused: %v", i+1, err)
			}
		}
		if r := p.gov.Inspect(vpcs).RetryBudget; r <= 0 {
			t.Fatalf("after 6 paid retries the budget reads %v", r)
		}
	})
}

// A process that did not see the shared breaker open says why it opened
// as the process that opened it does: the reason (throttling or errors)
// is kept in Redis with the breaker, so that every process's refusal
// reads "circuit open for <scope> after repeated throttling; retry in
// <n>s" (the spec's message), or "...: down" for a dead scope, and its
// Inspect gives the same OpenReason (and Dead, while the breaker is not
// closed).
// Before, the other processes refused with "circuit open for <scope>;
// retry in 1s" and an empty OpenReason.
func TestABreakerOpenedByAnotherProcessSaysWhy(t *testing.T) {
	for _, c := range []struct {
		name, reason string
		fail         func(context.Context) error
		dead         bool
	}{
		{"throttling", "throttling", throttl, false},
		{"errors", "errors", func(context.Context) error { return transient }, false},
		{"throttled for good", "throttled for good", throttl, true},
		{"down", "down", func(context.Context) error { return transient }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, be backend) {
				prefix := uniquePrefix(t)
				cfg := resilience.Config{AWS: resilience.ProviderConfig{BreakerCooldownSeconds: 60}}
				if c.dead {
					dead := 0.3
					cfg.AWS.BreakerDeadSeconds, cfg.AWS.MaxBackoffSeconds = &dead, 0.05
				}
				a := newProcess(t, be, prefix, cfg, fleet.WithBreakerStaleness(100*time.Millisecond))
				b := newProcess(t, be, prefix, cfg, fleet.WithBreakerStaleness(100*time.Millisecond))
				if c.dead {
					// Calls that keep retrying for longer than
					// breaker_dead_seconds: the scope is dead.
					var wg sync.WaitGroup
					for range 6 {
						wg.Go(func() { a.do(t, vpcs, c.fail) })
					}
					wg.Wait()
				} else {
					for range 5 {
						a.do(t, vpcs, c.fail, once)
					}
				}
				errA := a.do(t, vpcs, ok)
				time.Sleep(150 * time.Millisecond) // B's view, had it one, is stale
				errB := b.do(t, vpcs, ok)
				for _, p := range []struct {
					name string
					err  error
					gov  *resilience.Governor
				}{{"A", errA, a.gov}, {"B", errB, b.gov}} {
					var coe *resilience.CircuitOpenError
					if !errors.As(p.err, &coe) {
						t.Fatalf("process %s: %v; want a *CircuitOpenError", p.name, p.err)
					}
					want := "circuit open for " + vpcs.String() + " after repeated " + c.reason + "; retry in "
					if c.dead {
						want = "circuit open for " + vpcs.String() + ": " + c.reason + "; retry in "
					}
					if coe.Reason != c.reason || !strings.HasPrefix(coe.Error(), want) {
						t.Errorf("process %s refused with %q (Reason %q); want %q... (Reason %q)", p.name, coe.Error(), coe.Reason, want, c.reason)
					}
					if got := p.gov.Inspect(vpcs); got.OpenReason != c.reason || c.dead && got.Dead != c.reason {
						t.Errorf("process %s's Inspect: OpenReason %q, Dead %q; want %q", p.name, got.OpenReason, got.Dead, c.reason)
					}
				}
			})
		})
	}
}
