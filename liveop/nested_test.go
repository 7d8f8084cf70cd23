//go:build go1.25

package liveop

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// An operation whose function runs the same request again would join
// itself and wait for its own result: the nested Run is refused at once
// instead, and the operation, left by its last caller, is cancelled and
// frees its slots.
func TestANestedRunOfTheSameKeyDoesNotWaitForItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		var inner error
		var op func(ctx context.Context) (string, error)
		op = func(ctx context.Context) (string, error) {
			_, inner = Run(ctx, g, req("k", "aws/1"), op)
			return "outer", inner
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := Run(ctx, g, req("k", "aws/1"), op)
		synctest.Wait()
		if !errors.Is(inner, ErrNested) || !errors.Is(err, ErrNested) {
			t.Fatalf("the nested Run got %v, the caller %v; want ErrNested", inner, err)
		}
		if st := g.Status(); st.Active != 0 || len(st.InFlight) != 0 || st.Joined != 0 {
			t.Fatalf("status %+v", st)
		}
	})
}

// An operation whose function waits (Request.Wait) for a slot that only
// the operation itself, or one it runs inside, can free would wait for
// ever: the nested Run is refused as busy at once, its refusal wrapping
// ErrNested, and its message says so, and to run it once the operation
// has returned, rather than to retry when the operation finishes (which
// it cannot while the Run waits). A slot another operation holds is
// still waited for.
func TestANestedRunDoesNotWaitForItsOwnSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			name   string
			cfg    Config
			scopes []string
			msg    string
		}{
			{"its scope", Config{MaxConcurrentTotal: 5}, []string{"aws/1", "aws/2"},
				"the live operations holding aws/1 cannot finish while this one waits for a slot: this one runs inside one of them, or inside one they wait for; run this one once the operation it runs inside has returned, or use the cached dataset"},
			{"the total cap", Config{MaxConcurrentTotal: 1}, []string{"aws/2"},
				"the live operations holding every slot of all scopes cannot finish while this one waits for a slot: this one runs inside one of them, or inside one they wait for; run this one once the operation it runs inside has returned, or use the cached dataset"},
		} {
			g := newGuard(t, c.cfg)
			var inner error
			outer := func(ctx context.Context) (string, error) {
				w := Request{Key: "b", Scopes: c.scopes, Wait: true}
				_, inner = Run(ctx, g, w, (&counted{val: "x"}).run)
				return "outer", nil
			}
			a := goRun(context.Background(), g, req("a", "aws/1"), outer)
			synctest.Wait()
			o, ok := received(a)
			if !ok {
				t.Fatalf("%s: the operation waits for itself", c.name)
			}
			if !errors.Is(inner, ErrBusy) || !errors.Is(inner, ErrNested) || o.val != "outer" {
				t.Fatalf("%s: the nested Run got %v; want a busy refusal wrapping ErrNested", c.name, inner)
			}
			if inner.Error() != c.msg {
				t.Errorf("%s: the nested Run's refusal says\n%q\nwant\n%q", c.name, inner.Error(), c.msg)
			}
		}

		// A slot of another operation frees: the nested Run waits for it.
		g := newGuard(t, Config{MaxConcurrentTotal: 2})
		other := goRun(context.Background(), g, req("other", "aws/2"), (&counted{d: time.Minute}).run)
		synctest.Wait()
		var inner error
		var v string
		start := time.Now()
		outer := func(ctx context.Context) (string, error) {
			v, inner = Run(ctx, g, Request{Key: "b", Scopes: []string{"gcp/p"}, Wait: true}, (&counted{val: "x"}).run)
			return "outer", nil
		}
		if _, err := Run(context.Background(), g, req("a", "aws/1"), outer); err != nil || inner != nil || v != "x" ||
			time.Since(start) != time.Minute {
			t.Fatalf("got %v, nested %q %v after %v", err, v, inner, time.Since(start))
		}
		<-other
	})
}

// lockingCtx is a context whose Value reads the guard's Status, as a
// context that logs or traces might: the guard must not ask it for a
// value while it holds its lock.
type lockingCtx struct {
	context.Context
	g *Guard
}

func (c lockingCtx) Value(key any) any {
	c.g.Status()
	return c.Context.Value(key)
}

// The guard asks a caller's context for its values (which operation the
// caller runs inside) outside its lock: a Context is the caller's code.
func TestACallersContextIsAskedOutsideTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 1})
		ctx := lockingCtx{context.Background(), g}
		a := goRun(ctx, g, req("a", "aws/1"), (&counted{d: time.Minute, val: "a"}).run)
		synctest.Wait()
		if _, ok := received(a); ok || g.Status().Active != 1 {
			t.Fatal("the first Run did not start")
		}
		b := goRun(ctx, g, req("a", "aws/1"), (&counted{d: time.Minute}).run) // joins
		w := req("b", "aws/2")
		w.Wait = true
		c := goRun(ctx, g, w, (&counted{d: time.Second, val: "c"}).run) // waits
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		for _, ch := range []<-chan outcome{a, b, c} {
			if o, ok := received(ch); !ok || o.err != nil {
				t.Fatalf("%+v %v", o, ok)
			}
		}
	})
}

// Two operations whose functions each run the other's request would each
// wait for the other for ever, every caller gone: the Run that would close
// the circle is refused at once with ErrNested instead.
func TestOperationsThatWaitForEachOtherAreRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 5})
		other := func(key string) func(ctx context.Context) (string, error) {
			return func(ctx context.Context) (string, error) {
				time.Sleep(time.Second)
				return Run(ctx, g, req(key, "gcp/"+key), (&counted{d: time.Second, val: key}).run)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		a := goRun(ctx, g, req("A", "aws/1"), other("B"))
		b := goRun(ctx, g, req("B", "aws/2"), other("A"))
		oa, ob := <-a, <-b
		if !errors.Is(oa.err, ErrNested) || !errors.Is(ob.err, ErrNested) {
			t.Fatalf("got %q, %v and %q, %v; want both to match ErrNested", oa.val, oa.err, ob.val, ob.err)
		}
		synctest.Wait()
		if st := g.Status(); st.Active != 0 || len(st.InFlight) != 0 {
			t.Fatalf("status %+v", st)
		}
	})
}

// A Run on another guard inside an operation's function is nested in
// nothing of that guard's: the two guards' locks guard their own
// operations only (the race detector sees a guard read what the other
// wrote otherwise). A's function runs on g2 until B's function, on g1,
// has joined A, so that B joins A whatever the scheduler does.
func TestARunOnAnotherGuardIsNotNested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g1 := newGuard(t, Config{CooldownSeconds: ptr(0.0), MaxConcurrentTotal: 5})
		g2 := newGuard(t, Config{CooldownSeconds: ptr(0.0), MaxConcurrentTotal: 5})
		started, bReturned := make(chan struct{}), make(chan struct{})
		joined := func() bool { // B's Run for A joined it, or returned
			select {
			case <-bReturned:
				return true
			default:
			}
			for _, op := range g1.Status().InFlight {
				if op.Key == "A" && op.Callers == 2 {
					return true
				}
			}
			return false
		}
		runs := 0
		a := goRun(context.Background(), g1, req("A", "aws/1"), func(ctx context.Context) (string, error) {
			close(started)
			for ; runs < 50 || !joined(); runs++ {
				if _, err := Run(ctx, g2, req(fmt.Sprint(runs), "aws/1"), func(context.Context) (string, error) { return "", nil }); err != nil {
					return "", err
				}
				runtime.Gosched()
			}
			return "a", nil
		})
		<-started
		b := goRun(context.Background(), g1, req("B", "aws/2"), func(ctx context.Context) (string, error) {
			defer close(bReturned)
			return Run(ctx, g1, req("A", "aws/1"), func(context.Context) (string, error) { return "b's own", nil })
		})
		if oa, ob := <-a, <-b; oa.val != "a" || ob.val != "a" || oa.err != nil || ob.err != nil {
			t.Fatalf("A, after %d Runs on g2: %+v; B, whose function joins A on g1: %+v; want both \"a\"", runs, oa, ob)
		}
	})
}

// An operation whose function waits (Request.Wait) for a slot that only
// another operation can free, whose function joins the first, waits for
// itself: the two would wait for each other until every caller had gone.
// Whichever Run would close the circle is refused at once, wrapping
// ErrNested: the join, when the wait came first (its error is ErrNested's
// single-flight one), and the wait, a busy refusal, when the join came
// first.
func TestAnOperationWaitingForTheSlotOfOneThatJoinsItIsRefused(t *testing.T) {
	for _, c := range []struct {
		name               string
		waitAt, joinAt     time.Duration // when A's function waits for aws/2's slot, when B's joins A
		waitErr, joinErr   error         // what each gets
		aWants, bWants     string        // what each operation's caller gets
		waitGets, joinGets string        // what the two Runs get
	}{
		{"the join after the wait", time.Second, 2 * time.Second, nil, ErrNested, "a", "", "x", ""},
		{"the wait after the join", 2 * time.Second, time.Second, ErrNested, nil, "a", "a", "", "a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGuard(t, Config{CooldownSeconds: ptr(0.0), MaxConcurrentTotal: 5})
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				var waitGot, joinGot string
				var waitErr, joinErr error
				a := goRun(ctx, g, req("A", "aws/1"), func(ctx context.Context) (string, error) {
					time.Sleep(c.waitAt)
					waitGot, waitErr = Run(ctx, g, Request{Key: "x", Scopes: []string{"aws/2"}, Wait: true}, (&counted{val: "x"}).run)
					return "a", nil
				})
				b := goRun(ctx, g, req("B", "aws/2"), func(ctx context.Context) (string, error) {
					time.Sleep(c.joinAt)
					joinGot, joinErr = Run(ctx, g, req("A", "aws/1"), (&counted{val: "not run"}).run)
					return joinGot, nil
				})
				start := time.Now()
				oa, ob := <-a, <-b
				synctest.Wait()
				if took := time.Since(start); took >= time.Minute || oa.val != c.aWants || ob.val != c.bWants {
					t.Fatalf("after %v: A's caller got %q %v, B's %q %v; the wait got %q %v, the join %q %v; want A's %q, B's %q at once",
						took, oa.val, oa.err, ob.val, ob.err, waitGot, waitErr, joinGot, joinErr, c.aWants, c.bWants)
				}
				if !errors.Is(waitErr, c.waitErr) || c.waitErr == nil && waitErr != nil || waitGot != c.waitGets ||
					!errors.Is(joinErr, c.joinErr) || c.joinErr == nil && joinErr != nil || joinGot != c.joinGets {
					t.Fatalf("the wait got %q %v, the join %q %v; want %q %v and %q %v", waitGot, waitErr, joinGot, joinErr, c.waitGets, c.waitErr, c.joinGets, c.joinErr)
				}
				if c.waitErr != nil && !errors.Is(waitErr, ErrBusy) {
					t.Fatalf("the wait got %v, want a busy refusal wrapping ErrNested", waitErr)
				}
				if want := "the live operations holding aws/2 cannot finish while this one waits for a slot: this one runs inside one of them, or inside one they wait for; run this one once the operation it runs inside has returned, or use the cached dataset"; c.waitErr != nil && waitErr.Error() != want {
					t.Fatalf("the wait's refusal says\n%q\nwant\n%q", waitErr.Error(), want)
				}
				if st := g.Status(); st.Active != 0 || len(st.InFlight) != 0 {
					t.Fatalf("status %+v", st)
				}
			})
		})
	}
}

// A Run with a context that keeps the values of an operation's function's
// but not its cancellation (context.WithoutCancel, for work that outlives
// the function), made once that function has returned, is inside no
// running operation: it joins the operation of its key as any caller
// does.
func TestARunWithTheContextOfAnEndedOperationJoins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 5})
		b := goRun(context.Background(), g, req("B", "aws/2"), (&counted{d: time.Minute, val: "b"}).run)
		synctest.Wait()
		later := make(chan outcome, 1)
		if _, err := Run(context.Background(), g, req("A", "aws/1"), func(ctx context.Context) (string, error) {
			go func(ctx context.Context) {
				time.Sleep(time.Second) // A has ended
				v, err := Run(ctx, g, req("B", "aws/2"), (&counted{val: "not run"}).run)
				later <- outcome{v, err}
			}(context.WithoutCancel(ctx))
			return "a", nil
		}); err != nil {
			t.Fatal(err)
		}
		o := <-later
		<-b
		if o.val != "b" || o.err != nil {
			t.Fatalf("the Run after A ended got %q %v; want to join B and get %q", o.val, o.err, "b")
		}
	})
}

// An operation whose function no longer waits for an operation it started
// (its Run for it gave up at a deadline of its own, the started one
// running on for another caller), or whose function has returned (the
// Run made with a context that outlives it, context.WithoutCancel), does
// not wait for what that operation's function runs: a Run made there
// joins the first operation, or waits for its slot, as any caller does,
// rather than be refused with ErrNested.
func TestARunInsideAnOperationItsParentNoLongerWaitsForIsNotNested(t *testing.T) {
	for _, c := range []struct {
		name string
		// ended: the Run is made by work of A's that outlives A's
		// function; otherwise by A's function, which P gave up on.
		ended bool
		wait  bool // the Run waits for P's slot instead of joining P
		// timedOut: P gives up on A at its own timeout, its function
		// returning a minute later (not at its deadline of its own).
		timedOut bool
	}{
		{"P gave up on A, A joins P", false, false, false},
		{"P gave up on A, A waits for P's slot", false, true, false},
		{"A has returned, its work joins P", true, false, false},
		{"A has returned, its work waits for P's slot", true, true, false},
		{"P timed out, A waits for P's slot", false, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGuard(t, Config{CooldownSeconds: ptr(0.0), MaxConcurrentTotal: 5})
				start := time.Now()
				got := make(chan outcome, 1)
				inner := func(ctx context.Context) {
					r := req("P", "aws/1")
					if c.wait {
						r = Request{Key: "x", Scopes: []string{"aws/1"}, Wait: true}
					}
					v, err := Run(ctx, g, r, (&counted{val: "x"}).run)
					got <- outcome{v, err}
				}
				a := func(ctx context.Context) (string, error) {
					if c.ended {
						go func(ctx context.Context) {
							time.Sleep(2 * time.Second) // A has returned
							inner(ctx)
						}(context.WithoutCancel(ctx))
						return "a", nil
					}
					time.Sleep(2 * time.Second) // P has given up on A
					inner(ctx)
					return "a", nil
				}
				preq := req("P", "aws/1")
				if c.timedOut {
					preq.Timeout = time.Second
				}
				pReturned := make(chan struct{})
				p := goRun(context.Background(), g, preq, func(ctx context.Context) (string, error) {
					defer close(pReturned)
					short, cancel := context.WithTimeout(ctx, time.Second)
					defer cancel()
					if c.timedOut {
						short = ctx
					}
					Run(short, g, req("A", "gcp/p"), a)
					time.Sleep(time.Minute)
					return "p", nil
				})
				var joiner <-chan outcome
				if !c.ended {
					time.Sleep(time.Second / 2)
					joiner = goRun(context.Background(), g, req("A", "gcp/p"), (&counted{val: "not run"}).run) // keeps A running
				}
				o := <-got
				took := time.Since(start)
				want := outcome{"p", nil}
				if c.wait {
					want = outcome{"x", nil}
				}
				if o != want {
					t.Errorf("the Run got %q %v (ErrNested: %v) at %v; want %q once P ended (P waits for A no more)",
						o.val, o.err, errors.Is(o.err, ErrNested), took, want.val)
				}
				<-p
				<-pReturned
				if joiner != nil {
					<-joiner
				}
			})
		})
	}
}
