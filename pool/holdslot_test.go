//go:build go1.25

package pool

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
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
// call takes the slot as op1's hold ends (op1's call, made at 200 ms,
// finds it free again: the next test has it refused).
func TestASlotGivenATaskThatWorksPastItsHoldGoesOnAtTheHoldsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		release := make(chan struct{})
		var sent sendLog
		p.Go(ctx, scope("op0"), holdCall(g, scope("op0"), release))
		synctest.Wait()
		p.Go(ctx, scope("op1"), func(ctx context.Context) error {
			time.Sleep(200 * time.Millisecond) // its own work, before its first call
			return resilience.Do(ctx, scope("op1"), func(context.Context) error { return nil }, resilience.WithGovernor(g))
		})
		synctest.Wait()
		p.Go(ctx, scope("op2"), sent.call(g, scope("op2")))
		time.Sleep(time.Second) // the slot rechecks fall anywhere in a second
		synctest.Wait()         // op1 and op2 wait for the slot, op1 first
		freed := time.Now()
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if op2At := sent.last("op2"); op2At.IsZero() || op2At.Sub(freed) != admitHold {
			t.Fatalf("op2's call began %v after the slot was freed, op1's task working before its first call; want %v, as op1's hold ended", op2At.Sub(freed), admitHold)
		}
	})
}

// The task whose slot went on at its hold's end (see above) makes its
// call after the next queue's call took the slot: that call is refused
// before anything is sent, nothing is lost (the ledger is empty), and the
// task runs again, from the start, once the call that took the slot
// ends: its queue waits for the slot, not for the next recheck. Here
// op2's call holds the slot 500 ms; op1's task, which works 200 ms before
// its call, is refused at 200 ms, runs again as op2's call ends (510 ms),
// and its call is made 200 ms later.
func TestATaskWhoseSlotWentOnAtItsHoldsEndRunsAgainWhenTheSlotIsFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		ctx, ledger := resilience.WithLedger(context.Background(), "scan")
		p, ctx := New(ctx, Workers(4), WithGovernor(g))
		release := make(chan struct{})
		var mu sync.Mutex
		var op1Runs []time.Time
		var sent sendLog
		var op2End time.Time
		p.Go(ctx, scope("op0"), holdCall(g, scope("op0"), release))
		synctest.Wait()
		p.Go(ctx, scope("op1"), func(ctx context.Context) error {
			mu.Lock()
			op1Runs = append(op1Runs, time.Now())
			mu.Unlock()
			time.Sleep(200 * time.Millisecond) // its own work, before its first call
			return sent.call(g, scope("op1"))(ctx)
		})
		synctest.Wait()
		p.Go(ctx, scope("op2"), func(ctx context.Context) error {
			return resilience.Do(ctx, scope("op2"), func(context.Context) error {
				time.Sleep(500 * time.Millisecond)
				mu.Lock()
				op2End = time.Now()
				mu.Unlock()
				return nil
			}, resilience.WithGovernor(g))
		})
		time.Sleep(time.Second)
		synctest.Wait() // op1 and op2 wait for the slot, op1 first
		freed := time.Now()
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if want := admitHold + 500*time.Millisecond; op2End.Sub(freed) != want {
			t.Fatalf("op2's call ended %v after the slot was freed; want %v (it took the slot as op1's hold ended)", op2End.Sub(freed), want)
		}
		if len(op1Runs) != 2 || !op1Runs[1].Equal(op2End) {
			t.Fatalf("op1's task ran at %v after the slot was freed; want twice, again as op2's call ended (%v)", since(freed, op1Runs), op2End.Sub(freed))
		}
		if op1Calls := sent.times("op1"); len(op1Calls) != 1 || !op1Calls[0].Equal(op2End.Add(200*time.Millisecond)) {
			t.Fatalf("op1's call was sent at %v after the slot was freed; want once, 200 ms after its second run began", since(freed, op1Calls))
		}
		if ledger.Lost() != 0 {
			t.Fatalf("ledger %q; want nothing lost: op1's refused call sent nothing", ledger.Describe())
		}
	})
}

// since returns the times ts as durations after t0.
func since(t0 time.Time, ts []time.Time) []time.Duration {
	d := make([]time.Duration, len(ts))
	for i, t := range ts {
		d[i] = t.Sub(t0)
	}
	return d
}

// The slot given on at a hold's end (see above) reaches a queue of the
// account put back in turn before that end, not asked yet for want of a
// free worker, when no queue of the account waits in line for a slot at
// that end (the recheck then counts none freed): that queue, picked as a
// worker is free, is asked and takes the slot then, not slotted again to
// wait for the next recheck of the queues waiting for a slot
// (slotRecheck). Here an account with one slot, held by a's call, and 2
// workers; x, y and z wait for it, in that order; a fan-out task holds
// the other worker as a's call ends. x's queue, asked first, is found
// empty (its task's context cancelled meanwhile): y and z are put back
// in turn, y takes the slot, its task working 200 ms before its call,
// and z waits in turn for a worker, which the fan-out's end frees 50 ms
// after the slot was freed. z's call should begin then.
func TestASlotGivenOnAtAHoldsEndReachesAQueueWaitingForAWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		p, ctx := New(context.Background(), Workers(2), WithGovernor(g))
		xctx, cancelX := context.WithCancel(ctx)
		defer cancelX()
		var dropX atomic.Bool
		p.afterAsk = func(q *queue) {
			if q.scope.Operation == "x" && dropX.Load() {
				cancelX() // x's task's context ends while its queue is asked about
			}
		}
		release := make(chan struct{})
		var sent sendLog
		p.Go(ctx, scope("a"), holdCall(g, scope("a"), release))
		synctest.Wait()
		p.Go(xctx, scope("x"), sent.call(g, scope("x")))
		synctest.Wait()
		p.Go(ctx, scope("y"), func(ctx context.Context) error {
			time.Sleep(200 * time.Millisecond) // its own work, before its first call
			return sent.call(g, scope("y"))(ctx)
		})
		synctest.Wait()
		p.Go(ctx, scope("z"), sent.call(g, scope("z")))
		time.Sleep(time.Second + slotRecheck/2) // between two rechecks
		synctest.Wait()                         // x, y and z wait for the slot, in that order
		fanout := make(chan struct{})
		p.Go(ctx, resilience.Scope{}, func(context.Context) error { <-fanout; return nil })
		synctest.Wait() // the other worker runs the fan-out
		dropX.Store(true)
		freed := time.Now()
		close(release)
		time.Sleep(slotRecheck)
		close(fanout)
		if err := p.Wait(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait = %v; want x's cancellation", err)
		}
		if x := sent.times("x"); len(x) != 0 {
			t.Fatalf("x's call was sent %v after the slot was freed; want never", since(freed, x))
		}
		if zAt := sent.last("z"); zAt.IsZero() || zAt.Sub(freed) != slotRecheck {
			t.Fatalf("z's call began %v after the slot was freed, y's task working before its first call; want %v, as the fan-out's end freed a worker", zAt.Sub(freed), slotRecheck)
		}
		if y := sent.times("y"); len(y) != 1 || y[0].Sub(freed) != 200*time.Millisecond {
			t.Fatalf("y's call was sent %v after the slot was freed; want once, at 200ms", since(freed, y))
		}
	})
}

// The slot given on at a hold's end (see above) is counted once: the
// recheck of the queues waiting for a slot that the hold's end runs
// counts no other for the account (it is that slot), so that once the
// next queue in line took it, the queues behind wait for a slot without
// asking the governor about the account (with a fleet's store, a round
// trip each), as after a call's end. Here an account with one slot; op0's
// call holds it, op1's task works 200 ms before its call, op2's call
// lasts 100 ms, op3 waits: op3's queue is not asked about as op1's hold
// ends (later rechecks ask it, as they ask the first in line of a full
// account), and its call begins as op2's ends.
func TestASlotGivenOnAtAHoldsEndIsCountedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		var mu sync.Mutex
		var op3Asks []time.Time
		p.afterAsk = func(q *queue) {
			if q.scope.Operation == "op3" {
				mu.Lock()
				op3Asks = append(op3Asks, time.Now())
				mu.Unlock()
			}
		}
		release := make(chan struct{})
		var sent sendLog
		p.Go(ctx, scope("op0"), holdCall(g, scope("op0"), release))
		synctest.Wait()
		p.Go(ctx, scope("op1"), func(ctx context.Context) error {
			time.Sleep(200 * time.Millisecond) // its own work, before its first call
			return sent.call(g, scope("op1"))(ctx)
		})
		synctest.Wait()
		p.Go(ctx, scope("op2"), call(g, scope("op2"), 100*time.Millisecond))
		synctest.Wait()
		p.Go(ctx, scope("op3"), sent.call(g, scope("op3")))
		time.Sleep(time.Second + slotRecheck/2) // between two rechecks
		synctest.Wait()                         // op1, op2 and op3 wait for the slot, in that order
		mu.Lock()
		op3Asks = nil
		mu.Unlock()
		freed := time.Now()
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		holdEnd, op2End := freed.Add(admitHold), freed.Add(admitHold+100*time.Millisecond)
		if slices.ContainsFunc(op3Asks, holdEnd.Equal) {
			t.Fatalf("op3's queue was asked about %v after the slot was freed; want not as op1's hold ended (%v), the slot it gave on taken by op2", since(freed, op3Asks), holdEnd.Sub(freed))
		}
		if op3 := sent.last("op3"); !op3.Equal(op2End) {
			t.Fatalf("op3's call began %v after the slot was freed; want %v, as op2's call ended", op3.Sub(freed), op2End.Sub(freed))
		}
	})
}
