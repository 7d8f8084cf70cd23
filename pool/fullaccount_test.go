//go:build go1.25

package pool

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// fullAccount is a pool of workers workers on a shared store (a fleet's,
// each read a round trip), whose governor lets account 123456789012 one
// call in flight (max_concurrency 1), given a task of each of n
// operations of the account: each task's call lasts until the test ends
// it. end ends the call in flight and returns, once the pool has settled,
// the reads of the account's bucket meanwhile, and the
// operations whose calls began, in the order they began.
type fullAccount struct {
	p       *Pool
	store   *readStore
	mu      sync.Mutex
	began   []int
	release []chan struct{}
}

func newFullAccount(t *testing.T, workers, n int) *fullAccount {
	return newCappedAccount(t, workers, n, 1)
}

// newCappedAccount is newFullAccount with slots calls in flight.
func newCappedAccount(t *testing.T, workers, n, slots int) *fullAccount {
	f := &fullAccount{store: newReadStore()}
	g := cappedGov(t, slots,
		resilience.WithStateStore(f.store))
	p, ctx := New(context.Background(), Workers(workers), WithGovernor(g))
	f.p = p
	for range n {
		f.release = append(f.release, make(chan struct{}))
	}
	for i := range n {
		sc := scope(fmt.Sprint("op", i))
		p.Go(ctx, sc, func(ctx context.Context) error {
			return resilience.Do(ctx, sc, func(context.Context) error {
				f.mu.Lock()
				f.began = append(f.began, i)
				f.mu.Unlock()
				<-f.release[i]
				return nil
			}, resilience.WithGovernor(g))
		})
	}
	synctest.Wait()
	t.Cleanup(func() {
		for _, r := range f.release {
			select {
			case <-r:
			default:
				close(r)
			}
		}
		if err := p.Wait(); err != nil {
			t.Error(err)
		}
	})
	return f
}

func (f *fullAccount) end() (reads int, began []int) {
	return f.endAll(1)
}

// endAll is end of the k calls begun last, at once.
func (f *fullAccount) endAll(k int) (reads int, began []int) {
	f.store.counts()
	f.mu.Lock()
	for _, op := range f.began[len(f.began)-k:] {
		close(f.release[op])
	}
	f.mu.Unlock()
	synctest.Wait()
	buckets, _ := f.store.counts()
	f.mu.Lock()
	defer f.mu.Unlock()
	return buckets["aws/123456789012"], slices.Clone(f.began)
}

// The tasks waiting for a slot of an account whose concurrency cap is
// full start in turn, whatever the number of workers: as their queues
// were asked about, not as the answers came back, which the workers
// asking about several queues at once get in no fair order. Here 40
// operations of an account with one slot, each task's call lasting until
// the test ends it, and 8 workers: once the first call took the slot,
// the others begin in the operations' order. (Which task takes the slot
// first is a race: the workers ask about the first queues at once, each
// told the slot is free, and the first answer back starts its task; the
// others wait for its first call, see
// TestACappedAccountsTasksAreNotStartedForASlotTaken.) Before, the queues waited
// for the slot in the order their answers came (in about one run of
// four: ten runs here).
func TestAFullAccountsTasksStartInTurn(t *testing.T) {
	for range 10 {
		startInTurn(t)
	}
}

func startInTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 40
		f := newFullAccount(t, 8, n)
		var began []int
		for range n / 2 {
			_, began = f.end()
		}
		want := slices.DeleteFunc(slices.Collect(func(yield func(int) bool) {
			for op := range n {
				if !yield(op) {
					return
				}
			}
		}), func(op int) bool { return op == began[0] })[:len(began)-1]
		if !slices.Equal(began[1:], want) {
			t.Fatalf("the account's calls began in the order %v; want the first's, then the others' in the operations' order", began)
		}
	})
}

// A task's end frees one slot of its account at most: the pool asks the
// governor about the account once, and gives the slot to one task, however
// many workers look for work at once. Here 40 operations of an account
// with one slot, each task's call lasting until the test ends it, and 8
// workers; after each end, the account's bucket is read once (with a
// fleet's store, a round trip), and no task started is refused its first
// call for want of the slot (a run for nothing, its task queued again).
// Before, a worker woken as the first task started asked about the next
// queue before that task's call took the slot, and was told the slot was
// free.
func TestATaskEndAsksAboutAFullAccountOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFullAccount(t, 8, 40)
		for e := range 20 {
			before := f.p.Progress().Deferred
			reads, _ := f.end()
			if d := f.p.Progress().Deferred - before; reads != 1 || d != 0 {
				t.Fatalf("after task end %d: the account's bucket read %d times, %d first call(s) refused for the slot; want 1 read, none refused", e+1, reads, d)
			}
		}
	})
}

// Tasks' ends free as many slots as tasks ended: the pool gives each a
// task at once, not one a task's end and the others at the next recheck
// of the queues waiting for a slot. Here an account with two slots, both
// calls in flight ending at once, each time two more calls begin.
func TestTasksEndingAtOnceFreeTheirSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newCappedAccount(t, 8, 40, 2)
		for e := range 10 {
			start := time.Now()
			_, began := f.endAll(2)
			if len(began) != 2*(e+2) || time.Since(start) != 0 {
				t.Fatalf("after two calls of the account ended at once (%d times): %d calls began, %v later; want %d at once (%v, deferred %d)", e+1, len(began), time.Since(start), 2*(e+2), began, f.p.Progress().Deferred)
			}
		}
	})
}

// A queue waiting for a slot keeps its place when it is asked about and
// told the account is still full: here a call outside the pool, waiting
// for the account's one slot, takes it as the pool's task ends, so that
// the first queue in line is asked about and told no slot; when that
// call ends, the first queue still goes first. Before, it went to the
// back of the line, as if it had just come.
func TestAQueueToldNoSlotKeepsItsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFullAccount(t, 8, 10)
		g := f.p.gov
		other, err := g.Begin(context.Background(), scope("outside"))
		if err != nil {
			t.Fatal(err)
		}
		entered := make(chan error, 1)
		go func() { entered <- other.Enter(context.Background()) }()
		synctest.Wait() // the outside call waits for the slot
		_, began := f.end()
		if err := <-entered; err != nil || len(began) != 1 {
			t.Fatalf("setup: the outside call entered: %v; %v began; want the slot taken by it", err, began)
		}
		other.End(nil)
		other.Release()
		time.Sleep(time.Second) // the pool looks at the queues waiting for a slot again
		f.mu.Lock()
		began = slices.Clone(f.began)
		f.mu.Unlock()
		first := 0 // in line, the first call aside (see TestAFullAccountsTasksStartInTurn)
		if began[0] == 0 {
			first = 1
		}
		if len(began) != 2 || began[1] != first {
			t.Fatalf("the account's calls began in the order %v; want the first's, then operation %d's, first in line", began, first)
		}
	})
}

// A task's end after the account's concurrency cap was raised (a
// Configure: the governor's state replaced, Generation moved) starts as
// many tasks as the new cap has slots free at once: what the pool found
// of the account's slots under the old cap no longer holds. Here an
// account with one slot, held by a task's call, and 9 more waiting; the
// cap is raised to 4 and the call ends: 4 calls begin at once, not one
// and the others at the next recheck of the queues waiting for a slot.
func TestARaisedCapsSlotsAreTakenAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFullAccount(t, 8, 10)
		acctRPS := 1000.0
		perOp := true
		cfg := resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 4, AccountMaxRPS: &acctRPS, AccountBurst: 1000,
			Services: map[string]resilience.ServiceConfig{"svc": {MaxRPS: 1000, Burst: 1, PerOperation: &perOp}}}}
		if err := f.p.gov.Configure(cfg); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, began := f.end()
		atOnce := len(began)
		time.Sleep(time.Second)
		f.mu.Lock()
		later := len(f.began)
		f.mu.Unlock()
		if atOnce != 5 || later != 5 || time.Since(start) != time.Second {
			t.Fatalf("after the cap was raised from 1 to 4 and the call in flight ended: %d calls in all began at once, %d a second later; want 5 at once (the first and 4 more)", atOnce, later)
		}
	})
}

// A task whose calls ran at once held as many of its account's slots, and
// its end frees them all: the pool gives each a task at once, not one at
// the task's end and the others at the next recheck of the queues waiting
// for a slot. Here an account with two slots, both held by one task's two
// calls at once, and four operations waiting: as the task ends, two calls
// begin at once.
func TestATasksConcurrentCallsFreeTheirSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 2)
		p, ctx := New(context.Background(), Workers(8), WithGovernor(g))
		pair := make(chan struct{})
		p.Go(ctx, scope("pair"), func(ctx context.Context) error {
			var wg sync.WaitGroup
			for i := range 2 {
				sent := make(chan struct{})
				wg.Go(func() {
					_ = resilience.Do(ctx, scope("pair"), func(context.Context) error {
						close(sent)
						<-pair
						return nil
					}, resilience.WithGovernor(g))
				})
				if i == 0 {
					// The first call, the task's admission, is sent before
					// the second is made: made at once, the second could
					// take the leaf's token first, and the first, refused
					// it, would run the task again, one slot left free.
					<-sent
				}
			}
			wg.Wait()
			return nil
		})
		time.Sleep(time.Second) // the task's two calls hold both slots (the second paced by its leaf's token)
		var start time.Time
		var mu sync.Mutex
		var began []time.Duration
		release := make(chan struct{})
		for i := range 4 {
			sc := scope(fmt.Sprint("op", i))
			p.Go(ctx, sc, func(ctx context.Context) error {
				return resilience.Do(ctx, sc, func(context.Context) error {
					mu.Lock()
					began = append(began, time.Since(start))
					mu.Unlock()
					<-release
					return nil
				}, resilience.WithGovernor(g))
			})
		}
		time.Sleep(time.Second) // the four wait for a slot
		start = time.Now()
		close(pair)
		time.Sleep(time.Second)
		mu.Lock()
		got := slices.Clone(began)
		mu.Unlock()
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []time.Duration{0, 0}) {
			t.Fatalf("after a task whose two calls held both of its account's slots ended, the next calls began at %v; want [0s 0s], both at once", got)
		}
	})
}

// The recheck of the queues waiting for a slot (every slotRecheck, for a
// slot that calls outside the pool freed) asks about one queue of a full
// account, the first in line, not every one: told the account is still
// full, the others wait on without asking, as after a task's end; told a
// slot is free, it takes it, and the next in line is asked in turn. Every
// queue is asked once a second (parkRecheck), to see a breaker that
// opened meanwhile. Here 40 operations of an account with one slot, held
// by a task's call for the whole test, and 8 workers: over a second, the
// account's bucket (with a fleet's store, a round trip a read) is read
// once per recheck, and 39 times once. Before, it was read 39 times per
// recheck, 780 times a second.
func TestTheSlotRecheckAsksAboutAFullAccountOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFullAccount(t, 8, 40)
		time.Sleep(time.Second) // past the first rechecks
		f.store.counts()
		var reads []int
		total := 0
		for range time.Second / slotRecheck {
			time.Sleep(slotRecheck)
			synctest.Wait()
			buckets, _ := f.store.counts()
			reads = append(reads, buckets["aws/123456789012"])
			total += buckets["aws/123456789012"]
		}
		if most := int(time.Second/slotRecheck) + 39; total > most {
			t.Fatalf("over a second of rechecks, the full account's bucket was read %d times (%v a recheck); want at most %d, once a recheck and once more for each of the 39 queues waiting", total, reads, most)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.began) != 1 {
			t.Fatalf("%d calls began; want 1, the slot held", len(f.began))
		}
	})
}

// The slots calls outside the pool free are all taken at the next
// recheck, though it asks about the first queue in line alone: told a
// slot is free (and how many), it takes one, and the next queues in line
// are asked at once for the others, not one a recheck. Here an account
// with two slots, both held by calls outside the pool, and 10 operations
// waiting; both calls end at once: two of the pool's calls begin at the
// same instant, within slotRecheck.
func TestSlotsFreedOutsideThePoolAreTakenAtOneRecheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 2,
			resilience.WithStateStore(newReadStore()))
		var outside []*resilience.Guard
		for i := range 2 {
			gd, err := g.Begin(context.Background(), scope(fmt.Sprint("outside", i)))
			if err != nil {
				t.Fatal(err)
			}
			if err := gd.Enter(context.Background()); err != nil {
				t.Fatal(err)
			}
			outside = append(outside, gd)
		}
		p, ctx := New(context.Background(), Workers(8), WithGovernor(g))
		var mu sync.Mutex
		var began []time.Time
		release := make(chan struct{})
		for i := range 10 {
			sc := scope(fmt.Sprint("op", i))
			p.Go(ctx, sc, func(ctx context.Context) error {
				return resilience.Do(ctx, sc, func(context.Context) error {
					mu.Lock()
					began = append(began, time.Now())
					mu.Unlock()
					<-release
					return nil
				}, resilience.WithGovernor(g))
			})
		}
		time.Sleep(1234 * time.Millisecond) // past a recheck that asks every queue
		start := time.Now()
		for _, gd := range outside {
			gd.End(nil)
			gd.Release()
		}
		time.Sleep(time.Second)
		mu.Lock()
		got := slices.Clone(began)
		mu.Unlock()
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != got[1] || got[0].Sub(start) > slotRecheck {
			var at []time.Duration
			for _, b := range got {
				at = append(at, b.Sub(start))
			}
			t.Fatalf("after the two calls outside the pool holding both slots ended, the pool's calls began at %v; want two, at once, within %v", at, slotRecheck)
		}
	})
}

// The tasks of an account whose concurrency cap the pool has not met yet
// are not started for a slot that the first call of a task started before
// them, still to come, takes: the workers looking for work at once do not
// each ask about a queue of the account, each told the slot is free, and
// each start a task, whose first call the first to reach the governor
// then beats (the others refused, their tasks run for nothing, counted
// Deferred, and queued again). Here 40 operations of an account with one
// slot, submitted at once, 8 workers, each task working 1 ms before its
// call: one task runs, and its call takes the slot.
func TestACappedAccountsTasksAreNotStartedForASlotTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		p, ctx := New(context.Background(), Workers(8), WithGovernor(g))
		var mu sync.Mutex
		var began []int
		var runs atomic.Int64
		release := make(chan struct{})
		for i := range 40 {
			sc := scope(fmt.Sprint("op", i))
			p.Go(ctx, sc, func(ctx context.Context) error {
				runs.Add(1)
				time.Sleep(time.Millisecond) // its own work, before its first call
				return resilience.Do(ctx, sc, func(context.Context) error {
					mu.Lock()
					began = append(began, i)
					mu.Unlock()
					<-release
					return nil
				}, resilience.WithGovernor(g))
			})
		}
		time.Sleep(time.Second)
		mu.Lock()
		got := slices.Clone(began)
		mu.Unlock()
		d, n := p.Progress().Deferred, runs.Load()
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if d != 0 || n != 1 || len(got) != 1 {
			t.Fatalf("40 operations of an account with one slot, 8 workers: %d task run(s), %d of them for nothing (Deferred), calls begun %v; want 1 run, none for nothing, one call", n, d, got)
		}
	})
}

// A queue waiting for a slot of its account is asked about again at least
// once a second, though no slot is freed: a breaker that a call outside
// the pool opened fails it within a second, not when a slot is freed.
// Here an account with one slot, held for 10 s by a call outside the
// pool, inside which a nested call (WithNestedCalls, on the borrowed
// slot) to the scope dead is throttled at 2 s: dead's breaker opens
// (threshold 1), and the queue of dead, waiting for the slot, should
// fail fast (its tasks' calls refused, recorded skipped) by 3 s.
func TestAQueueWaitingForASlotSeesABreakerOpenedOutsideThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		cfg := g.Config()
		cfg.AWS.BreakerThreshold = 1
		if err := g.Configure(cfg); err != nil {
			t.Fatal(err)
		}
		dead := scope("dead")
		start := time.Now()
		opened := make(chan time.Duration, 1)
		outsideDone := make(chan struct{})
		go func() {
			defer close(outsideDone)
			resilience.Do(context.Background(), scope("outside"), func(ctx context.Context) error {
				time.Sleep(2 * time.Second)
				resilience.Do(ctx, dead, func(context.Context) error {
					return &apiErr{code: "Throttling", status: 400}
				}, resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
				opened <- time.Since(start)
				time.Sleep(8 * time.Second)
				return nil
			}, resilience.WithGovernor(g), resilience.WithNestedCalls())
		}()
		synctest.Wait() // the call outside the pool holds the slot
		ctx, ledger := resilience.WithLedger(context.Background(), "scan")
		p, pctx := New(ctx, Workers(2), WithGovernor(g))
		for range 2 {
			p.Go(pctx, dead, call(g, dead, 0))
		}
		synctest.Wait() // dead's queue waits for the slot
		p.Wait()
		took := time.Since(start)
		at := <-opened
		if s := g.Inspect(dead); s.Breaker.State != state.Open {
			t.Fatalf("dead's breaker is %v at %v; want open", s.Breaker.State, took)
		}
		if took < at || took > at+parkRecheck || ledger.Count(resilience.LossSkipped) != 2 {
			t.Fatalf("dead's breaker opened at %v, the scan ended at %v (want within %v); ledger %q", at, took, parkRecheck, ledger.Describe())
		}
		<-outsideDone
	})
}
