//go:build go1.25

package pool

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// A queue the pool holds back for the first calls of its account's tasks
// started (holdBack), which would take every slot its account has free,
// does not read ready in Progress, though the governor's answer (Delay)
// shows a slot free: its next task cannot go now, and its account's slots
// are as good as full. It reads slot, as it will once those calls are
// made. Here an account with one slot; op0's task works 200 ms before its
// first call, op1's is submitted while it does.
func TestAHeldBackQueueReadsSlotInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		p, ctx := New(context.Background(), Workers(8), WithGovernor(g))
		p.Go(ctx, scope("op0"), func(ctx context.Context) error {
			time.Sleep(200 * time.Millisecond) // its own work, before its first call
			return resilience.Do(ctx, scope("op0"), func(context.Context) error { return nil }, resilience.WithGovernor(g))
		})
		synctest.Wait() // op0's task runs, its first call to come
		p.Go(ctx, scope("op1"), func(ctx context.Context) error {
			return resilience.Do(ctx, scope("op1"), func(context.Context) error { return nil }, resilience.WithGovernor(g))
		})
		synctest.Wait()
		p.mu.Lock()
		back := p.scopes[scope("op1")].heldBack
		p.mu.Unlock()
		pr := p.Progress()
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if !back {
			t.Fatal("setup: op1's queue is not held back for op0's first call")
		}
		for _, s := range pr.Scopes {
			if s.Scope == scope("op1") && s.State != ScopeNoSlot {
				t.Fatalf("op1's queue, held back for the first call of op0's task, which takes the account's only slot, reads %q in Progress; want %q", s.State, ScopeNoSlot)
			}
		}
	})
}
