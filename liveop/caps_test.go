//go:build go1.25

package liveop

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestCapPerScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 10})
		op := &counted{d: time.Minute, val: "x"}
		a := goRun(context.Background(), g, req("a", "aws/1", "aws/2"), op.run)
		synctest.Wait()
		_, err := Run(context.Background(), g, req("b", "aws/3", "aws/2", "aws/1"), op.run)
		r := refused(t, err, ReasonBusy, "a live operation is already running for aws/1, aws/2; retry when it finishes or use the cached dataset")
		if !errors.Is(err, ErrBusy) || errors.Is(err, ErrCooldown) || r.RetryAfter != 0 || r.Caller != "agent" ||
			len(r.Scopes) != 2 || r.Scopes[0] != "aws/1" || r.Scopes[1] != "aws/2" {
			t.Fatalf("%+v", r)
		}
		// Another scope is free.
		b := goRun(context.Background(), g, req("c", "aws/3"), op.run)
		synctest.Wait()
		if st := g.Status(); st.Active != 2 || st.ActiveScopes["aws/1"] != 1 || st.ActiveScopes["aws/3"] != 1 {
			t.Fatalf("status %+v", st)
		}
		time.Sleep(time.Minute)
		<-a
		<-b
	})
}

func TestCapPerScopeAboveOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrent: 2, MaxConcurrentTotal: 10})
		op := &counted{d: time.Minute}
		a := goRun(context.Background(), g, req("a", "aws"), op.run)
		b := goRun(context.Background(), g, req("b", "aws"), op.run)
		synctest.Wait()
		if st := g.Status(); st.ActiveScopes["aws"] != 2 {
			t.Fatalf("status %+v", st)
		}
		_, err := Run(context.Background(), g, req("c", "aws"), op.run)
		refused(t, err, ReasonBusy, "a live operation is already running for aws; retry when it finishes or use the cached dataset")
		time.Sleep(time.Minute)
		<-a
		<-b
	})
}

func TestCapTotal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		op := &counted{d: time.Minute}
		a := goRun(context.Background(), g, req("a", "aws/1"), op.run)
		b := goRun(context.Background(), g, req("b", "gcp/projects/p"), op.run)
		synctest.Wait()
		_, err := Run(context.Background(), g, req("c", "azure/sub"), op.run)
		r := refused(t, err, ReasonBusy, "a live operation is already running for all scopes; retry when it finishes or use the cached dataset")
		if r.Scopes != nil {
			t.Fatalf("scopes %v", r.Scopes)
		}
		time.Sleep(time.Minute)
		<-a
		<-b
	})
}

// A waiting caller starts when a slot frees: the total cap is full, its
// own scope is not cooling.
func TestWaitForASlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 1})
		first := &counted{d: time.Minute, val: "first"}
		a := goRun(context.Background(), g, req("a", "aws/1"), first.run)
		synctest.Wait()
		start := time.Now()
		var startedAt time.Time
		w := Request{Key: "b", Scopes: []string{"aws/2"}, Wait: true}
		b := goRun(context.Background(), g, w, func(context.Context) (string, error) {
			startedAt = time.Now()
			return "second", nil
		})
		synctest.Wait()
		if _, ok := received(b); ok {
			t.Fatal("the waiting caller did not wait")
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if o, ok := received(b); !ok || o.val != "second" || o.err != nil || startedAt.Sub(start) != time.Minute {
			t.Fatalf("%+v %v, started after %v", o, ok, startedAt.Sub(start))
		}
		<-a
	})
}

// Two callers wait for the same operation; when the slot frees one starts
// it and the other joins.
func TestWaitJoinsAnIdenticalOperation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 1})
		blocker := &counted{d: time.Minute}
		a := goRun(context.Background(), g, req("a", "aws/1"), blocker.run)
		synctest.Wait()
		op := &counted{d: 10 * time.Second, val: "scan"}
		w := Request{Key: "k", Scopes: []string{"azure/sub"}, Wait: true}
		x := goRun(context.Background(), g, w, op.run)
		y := goRun(context.Background(), g, w, op.run)
		time.Sleep(time.Minute + 10*time.Second)
		ox, oy := <-x, <-y
		if ox.val != "scan" || oy.val != "scan" || op.calls.Load() != 1 {
			t.Fatalf("%+v %+v, %d runs", ox, oy, op.calls.Load())
		}
		if st := g.Status(); st.Started != 2 || st.Joined != 1 {
			t.Fatalf("status %+v", st)
		}
		<-a
	})
}

func TestWaitEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		op := &counted{d: time.Minute}
		a := goRun(context.Background(), g, req("a", "aws/1"), op.run)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		w := req("b", "aws/1")
		w.Wait = true
		_, err := Run(ctx, g, w, op.run)
		refused(t, err, ReasonBusy, "a live operation is already running for aws/1; retry when it finishes or use the cached dataset")
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 30*time.Second {
			t.Fatalf("%v after %v", err, time.Since(start))
		}
		if op.calls.Load() != 1 {
			t.Fatal("the waiting caller started its operation")
		}
		time.Sleep(30 * time.Second)
		<-a
	})
}

// A caller that waited for a scope held by another operation finds the
// scope cooling once that operation ends.
func TestWaitThenCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		op := &counted{d: time.Minute}
		a := goRun(context.Background(), g, req("a", "aws/1"), op.run)
		synctest.Wait()
		w := req("b", "aws/1")
		w.Wait = true
		_, err := Run(context.Background(), g, w, op.run)
		refused(t, err, ReasonCooldown, "live collection of aws/1 ran recently; cooling down, retry in 120s or use the cached dataset")
		<-a
	})
}

// endingCtx is a context that ends while a waiting caller looks at it: its
// Done first runs onDone (which frees the slot the caller waits for), then
// returns a closed channel, so that the caller's wait finds both the slot
// and the end of its context ready at once.
type endingCtx struct {
	context.Context
	once   sync.Once
	onDone func()
	done   chan struct{}
}

func (c *endingCtx) Done() <-chan struct{} {
	c.once.Do(func() { c.onDone(); close(c.done) })
	return c.done
}

func (c *endingCtx) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

// A caller whose context ends while it waits for a slot never starts its
// operation, even when the slot frees at the same moment: it gets the busy
// refusal wrapping its context's error, and uses no quota.
func TestWaitEndedByTheContextStartsNothing(t *testing.T) {
	for i := range 32 {
		g := newGuard(t, Config{MaxConcurrentTotal: 1, CooldownSeconds: ptr(0.0)})
		release := make(chan struct{})
		a := goRun(context.Background(), g, req("a", "aws/1"), func(context.Context) (string, error) {
			<-release
			return "", nil
		})
		for g.Status().Active != 1 {
			runtime.Gosched()
		}
		ctx := &endingCtx{Context: context.Background(), done: make(chan struct{}), onDone: func() {
			close(release)
			for g.Status().Active != 0 { // the slot is free and the waiters woken
				runtime.Gosched()
			}
		}}
		op := &counted{val: "x"}
		w := req("b", "aws/2")
		w.Wait = true
		_, err := Run(ctx, g, w, op.run)
		<-a
		if !errors.Is(err, ErrBusy) || !errors.Is(err, context.Canceled) || op.calls.Load() != 0 || g.Status().Started != 1 {
			t.Fatalf("run %d: got %v, %d runs, status %+v; want a busy refusal wrapping context.Canceled and no start",
				i, err, op.calls.Load(), g.Status())
		}
	}
}

// Callers waiting for a slot get it in the order they came: a caller
// that waits is not overtaken, when a slot frees, by one that came after
// it, however many come (with every waiting caller woken to race for
// each freed slot, the last to come took it, round after round, and the
// first starved).
func TestAWaitingCallerIsNotOvertaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 1, CooldownSeconds: ptr(0.0)})
		var mu sync.Mutex
		var order []string
		op := func(name string) func(context.Context) (string, error) {
			return func(context.Context) (string, error) {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				time.Sleep(10 * time.Second)
				return name, nil
			}
		}
		waiting := func(key string) Request {
			return Request{Key: key, Scopes: []string{"aws/" + key}, Caller: "agent", Wait: true}
		}
		outs := []<-chan outcome{goRun(context.Background(), g, req("holder", "aws/holder"), op("holder"))}
		synctest.Wait()
		outs = append(outs, goRun(context.Background(), g, waiting("first"), op("first")))
		synctest.Wait()
		// Each round, another caller comes a second before the slot frees.
		want := []string{"holder", "first"}
		for i := range 5 {
			time.Sleep(9 * time.Second)
			key := fmt.Sprintf("later%d", i+1)
			want = append(want, key)
			outs = append(outs, goRun(context.Background(), g, waiting(key), op(key)))
			synctest.Wait()
			time.Sleep(time.Second)
		}
		for _, o := range outs {
			if o := <-o; o.err != nil {
				t.Fatal(o.err)
			}
		}
		if !slices.Equal(order, want) {
			t.Fatalf("operations started in the order %v, want %v (the order their callers came)", order, want)
		}
	})
}

// A slot handed to a waiting caller whose context ends before it takes
// the slot goes to the next caller waiting, which starts at once: it is
// not kept for the caller that has gone.
func TestASlotHandedToACallerThatHasGoneGoesToTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 1, CooldownSeconds: ptr(0.0)})
		release := make(chan struct{})
		a := goRun(context.Background(), g, req("a", "aws/1"), func(context.Context) (string, error) {
			<-release
			return "a", nil
		})
		synctest.Wait()
		queued := func(n int) bool {
			g.mu.Lock()
			defer g.mu.Unlock()
			return len(g.queue) == n
		}
		// The first caller's context ends as it waits, once the second
		// waits behind it and the slot has been handed to it.
		first := &endingCtx{Context: context.Background(), done: make(chan struct{}), onDone: func() {
			for !queued(2) {
				runtime.Gosched()
			}
			close(release)
			for {
				g.mu.Lock()
				handed := g.queue[0].phase == waitHanded
				g.mu.Unlock()
				if handed {
					return
				}
				runtime.Gosched()
			}
		}}
		w1, w2 := req("b", "aws/2"), req("c", "aws/3")
		w1.Wait, w2.Wait = true, true
		op := &counted{val: "x"}
		b := goRun(first, g, w1, op.run)
		for !queued(1) {
			runtime.Gosched()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		start := time.Now()
		v, err := Run(ctx, g, w2, op.run)
		if err != nil || v != "x" || time.Since(start) != 0 {
			t.Fatalf("the second caller got %q, %v after %v; want its result at once, when the first had gone", v, err, time.Since(start))
		}
		if o := <-b; !errors.Is(o.err, ErrBusy) || !errors.Is(o.err, context.Canceled) {
			t.Fatalf("the first caller got %v, want a busy refusal wrapping context.Canceled", o.err)
		}
		<-a
	})
}

// A waiting caller that needs two scopes, one free and one held, keeps
// its place for the free one: a caller that comes later for that scope
// alone waits behind it, and does not take the slot the first needs, so
// that the first starts when its other scope frees. (It used to take it,
// and callers coming in turn for either scope could starve the first for
// ever.)
func TestAWaiterForTwoScopesIsNotOvertakenOnOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 3, CooldownSeconds: ptr(0.0)})
		var mu sync.Mutex
		var order []string
		op := func(name string) func(context.Context) (string, error) {
			return func(context.Context) (string, error) {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				time.Sleep(10 * time.Second)
				return name, nil
			}
		}
		waiting := func(key string, scopes ...string) Request {
			r := req(key, scopes...)
			r.Wait = true
			return r
		}
		outs := []<-chan outcome{goRun(context.Background(), g, req("holder", "aws/b"), op("holder"))}
		synctest.Wait()
		outs = append(outs, goRun(context.Background(), g, waiting("both", "aws/a", "aws/b"), op("both")))
		synctest.Wait()
		time.Sleep(time.Second)
		outs = append(outs, goRun(context.Background(), g, waiting("later", "aws/a"), op("later")))
		synctest.Wait()
		for _, o := range outs {
			if o := <-o; o.err != nil {
				t.Fatal(o.err)
			}
		}
		if want := []string{"holder", "both", "later"}; !slices.Equal(order, want) {
			t.Fatalf("operations started in the order %v, want %v (the order their callers came)", order, want)
		}
	})
}

// A Run inside an operation's function is not held back by a slot kept
// for a caller waiting for that operation's scope: the waiter waits for
// the operation, which waits for the Run, so that keeping the slot from
// the Run would leave all three waiting for ever.
func TestANestedRunTakesASlotKeptForACallerWaitingForItsOperation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 3, CooldownSeconds: ptr(0.0)})
		var nested outcome
		keptSlot(t, g, func(ctx context.Context) {
			inner := req("inner", "aws/b")
			inner.Wait = true
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			start := time.Now()
			nested.val, nested.err = Run(ctx, g, inner, func(context.Context) (string, error) { return "inner", nil })
			if nested.err == nil && time.Since(start) != 0 {
				nested.err = fmt.Errorf("started after %v", time.Since(start))
			}
		})()
		if nested.err != nil || nested.val != "inner" {
			t.Fatalf("the Run inside the outer operation: %q, %v; want it started at once", nested.val, nested.err)
		}
	})
}

// keptSlot sets the scene of a slot kept for a waiting caller, with g's
// scopes capped at one operation each: an operation of aws/a runs, and a
// caller waiting for aws/a and aws/b keeps aws/b's free slot. The
// operation's function calls inside (nil: nothing) once the returned
// function lets it; that function ends the scene, and fails t unless the
// operation and the waiting caller both ran.
func keptSlot(t *testing.T, g *Guard, inside func(ctx context.Context)) (end func()) {
	t.Helper()
	started, release := make(chan struct{}), make(chan struct{})
	outer := goRun(context.Background(), g, req("outer", "aws/a"), func(ctx context.Context) (string, error) {
		close(started)
		<-release
		if inside != nil {
			inside(ctx)
		}
		return "outer", nil
	})
	<-started
	both := req("both", "aws/a", "aws/b")
	both.Wait = true
	waiter := goRun(context.Background(), g, both, func(context.Context) (string, error) { return "both", nil })
	synctest.Wait()
	return func() {
		t.Helper()
		close(release)
		if o := <-outer; o.err != nil || o.val != "outer" {
			t.Fatalf("the outer operation: %q, %v", o.val, o.err)
		}
		if o := <-waiter; o.err != nil || o.val != "both" {
			t.Fatalf("the waiting caller: %q, %v", o.val, o.err)
		}
	}
}

// A Run made inside an operation's function with a context of its own (a
// helper that starts from context.Background, say), not the function's,
// is still inside the operation: a slot kept for a caller waiting for the
// operation's scope does not hold it back, or the three would wait for
// one another until the Run's context ended (for ever, without a
// deadline). The Run is made on the function's goroutine, directly or by
// a helper it calls.
func TestARunInsideAnOperationWithAContextOfItsOwnTakesAKeptSlot(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(g *Guard, r Request) (string, error)
	}{
		{"context.Background", func(g *Guard, r Request) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return Run(ctx, g, r, func(context.Context) (string, error) { return "inner", nil })
		}},
		{"a helper's", func(g *Guard, r Request) (string, error) { return innerHelper(g, r) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGuard(t, Config{MaxConcurrentTotal: 3, CooldownSeconds: ptr(0.0)})
				var nested outcome
				keptSlot(t, g, func(context.Context) {
					inner := req("inner", "aws/b")
					inner.Wait = true
					start := time.Now()
					nested.val, nested.err = c.run(g, inner)
					if d := time.Since(start); d != 0 {
						nested.err = fmt.Errorf("ended after %v: %w", d, nested.err)
					}
				})()
				if nested.err != nil || nested.val != "inner" {
					t.Fatalf("the Run inside the outer operation: %q, %v; want it started at once", nested.val, nested.err)
				}
			})
		})
	}
}

// innerHelper is a helper of an operation's function that makes its Run
// with a context of its own, a minute long.
//
//go:noinline
func innerHelper(g *Guard, r Request) (string, error) {
	ctx, cancel := context.WithTimeout(context.TODO(), time.Minute)
	defer cancel()
	return Run(ctx, g, r, func(context.Context) (string, error) { return "inner", nil })
}

// A scope whose slot no running operation holds, only one kept for a
// caller waiting ahead, refuses a caller that does not wait, and says so:
// not that an operation is running for it, which is untrue, and would
// send the caller looking for one.
func TestASlotKeptForAWaitingCallerIsNotSaidToRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 3, CooldownSeconds: ptr(0.0)})
		defer keptSlot(t, g, nil)()
		_, err := Run(context.Background(), g, req("late", "aws/b"), func(context.Context) (string, error) { return "late", nil })
		refused(t, err, ReasonBusy, "a live operation waiting before this one holds aws/b; retry when it starts and finishes or use the cached dataset")
		_, err = Run(context.Background(), g, req("late", "aws/a"), func(context.Context) (string, error) { return "late", nil })
		refused(t, err, ReasonBusy, "a live operation is already running for aws/a; retry when it finishes or use the cached dataset")
		_, err = Run(context.Background(), g, req("late", "aws/a", "aws/b"), func(context.Context) (string, error) { return "late", nil })
		refused(t, err, ReasonBusy, "a live operation is already running for aws/a, and one waiting before this one holds aws/b; retry when they finish or use the cached dataset")
	})
}

// A Run made with a context that outlives the function of an operation
// that has ended (context.WithoutCancel of it, for work that goes on
// after the function) is inside no operation: nothing waits for it, so a
// slot kept for a caller waiting ahead holds it back as it holds back
// any caller that came later.
func TestARunWithTheContextOfAnEndedOperationDoesNotTakeAKeptSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 3, CooldownSeconds: ptr(0.0)})
		end := keptSlot(t, g, nil)
		later := make(chan outcome, 1)
		if _, err := Run(context.Background(), g, req("ended", "gcp/p"), func(ctx context.Context) (string, error) {
			go func(ctx context.Context) {
				time.Sleep(time.Second) // the operation has ended
				v, err := Run(ctx, g, req("late", "aws/b"), func(context.Context) (string, error) { return "late", nil })
				later <- outcome{v, err}
			}(context.WithoutCancel(ctx))
			return "ended", nil
		}); err != nil {
			t.Fatal(err)
		}
		o := <-later
		end()
		if o.err == nil {
			t.Fatalf("the Run after the operation ended got %q, taking the slot of aws/b kept for the caller waiting ahead; want it refused as busy", o.val)
		}
		refused(t, o.err, ReasonBusy, "a live operation waiting before this one holds aws/b; retry when it starts and finishes or use the cached dataset")
	})
}

// A caller waiting for a slot (Request.Wait) with a context that
// outlives the function of an operation (context.WithoutCancel of it,
// for work that goes on after the function) is inside that operation
// only while the function runs: once it has returned, nothing waits for
// the caller, and a slot kept for a caller waiting ahead holds it back as
// it holds back any caller that came later, as it holds back a Run made
// with that context after the function returned
// (TestARunWithTheContextOfAnEndedOperationDoesNotTakeAKeptSlot).
func TestAWaitingCallerWhoseOperationEndedDoesNotTakeAKeptSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 4, CooldownSeconds: ptr(0.0)})
		begin := time.Now()
		a := goRun(context.Background(), g, req("a", "aws/a"), (&counted{d: 10 * time.Second, val: "a"}).run)
		b := goRun(context.Background(), g, req("b", "aws/b"), (&counted{d: 20 * time.Second, val: "b"}).run)
		synctest.Wait()
		both := req("both", "aws/a", "aws/b")
		both.Wait = true
		var bothAt, lateAt time.Duration // when each waiting caller's operation started
		waiter := goRun(context.Background(), g, both, func(context.Context) (string, error) {
			bothAt = time.Since(begin)
			time.Sleep(time.Minute)
			return "both", nil
		})
		synctest.Wait()
		late := make(chan outcome, 1)
		if _, err := Run(context.Background(), g, req("ended", "gcp/p"), func(ctx context.Context) (string, error) {
			go func(ctx context.Context) {
				r := req("late", "aws/a")
				r.Wait = true
				v, err := Run(ctx, g, r, func(context.Context) (string, error) { lateAt = time.Since(begin); return "late", nil })
				late <- outcome{v, err}
			}(context.WithoutCancel(ctx))
			time.Sleep(time.Second) // the Run waits for aws/a, behind the caller waiting for both scopes
			return "ended", nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, ch := range []<-chan outcome{a, b, waiter, late} {
			if o := <-ch; o.err != nil {
				t.Fatal(o.err)
			}
		}
		if lateAt < bothAt+time.Minute {
			t.Fatalf("the Run waiting with the context of an operation that had ended started its operation at %v, taking the slot of aws/a kept for the caller waiting ahead for aws/a and aws/b, which started at %v; want it to start after that caller's operation, at %v",
				lateAt, bothAt, bothAt+time.Minute)
		}
	})
}

// A Run looks for an operation's frame on its goroutine's stack, which
// costs microseconds, only when it matters: when a slot kept for a
// waiting caller would hold it back, or it waits. A Run nothing holds
// back walks no stack.
func TestARunWalksItsStackOnlyWhenAKeptSlotHoldsItBack(t *testing.T) {
	var walks atomic.Int32
	defer func(f func() bool) { operationGoroutine = f }(operationGoroutine)
	operationGoroutine = func() bool { walks.Add(1); return onOperationGoroutine() }
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 3, CooldownSeconds: ptr(0.0)})
		if _, err := Run(context.Background(), g, req("free", "aws/b"), func(context.Context) (string, error) { return "", nil }); err != nil {
			t.Fatal(err)
		}
		if n := walks.Load(); n != 0 {
			t.Fatalf("a Run nothing held back walked its stack %d times, want none", n)
		}
		end := keptSlot(t, g, nil)
		walks.Store(0)
		_, err := Run(context.Background(), g, req("late", "aws/b"), func(context.Context) (string, error) { return "", nil })
		end()
		if err == nil || walks.Load() != 1 {
			t.Fatalf("a Run a kept slot holds back: %v, its stack walked %d times; want refused, walked once", err, walks.Load())
		}
	})
}

// A Run walks its stack (operationGoroutine: runtime.Callers and the
// symbols of its frames, microseconds and allocations) with the Guard's
// lock let go, so that no other caller of the Guard waits for it: when a
// slot kept for a waiting caller holds the Run back, and before the Run
// waits for a slot.
func TestARunWalksItsStackWithTheGuardUnlocked(t *testing.T) {
	var walks, locked atomic.Int32
	var g *Guard
	defer func(f func() bool) { operationGoroutine = f }(operationGoroutine)
	operationGoroutine = func() bool {
		walks.Add(1)
		if g.mu.TryLock() { // every other goroutine of the bubble is blocked
			g.mu.Unlock()
		} else {
			locked.Add(1)
		}
		return onOperationGoroutine()
	}
	synctest.Test(t, func(t *testing.T) {
		g = newGuard(t, Config{MaxConcurrentTotal: 3, CooldownSeconds: ptr(0.0)})
		end := keptSlot(t, g, nil) // its waiting caller walks before it waits
		// Held back by the slot kept for the waiting caller.
		if _, err := Run(context.Background(), g, req("late", "aws/b"), func(context.Context) (string, error) { return "", nil }); err == nil {
			t.Fatal("a Run a kept slot holds back was let through")
		}
		// Waits for the slot of aws/a, which the outer operation holds.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		wait := req("waits", "aws/a")
		wait.Wait = true
		_, err := Run(ctx, g, wait, func(context.Context) (string, error) { return "", nil })
		cancel()
		end()
		if err == nil || walks.Load() != 3 || locked.Load() != 0 {
			t.Fatalf("a caller that waits, a Run held back, then one that waits (%v): stacks walked %d times, %d of them with the Guard's lock held; want 3 walks, none locked", err, walks.Load(), locked.Load())
		}
	})
}

// pausingCtx is a context whose Err, once armed, waits until resumed: a
// caller woken from its wait for a slot looks at its context first, so
// that the test holds it there, woken but not yet looking at the guard
// again, as a busy scheduler might.
type pausingCtx struct {
	context.Context
	armed  atomic.Bool
	resume chan struct{}
}

func (c *pausingCtx) Err() error {
	if c.armed.Load() {
		<-c.resume
	}
	return c.Context.Err()
}

// A waiting caller woken to join an operation of its key that then ends
// before the caller looks again is still the first of the waiting
// callers: a slot that frees meanwhile and lets it start is kept for it,
// not handed to a caller that came later.
func TestAWaitingCallerWokenToJoinIsNotOvertaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CooldownSeconds: ptr(0.0), MaxConcurrentTotal: 5})
		var mu sync.Mutex
		var order []string
		op := func(name string) func(context.Context) (string, error) {
			return func(context.Context) (string, error) {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				time.Sleep(time.Minute)
				return name, nil
			}
		}
		x := goRun(context.Background(), g, req("x", "aws/1"), op("x"))
		synctest.Wait()
		ctx := &pausingCtx{Context: context.Background(), resume: make(chan struct{})}
		first := goRun(ctx, g, Request{Key: "k", Scopes: []string{"aws/1"}, Wait: true}, op("first"))
		synctest.Wait()
		later := goRun(context.Background(), g, Request{Key: "later", Scopes: []string{"aws/1"}, Wait: true}, op("later"))
		synctest.Wait()
		ctx.armed.Store(true)
		// An operation of the first caller's key starts on aws/2 and wakes
		// it to join; the caller pauses on its context, and the operation
		// ends, then x, freeing aws/1.
		k := goRun(context.Background(), g, req("k", "aws/2"), func(context.Context) (string, error) { return "k", nil })
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		close(ctx.resume)
		for _, ch := range []<-chan outcome{x, k, first, later} {
			if o := <-ch; o.err != nil {
				t.Fatal(o.err)
			}
		}
		if want := []string{"x", "first", "later"}; !slices.Equal(order, want) {
			t.Fatalf("operations started in the order %v, want %v (the order their callers came)", order, want)
		}
	})
}

// panickyCtx is a context whose Err panics once armed: the caller's code,
// which the guard calls while the caller waits.
type panickyCtx struct {
	context.Context
	armed atomic.Bool
}

func (c *panickyCtx) Err() error {
	if c.armed.Load() {
		panic("the caller's context broke")
	}
	return c.Context.Err()
}

// A waiting caller whose context panics as it looks at it, once a slot
// was handed to it, leaves the queue with the panic (which reaches its
// caller): the slot goes to the next caller waiting, not kept for ever
// for a caller that has gone.
func TestAWaitingCallerWhoseContextPanicsLeavesTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CooldownSeconds: ptr(0.0)})
		x := goRun(context.Background(), g, req("x", "aws/1"), (&counted{d: time.Minute, val: "x"}).run)
		synctest.Wait()
		ctx := &panickyCtx{Context: context.Background()}
		panicked := make(chan any, 1)
		go func() {
			defer func() { panicked <- recover() }()
			Run(ctx, g, Request{Key: "p", Scopes: []string{"aws/1"}, Wait: true}, (&counted{val: "p"}).run)
		}()
		synctest.Wait()
		ctx.armed.Store(true)
		later, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		l := goRun(later, g, Request{Key: "l", Scopes: []string{"aws/1"}, Wait: true}, (&counted{val: "l"}).run)
		start := time.Now()
		if o := <-x; o.val != "x" {
			t.Fatal(o)
		}
		if p := <-panicked; p != "the caller's context broke" {
			t.Fatalf("the panicking caller's Run: recovered %v", p)
		}
		if o := <-l; o.val != "l" || o.err != nil || time.Since(start) != time.Minute {
			t.Fatalf("the next caller got %q %v after %v; want its operation's result when x ended, after 1m0s", o.val, o.err, time.Since(start))
		}
		if st := g.Status(); st.Active != 0 || st.Started != 2 {
			t.Fatalf("status %+v", st)
		}
	})
}

// A waiting caller handed its slots (Request.Wait), woken but not yet
// looking again (a busy scheduler, a context slow to answer), lets go of
// them at once when an operation of its key starts meanwhile (on other
// scopes), which it joins when it looks again: a caller that came later
// for its scope is not refused for a slot kept for a caller that will not
// use it.
func TestAWokenCallerHandedItsSlotsLetsThemGoWhenItCanJoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{CooldownSeconds: ptr(0.0), MaxConcurrentTotal: 5})
		a := goRun(context.Background(), g, req("a", "aws/1"), (&counted{d: time.Minute, val: "a"}).run)
		synctest.Wait()
		ctx := &pausingCtx{Context: context.Background(), resume: make(chan struct{})}
		w := req("k", "aws/1")
		w.Wait = true
		waiting := goRun(ctx, g, w, (&counted{d: time.Minute, val: "w"}).run)
		synctest.Wait()
		ctx.armed.Store(true)   // woken, the caller pauses before it looks again
		time.Sleep(time.Minute) // a ends: its slot goes to the waiting caller
		synctest.Wait()
		if err := g.Check(req("before", "aws/1")); err == nil {
			t.Fatal("aws/1's slot is not kept for the waiting caller a's end woke")
		}
		k := goRun(context.Background(), g, req("k", "aws/2"), (&counted{d: time.Minute, val: "k"}).run)
		synctest.Wait()
		err := g.Check(req("later", "aws/1"))
		ctx.armed.Store(false)
		close(ctx.resume)
		if err != nil {
			t.Errorf("a caller for aws/1, once an operation of the key of the woken caller handed aws/1 started: %v; want it to start", err)
		}
		if o := <-waiting; o.err != nil || o.val != "k" {
			t.Errorf("the woken caller got %q %v; want k's result, joined", o.val, o.err)
		}
		<-a
		<-k
	})
}
