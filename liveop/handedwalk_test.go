//go:build go1.25

package liveop

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A waiting caller (Request.Wait) handed its slots keeps them while it
// looks up whether it runs inside an operation's function (a walk of its
// stack, with the Guard's lock let go), which it does when its Run had an
// operation's context that outlived the function (context.WithoutCancel)
// and a slot of its scopes is kept for another waiting caller: a caller
// that came later does not take a slot handed to it meanwhile.
func TestAWaitingCallerKeepsItsSlotsWhileItWalksItsStack(t *testing.T) {
	var armed atomic.Bool
	var resume chan struct{} // made in the bubble: a walk paused on it blocks durably
	var paused atomic.Int32
	defer func(f func() bool) { operationGoroutine = f }(operationGoroutine)
	operationGoroutine = func() bool {
		if armed.CompareAndSwap(true, false) {
			paused.Add(1)
			<-resume // the walk of a busy scheduler
		}
		return onOperationGoroutine()
	}
	synctest.Test(t, func(t *testing.T) {
		resume = make(chan struct{})
		g := newGuard(t, Config{CooldownSeconds: ptr(0.0), MaxConcurrent: 2, MaxConcurrentTotal: 10})
		long := func(val string) func(context.Context) (string, error) {
			return (&counted{d: time.Hour, val: val}).run
		}
		a := goRun(context.Background(), g, req("a", "aws/s"), long("a"))
		b1 := goRun(context.Background(), g, req("b1", "aws/u"), long("b1"))
		b2 := goRun(context.Background(), g, req("b2", "aws/u"), long("b2"))
		synctest.Wait()
		// A caller waiting for aws/u, which keeps a slot of aws/t.
		other := req("other", "aws/t", "aws/u")
		other.Wait = true
		o := goRun(context.Background(), g, other, (&counted{d: time.Minute, val: "other"}).run)
		synctest.Wait()
		// p's function starts work that outlives it, with its context
		// without its cancellation: a Run waiting for aws/s (p and a hold
		// both its slots) and aws/t; then p returns, freeing a slot of
		// aws/s, which goes to that Run.
		outlives := make(chan outcome, 1)
		p := goRun(context.Background(), g, req("p", "aws/s"), func(ctx context.Context) (string, error) {
			go func() {
				w := req("w", "aws/s", "aws/t")
				w.Wait = true
				v, err := Run(context.WithoutCancel(ctx), g, w, (&counted{d: time.Minute, val: "w"}).run)
				outlives <- outcome{v, err}
			}()
			time.Sleep(time.Second)
			return "p", nil
		})
		synctest.Wait()
		armed.Store(true)
		time.Sleep(time.Second)
		synctest.Wait()
		err := g.Check(req("later", "aws/s"))
		close(resume)
		if paused.Load() != 1 {
			t.Errorf("the Run handed its slots walked its stack %d times as p ended; want once", paused.Load())
		}
		if err == nil {
			t.Errorf("a caller for aws/s that came as the waiting Run handed its slot walked its stack: admitted; want it refused, the slot kept for that Run")
		}
		for name, ch := range map[string]<-chan outcome{"a": a, "b1": b1, "b2": b2, "other": o, "p": p, "w": outlives} {
			if o := <-ch; o.err != nil {
				t.Errorf("%s: %v", name, o.err)
			}
		}
	})
}
