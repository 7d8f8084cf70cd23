//go:build go1.25

package pool

// The limits of a task that waits for a task it submitted (fan out, then
// join), as the package's godoc states them: each test holds one of its
// claims, and fails should the pool come to run the task waited for.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// A task that waits for one it submitted holds its worker meanwhile:
// once every worker is held so, no task runs, the ones waited for
// included, and Wait would never return (the test ends the waits after
// an hour).
func TestTasksWaitingForTheirChildrenOnEveryWorkerRunNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, ctx := New(context.Background(), Workers(2))
		release := make(chan struct{})
		var children atomic.Int64
		var running sync.WaitGroup // both tasks hold a worker before either submits its child
		running.Add(2)
		for range 2 {
			p.Go(ctx, resilience.Scope{}, func(ctx context.Context) error {
				running.Done()
				running.Wait()
				done := make(chan struct{})
				p.Go(ctx, resilience.Scope{}, func(context.Context) error { children.Add(1); close(done); return nil })
				select {
				case <-done:
					return nil
				case <-release:
					return errors.New("gave up waiting")
				}
			})
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := children.Load(); n != 0 {
			t.Fatalf("%d children ran while every worker waited for one: the godoc says none runs", n)
		}
		close(release)
		if err := p.Wait(); err == nil || children.Load() != 2 {
			t.Fatalf("Wait: %v, %d children ran; want the waits given up, then the children run", err, children.Load())
		}
	})
}

// A task that waits for one it submitted inside a governed call that
// holds its account's last slot keeps every task of the account from
// running, the one waited for included, until the call ends: at its
// context's deadline, and without one never. Made
// resilience.WithNestedCalls, the call changes nothing: the pool asks
// Governor.Delay before it runs a task, which says the account has no
// slot, and the nested call that would borrow the slot is never made.
// Other accounts' tasks run meanwhile.
func TestATaskWaitingInsideACallHoldingItsAccountsLastSlot(t *testing.T) {
	for _, nested := range []bool{false, true} {
		for _, deadline := range []time.Duration{0, 5 * time.Second} {
			t.Run(fmt.Sprintf("nested=%v,deadline=%v", nested, deadline), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					g := newGov(t, 100, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}})
					p, pctx := New(context.Background(), Workers(4), WithGovernor(g))
					opts := []resilience.CallOption{resilience.WithGovernor(g)}
					if nested {
						opts = append(opts, resilience.WithNestedCalls())
					}
					release := make(chan struct{})
					var other atomic.Int64
					var child atomic.Pointer[time.Duration] // when the child's call ran, if it did
					start := time.Now()
					p.Go(pctx, scope("parent"), func(ctx context.Context) error {
						if deadline > 0 {
							var cancel context.CancelFunc
							ctx, cancel = context.WithTimeout(ctx, deadline)
							defer cancel()
						}
						return resilience.Do(ctx, scope("parent"), func(cctx context.Context) error {
							done := make(chan struct{})
							p.Go(cctx, scope("child"), func(ctx context.Context) error {
								return resilience.Do(ctx, scope("child"), func(context.Context) error {
									d := time.Since(start)
									child.Store(&d)
									close(done)
									return nil
								}, opts...)
							})
							select {
							case <-done:
								return nil
							case <-cctx.Done():
								return cctx.Err()
							case <-release:
								return errors.New("gave up waiting")
							}
						}, opts...)
					})
					elsewhere := scope("other")
					elsewhere.Account = "210987654321"
					p.Go(pctx, elsewhere, func(ctx context.Context) error {
						other.Add(1)
						return call(g, elsewhere, 0)(ctx)
					})
					time.Sleep(time.Hour)
					synctest.Wait()
					if other.Load() != 1 {
						t.Errorf("the other account's task did not run")
					}
					if deadline == 0 {
						if d := child.Load(); d != nil {
							t.Fatalf("the child ran after %v: the godoc says never, the call holding the slot having no deadline", *d)
						}
						close(release)
						p.Wait()
						return
					}
					// The child's context derives from the call's, done at
					// its deadline: dropped, not run.
					err := p.Wait()
					if d := child.Load(); d != nil || !errors.Is(err, context.DeadlineExceeded) || p.Progress().Dropped != 1 {
						ran := "did not run"
						if d != nil {
							ran = fmt.Sprintf("ran after %v", *d)
						}
						t.Fatalf("the child %s, Wait: %v, %v; want the parent's call ended at its deadline and the child dropped",
							ran, err, p.Progress())
					}
				})
			})
		}
	}
}
