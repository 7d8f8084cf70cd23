//go:build go1.25

package liveop

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// pausedWalk makes the next walk of a Run's stack (operationGoroutine),
// once armed, wait until resumed, as on a busy scheduler: the caller that
// walks has let go of the Guard's lock meanwhile. Call it outside the
// bubble, and start in it (the channel a paused walk waits on is made
// there, so that the bubble sees it blocked).
type pausedWalk struct {
	armed  atomic.Bool
	walks  atomic.Int32 // the walks paused
	resume chan struct{}
}

func pauseWalks(t *testing.T) *pausedWalk {
	p := &pausedWalk{}
	old := operationGoroutine
	t.Cleanup(func() { operationGoroutine = old })
	operationGoroutine = func() bool {
		if p.armed.CompareAndSwap(true, false) {
			p.walks.Add(1)
			<-p.resume
		}
		return onOperationGoroutine()
	}
	return p
}

func (p *pausedWalk) start() { p.resume = make(chan struct{}) }

// outliving starts, inside the function of an operation p on aws/p, a Run
// of w with p's context without its cancellation (work that outlives the
// function), and returns when p's function returns, a second after; its
// outcome and p's arrive on the channels.
func outliving(g *Guard, pScopes []string, w Request) (p, run <-chan outcome) {
	out := make(chan outcome, 1)
	p = goRun(context.Background(), g, Request{Key: "p", Scopes: pScopes}, func(ctx context.Context) (string, error) {
		go func() {
			v, err := Run(context.WithoutCancel(ctx), g, w, (&counted{d: time.Minute, val: "w"}).run)
			out <- outcome{v, err}
		}()
		time.Sleep(time.Second)
		return "p", nil
	})
	return p, out
}

// A waiting caller (Request.Wait) handed its slots keeps them while it
// looks up whether it runs inside an operation's function (a walk of its
// stack, with the Guard's lock let go), which it does when its Run had an
// operation's context that outlived the function (context.WithoutCancel)
// and a slot of its scopes is kept for another waiting caller: a caller
// that came later does not take a slot handed to it meanwhile.
func TestAWaitingCallerKeepsItsSlotsWhileItWalksItsStack(t *testing.T) {
	walk := pauseWalks(t)
	synctest.Test(t, func(t *testing.T) {
		walk.start()
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
		// p's work waits for aws/s (p and a hold both its slots) and
		// aws/t; p returns, freeing a slot of aws/s, which goes to it.
		w := req("w", "aws/s", "aws/t")
		w.Wait = true
		p, outlives := outliving(g, []string{"aws/s"}, w)
		synctest.Wait()
		walk.armed.Store(true)
		time.Sleep(time.Second)
		synctest.Wait()
		err := g.Check(req("later", "aws/s"))
		close(walk.resume)
		if walk.walks.Load() != 1 {
			t.Errorf("the Run handed its slots walked its stack %d times as p ended; want once", walk.walks.Load())
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

// A waiting caller (Request.Wait) held back by one of its scopes keeps the
// free slot of another while it looks up whether it runs inside an
// operation's function (a walk of its stack, with the Guard's lock let
// go), which it does when its Run had an operation's context that
// outlived the function (context.WithoutCancel): a caller that came later
// for that scope alone does not take the slot meanwhile.
func TestAWaitingCallerKeepsAFreeSlotWhileItWalksItsStack(t *testing.T) {
	walk := pauseWalks(t)
	synctest.Test(t, func(t *testing.T) {
		walk.start()
		g := newGuard(t, Config{CooldownSeconds: ptr(0.0), MaxConcurrentTotal: 10})
		a := goRun(context.Background(), g, req("a", "aws/s"), (&counted{d: time.Hour, val: "a"}).run)
		synctest.Wait()
		// p's work waits for aws/s, which a holds, keeping the free slot
		// of aws/t; p returns.
		w := req("w", "aws/s", "aws/t")
		w.Wait = true
		p, outlives := outliving(g, []string{"aws/p"}, w)
		synctest.Wait()
		if err := g.Check(req("before", "aws/t")); err == nil {
			t.Fatal("aws/t's slot is not kept for the waiting Run")
		}
		walk.armed.Store(true)
		time.Sleep(time.Second)
		synctest.Wait()
		err := g.Check(req("later", "aws/t"))
		close(walk.resume)
		if walk.walks.Load() != 1 {
			t.Errorf("the waiting Run walked its stack %d times as p ended; want once", walk.walks.Load())
		}
		if err == nil {
			t.Errorf("a caller for aws/t that came as the waiting Run, held back by aws/s, walked its stack: admitted; want it refused, aws/t's slot kept for that Run")
		}
		for name, ch := range map[string]<-chan outcome{"a": a, "p": p, "w": outlives} {
			if o := <-ch; o.err != nil {
				t.Errorf("%s: %v", name, o.err)
			}
		}
	})
}
