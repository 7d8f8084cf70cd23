package bench

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cloudg/cloudg/pool"
	"github.com/cloudg/cloudg/resilience"
)

// BenchmarkPool is the cost of submitting one task and dispatching it to a
// worker, which runs a governed call: the pool of package pool (its
// governor asked whether the task's scope can go, the task's first call
// held by the governor) beside a plain pool of goroutines fed by a
// channel, over the same governed call. Tasks spread over 64 scopes; 16
// workers. Each is timed from its first submission until its last task
// has run: the tasks still queued when the submissions end count too.
// (b.Loop would stop the timer as the submissions end, before the drain:
// hence b.N.)
func BenchmarkPool(b *testing.B) {
	const workers, scopes = 16, 64
	ctx := context.Background()
	g := governor(b)
	sc := make([]resilience.Scope, scopes)
	for i := range sc {
		sc[i] = scope
		sc[i].Operation = "Describe" + strconv.Itoa(i)
	}
	opt := resilience.WithGovernor(g)
	b.Run("channel-pool", func(b *testing.B) {
		b.ReportAllocs()
		ch := make(chan resilience.Scope, workers)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for s := range ch {
					resilience.Do(ctx, s, work, opt)
				}
			})
		}
		b.ResetTimer()
		for i := range b.N {
			ch <- sc[i%scopes]
		}
		close(ch)
		wg.Wait()
	})
	b.Run("scope-pool", func(b *testing.B) {
		b.ReportAllocs()
		p, pctx := pool.New(ctx, pool.Workers(workers), pool.WithGovernor(g))
		b.ResetTimer()
		for i := range b.N {
			s := sc[i%scopes]
			p.Go(pctx, s, func(ctx context.Context) error { return resilience.Do(ctx, s, work, opt) })
		}
		if err := p.Wait(); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkPoolQueued is the memory a queued task costs: a million tasks
// queued behind a scope that cannot go (paused by a throttle's
// Retry-After), in bytes per task (the task's closure included, as a
// scanner's would be). None of them may run while they are counted.
func BenchmarkPoolQueued(b *testing.B) {
	const n = 1_000_000
	for b.Loop() {
		g := governor(b)
		ctx, cancel := context.WithCancel(context.Background())
		p, pctx := pool.New(ctx, pool.Workers(16), pool.WithGovernor(g))
		blocked := scope
		blocked.Operation = "Blocked"
		resilience.Do(ctx, blocked, func(context.Context) error { return pausing{} },
			resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		queuedRan.Store(0)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range n {
			id := i
			p.Go(pctx, blocked, func(ctx context.Context) error { _ = id; queuedRan.Add(1); return nil })
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if r := queuedRan.Load(); r != 0 {
			b.Fatalf("%d of the %d tasks ran while queued: the scope could go", r, n)
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/queued-task")
		cancel()
		p.Wait()
	}
}

// queuedRan counts BenchmarkPoolQueued's tasks that ran (a package
// variable: a closure capturing a local would be larger than a scanner's).
var queuedRan atomic.Int64

// pausing is a throttle whose Retry-After pauses its scope for 300 s, the
// longest pause the governor takes from a server.
type pausing struct{}

func (pausing) Error() string       { return "Throttling: Rate exceeded" }
func (pausing) ErrorCode() string   { return "Throttling" }
func (pausing) HTTPStatusCode() int { return 400 }
func (pausing) Header() http.Header { return http.Header{"Retry-After": {"300"}} }
