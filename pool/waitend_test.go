//go:build go1.25

package pool

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// gatedClock is the time package's clock, whose Sleep, once its context
// is done, does not return before gate is closed: the pool's wake-ups
// (its armed goroutines, which Wait waits for) then keep Wait from
// returning after it has cancelled the pool's context.
type gatedClock struct{ gate chan struct{} }

func (gatedClock) Now() time.Time { return time.Now() }

func (c gatedClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		<-c.gate
		return ctx.Err()
	}
}

// Go's rule at the end of a pool, exactly: Go panics from the moment
// Wait has found the pool quiet, which is before Wait returns (it then
// cancels the pool's context and waits for the pool's goroutines), and
// its panic says so, not that Wait returned. Here a wake-up the pool
// armed (the admission hold of two tasks of one scope) is still asleep
// when Wait cancels the pool's context, and its sleep returns only once
// the test lets it: a Go made then, Wait not returned, panics. Before,
// it panicked with "pool: Go after Wait returned".
func TestGoPanicsOnceWaitFoundThePoolQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := gatedClock{gate: make(chan struct{})}
		g := newGov(t, 100, resilience.Config{}, resilience.WithClock(clock))
		p, ctx := New(context.Background(), Workers(2), WithGovernor(g))
		// The first task returns once the second is queued behind its
		// hold, for which Go arms the wake-up: returned before, it would
		// have ended its hold, and none would be armed.
		submitted := make(chan struct{})
		p.Go(ctx, scope("op"), func(context.Context) error { <-submitted; return nil })
		p.Go(ctx, scope("op"), func(context.Context) error { return nil })
		close(submitted)
		var returned atomic.Bool
		waited := make(chan error)
		go func() {
			err := p.Wait()
			returned.Store(true)
			waited <- err
		}()
		<-ctx.Done() // cancelled by Wait, which found the pool quiet
		synctest.Wait()
		if returned.Load() {
			t.Fatal("setup: Wait returned while an armed wake-up slept")
		}
		msg := func() (msg any) {
			defer func() { msg = recover() }()
			p.Go(ctx, scope("op"), func(context.Context) error { return nil })
			return nil
		}()
		close(clock.gate)
		if err := <-waited; err != nil {
			t.Fatal(err)
		}
		if msg == nil {
			t.Fatal("Go after Wait found the pool quiet did not panic")
		}
		if s := fmt.Sprint(msg); strings.Contains(s, "returned") {
			t.Errorf("Go made before Wait returned panicked with %q: it says Wait returned", s)
		}
	})
}

// A Go made by a running task is always accepted, however late in the
// pool's work: a running task keeps Wait from finding the pool quiet, so
// that the last task's Go, racing Wait's end, is run before Wait returns.
// Here chains of tasks each submit the next as the last thing they do,
// Wait called meanwhile, many times over.
func TestGoFromARunningTaskIsAlwaysAccepted(t *testing.T) {
	for range 200 {
		g := newGov(t, 1e9, resilience.Config{})
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		var ran atomic.Int64
		var chain func(n int) func(context.Context) error
		chain = func(n int) func(context.Context) error {
			return func(context.Context) error {
				ran.Add(1)
				if n > 0 {
					p.Go(ctx, resilience.Scope{}, chain(n-1))
				}
				return nil
			}
		}
		const chains, links = 4, 5
		var start sync.WaitGroup
		start.Add(1)
		for range chains {
			p.Go(ctx, resilience.Scope{}, func(ctx context.Context) error {
				start.Wait()
				return chain(links - 1)(ctx)
			})
		}
		waited := make(chan error)
		go func() { waited <- p.Wait() }()
		start.Done()
		if err := <-waited; err != nil {
			t.Fatal(err)
		}
		if n := ran.Load(); n != chains*links {
			t.Fatalf("%d tasks ran before Wait returned, want %d", n, chains*links)
		}
	}
}
