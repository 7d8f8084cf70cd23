//go:build go1.25

package pool

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/resilience"
)

// A task that panics (or calls runtime.Goexit) is lost work: the ledger
// its context carries counts it once as panicked, whether it panicked
// before any governed call, inside one (which records the panic itself),
// or after recovering the panic of one; two tasks sharing a ledger count
// once each.
func TestAPanickingTaskIsCountedOnceInItsLedger(t *testing.T) {
	sc := scope("Describe")
	panicIn := func(g *resilience.Governor) func(context.Context) error {
		return func(ctx context.Context) error {
			return resilience.Do(ctx, sc, func(context.Context) error { panic("in the call") }, resilience.WithGovernor(g))
		}
	}
	for _, c := range []struct {
		name  string
		scope resilience.Scope
		tasks func(g *resilience.Governor) []func(context.Context) error
		want  int
	}{
		{"before any call", sc, func(*resilience.Governor) []func(context.Context) error {
			return []func(context.Context) error{func(context.Context) error { panic("before the call") }}
		}, 1},
		{"a fan-out that calls nothing", resilience.Scope{}, func(*resilience.Governor) []func(context.Context) error {
			return []func(context.Context) error{func(context.Context) error { panic("in a fan-out") }}
		}, 1},
		{"after a call", sc, func(g *resilience.Governor) []func(context.Context) error {
			return []func(context.Context) error{func(ctx context.Context) error {
				if err := call(g, sc, 0)(ctx); err != nil {
					return err
				}
				panic("after the call")
			}}
		}, 1},
		{"calls runtime.Goexit", sc, func(*resilience.Governor) []func(context.Context) error {
			return []func(context.Context) error{func(context.Context) error { runtime.Goexit(); return nil }}
		}, 1},
		{"inside a governed call", sc, func(g *resilience.Governor) []func(context.Context) error {
			return []func(context.Context) error{panicIn(g)}
		}, 1},
		{"after recovering a governed call's panic", sc, func(g *resilience.Governor) []func(context.Context) error {
			return []func(context.Context) error{func(ctx context.Context) error {
				func() {
					defer func() { _ = recover() }()
					_ = panicIn(g)(ctx)
				}()
				panic("after the recovered one")
			}}
		}, 1},
		{"two tasks on one ledger, one inside a call", sc, func(g *resilience.Governor) []func(context.Context) error {
			return []func(context.Context) error{panicIn(g), func(context.Context) error { panic("before the call") }}
		}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, 100, resilience.Config{})
				ctx, l := resilience.WithLedger(context.Background(), "scan")
				p, pctx := New(ctx, Workers(2), WithGovernor(g))
				for _, fn := range c.tasks(g) {
					p.Go(pctx, c.scope, fn)
				}
				if err := p.Wait(); err == nil {
					t.Fatal("Wait returned nil: the task's panic is not among its errors")
				}
				if n := l.Count(resilience.LossPanicked); n != c.want {
					t.Fatalf("the ledger counts %d panicked, want %d (%q)", n, c.want, l.Reasons())
				}
				if !l.Degraded() || !strings.Contains(l.Describe(), "panicked") {
					t.Fatalf("the ledger reads %q: the task's lost work is not in it", l.Describe())
				}
				// What the task panicked with is in the reason.
				if want := "task panicked: before the call"; c.name == "before any call" && !strings.Contains(l.Describe(), want) {
					t.Errorf("the ledger reads %q: want what the task panicked with, %q", l.Describe(), want)
				}
				// A task that called runtime.Goexit did not panic: its
				// reason says what it did, as its error (ErrGoexit) does.
				if want := sc.String() + ": task called runtime.Goexit"; c.name == "calls runtime.Goexit" && !slices.Contains(l.Reasons(), want) {
					t.Errorf("the ledger's reasons are %q: want %q", l.Reasons(), want)
				}
			})
		})
	}
}

// A governed call that records its panic in a ledger of its own
// (resilience.WithLedger inside the task) leaves the task's ledger to
// the pool: each ledger counts the panic it was told of once.
func TestAPanicRecordedInAnotherLedgerIsCountedInTheTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{})
		ctx, l := resilience.WithLedger(context.Background(), "scan")
		p, pctx := New(ctx, Workers(1), WithGovernor(g))
		var sub *resilience.Ledger
		sc := scope("Describe")
		p.Go(pctx, sc, func(ctx context.Context) error {
			var sctx context.Context
			sctx, sub = resilience.WithLedger(ctx, "item")
			return resilience.Do(sctx, sc, func(context.Context) error { panic("in the call") }, resilience.WithGovernor(g))
		})
		p.Wait()
		if n, m := l.Count(resilience.LossPanicked), sub.Count(resilience.LossPanicked); n != 1 || m != 1 {
			t.Fatalf("the task's ledger counts %d panicked, the call's %d: want 1 each", n, m)
		}
	})
}

// A governed call made with a context not derived from the task's (the
// pool's, captured by the task's closure) leaves no mark on the task's:
// when it carries the task's ledger, the panic it records there is
// recorded again by the pool, counted twice, as the package's
// documentation says.
func TestAPanicInACallWithoutTheTasksContextIsCountedTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{})
		ctx, l := resilience.WithLedger(context.Background(), "scan")
		p, pctx := New(ctx, Workers(1), WithGovernor(g))
		sc := scope("Describe")
		p.Go(pctx, sc, func(context.Context) error {
			return resilience.Do(pctx, sc, func(context.Context) error { panic("in the call") }, resilience.WithGovernor(g))
		})
		p.Wait()
		if n := l.Count(resilience.LossPanicked); n != 2 {
			t.Fatalf("the ledger counts %d panicked, want 2 (the call's and the task's)", n)
		}
	})
}

// A task of the zero scope (a fan-out that calls nothing) dropped unrun
// is listed in its ledger as a panic of one is: without a scope, which
// it did not declare. The reason named the zero scope's String,
// "*/*/*/*: task not run: ...", which reads as every scope of every
// provider.
func TestAZeroScopeTaskDroppedIsListedWithoutAScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{})
		base, stop := context.WithCancelCause(context.Background())
		ctx, l := resilience.WithLedger(base, "scan")
		p, pctx := New(ctx, Workers(1), WithGovernor(g))
		hold := make(chan struct{})
		p.Go(pctx, resilience.Scope{}, func(context.Context) error { <-hold; return nil })
		synctest.Wait()
		p.Go(pctx, resilience.Scope{}, func(context.Context) error { return nil }) // queued behind it, the only worker busy
		stop(errors.New("scan stopped"))
		close(hold)
		p.Wait()
		if want := "task not run: scan stopped"; !slices.Equal(l.Reasons(), []string{want}) {
			t.Fatalf("the ledger lists %q; want %q", l.Reasons(), want)
		}
	})
}

// A task's ledger line names its scope on one line, as a governed call's
// does: a part holding a newline (an account read from input) is quoted,
// so that it cannot forge a line of its own in the ledger, for a task
// that panicked and one dropped unrun alike. The pool wrote the scope as
// it is.
func TestATasksLedgerLineNamesItsScopeOnOneLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{})
		forged := resilience.Scope{Provider: "aws", Account: "1\nINFO forged", Region: "us-east-1", Service: "ec2"}
		base, stop := context.WithCancelCause(context.Background())
		ctx, l := resilience.WithLedger(base, "scan")
		p, pctx := New(ctx, Workers(1), WithGovernor(g))
		hold := make(chan struct{})
		p.Go(pctx, forged, func(context.Context) error { <-hold; panic("in the task") })
		synctest.Wait()
		p.Go(pctx, forged, func(context.Context) error { return nil }) // queued behind it, the only worker busy
		stop(errors.New("scan stopped"))
		close(hold)
		p.Wait()
		want := []string{`"aws/1\nINFO forged/us-east-1/ec2": task not run: scan stopped`, `"aws/1\nINFO forged/us-east-1/ec2": task panicked: in the task`}
		got := l.Reasons()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("the ledger lists %q; want %q", got, want)
		}
	})
}
