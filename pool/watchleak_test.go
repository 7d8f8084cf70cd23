//go:build go1.25

package pool

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/cloudg/cloudg/resilience"
)

// A pool with nothing queued or running is not held by its governor: it
// watches the governor's slots (Governor.WatchSlots) only while it has
// tasks, so that a pool dropped without Wait, its context never
// cancelled, is garbage once its tasks ended, not a watch kept for the
// life of the governor (the process's, resilience.Default) and called at
// every slot freed. A later Go watches again: a slot freed is taken at
// once (TestASlotFreedOutsideATasksEndIsTakenAtOnce).
func TestAnIdlePoolIsNotHeldByItsGovernor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1000, resilience.Config{})
		wp := func() weak.Pointer[Pool] {
			p, ctx := New(context.Background(), WithGovernor(g))
			p.Go(ctx, scope("op0"), func(ctx context.Context) error {
				return resilience.Do(ctx, scope("op0"), func(context.Context) error { return nil }, resilience.WithGovernor(g))
			})
			synctest.Wait() // the task ended, the worker with it
			return weak.Make(p)
		}()
		for range 3 {
			runtime.GC()
		}
		if wp.Value() != nil {
			t.Error("a pool whose one task ended, dropped without Wait, is still reachable after the GC: its governor keeps its watch of the slots; want it collected")
		}
		runtime.KeepAlive(g)
	})
}

// A pool idle once, its watch of the slots ended, watches them again at
// the next Go: a slot freed by a call outside the pool is taken at once,
// not at the recheck of the queues waiting for a slot (slotRecheck).
func TestAPoolIdleOnceStillTakesASlotFreedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		call := func(op string, at *time.Time) func(context.Context) error {
			return func(ctx context.Context) error {
				return resilience.Do(ctx, scope(op), func(context.Context) error {
					*at = time.Now()
					return nil
				}, resilience.WithGovernor(g))
			}
		}
		var op0At, op1At time.Time
		p.Go(ctx, scope("op0"), call("op0", &op0At))
		synctest.Wait() // op0's task ended: the pool is idle
		outside := takeSlot(t, g)
		p.Go(ctx, scope("op1"), call("op1", &op1At))
		time.Sleep(7 * time.Millisecond) // op1's queue waits for the slot
		synctest.Wait()
		freedAt := time.Now()
		outside.End(nil)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if op0At.IsZero() || op1At.IsZero() {
			t.Fatalf("op0's call at %v, op1's at %v; want both made", op0At, op1At)
		}
		if d := op1At.Sub(freedAt); d != 0 {
			t.Fatalf("op1's call began %v after the slot was freed; want at once", d)
		}
	})
}

// A pool whose queues wait for a slot of one account takes no lock of its
// own as a slot of another account is given back, in the process, beside
// the pool: a busy pool, one of its queues told no slot, does not make
// every call of the process that ends take its mutex (slotFreed looks up
// the accounts it waits on first). A slot of the account it waits on
// still takes the lock, and the queue goes at once.
func TestASlotOfAnotherAccountFreedDoesNotLockThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		outside := takeSlot(t, g)
		var ran bool
		p.Go(ctx, scope("op1"), func(ctx context.Context) error {
			return resilience.Do(ctx, scope("op1"), func(context.Context) error { ran = true; return nil }, resilience.WithGovernor(g))
		})
		synctest.Wait() // op1's queue was told no slot
		if ran {
			t.Fatal("op1's task ran with its account's one slot held outside the pool")
		}

		other := scope("op2")
		other.Account = "210987654321"
		gcp := resilience.Scope{Provider: "gcp", Account: "project-1", Service: "compute", Operation: "List"}
		before := p.slotLocks.Load()
		for range 100 {
			for _, s := range []resilience.Scope{other, gcp} {
				if err := resilience.Do(context.Background(), s, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if n := p.slotLocks.Load() - before; n != 0 {
			t.Errorf("200 slots of other accounts given back beside the pool took its lock %d times; want none", n)
		}

		// Those calls took virtual time (100 each of a leaf at 1000
		// rps): a recheck of op1's queue (slotRecheck) may be under way.
		// Done before the slot is given back, or its worker, asking as
		// the slot is free and not yet told, runs op1's task, whose call
		// frees the slot and ends the pool's watch before the slot given
		// back here is told to the pool: the lock taken once.
		synctest.Wait()
		outside.End(nil)
		synctest.Wait()
		if n := p.slotLocks.Load() - before; n != 2 {
			t.Errorf("the slot of the account op1 waits on given back, then op1's call's: the pool's lock taken %d times; want twice", n)
		}
		if !ran {
			t.Error("op1's task did not run at once as its account's slot was given back")
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}
