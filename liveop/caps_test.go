//go:build go1.25

package liveop

import (
	"context"
	"errors"
	"runtime"
	"sync"
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
