//go:build go1.25

package pool

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// A task started for a slot that was freed, which works past its hold
// (admitHold) before its first call, has not taken the slot: it goes to
// the next queue in line as the hold ends, as the task's own queue goes
// on then, not at the next recheck of the queues waiting for a slot
// (slotRecheck). Here an account with one slot; op0's task holds it with
// its call, op1's task works 200 ms before its call, op2's waits: op2's
// call takes the slot as op1's hold ends, and op1's call, refused it, is
// made once op2's ends.
func TestASlotGivenATaskThatWorksPastItsHoldGoesOnAtTheHoldsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		release := make(chan struct{})
		var mu sync.Mutex
		var op2At time.Time
		p.Go(ctx, scope("op0"), func(ctx context.Context) error {
			return resilience.Do(ctx, scope("op0"), func(context.Context) error { <-release; return nil }, resilience.WithGovernor(g))
		})
		synctest.Wait()
		p.Go(ctx, scope("op1"), func(ctx context.Context) error {
			time.Sleep(200 * time.Millisecond) // its own work, before its first call
			return resilience.Do(ctx, scope("op1"), func(context.Context) error { return nil }, resilience.WithGovernor(g))
		})
		synctest.Wait()
		p.Go(ctx, scope("op2"), func(ctx context.Context) error {
			return resilience.Do(ctx, scope("op2"), func(context.Context) error {
				mu.Lock()
				op2At = time.Now()
				mu.Unlock()
				return nil
			}, resilience.WithGovernor(g))
		})
		time.Sleep(time.Second) // the slot rechecks fall anywhere in a second
		synctest.Wait()         // op1 and op2 wait for the slot, op1 first
		freed := time.Now()
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if op2At.IsZero() || op2At.Sub(freed) != admitHold {
			t.Fatalf("op2's call began %v after the slot was freed, op1's task working before its first call; want %v, as op1's hold ended", op2At.Sub(freed), admitHold)
		}
	})
}
