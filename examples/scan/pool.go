package main

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/pool"
	"github.com/cloudg/cloudg/resilience"
)

// A Task is one unit of a scan's work: a listing that walks its pages, or
// the detail call of one listed item.
type Task struct {
	// Scope is the governed scope the task calls
	// (aws/<account>/<region>/<service>/<Operation>): a pool that asks
	// the governor before it runs a task asks about this scope.
	Scope resilience.Scope
	// Context is the context the task's calls carry (its run's stats, its
	// collection's ledger); the pool runs the task with it, or with a
	// context derived from it.
	Context context.Context
	// Run makes the task's calls with ctx. It may hand the pool more tasks
	// with submit (a listing submits a detail task per item), until it
	// returns.
	Run func(ctx context.Context, submit func(Task))
}

// A Pool runs a scan's tasks: the first ones, and every task they submit.
type Pool interface {
	// Run returns when every task has returned. ctx is the scan's; the
	// tasks bound their own calls. It returns how many times a task was
	// run again because its first call was refused before anything was
	// sent (0 for a pool that never holds a first call).
	Run(ctx context.Context, tasks []Task) (rerun int)
}

// A statusPool can say, while it runs, where its work stands: the
// progress line shows it after the calls made.
type statusPool interface {
	// Status is a short phrase of the pool's state now, "" when it is
	// not running.
	Status() string
}

// A PoolFunc makes a pool of a number of workers whose tasks are governed
// by gov.
type PoolFunc func(workers int, gov *resilience.Governor) Pool

// pools are the strategies -pool chooses from, by name.
var pools = map[string]PoolFunc{
	"fifo":  func(workers int, _ *resilience.Governor) Pool { return fifo{workers: workers} },
	"scope": func(workers int, gov *resilience.Governor) Pool { return &byScope{workers: workers, gov: gov} },
}

// poolNames returns the names of the pools, sorted.
func poolNames() []string { return slices.Sorted(maps.Keys(pools)) }

// fifo is the plain worker pool: workers goroutines take the tasks from a
// channel in the order they were submitted, each running one task at a
// time to its end, however long its calls wait.
type fifo struct{ workers int }

// Run feeds the workers from an unbounded queue: a task that submits never
// blocks on the workers, which could all be submitting at once.
func (p fifo) Run(ctx context.Context, tasks []Task) int {
	var pending sync.WaitGroup // tasks submitted and not yet returned
	in := make(chan Task)      // submissions, always taken by the queue
	work := make(chan Task)    // the queue's head, to the workers
	go func() {
		defer close(work)
		var queue []Task
		for {
			var out chan Task
			var head Task
			if len(queue) > 0 {
				out, head = work, queue[0]
			}
			select {
			case t, ok := <-in:
				if !ok {
					return
				}
				queue = append(queue, t)
			case out <- head:
				queue = queue[1:]
			}
		}
	}()
	submit := func(t Task) {
		pending.Add(1)
		in <- t
	}
	var workers sync.WaitGroup
	for range max(p.workers, 1) {
		workers.Go(func() {
			for t := range work {
				t.Run(t.Context, submit)
				pending.Done()
			}
		})
	}
	for _, t := range tasks {
		submit(t)
	}
	pending.Wait()
	close(in)
	workers.Wait()
	return 0
}

// byScope is package pool's pool: a queue per scope, and a worker given
// only a task whose scope can go now, so that a scope that waits (a pause,
// a slow rate, an open breaker) holds its queue, not the workers.
type byScope struct {
	workers int
	gov     *resilience.Governor
	running atomic.Pointer[pool.Pool] // the pool of the run under way, for Status
}

// Run submits the tasks to a pool.Pool, and every task they submit. A
// task whose first call the governor refuses before sending (its scope
// busy after all: a token or a concurrency slot taken meanwhile) sees the
// call fail with a *resilience.WouldWaitError, and the pool runs it again
// once its scope can go; Run returns how many times it queued a task
// again so (Progress.Deferred), a task that the cancellation of the scan
// then dropped unrun included. A task that panics loses what it had left
// to do, which no call's error shows: the pool recovers the panic and records
// the task in the ledger its context carries (resilience.LossPanicked),
// once (a panic inside a governed call is that call's record).
// The pool drops the tasks a cancelled scan has left, recording each in
// its ledger too, so that Wait's error adds nothing a ledger lacks.
func (p *byScope) Run(ctx context.Context, tasks []Task) int {
	wp, _ := pool.New(ctx, pool.Workers(p.workers), pool.WithGovernor(p.gov))
	p.running.Store(wp)
	defer p.running.Store(nil)
	var submit func(Task)
	submit = func(t Task) {
		wp.Go(t.Context, t.Scope, func(ctx context.Context) error {
			t.Run(ctx, submit) // ctx carries the pool's hold on the task's first call
			return nil
		})
	}
	for _, t := range tasks {
		submit(t)
	}
	wp.Wait()
	return wp.Progress().Deferred
}

// Status is the pool's Progress in a phrase: its tasks queued, with when
// they should be done at the scopes' current rates (Progress.ETA, which
// cannot see the tasks the running ones will submit: a listing's detail
// calls), its tasks running, and how many scopes wait (for a token, a
// pause, a breaker's probe, a concurrency slot) or have their breaker
// open.
func (p *byScope) Status() string {
	wp := p.running.Load()
	if wp == nil {
		return ""
	}
	pr := wp.Progress()
	waiting, open := 0, 0
	for _, sc := range pr.Scopes {
		switch sc.State {
		case pool.ScopeWaiting, pool.ScopeNoSlot:
			waiting++
		case pool.ScopeOpen:
			open++
		}
	}
	s := strconv.Itoa(pr.Queued) + " queued (~" + pr.ETA.Round(100*time.Millisecond).String() + " at current rates), " +
		strconv.Itoa(pr.Running) + " running, " + strconv.Itoa(waiting) + " scope"
	if waiting != 1 {
		s += "s"
	}
	s += " waiting"
	if open > 0 {
		s += ", " + strconv.Itoa(open) + " open"
	}
	return s
}
