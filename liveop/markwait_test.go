//go:build go1.25

package liveop

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A caller waiting for a slot (Request.Wait) of a scope that MarkCompleted
// sets cooling is refused at once with the cooldown, as a Run of its
// request made then is (the cooldown comes before the caps), rather than
// wait for a slot it can never use; and the free slot it kept of another
// of its scopes goes at once to a caller that came later for that scope
// alone.
func TestAWaitingCallerIsRefusedWhenMarkCompletedCoolsItsScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 5})
		a := goRun(context.Background(), g, req("a", "aws/a"), (&counted{d: time.Hour, val: "a"}).run)
		synctest.Wait()
		w := req("w", "aws/a", "aws/b")
		w.Wait = true
		waiting := goRun(context.Background(), g, w, (&counted{d: time.Minute, val: "w"}).run)
		synctest.Wait()
		start := time.Now()
		g.MarkCompleted("aws/a")
		synctest.Wait()
		if err := g.Check(req("b", "aws/b")); err != nil {
			t.Errorf("a caller for aws/b alone, once aws/a was marked completed: %v; want it to start", err)
		}
		o, ok := received(waiting)
		if !ok {
			o = <-waiting
		}
		if !errors.Is(o.err, ErrCooldown) || time.Since(start) != 0 {
			t.Errorf("the caller waiting for aws/a, which MarkCompleted set cooling, got %q %v after %v; want the cooldown refusal at once",
				o.val, o.err, time.Since(start))
		}
		<-a
	})
}

// A waiting caller handed its slots (Request.Wait), woken but not yet
// looking again (a busy scheduler, a context slow to answer), that a
// cooldown MarkCompleted then starts refuses, lets go of the slots handed
// to it at once, as one still waiting does: a caller that came later for
// one of its other scopes alone is not refused for a slot kept for a
// caller that can no longer use it.
func TestAWokenCallerHandedItsSlotsLetsThemGoWhenMarkCompletedCoolsItsScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CooldownSeconds: ptr(0.0), ProviderCooldownSeconds: map[string]float64{"gcp": 120}, MaxConcurrentTotal: 5})
		a := goRun(context.Background(), g, req("a", "aws/1"), (&counted{d: time.Minute, val: "a"}).run)
		synctest.Wait()
		ctx := &pausingCtx{Context: context.Background(), resume: make(chan struct{})}
		w := req("w", "aws/1", "gcp/p")
		w.Wait = true
		waiting := goRun(ctx, g, w, (&counted{d: time.Minute, val: "w"}).run)
		synctest.Wait()
		ctx.armed.Store(true)   // woken, the caller pauses before it looks again
		time.Sleep(time.Minute) // a ends (aws/1 does not cool): its slot goes to the waiting caller
		synctest.Wait()
		if err := g.Check(req("before", "aws/1")); err == nil {
			t.Fatal("aws/1's slot is not kept for the waiting caller a's end woke")
		}
		g.MarkCompleted("gcp/p")
		err := g.Check(req("later", "aws/1"))
		ctx.armed.Store(false)
		close(ctx.resume)
		if err != nil {
			t.Errorf("a caller for aws/1 alone, once gcp/p, which the woken caller handed aws/1 needs, was marked completed: %v; want it to start", err)
		}
		if o := <-waiting; !errors.Is(o.err, ErrCooldown) {
			t.Errorf("the woken caller for gcp/p, which MarkCompleted set cooling, got %q %v; want the cooldown refusal", o.val, o.err)
		}
		<-a
	})
}
