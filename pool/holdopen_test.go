//go:build go1.25

package pool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// The wait a refusal gave holds its queue through a spell of its scope's
// breaker open: the queue's tasks run meanwhile only for their calls to
// fail fast, and once the breaker is closed again the wait holds the
// queue until it ends, as Delay cannot see it (the refused call was to
// another scope). Here a task of scope a whose first call is to scope b,
// paused for 30 s, is refused at once and goes on for 10 s before it
// returns; a's breaker opens meanwhile (its cooldown 2 s), another task
// of a runs and fails fast (at 1 s), and a call made outside the pool
// once the cooldown is over (at 4 s), the breaker's probe, closes it. The
// refused task runs again as b's pause ends. Before, the fail-fast run
// forgot the wait: the refused task ran again as soon as it returned, at
// 10 s, and its call was refused again.
func TestARefusalsWaitOutlastsItsScopesBreakerOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{AWS: resilience.ProviderConfig{BreakerCooldownSeconds: 2}})
		a, b := scope("a"), scope("b")
		start := time.Now()
		pause(t, g, b, 30*time.Second)
		p, ctx := New(context.Background(), Workers(2), WithGovernor(g))
		var runs atomic.Int64
		var again time.Duration // when it ran again
		p.Go(ctx, a, func(ctx context.Context) error {
			if runs.Add(1) > 1 {
				if again == 0 {
					again = time.Since(start)
				}
				return call(g, b, 0)(ctx)
			}
			err := call(g, b, 0)(ctx) // refused for b's pause: its queue is held until then
			if !errors.Is(err, resilience.ErrDeferred) {
				t.Errorf("setup: the first call to the paused scope: %v; want it refused before it was sent", err)
			}
			time.Sleep(10 * time.Second) // goes on after the refusal
			return err
		})
		synctest.Wait()
		openBreaker(t, g, a)
		failed := make(chan error, 1)
		p.Go(ctx, a, func(ctx context.Context) error {
			err := call(g, a, 0)(ctx)
			failed <- err
			return err
		})
		if err := <-failed; !errors.Is(err, resilience.ErrCircuitOpen) {
			t.Fatalf("setup: a task of the scope whose breaker is open: %v; want it to fail fast", err)
		}
		time.Sleep(3 * time.Second) // past the cooldown: the next call is the probe
		if err := call(g, a, 0)(context.Background()); err != nil || g.Inspect(a).Breaker.State != state.Closed {
			t.Fatalf("setup: the probe: %v, breaker %v; want it sent, the breaker closed", err, g.Inspect(a).Breaker.State)
		}
		err := p.Wait()
		if again < 30*time.Second || runs.Load() != 2 {
			t.Fatalf("the refused task ran again at %v, %d runs in all; want once more as the wait its refusal gave ended (b's pause, 30 s): its scope's breaker was closed again before it returned", again, runs.Load())
		}
		if !errors.Is(err, resilience.ErrCircuitOpen) {
			t.Fatalf("Wait: %v; want the error of the task that failed fast", err)
		}
	})
}
