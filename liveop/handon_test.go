//go:build go1.25

package liveop

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A waiting caller (Request.Wait) handed a slot, which starts its
// operation, takes the slot without handing it on first: the next waiting
// caller, which needs that scope too, is not woken holding it and a slot
// of the total, which it cannot use, so that until it looks again (a busy
// scheduler, a context slow to answer) a caller that came later for a free
// scope is not refused for the total a waiting caller is said to hold.
func TestAWaitingCallerThatStartsHandsOnNoSlotItTakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CooldownSeconds: ptr(0.0), MaxConcurrentTotal: 2})
		a := goRun(context.Background(), g, req("a", "aws/1"), (&counted{d: time.Minute, val: "a"}).run)
		synctest.Wait()
		first := req("first", "aws/1")
		first.Wait = true
		w1 := goRun(context.Background(), g, first, (&counted{d: time.Hour, val: "first"}).run)
		synctest.Wait()
		base, cancel := context.WithCancel(context.Background())
		ctx := &pausingCtx{Context: base, resume: make(chan struct{})}
		second := req("second", "aws/1", "aws/2")
		second.Wait = true
		w2 := goRun(ctx, g, second, (&counted{d: time.Minute, val: "second"}).run)
		synctest.Wait()
		ctx.armed.Store(true)   // woken, the second caller pauses before it looks again
		time.Sleep(time.Minute) // a ends: the first caller starts on aws/1
		synctest.Wait()
		st := g.Status()
		err := g.Check(req("later", "aws/3"))
		close(ctx.resume)
		cancel()
		if st.Active != 1 || st.ActiveScopes["aws/1"] != 1 {
			t.Fatalf("status %+v, want the first caller's operation running on aws/1", st)
		}
		if err != nil {
			t.Errorf("a caller for aws/3, with one operation running of the two the total allows and the second waiting caller held back by aws/1: %v; want it to start", err)
		}
		if o := <-a; o.val != "a" {
			t.Fatal(o)
		}
		if o := <-w2; o.err == nil {
			t.Fatalf("the second caller, cancelled: %+v", o)
		}
		if o := <-w1; o.val != "first" {
			t.Fatal(o)
		}
	})
}
