//go:build go1.25

package pool

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/sleep"
	"github.com/cloudg/cloudg/resilience"
)

// scaledClock is a governor's clock running scale times faster than the
// wall clock from start, as a simulator's (package sim's ScaledClock): it
// implements RealDuration, which the governor uses to compare its waits
// with a context's deadline, wall time. It is safe for concurrent use.
type scaledClock struct {
	scale float64
	start time.Time
}

func (c *scaledClock) Now() time.Time {
	return c.start.Add(time.Duration(float64(time.Since(c.start)) * c.scale))
}

func (c *scaledClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(c.RealDuration(d))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *scaledClock) RealDuration(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.scale)
}

// On a governor's clock that runs faster than the wall clock, the ETA
// of a paused scope's running task whose deadline comes after the pause
// ends is the pause left, in the clock's time as every wait of the
// Progress is: the task's deadline (wall time, as every context's) is
// compared with the pause once both are in one time. The ETA was the
// wall time left to the deadline, taken for clock time: 19 s for a pause
// of 60 s (6 s of wall time at x10) and a deadline 19 s of wall time
// away, which the pause ends long before.
func TestProgressOnAFastClockComparesADeadlineInTheClocksTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &scaledClock{scale: 10, start: time.Now()}
		g := newGov(t, 10, resilience.Config{}, resilience.WithClock(clock))
		p, ctx := New(context.Background(), Workers(2), WithGovernor(g))
		tctx, cancel := context.WithTimeout(ctx, 20*time.Second) // wall time: 200 s of the clock's
		defer cancel()
		p.Go(tctx, scope("op0"), func(ctx context.Context) error {
			return resilience.Do(ctx, scope("op0"), func(context.Context) error {
				time.Sleep(2 * time.Second) // in flight as the scope is paused
				return nil
			}, resilience.WithGovernor(g))
		})
		time.Sleep(500 * time.Millisecond)
		pause(t, g, scope("op0"), 60*time.Second) // 6 s of wall time
		time.Sleep(500 * time.Millisecond)
		pr := p.Progress()
		sp := scopeOf(t, pr, scope("op0"))
		if sp.Running != 1 || sp.Paused < 50*time.Second {
			t.Fatalf("setup: op0 %+v, want 1 running, paused about 55 s", sp)
		}
		if sp.ETA < sp.Paused {
			t.Errorf("op0's ETA %v, paused %v, its running task's deadline 19 s of wall time away (190 s of the clock's): want the pause left", sp.ETA, sp.Paused)
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

// offsetClock is a governor's clock set ahead of the wall clock by offset
// (a simulator's, whose time is another date), at its pace: a context's
// deadline, wall time, is compared with its waits as time left, as the
// governor does. It is safe for concurrent use.
type offsetClock struct{ offset time.Duration }

func (c offsetClock) Now() time.Time { return time.Now().Add(c.offset) }

func (c offsetClock) Sleep(ctx context.Context, d time.Duration) error { return sleep.For(ctx, d) }

// The tasks of a scope whose answers all fail, given deadlines (a scan's
// task timeout, 5 minutes), are started to prove it dead (see
// Pool.proves) on a governor whose clock is not the wall clock as they
// are on the wall clock's: each deadline, wall time, is compared with the
// wait its first call has, as time left. The pool compared the deadline
// with the clock's time: on a clock an hour ahead, every deadline looked
// past, no task was started to prove the scope, and the scope was found
// dead only when the retries of its calls in flight let its queue go, at
// about 70 s (the scene of
// TestADeadScopeBehindItsOwnRetriesIsFoundWithinItsDeadSeconds, seed 1).
func TestATaskWithADeadlineProvesItsScopeOnAClockNotTheWallClocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithRandom(rand.NewPCG(1, 2)), resilience.WithClock(offsetClock{time.Hour}))
		if err != nil {
			t.Fatal(err)
		}
		dead := getRole()
		p, pctx := New(context.Background(), Workers(8), WithGovernor(g))
		tctx, cancel := context.WithTimeout(pctx, 5*time.Minute)
		defer cancel()
		start := time.Now()
		var ends []time.Duration
		queueDeadScope(p, tctx, g, dead, func(int) {}, func(i int, _ bool, err error) {
			ends = append(ends, time.Since(start))
			if !errors.Is(err, resilience.ErrCircuitOpen) {
				t.Errorf("task %d: %v; want the open circuit's refusal", i, err)
			}
		})
		p.Wait()
		const bound = 15*time.Second + 20*time.Millisecond
		if opened := slices.Max(ends); opened > bound {
			t.Fatalf("the last task ended at %v; want the breaker opened by %v, as on the wall clock", opened, bound)
		}
	})
}
