//go:build go1.25

package pool

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// ctxWatch notes the methods of a watchedCtx called while its pool's lock
// is held: a context of the user's type runs the user's code (a context
// that logs its lookups, one whose Value reads a store of its own), which
// may reach back into the pool (its Progress, a Go) and would deadlock
// under the lock, as a callback would.
type ctxWatch struct {
	p     atomic.Pointer[Pool] // the pool whose lock is looked at; nil: none yet
	mu    sync.Mutex
	under []string // the methods called under the lock
}

func (w *ctxWatch) note(method string) {
	p := w.p.Load()
	if p == nil {
		return
	}
	if p.mu.TryLock() {
		p.mu.Unlock()
		return
	}
	w.mu.Lock()
	w.under = append(w.under, method)
	w.mu.Unlock()
}

func (w *ctxWatch) calls() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.under...)
}

// watchedCtx is a context of a user's type: each of its methods notes
// whether its pool's lock is held as it is called.
type watchedCtx struct {
	context.Context
	w *ctxWatch
}

func (c watchedCtx) Deadline() (time.Time, bool) { c.w.note("Deadline"); return c.Context.Deadline() }
func (c watchedCtx) Done() <-chan struct{}       { c.w.note("Done"); return c.Context.Done() }
func (c watchedCtx) Err() error                  { c.w.note("Err"); return c.Context.Err() }
func (c watchedCtx) Value(key any) any           { c.w.note("Value"); return c.Context.Value(key) }

// The pool calls no method of a task's context while its lock is held:
// not as it drops the task (its own context ended while it was queued,
// the pool stopped with it queued, or submitted after the pool stopped),
// when it reads the ledger the context carries and the context's cause,
// nor as it looks at whether the context ended or its deadline came, nor
// as Progress reads the deadlines of the tasks running. A context of the
// user's type whose methods read the pool (its Progress) would deadlock
// it; each drop is still recorded in the task's ledger, with its cause.
func TestATasksContextIsNotCalledUnderThePoolsLock(t *testing.T) {
	inAnHour := func() time.Time { return time.Now().Add(time.Hour) }
	t.Run("its own context ends while it is queued", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, 1, resilience.Config{})
			s := scope("op")
			pause(t, g, s, 60*time.Second)
			ctx, ledger := resilience.WithLedger(context.Background(), "scan")
			p, pctx := New(ctx, Workers(1), WithGovernor(g))
			w := &ctxWatch{}
			tctx, cancel := context.WithDeadline(pctx, inAnHour())
			p.Go(watchedCtx{tctx, w}, s, func(context.Context) error { return nil })
			synctest.Wait()
			w.p.Store(p)
			cancel()
			time.Sleep(2 * time.Second) // the queue is looked at again within parkRecheck
			synctest.Wait()
			if pr := p.Progress(); pr.Dropped != 1 {
				t.Fatalf("progress %+v; want the task dropped", pr)
			}
			if err := p.Wait(); err == nil || ledger.Count(resilience.LossCancelled) != 1 {
				t.Fatalf("Wait: %v; ledger %q; want the task's cause, and its drop recorded", err, ledger.Describe())
			}
			if under := w.calls(); len(under) > 0 {
				t.Fatalf("the task's context's methods called under the pool's lock: %v", under)
			}
		})
	})
	t.Run("the pool stops with it queued", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, 1, resilience.Config{})
			s := scope("op")
			pause(t, g, s, 60*time.Second)
			lctx, ledger := resilience.WithLedger(context.Background(), "scan")
			ctx, stop := context.WithCancel(lctx)
			p, pctx := New(ctx, Workers(1), WithGovernor(g))
			w := &ctxWatch{}
			tctx, cancel := context.WithDeadline(pctx, inAnHour())
			defer cancel()
			p.Go(watchedCtx{tctx, w}, s, func(context.Context) error { return nil })
			p.Go(watchedCtx{tctx, w}, s, func(context.Context) error { return nil })
			synctest.Wait()
			w.p.Store(p)
			stop()
			if err := p.Wait(); err == nil || ledger.Count(resilience.LossCancelled) != 2 {
				t.Fatalf("Wait: %v; ledger %q; want the stop's cause, and both drops recorded", err, ledger.Describe())
			}
			if under := w.calls(); len(under) > 0 {
				t.Fatalf("the tasks' context's methods called under the pool's lock: %v", under)
			}
		})
	})
	t.Run("it is submitted after the pool stopped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, 1, resilience.Config{})
			lctx, ledger := resilience.WithLedger(context.Background(), "scan")
			ctx, stop := context.WithCancel(lctx)
			p, pctx := New(ctx, Workers(1), WithGovernor(g))
			stop()
			synctest.Wait()
			w := &ctxWatch{}
			w.p.Store(p)
			p.Go(watchedCtx{pctx, w}, scope("op"), func(context.Context) error { return nil })
			if err := p.Wait(); err == nil || ledger.Count(resilience.LossCancelled) != 1 {
				t.Fatalf("Wait: %v; ledger %q; want the stop's cause, and the drop recorded", err, ledger.Describe())
			}
			if under := w.calls(); len(under) > 0 {
				t.Fatalf("the task's context's methods called under the pool's lock: %v", under)
			}
		})
	})
	t.Run("Progress reads it running", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, 1, resilience.Config{})
			s := scope("op")
			p, pctx := New(context.Background(), Workers(1), WithGovernor(g))
			w := &ctxWatch{}
			tctx, cancel := context.WithDeadline(pctx, inAnHour())
			defer cancel()
			release := make(chan struct{})
			p.Go(watchedCtx{tctx, w}, s, func(ctx context.Context) error {
				if err := call(g, s, 0)(ctx); err != nil {
					return err
				}
				<-release
				return nil
			})
			synctest.Wait()
			w.p.Store(p)
			if pr := p.Progress(); pr.Running != 1 {
				t.Fatalf("progress %+v; want the task running", pr)
			}
			w.p.Store(nil)
			close(release)
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if under := w.calls(); len(under) > 0 {
				t.Fatalf("the task's context's methods called under the pool's lock: %v", under)
			}
		})
	})
}
