//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/nestgate"
	"github.com/cloudg/cloudg/state"
)

// A governed call made inside a Do's function, with the context the
// function was given, while the enclosing call holds the only slot of the
// account's bulkhead: with WithNestedCalls on the enclosing call, the
// nested call goes at once without a slot, through each way of making the
// enclosing call (Do, Call, Wrap, WrapArg, a Bound's Do) and two levels
// deep; without it, the nested call waits for the slot its own caller
// holds until its deadline (the limit the option's godoc states).
func TestWithNestedCallsLetsACallNestedInAnotherGoWithoutItsSlot(t *testing.T) {
	type outerCall func(ctx context.Context, g *Governor, fn func(context.Context) error, opts ...CallOption) error
	calls := map[string]outerCall{
		"Do": func(ctx context.Context, g *Governor, fn func(context.Context) error, opts ...CallOption) error {
			return Do(ctx, ec2Vpcs, fn, append(opts, WithGovernor(g))...)
		},
		"Call": func(ctx context.Context, g *Governor, fn func(context.Context) error, opts ...CallOption) error {
			_, err := Call(ctx, ec2Vpcs, func(ctx context.Context) (int, error) { return 1, fn(ctx) }, append(opts, WithGovernor(g))...)
			return err
		},
		"Wrap": func(ctx context.Context, g *Governor, fn func(context.Context) error, opts ...CallOption) error {
			_, err := Wrap(ec2Vpcs, func(ctx context.Context) (int, error) { return 1, fn(ctx) }, append(opts, WithGovernor(g))...)(ctx)
			return err
		},
		"WrapArg": func(ctx context.Context, g *Governor, fn func(context.Context) error, opts ...CallOption) error {
			_, err := WrapArg(func(string) Scope { return ec2Vpcs }, func(ctx context.Context, _ string) (int, error) { return 1, fn(ctx) }, append(opts, WithGovernor(g))...)(ctx, "vpc")
			return err
		},
		"Bound.Do": func(ctx context.Context, g *Governor, fn func(context.Context) error, opts ...CallOption) error {
			b, err := g.Bind(ec2Vpcs)
			if err != nil {
				return err
			}
			return b.Do(ctx, fn, opts...)
		},
	}
	for name, outer := range calls {
		for _, nesting := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/WithNestedCalls", false: "/without"}[nesting], func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
					ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
					defer cancel()
					var opts []CallOption
					if nesting {
						opts = append(opts, WithNestedCalls())
					}
					start := time.Now()
					var inner, deepest error
					err := outer(ctx, g, func(ctx context.Context) error {
						inner = Do(ctx, ec2Subnets, func(ctx context.Context) error {
							deepest = Do(ctx, iamUsers, func(context.Context) error { return nil }, WithGovernor(g))
							return deepest
						}, append(opts, WithGovernor(g))...)
						return inner
					}, opts...)
					if !nesting {
						if !errors.Is(inner, context.DeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
							t.Fatalf("without the option: nested %v, enclosing %v; want both to end at the deadline", inner, err)
						}
						return
					}
					if err != nil || inner != nil || deepest != nil {
						t.Fatalf("enclosing %v, nested %v, nested in it %v; want all to succeed", err, inner, deepest)
					}
					if waited := time.Since(start); waited != 0 {
						t.Fatalf("the calls took %v, want none: the nested calls need no slot of their own", waited)
					}
					checkSlotsBack(t, g)
				})
			})
		}
	}
}

// The context a WithNestedCalls call gives its function is the caller's
// for everything but the call it carries: its values, its deadline and its
// cancellation.
func TestWithNestedCallsKeepsTheCallersContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		type key struct{}
		deadline := time.Now().Add(time.Minute)
		ctx, cancel := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), deadline)
		err := Do(ctx, ec2Vpcs, func(fctx context.Context) error {
			if v := fctx.Value(key{}); v != "v" {
				t.Errorf("the caller's value: %v, want v", v)
			}
			if gd, ok := fctx.Value(g).(*Guard); !ok || gd.scope != ec2Vpcs {
				t.Errorf("Value(governor) = %v, want the call's Guard", fctx.Value(g))
			}
			if other, _ := NewGovernor(Config{}); fctx.Value(other) != nil {
				t.Error("another governor's key answered with this call's Guard")
			}
			if d, ok := fctx.Deadline(); !ok || !d.Equal(deadline) {
				t.Errorf("deadline %v %v, want the caller's %v", d, ok, deadline)
			}
			cancel()
			if !errors.Is(fctx.Err(), context.Canceled) {
				t.Errorf("Err after the caller's cancel: %v", fctx.Err())
			}
			select {
			case <-fctx.Done():
			default:
				t.Error("Done not closed by the caller's cancel")
			}
			return nil
		}, WithGovernor(g), WithNestedCalls())
		if err != nil {
			t.Fatal(err)
		}
	})
}

// A WithNestedCalls call that is a half-open breaker's probe lends the
// probe to a call on the same scope nested in its function, whose success
// closes the breaker; without the option, the half-open breaker refuses
// the nested call.
func TestWithNestedCallsLendsTheProbe(t *testing.T) {
	for _, nesting := range []bool{true, false} {
		t.Run(map[bool]string{true: "WithNestedCalls", false: "without"}[nesting], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				for range 5 {
					sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return throttle() })
				}
				if st := g.Inspect(ec2Vpcs).Breaker.State; st != state.Open {
					t.Fatalf("breaker %v after five throttles, want open", st)
				}
				time.Sleep(time.Minute) // the cooldown: the next call is the probe
				opts := []CallOption{WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1})}
				if nesting {
					opts = append(opts, WithNestedCalls())
				}
				var inner error
				err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
					inner = Do(ctx, ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g))
					return inner
				}, opts...)
				if !nesting {
					var open *CircuitOpenError
					if !errors.As(inner, &open) {
						t.Fatalf("without the option the nested call got %v, want a *CircuitOpenError", inner)
					}
					return
				}
				if inner != nil || err != nil {
					t.Fatalf("nested %v, enclosing %v; want both to succeed", inner, err)
				}
				if st := g.Inspect(ec2Vpcs).Breaker.State; st != state.Closed {
					t.Fatalf("breaker %v after the probes' successes, want closed", st)
				}
			})
		})
	}
}

// WithNestedCalls costs one allocation on the success path; a call
// without it none.
func TestWithNestedCallsCostsOneAllocation(t *testing.T) {
	fast := 1e9 // no call waits for a token
	g := newGov(t, Config{AWS: ProviderConfig{
		GlobalMaxRPS: &fast, GlobalBurst: fast, AccountMaxRPS: &fast, AccountBurst: fast,
		Services: map[string]ServiceConfig{"ec2": {MaxRPS: fast, Burst: fast}},
	}})
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	withOpt, without := []CallOption{WithGovernor(g), WithNestedCalls()}, []CallOption{WithGovernor(g)}
	Do(ctx, ec2Vpcs, fn, withOpt...) // the scope's state, made once
	if n := testing.AllocsPerRun(200, func() { Do(ctx, ec2Vpcs, fn, withOpt...) }); n != 1 {
		t.Errorf("a WithNestedCalls call made %v allocations, want 1", n)
	}
	if n := testing.AllocsPerRun(200, func() { Do(ctx, ec2Vpcs, fn, without...) }); n != 0 {
		t.Errorf("a call made %v allocations, want 0", n)
	}
}

// Calls nested in one call's attempt at once (a function that fans out
// with its context) share the slot the call holds one at a time: the
// account stays within its cap, and none of them waits for ever for the
// slot its caller holds. With max_concurrency 1, three calls nested at
// once run one after another; they used to go at once, each without a
// slot, three calls in flight against a cap of one.
func TestCallsNestedAtOnceShareTheirCallersSlotOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		var mu sync.Mutex
		inFlight, most := 0, 0
		work := func(context.Context) error {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			time.Sleep(time.Second)
			mu.Lock()
			inFlight--
			mu.Unlock()
			return nil
		}
		start := time.Now()
		err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
			errs := make(chan error, 3)
			for _, sc := range []Scope{ec2Subnets, iamUsers, ec2Subnets} {
				go func() { errs <- Do(ctx, sc, work, WithGovernor(g)) }()
			}
			var all []error
			for range 3 {
				all = append(all, <-errs)
			}
			return errors.Join(all...)
		}, WithGovernor(g), WithNestedCalls())
		if err != nil {
			t.Fatal(err)
		}
		if most != 1 {
			t.Errorf("%d nested calls in flight at once, want 1: the account's cap is 1", most)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("the calls took %v, want 3s: one after another, each waiting for the one before", took)
		}
		checkSlotsBack(t, g)
	})
}

// A context is safe for simultaneous use by goroutines, and the one a
// WithNestedCalls call gives its function is no exception: a goroutine the
// function starts, and does not wait for, may make its governed call with
// it while the enclosing call, its function returned, gives its slot back
// and records its answer. The nested call finds the enclosing call
// holding the only slot, goes without one, and reads nothing the
// enclosing call writes meanwhile (run with -race); once the enclosing
// call's attempt is over, a call made with its context is nested in it no
// more, and waits for a slot as any call does.
func TestWithNestedCallsContextOutlivingTheAttemptIsSafe(t *testing.T) {
	g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
	for range 50 {
		var wg sync.WaitGroup
		err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
			wg.Add(1)
			go func() {
				defer wg.Done()
				Do(ctx, ec2Subnets, func(context.Context) error { return nil }, WithGovernor(g))
			}()
			runtime.Gosched()
			return nil
		}, WithGovernor(g), WithNestedCalls())
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
	}
	var stale context.Context
	if err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
		stale = ctx
		return nil
	}, WithGovernor(g), WithNestedCalls()); err != nil {
		t.Fatal(err)
	}
	// The only slot held by a call that the stale context does not lead to.
	gd, err := g.Begin(context.Background(), iamUsers)
	if err != nil {
		t.Fatal(err)
	}
	if err := gd.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer gd.End(nil)
	late, err := g.Begin(stale, ec2Subnets)
	if err != nil {
		t.Fatal(err)
	}
	if err := late.TryEnter(); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("TryEnter of a call made with the context of a call that ended, the only slot held elsewhere: %v; want ErrNoSlot", err)
	}
	late.End(nil)
	if used, waiting := g.provider("aws").scopes.accountBulkhead(ec2Vpcs.Account).InUse(); used != 1 || waiting != 0 {
		t.Fatalf("bulkhead %d used, %d waiting; want 1, 0", used, waiting)
	}
}

// A call nested in another however deep (a walk down a tree of folders,
// each level's call made inside its parent's) never waits for the slot
// its callers hold: with max_concurrency 1, forty levels of calls each
// made WithNestedCalls inside the one before go at once. A chain of
// contexts that loops back on itself (a context of the caller's own whose
// Value answers with a call begun under it) ends the walk: the call is
// not nested, and waits for a slot as any call does.
func TestWithNestedCallsGoAtAnyDepth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		const depth = 40
		var level func(ctx context.Context, k int) error
		level = func(ctx context.Context, k int) error {
			return Do(ctx, ec2Vpcs, func(ctx context.Context) error {
				if k == depth {
					return nil
				}
				return level(ctx, k+1)
			}, WithGovernor(g), WithNestedCalls())
		}
		start := time.Now()
		if err := level(ctx, 1); err != nil {
			t.Fatalf("%d calls each nested in the one before: %v after %v; want all to succeed at once", depth, err, time.Since(start))
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("the calls took %v, want none", waited)
		}

		// Two contexts, each answering with the call begun under the other.
		a, b := &loopCtx{Context: ctx}, &loopCtx{Context: ctx}
		ga, _ := g.Begin(a, ec2Vpcs)
		gb, _ := g.Begin(b, ec2Vpcs)
		a.gd, b.gd = gb, ga
		holder, _ := g.Begin(ctx, iamUsers)
		if err := holder.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		defer holder.End(nil)
		late, _ := g.Begin(a, ec2Subnets)
		if err := late.TryEnter(); !errors.Is(err, ErrNoSlot) {
			t.Fatalf("TryEnter under a chain of contexts that loops: %v, want ErrNoSlot", err)
		}
		late.End(nil)
		ga.End(nil)
		gb.End(nil)
	})
}

// loopCtx answers Value(any governor) with gd, which a test sets.
type loopCtx struct {
	context.Context
	gd *Guard
}

func (c *loopCtx) Value(key any) any {
	if _, ok := key.(*Governor); ok {
		return c.gd
	}
	return c.Context.Value(key)
}

// enterGated begins a call of scope on g with ctx and enters its first
// attempt as an SDK integration does: a gate attached to the Guard, open
// while the attempt runs, and the attempt's context, through which a call
// nested in the attempt finds the Guard. It returns the Guard, its gate
// (the caller closes it as the attempt ends) and the attempt's context.
func enterGated(t *testing.T, g *Governor, ctx context.Context, scope Scope) (*Guard, *nestgate.Gate, *loopCtx) {
	t.Helper()
	gd, err := g.Begin(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	gate := new(nestgate.Gate)
	nestgate.Attach(gd, gate)
	if err := gd.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	gate.SetOpen(true)
	return gd, gate, &loopCtx{Context: ctx, gd: gd}
}
