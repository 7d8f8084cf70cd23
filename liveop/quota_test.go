//go:build go1.25

package liveop

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestQuotaSlidingWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CallerMaxOperations: 2, CallerWindowSeconds: 600, CooldownSeconds: ptr(0.0)})
		op := &counted{val: "x"}
		run := func() error {
			_, err := Run(context.Background(), g, req("k", "aws/1"), op.run)
			return err
		}
		if err := run(); err != nil { // t=0
			t.Fatal(err)
		}
		time.Sleep(100 * time.Second)
		if err := run(); err != nil { // t=100
			t.Fatal(err)
		}
		time.Sleep(100 * time.Second)
		err := run() // t=200: the start at 0 leaves the window at 600
		r := refused(t, err, ReasonQuota, "caller 'agent' reached its quota of 2 live operations per 600s; retry in 400s or use the cached dataset")
		if r.RetryAfter != 400*time.Second || r.Caller != "agent" || !errors.Is(err, ErrQuota) {
			t.Fatalf("%+v", r)
		}
		// The quota is per caller.
		other := req("k", "aws/1")
		other.Caller = "operator"
		if _, err := Run(context.Background(), g, other, op.run); err != nil {
			t.Fatal(err)
		}
		time.Sleep(400 * time.Second)
		if err := run(); err != nil { // t=600
			t.Fatal(err)
		}
		time.Sleep(50 * time.Second)
		refused(t, run(), ReasonQuota, // t=650: starts at 100 and 600
			"caller 'agent' reached its quota of 2 live operations per 600s; retry in 50s or use the cached dataset")
		if op.calls.Load() != 4 {
			t.Fatalf("%d runs", op.calls.Load())
		}
	})
}

func TestQuotaUnlimitedByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CooldownSeconds: ptr(0.0)})
		for i := range 100 {
			if _, err := Run(context.Background(), g, req("k", "aws/1"), (&counted{}).run); err != nil {
				t.Fatal(i, err)
			}
		}
	})
}

// Quota, then cooldown (unless bypassed), then busy.
func TestAdmissionOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CallerMaxOperations: 1})
		a := goRun(context.Background(), g, req("a", "aws/1"), (&counted{d: time.Minute}).run)
		synctest.Wait()
		g.MarkCompleted("aws/1") // aws/1 is now busy and cooling; "agent" has used its quota
		r := req("b", "aws/1")
		if err := g.Check(r); !errors.Is(err, ErrQuota) {
			t.Fatalf("got %v, want quota", err)
		}
		// Bypass skips the cooldown only: the quota still comes first.
		r.Bypass = true
		if err := g.Check(r); !errors.Is(err, ErrQuota) {
			t.Fatalf("bypassing: got %v, want quota", err)
		}
		r.Bypass = false
		r.Caller = "operator"
		if err := g.Check(r); !errors.Is(err, ErrCooldown) {
			t.Fatalf("got %v, want cooldown", err)
		}
		r.Bypass = true
		if err := g.Check(r); !errors.Is(err, ErrBusy) {
			t.Fatalf("got %v, want busy", err)
		}
		<-a
	})
}

// An admitted operation holds its slots and its quota entry before its
// function runs: the function's first look at the guard sees them.
func TestSlotsAndQuotaTakenBeforeTheStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CallerMaxOperations: 1})
		var seen []error
		var st Status
		_, err := Run(context.Background(), g, req("a", "aws/1"), func(context.Context) (string, error) {
			st = g.Status()
			other := req("b", "aws/1")
			other.Caller = "operator"
			seen = append(seen, g.Check(req("c", "aws/2")), g.Check(other))
			return "", nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if st.Active != 1 || st.ActiveScopes["aws/1"] != 1 || st.Started != 1 ||
			!errors.Is(seen[0], ErrQuota) || !errors.Is(seen[1], ErrBusy) {
			t.Fatalf("status %+v, checks %v", st, seen)
		}
	})
}

// Check is what Run would get, and changes nothing: no quota entry, no
// start, no join, no slot.
func TestCheckChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CallerMaxOperations: 1})
		a := goRun(context.Background(), g, req("a", "aws/1"), (&counted{d: time.Minute}).run)
		synctest.Wait()
		other := Request{Key: "b", Scopes: []string{"aws/2"}, Caller: "operator"}
		for range 3 {
			if err := g.Check(req("a", "aws/1")); err != nil { // a join
				t.Fatal(err)
			}
			if err := g.Check(other); err != nil { // a start
				t.Fatal(err)
			}
		}
		if st := g.Status(); st.Started != 1 || st.Joined != 0 || st.Active != 1 || st.InFlight[0].Callers != 1 {
			t.Fatalf("status %+v after checks", st)
		}
		// The operator's quota of one is still unused.
		if _, err := Run(context.Background(), g, other, (&counted{}).run); err != nil {
			t.Fatal(err)
		}
		<-a
	})
}

// A waiting caller handed its slots (Request.Wait), woken but not yet
// looking again (a busy scheduler, a context slow to answer), whose
// caller's quota an operation of the same caller then fills, lets go of
// the slots handed to it at once: another caller that came later for that
// scope is not refused for a slot kept for a caller that can no longer use
// it.
func TestAWokenCallerHandedItsSlotsLetsThemGoWhenItsQuotaFills(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CallerMaxOperations: 2, CallerWindowSeconds: 3600, CooldownSeconds: ptr(0.0), MaxConcurrentTotal: 5})
		a := goRun(context.Background(), g, req("a", "aws/1"), (&counted{d: time.Minute, val: "a"}).run)
		synctest.Wait()
		ctx := &pausingCtx{Context: context.Background(), resume: make(chan struct{})}
		w := req("w", "aws/1")
		w.Wait = true
		waiting := goRun(ctx, g, w, (&counted{d: time.Minute, val: "w"}).run)
		synctest.Wait()
		ctx.armed.Store(true)   // woken, the caller pauses before it looks again
		time.Sleep(time.Minute) // a ends: its slot goes to the waiting caller
		synctest.Wait()
		later := req("later", "aws/1")
		later.Caller = "operator"
		if err := g.Check(later); err == nil {
			t.Fatal("aws/1's slot is not kept for the waiting caller a's end woke")
		}
		x := goRun(context.Background(), g, req("x", "aws/2"), (&counted{d: time.Minute, val: "x"}).run) // the quota's second start
		synctest.Wait()
		err := g.Check(later)
		ctx.armed.Store(false)
		close(ctx.resume)
		if err != nil {
			t.Errorf("an operator's caller for aws/1, once the woken caller handed aws/1 reached its quota: %v; want it to start", err)
		}
		if o := <-waiting; !errors.Is(o.err, ErrQuota) {
			t.Errorf("the woken caller, whose quota filled, got %q %v; want the quota refusal", o.val, o.err)
		}
		<-a
		<-x
	})
}
