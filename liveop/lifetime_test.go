//go:build go1.25

package liveop

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestTimeoutCancelsAndRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{OperationTimeoutSeconds: 30})
		op := &counted{d: time.Hour}
		a := goRun(context.Background(), g, req("k", "aws/1"), op.run)
		synctest.Wait()
		b := goRun(context.Background(), g, req("k", "aws/1"), op.run)
		start := time.Now()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		for _, ch := range []<-chan outcome{a, b} {
			o, ok := received(ch)
			if !ok {
				t.Fatal("no outcome at the timeout")
			}
			r := refused(t, o.err, ReasonTimeout, "live operation did not finish within 30s and was cancelled; retry later or use the cached dataset")
			if !errors.Is(o.err, ErrTimeout) || !errors.Is(o.err, context.DeadlineExceeded) || r.Scopes[0] != "aws/1" {
				t.Fatalf("%+v", r)
			}
		}
		// The function honoured its context: slots free, cooldown from the end.
		if st := g.Status(); st.Active != 0 || len(st.InFlight) != 0 || time.Since(start) != 30*time.Second ||
			g.CooldownRemaining("aws/1") != 120*time.Second {
			t.Fatalf("status %+v", st)
		}
	})
}

// A Request's timeout overrides the guard's; a negative one means none.
func TestTimeoutOfARequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{OperationTimeoutSeconds: 30, CooldownSeconds: ptr(0.0)})
		r := req("k", "aws/1")
		r.Timeout = 5 * time.Second
		start := time.Now()
		_, err := Run(context.Background(), g, r, (&counted{d: time.Hour}).run)
		refused(t, err, ReasonTimeout, "live operation did not finish within 5s and was cancelled; retry later or use the cached dataset")
		if time.Since(start) != 5*time.Second {
			t.Fatal(time.Since(start))
		}
		synctest.Wait() // the cancelled function returns, freeing the slot
		r.Timeout = -1
		v, err := Run(context.Background(), g, r, (&counted{d: time.Hour, val: "slow"}).run)
		if v != "slow" || err != nil {
			t.Fatal(v, err)
		}
		// Built directly, a guard has no timeout.
		g = newGuard(t, Config{})
		r.Timeout = 0
		if v, err := Run(context.Background(), g, r, (&counted{d: 48 * time.Hour, val: "slower"}).run); v != "slower" || err != nil {
			t.Fatal(v, err)
		}
	})
}

// A timeout too short to count in nanoseconds is the shortest timeout,
// not none: ParseConfig takes it as > 0, and it must cut the operation off.
func TestTimeoutBelowANanosecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := ParseConfig([]byte("live_operation_timeout_seconds: 1e-10\n"))
		if err != nil {
			t.Fatal(err)
		}
		g := newGuard(t, cfg)
		v, err := Run(context.Background(), g, req("k", "aws/1"), (&counted{d: time.Hour, val: "ran"}).run)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("got %q, %v; want a timeout refusal", v, err)
		}
	})
}

// A function that ignores its context: the callers are released at the
// timeout, the slots stay held until it returns, and nobody joins it.
func TestTimeoutOfAFunctionThatIgnoresIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{OperationTimeoutSeconds: 30})
		stubborn := func(context.Context) (string, error) { time.Sleep(100 * time.Second); return "late", nil }
		_, err := Run(context.Background(), g, req("k", "aws/1"), stubborn)
		if !errors.Is(err, ErrTimeout) {
			t.Fatal(err)
		}
		st := g.Status()
		if st.Active != 1 || len(st.InFlight) != 1 || st.InFlight[0].Callers != 0 || st.InFlight[0].RunningSeconds != 30 {
			t.Fatalf("status %+v", st)
		}
		_, err = Run(context.Background(), g, req("k", "aws/1"), stubborn)
		refused(t, err, ReasonBusy, "a live operation is already running for aws/1; retry when it finishes or use the cached dataset")
		if st := g.Status(); st.Joined != 0 {
			t.Fatalf("joined a timed-out operation: %+v", st)
		}
		time.Sleep(70 * time.Second)
		synctest.Wait()
		if st := g.Status(); st.Active != 0 || g.CooldownRemaining("aws/1") != 120*time.Second {
			t.Fatalf("status %+v", st)
		}
	})
}

func TestAbandonedOperationIsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		var cause error
		op := func(ctx context.Context) (string, error) {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return "", cause
		}
		ctxA, cancelA := context.WithCancel(context.Background())
		ctxB, cancelB := context.WithCancel(context.Background())
		a := goRun(ctxA, g, req("k", "aws/1"), op)
		synctest.Wait()
		b := goRun(ctxB, g, req("k", "aws/1"), op)
		synctest.Wait()
		cancelA()
		synctest.Wait()
		if o, ok := received(a); !ok || o.err != context.Canceled {
			t.Fatalf("%+v %v", o, ok)
		}
		if st := g.Status(); st.Active != 1 || st.InFlight[0].Callers != 1 || cause != nil {
			t.Fatalf("cancelled with a caller left: %+v %v", st, cause)
		}
		time.Sleep(10 * time.Second)
		cancelB()
		synctest.Wait()
		if o, ok := received(b); !ok || o.err != context.Canceled {
			t.Fatalf("%+v %v", o, ok)
		}
		if cause != ErrAbandoned {
			t.Fatalf("cause %v", cause)
		}
		if st := g.Status(); st.Active != 0 || g.CooldownRemaining("aws/1") != 120*time.Second {
			t.Fatalf("status %+v", st)
		}
	})
}

// The operation keeps the values of the first caller's context.
func TestOperationContextKeepsValues(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "stats")
	g := newGuard(t, Config{})
	v, err := Run(ctx, g, req("k", "aws/1"), func(ctx context.Context) (string, error) {
		s, _ := ctx.Value(key{}).(string)
		return s, nil
	})
	if v != "stats" || err != nil {
		t.Fatal(v, err)
	}
}

func TestPanicFreesSlotsAndCoolsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		op := func(context.Context) (string, error) { time.Sleep(time.Second); panic("boom") }
		a := goRun(context.Background(), g, req("k", "aws/1"), op)
		synctest.Wait()
		b := goRun(context.Background(), g, req("k", "aws/1"), op)
		for _, o := range []outcome{<-a, <-b} {
			if !errors.Is(o.err, ErrPanicked) || !strings.HasPrefix(o.err.Error(), "liveop: the operation panicked: boom\n\n") ||
				!strings.Contains(o.err.Error(), "lifetime_test.go") {
				t.Fatalf("%v", o.err)
			}
			// Its value and stack apart, for a program that shows one
			// and logs the other.
			var pe *PanicError
			if !errors.As(o.err, &pe) || pe.Value != "boom" || !strings.Contains(string(pe.Stack), "lifetime_test.go") {
				t.Fatalf("errors.As(%v, *PanicError): %+v", o.err, pe)
			}
		}
		if st := g.Status(); st.Active != 0 || len(st.InFlight) != 0 || g.CooldownRemaining("aws/1") != 120*time.Second {
			t.Fatalf("status %+v", st)
		}
		// A panic with an error value is found by errors.Is too.
		denied := errors.New("denied")
		_, err := Run(context.Background(), g, req("k", "aws/2"), func(context.Context) (string, error) { panic(denied) })
		if !errors.Is(err, denied) || !errors.Is(err, ErrPanicked) {
			t.Fatal(err)
		}
		// runtime.Goexit ends the operation as a panic does.
		_, err = Run(context.Background(), g, req("k", "aws/3"), func(context.Context) (string, error) { runtime.Goexit(); return "", nil })
		if !errors.Is(err, ErrPanicked) || g.Status().Active != 0 {
			t.Fatal(err)
		}
	})
}

func TestFailingFactoryFreesSlotsAndCoolsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		failed := errors.New("no credentials")
		_, err := Run(context.Background(), g, req("k", "aws/1"), func(context.Context) (string, error) { return "", failed })
		if err != failed {
			t.Fatal(err)
		}
		if st := g.Status(); st.Active != 0 || st.Started != 1 || g.CooldownRemaining("aws/1") != 120*time.Second {
			t.Fatalf("status %+v", st)
		}
	})
}

func TestRunRefusesADoneContextAndANilFunction(t *testing.T) {
	var g Guard // the zero Guard works
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, &g, req("k", "aws/1"), (&counted{}).run); err != context.Canceled {
		t.Fatal(err)
	}
	if _, err := Run[string](context.Background(), &g, req("k", "aws/1"), nil); !errors.Is(err, ErrNilFunc) {
		t.Fatalf("Run with a nil function got %v, want an error matching ErrNilFunc", err)
	}
	if st := g.Status(); st.Started != 0 {
		t.Fatalf("status %+v", st)
	}
	if v, err := Run(context.Background(), &g, req("k", "aws/1"), func(context.Context) (string, error) { return "ok", nil }); v != "ok" || err != nil {
		t.Fatal(v, err)
	}
	if d := g.CooldownRemaining("aws/1"); d <= 119*time.Second {
		t.Fatalf("the zero Guard's cooldown: %v", d)
	}
}

// The function of an operation every caller has left is told why its
// context ended, in a cause errors.Is can match: a cancellation
// (context.Canceled, as a timeout's cause is context.DeadlineExceeded),
// and ErrAbandoned, so that it can tell that nobody waits for its result
// from a timeout or its own cancellation.
func TestAnAbandonedOperationsContextSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		causes := make(chan error, 1)
		ctx, cancel := context.WithCancel(context.Background())
		a := goRun(ctx, g, req("k", "aws/1"), func(ctx context.Context) (string, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return "", nil
		})
		synctest.Wait()
		cancel()
		<-a
		if cause := <-causes; !errors.Is(cause, context.Canceled) || !errors.Is(cause, ErrAbandoned) {
			t.Fatalf("the abandoned operation's context ended with the cause %v (%T), which matches neither context.Canceled nor an exported error", cause, cause)
		}
	})
}

// brokenDoneCtx is a context whose Done panics: the caller's code.
type brokenDoneCtx struct{ context.Context }

func (brokenDoneCtx) Done() <-chan struct{} { panic("the caller's context broke") }

// A caller whose context panics as it waits for the operation's result
// leaves the operation with the panic (which reaches it): the operation
// its last caller has left so is abandoned and cancelled, not run on for
// a caller that has gone.
func TestACallerWhoseContextPanicsLeavesTheOperation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		causes := make(chan error, 1)
		panicked := make(chan any, 1)
		go func() {
			defer func() { panicked <- recover() }()
			Run(brokenDoneCtx{context.Background()}, g, req("k", "aws/1"), func(ctx context.Context) (string, error) {
				select {
				case <-ctx.Done():
					causes <- context.Cause(ctx)
				case <-time.After(time.Hour):
					causes <- nil
				}
				return "", nil
			})
		}()
		start := time.Now()
		if p := <-panicked; p != "the caller's context broke" {
			t.Fatalf("the caller's Run: recovered %v", p)
		}
		if cause := <-causes; !errors.Is(cause, ErrAbandoned) || time.Since(start) != 0 {
			t.Fatalf("the operation ran %v and ended with the cause %v; want it cancelled at once, its only caller gone (ErrAbandoned)", time.Since(start), cause)
		}
	})
}

// Every caller of an operation cut off by its timeout gets the same
// *RefusedError, as every caller of a panicking one gets the same
// *PanicError (RefusedError's godoc says so): whether the function
// ignores its context (the timeout ends the wait) or returns when it
// ends (the function's return may come first).
func TestEveryCallerOfATimedOutOperationGetsTheSameRefusedError(t *testing.T) {
	for name, fn := range map[string]func(context.Context) (string, error){
		"ignoring its context": func(context.Context) (string, error) { time.Sleep(time.Hour); return "", nil },
		"honouring it":         (&counted{d: time.Hour}).run,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGuard(t, Config{OperationTimeoutSeconds: 30})
				var outs []<-chan outcome
				for range 3 {
					outs = append(outs, goRun(context.Background(), g, req("k", "aws/1"), fn))
					synctest.Wait()
				}
				var first *RefusedError
				for i, ch := range outs {
					o := <-ch
					var r *RefusedError
					if !errors.As(o.err, &r) || r.Reason != ReasonTimeout {
						t.Fatalf("caller %d: %v, want a timeout refusal", i, o.err)
					}
					if first == nil {
						first = r
					} else if r != first {
						t.Fatalf("caller %d got a *RefusedError of its own (%p, the first caller's %p); want the same", i, r, first)
					}
				}
				time.Sleep(time.Hour) // the function ignoring its context returns
				synctest.Wait()
			})
		})
	}
}
