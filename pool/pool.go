// Package pool runs a scan's tasks on a bounded set of workers, giving a
// worker only a task whose scope can go now.
//
// A plain worker pool over governed calls blocks its workers inside the
// scopes that cannot go (a paused operation, a throttled account, an open
// breaker with breaker_wait) while the work of every other scope waits in
// its queue: the head-of-line blocking that makes a throttled scan take
// several times what the providers allow. A Pool keeps a FIFO queue per
// scope instead, asks the governor (resilience.Governor.Delay) which
// scopes can go, and hands its workers the tasks of those, in turn: a task
// whose scope cannot go waits in its queue, and costs about 100 bytes,
// not a goroutine. Its first governed call is made under a
// resilience.WithAdmission hold: should the scope turn out busy after all
// (another process took the token), the call is refused before anything
// is sent, nothing is recorded as lost, and the task goes back to the head
// of its queue until the scope can go. Later calls of the task (the pages
// of a paginator, an SDK's own retries) wait as any call does. A task
// whose first call lost the token a queue of another scope of its
// account took first (scopes sharing a bucket: the operations of a
// service paced as one) is not passed so again: the next time a task of
// its queue is started, the account's queues asked after it wait for that
// task's first call (or 10 ms), keeping their turn.
//
// The ergonomics are errgroup's: New with a context, Go to submit (tasks
// may submit tasks: pages, accounts to regions to resources), Wait for the
// errors. A task declares the scope of its first call: resilience.Scope
// for Call and Do, and for an SDK call the scope its integration computes
// (cloudgaws.Scope, cloudgazure.ScopeOfURL, cloudggcp.Scope). A task of the
// zero scope (a fan-out that calls nothing) is always ready. A task
// submits and returns, as below; it should not wait for a task it
// submitted (fan out, then join), which the pool runs on a worker of its
// own once its scope can go. A task waiting so holds its worker: once
// every worker is held by such a task, no task runs, and Wait never
// returns. A task waiting so inside a governed call that holds its
// account's last slot (max_concurrency) keeps every task of the account
// from running, the one it waits for included, until that call ends: at
// the latest when its context is done, and if that never is, never. A
// call made resilience.WithNestedCalls does not help: its nested calls
// would borrow its slot, but the pool runs no task of the account while
// resilience.Governor.Delay says the account has no slot free, so the
// nested call is never made.
//
//	p, ctx := pool.New(ctx, pool.Workers(16))
//	for _, region := range regions {
//		p.Go(ctx, scopeOf(region, "DescribeInstances"), func(ctx context.Context) error {
//			return describeInstances(ctx, region, p) // may p.Go the detail calls
//		})
//	}
//	err := p.Wait() // every task's error, joined
//
// A dead scope's queue fails fast: once its breaker is open, its tasks are
// run at once and their calls refused without waiting, each one recorded
// in its task's resilience.Ledger as skipped. To be found dead, a scope
// needs breaker_threshold distinct calls whose every answer failed for
// breaker_dead_seconds (state.ScopeSnapshot's Dead); the retries of its
// calls in flight take each of its tokens as it comes, so that a queue
// given a worker only when a token is free now would send none. Once every
// answer of a scope has failed for a quarter of breaker_dead_seconds, from
// fewer calls than that (state.ScopeSnapshot's Failing), the pool starts
// tasks of it, at most one for each call it lacks, whose first calls wait
// for a token in line with those retries, at most breaker_dead_seconds
// (one at a time left the last call behind retries that got in line
// meanwhile, minutes later); such tasks hold at most a
// quarter of the workers (at least one) at once, their calls' retries
// included, whatever the number of failing scopes. A scope throttled but
// alive ends its streaks of failures with its successes before that: no
// worker waits inside it, unless it serves less than a call in a quarter
// of breaker_dead_seconds (then within that bound). A half-open breaker whose
// probe is out is not dead yet: its queue waits for the probe's verdict.
// A queue waiting for its scope's tokens or pause is asked about again as
// soon as one of its tasks ends, and at least once a second, so that it
// sees a breaker that opened meanwhile within that time. The queues
// waiting for a slot of their account's concurrency cap (max_concurrency)
// are asked about in turn as one is freed, which the governor tells the
// pool of (resilience.Governor.WatchSlots): a call ending, in a task of
// the pool or outside it, whether the task goes on (a page's call, the
// task then working on the page) or not, and a cap raised by
// resilience.Governor.Configure. A slot the pool gave a task that works
// past its hold (10 ms) before its first call goes to the next in line
// as that hold ends. The first in line of each account is also asked
// every 50 ms, for a slot the pool counts taken that is free (a backstop),
// and every one at least once a second, likewise. The pool watches the governor's slots only while it
// has tasks queued or running: an idle pool, one dropped without Wait
// included, is not held by the governor, and costs the calls of the
// process nothing. Cancelling the
// context given to New stops the pool: no further task starts, the queued
// ones are dropped (each recorded as cancelled in the ledger its context
// carries), and Wait returns once the running ones have returned; no
// goroutine of the pool outlives it.
//
// A task that panics, or calls runtime.Goexit, ends failed (a *PanicError,
// ErrGoexit) and is lost work: it is recorded in the resilience.Ledger its
// context carries as panicked (resilience.LossPanicked), once. A panic
// inside one of its governed calls made with its context (or one derived
// from it), which the call records in that ledger as it goes on to the
// task, is not recorded again; a panic recorded so in another ledger (one
// the task bound with resilience.WithLedger) is recorded in the task's
// too, and so is one of a call made with a context not derived from the
// task's (the pool's, say) that carries the same ledger, which counts it
// twice.
package pool

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/internal/pace"
	"github.com/cloudg/cloudg/internal/panicmark"
	"github.com/cloudg/cloudg/internal/scopekey"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// An Option configures a Pool, given to New: Workers, WithGovernor,
// MaxWait. An Option holds its setting and changes nothing but the pool
// New makes, so that one may be given to several pools, from several
// goroutines at once. A nil Option changes nothing, as in the governor's
// and the integrations' options.
type Option interface{ apply(*Pool) }

type optionFunc func(*Pool)

func (f optionFunc) apply(p *Pool) { f(p) }

// Workers bounds the tasks running at once (default 16; at least 1).
func Workers(n int) Option { return optionFunc(func(p *Pool) { p.limit = max(1, n) }) }

// WithGovernor makes the pool ask g whether a scope can go, instead of the
// process governor (resilience.Default). The tasks' calls must be governed
// by the same governor.
func WithGovernor(g *resilience.Governor) Option {
	return optionFunc(func(p *Pool) { p.gov = g })
}

// MaxWait is how long a task's first call may wait to be admitted before it
// is handed back to its queue (default 0: it goes at once or waits in the
// queue, not in a worker). The pool gives a worker only a task whose scope
// can go when it is picked; MaxWait matters when the scope turns out busy
// by the time the first call is made (another caller took the token), and
// lets that call wait a little rather than run the task again later.
func MaxWait(d time.Duration) Option {
	return optionFunc(func(p *Pool) { p.maxWait = max(0, d) })
}

// Pool runs tasks by scope. It is safe for concurrent use: tasks may call Go.
// Make one with New; the zero Pool is not usable: its methods panic,
// saying so.
//
// A Pool is for one scan: it keeps a queue for every scope it was given a
// task of, empty or not, until Wait returns, so that Progress counts each
// scope's tasks from the start (about 370 bytes a scope, with its map
// entry). A process that submits work for ever (a controller) should
// start a pool per round of work rather than keep one.
type Pool struct {
	gov     *resilience.Governor
	clock   resilience.Clock
	ctx     context.Context
	cancel  context.CancelCauseFunc
	limit   int
	maxWait time.Duration
	// afterAsk, set by tests only, runs in ask once the governor has
	// answered about q, before p.mu is taken again: where a worker's
	// goroutine may be scheduled late, or a store's read return late.
	afterAsk func(q *queue)
	epoch    time.Time
	system   bool // clock is the system clock (see now)
	// The wall clock's time when New made the pool, with its monotonic
	// reading: the tasks' deadlines count from it (see task.deadline).
	wallEpoch time.Time
	// The fields above are set by New and read without the lock, by the
	// workers at every step: a cache line apart from p.mu, which every
	// goroutine of the pool writes as it takes the lock.
	_ [64]byte

	mu     sync.Mutex
	quiet  sync.Cond // broadcast when nothing is queued, running or left to record, for Wait
	scopes map[resilience.Scope]*queue
	ring   ring       // queues whose head may be ready, in turn
	parked parkedHeap // queues waiting for their scope, by time
	turns  uint32     // queues asked about so far (wrapping around), for the parked heap's order
	losers int        // queues whose head lost its last token (see loserHold)
	// The queues waiting for a concurrency slot, each account's in turn
	// (see slot), nSlots of them: a slot freed puts back the first of its
	// account without a look at the others' (slotFreed).
	slots  map[account][]*queue
	nSlots int
	holds  fifo[heldQueue] // admitting queues, by the end of their hold
	held   uint64          // holds begun so far: those begun before a count are the first of holds (see ask)
	// The queues of slots looked at or moved, in all: the pool's work
	// on its line of queues waiting for a slot, which the tests measure.
	slotSteps uint64
	// frees and waitingOn (see slotWaits) are written or read by every
	// call of the process as it ends (slotFreed), on any core: a cache
	// line of their own, so that those writes do not take from the core
	// that holds the lock the line of the fields it works on (holds, which
	// every pick reads).
	_         [64]byte
	frees     atomic.Uint64 // slots the governor said may be free (slotFreed), for ask
	waitingOn atomic.Int32
	_         [64 - 12]byte
	// The accounts (account, to struct{}) a queue of the pool was told
	// no slot of, asked for the slots free of, or waits for a slot of:
	// slotFreed looks at the pool for a slot of one of them, from then
	// on until the pool has nothing queued or running (watch), and for
	// no other account's, without a lock. waitingOn counts the
	// accounts added, or more: while it is 0, slotFreed looks up none
	// (see there).
	slotWaits sync.Map
	slotLocks atomic.Uint64        // the times slotFreed took p.mu, which the tests count
	unwatch   func()               // ends the pool's watch of the governor's slots (WatchSlots); nil: none (see watch)
	full      map[account]fullMark // accounts found with no slot free (see markFull)
	fullGen   uint64               // marks made, for fullMark's gen
	askAll    time.Duration        // when the recheck of the queues waiting for a slot asks every one again (see recheck)
	caps      map[account]int      // accounts' concurrency caps as asked, in the governor's state of Generation capsGen (see mayRace)
	capsGen   uint64
	capsSeq   uint64             // changes made to caps, for the queues' copies (see capOf)
	heldBack  map[account]bool   // accounts with queues held back for their tasks' first calls (see holdBack)
	leaders   map[account]*queue // the queue leading each account's queues held back, in turn or asked about (see unholdBack)
	waits     map[string]bool    // breakerWaits by provider, for waitsGen
	waitsGen  uint64
	armedAt   time.Duration
	armStop   context.CancelFunc // stops the wake-up armed for armedAt
	keepStop  func() bool        // keeps the stop (drop and settle) from running when ctx is done
	workers   int                // worker goroutines alive: each runs a task or looks for one
	proving   int                // tasks started to prove their scopes (see proves) running: their retries hold their workers too
	queued    int
	running   int
	done      int
	failed    int
	deferred  int
	dropped   int
	errs      []error
	waited    bool // Wait found the pool quiet: the pool is over, Go panics
	wg        sync.WaitGroup

	// The causes of the contexts that dropped tasks, each once, for Wait:
	// the stop's, tasks' own. seen holds those that can be map keys.
	causes []error
	seen   map[error]struct{}

	// Dropped tasks whose ledgers are still to be told of their loss: the
	// reason formats a context's cause, whose Error is the user's, so it
	// is written after p.mu is released (record). unrecorded says there
	// are some, for the callers that check without the lock.
	drops      []dropBatch
	recording  int // batches taken from drops, not yet recorded
	unrecorded atomic.Bool
}

// dropBatch is tasks of one scope dropped unrun for one cause: their
// contexts, one entry per task, whose ledgers record tells of the loss. A
// stop's drops of a scope are one batch, whose reason is formatted once;
// a task dropped for its own context is a batch of its own, whose cause
// record reads from that context, with the pool's lock released.
type dropBatch struct {
	scope resilience.Scope
	cause error // the stop's; nil for a task's own context (see record)
	stop  bool  // dropped by the pool's stop
	ctxs  []context.Context
}

// New returns a pool, and a context derived from ctx that the pool cancels
// when Wait returns; give the tasks contexts derived from it (the pool runs
// a task with the context given to Go, and stops starting tasks when ctx is
// done).
func New(ctx context.Context, opts ...Option) (*Pool, context.Context) {
	p := &Pool{limit: 16, scopes: map[resilience.Scope]*queue{}}
	p.quiet.L = &p.mu
	for _, o := range opts {
		if o != nil {
			o.apply(p)
		}
	}
	if p.gov == nil {
		p.gov = resilience.Default()
	}
	p.clock = p.gov.Clock()
	p.system = p.clock == systemClock
	p.epoch = p.clock.Now()
	p.wallEpoch = time.Now()
	p.ctx, p.cancel = context.WithCancelCause(ctx)
	// The stop's goroutine is the pool's too: Wait waits for it, or stops
	// it from running (keepStop).
	p.wg.Add(1)
	p.keepStop = context.AfterFunc(p.ctx, func() {
		defer p.wg.Done()
		defer p.record()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.drop()
		p.watch(false)
		p.settle()
	})
	return p, p.ctx
}

// notMade is the panic of a method of a Pool New did not make.
func notMade(method string) string {
	return "pool: " + method + " on a zero Pool; make one with pool.New"
}

// now is the pool's time, on the governor's clock. On the system clock,
// it is time.Since: Now().Sub(epoch) subtracts the monotonic readings
// alone, which time.Since reads without the wall clock's (one read of the
// system's clocks, not two: the pool reads the time twice a task, under
// its lock).
func (p *Pool) now() time.Duration {
	if p.system {
		return time.Since(p.epoch)
	}
	return p.clock.Now().Sub(p.epoch)
}

// systemClock is the clock of a governor made with none (the zero
// Governor's, as resilience.Governor documents it): the time package's.
var systemClock = new(resilience.Governor).Clock()

// Go queues fn as a task of scope, to run with ctx (which should derive
// from the pool's context). fn's first governed call should be to scope,
// and should come first: until it is made (or admitHold has passed, 10
// ms), the next task of the scope waits, so that the scope's tokens are
// not promised to more tasks than it has. A task whose first call is
// refused for want of a token, a slot or a verdict runs again once its
// scope can go, from the start: it should do nothing before that call
// that must not be done twice, and return the call's error.
// errors.Is(err, resilience.ErrDeferred) tells such a refusal apart from
// a call lost: the run is no failure and its call no call (a program
// counting failed calls should not count it), and the pool discards the
// run's result. A task that panics, or calls runtime.Goexit, after such
// a refusal ends failed all the same: it is not run again. Its queue runs
// nothing before the wait
// the refusal gave has passed, unless its scope's breaker opens, or the
// scope is found dead (its calls then fail fast: the queue runs its tasks
// for those calls alone, and once the breaker is closed again, by its
// probe's success, it waits out what is left of the wait), or the
// governor's state is replaced (Governor.Reset, Governor.Configure: see
// Governor.Generation), when the queue asks the governor again within a
// second. The scope is found dead as of when the pool asked: one found
// dead with its breaker still closed is dead no more once its failures
// are old enough, which may come while a fleet's store answers, and the
// task then runs before the wait for nothing if its first call is
// refused again. A task whose ctx is done by the time its turn comes (its
// deadline come, at that instant too) is dropped, not run (recorded as cancelled in the ledger ctx carries), and
// Wait returns ctx's cause with the errors.
// Go does not block: the workers ask the governor about the queues
// without the pool's lock held, whose store a fleet's processes read
// across the network. Go reads ctx's Done channel and deadline as it is
// called, and the pool reads its ledger and cause (when it drops the
// task) with its lock released: no method of ctx runs under the pool's
// lock, so that a context of a type of the user's may read the pool.
// Go panics on a nil ctx or fn, and once Wait has found the pool quiet
// (nothing queued, running or left to record):
// Wait then cancels the pool's context and waits for the pool's
// goroutines before it returns, so that a Go racing Wait's end panics
// though Wait has not returned yet, from the moment the pool's context
// is done by Wait at the latest. A Go made by a running task (or by
// anything the task waits for before it returns) is always accepted: a
// running task keeps Wait from finding the pool quiet, and its task runs
// before Wait returns.
func (p *Pool) Go(ctx context.Context, scope resilience.Scope, fn func(context.Context) error) {
	switch {
	case p.scopes == nil:
		panic(notMade("Go"))
	case ctx == nil:
		panic("pool: Go with a nil context")
	case fn == nil:
		panic("pool: Go with a nil function")
	}
	// Read before the lock is taken: a method of a context of the user's
	// type may read the pool (see task.done).
	t := &task{ctx: ctx, fn: fn, done: ctx.Done(), deadline: p.deadlineOf(ctx)}
	defer p.record()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waited {
		panic("pool: Go after Wait found the pool quiet")
	}
	q := p.scopes[scope]
	if q == nil {
		q = &queue{p: p, scope: scope, heap: -1}
		p.scopes[scope] = q
	}
	t.q = q
	if p.ctx.Err() != nil {
		p.dropTask(t, true)
		return
	}
	q.push(t)
	p.queued++
	p.watch(true)
	switch q.where {
	case nowhere:
		p.ring.push(q)
		p.wake()
	case admitting:
		p.arm(q.admitUntil) // its hold ends then, if the first call is not made by then
	}
}

// wake starts a worker to look for work, within the limit; a worker that
// finds none ends, so that no goroutine waits on an idle pool. p.mu is
// held.
func (p *Pool) wake() {
	if p.workers < p.limit && p.ctx.Err() == nil {
		p.workers++
		p.wg.Add(1)
		go p.work()
	}
}

// work is a worker: it runs ready tasks until none is ready.
func (p *Pool) work() {
	defer p.wg.Done()
	for t := p.next(); t != nil; {
		t = p.runTask(t)
	}
}

// runTask runs t, records its end, and returns the next task to run, as
// next does, or nil (see finishNext). When t calls runtime.Goexit
// (t.FailNow in a test, say), which ends the worker's goroutine, it does
// not return: the task ends failed with ErrGoexit, the worker is counted
// out, and another is started if work is ready.
func (p *Pool) runTask(t *task) *task {
	ok := false
	defer func() {
		if !ok {
			p.finish(t, ErrGoexit, false)
			p.mu.Lock()
			p.workers--
			if p.ring.len() > 0 {
				p.wake()
			}
			p.mu.Unlock()
		}
	}()
	err, returned := t.run()
	ok = true
	return p.finishNext(t, err, returned)
}

// ErrGoexit is the error of a task that called runtime.Goexit (as
// testing.T.FailNow does) instead of returning: the pool counts it failed
// and Wait returns it with the others.
var ErrGoexit = errors.New("pool: task called runtime.Goexit")

// next returns the next task to run, or nil when none is ready now (the
// worker ends; a queue that becomes ready starts one again).
func (p *Pool) next() *task {
	defer p.record() // the tasks pick dropped
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nextLocked()
}

// nextLocked is next with p.mu held (released while pick asks the
// governor), the tasks it dropped left for the caller to record.
func (p *Pool) nextLocked() *task {
	for p.ctx.Err() == nil {
		if t := p.pick(); t != nil {
			return t
		}
		if p.ring.len() == 0 {
			break
		}
		// A queue pick put back in turn, asked about while a task ended
		// (see pick), or put there while pick asked about another: looked
		// at again, not left in turn with no worker to look.
	}
	p.workers--
	return nil
}

// pick returns a task whose scope can go now, taking the queues in turn,
// or nil. p.mu is held, and released while the governor is asked about a
// queue (see ask).
func (p *Pool) pick() *task {
	now := p.now()
	p.endHolds(now)
	for p.parked.Len() > 0 && p.parked.min().wakeAt <= now {
		p.ring.push(p.parked.popMin())
	}
queues:
	for n := p.ring.len(); n > 0 && p.ring.len() > 0; n-- {
		q := p.ring.pop()
		noSlot, turn, lead := q.noSlot, q.turn, q.leads
		q.noSlot, q.heldBack = false, false
		behind := q.behind
		q.behind = false
		if p.dropDone(q) {
			// Read again for ask (see there): dropping tasks takes
			// time, a batch of ledgers' causes.
			now = p.now()
		}
		if q.n == 0 {
			// Put back in turn for a slot freed (noSlot), its tasks
			// dropped before it was asked about (their contexts ended
			// while it waited in line): the slot goes to the next
			// queue of the account in line at once (passOn), not at the
			// next recheck (slotRecheck).
			q.where = nowhere
			p.passOn(account{q.scope.Provider, q.scope.Account}, noSlot)
			p.passLead(q, lead)
			continue
		}
		var a answer
		asked := false
		if q.heldUntil > now {
			// A refusal of its head holds it until then, looked at again
			// within parkRecheck (for its tasks whose contexts ended):
			// unless the governor's state it came from was replaced since
			// (Reset, Configure), and Delay decides again, the hold
			// forgotten; or its scope is dead since, its breaker open, and
			// its calls fail fast: its head runs, and the hold is kept.
			if p.heldByAnOldState(q) {
				q.heldUntil = 0
			} else {
				// Put back in turn for a slot freed (noSlot), it does not
				// take it: it runs nothing before that wait, or runs its
				// head for a call that fails fast. The slot goes to the
				// next queue of the account in line at once (passOn), not
				// at the next recheck (slotRecheck).
				p.passOn(account{q.scope.Provider, q.scope.Account}, noSlot)
				var ok bool
				if a, ok = p.ask(q, false, now); !ok {
					return nil
				}
				now, asked = p.now(), true
				if q.n == 0 {
					q.where = nowhere
					p.passLead(q, lead)
					continue
				}
				if !a.failsFast {
					if a.taskEnded {
						p.ring.push(q) // its task's end may have opened the breaker
					} else {
						p.repark(q, min(q.heldUntil, now+parkRecheck))
						p.passLead(q, lead)
					}
					continue
				}
				// Its head runs for a call that fails fast. The hold
				// stays: a breaker closed again before it ends (its
				// probe's success) does not end the wait the refusal
				// gave, which Delay may not see (a first call to another
				// scope), and the queue waits out what is left of it, not
				// running again a task whose first call would be refused
				// again (a refused task that went on after its refusal
				// and came back to the queue after the breaker closed).
			}
		}
		if q.scope.Provider == "" {
			t := q.pop()
			p.ring.push(q) // the next one is ready too, after the others' turn
			p.start(t)
			return t
		}
		acct := account{q.scope.Provider, q.scope.Account}
		if !asked && noSlot && p.isFull(acct) {
			p.slot(q, now)
			p.fullBack(acct)
			continue
		}
		if !asked && noSlot && !lead && p.heldBack[acct] && p.liveHolds(acct) > 0 {
			// Put back in turn by a slot freed or the recheck, its
			// account's queues held back for their tasks' first calls
			// (holdBack): it waits behind the first of them, which is
			// asked for them all (unholdBack). Unless its turn came
			// before that one's, which is still in turn, not asked yet:
			// it leads them in its place, asked first, so that a queue
			// waiting for a slot since before they were held back is
			// not passed by one of them.
			l := p.leaders[acct]
			if l == nil || l.where != inRing || int32(turn-l.turn) > 0 { // wraps around
				p.holdBack(q, noSlot, turn, now)
				continue
			}
			p.unlead(l) // put back by the same end: it waits behind q
			p.lead(q, acct)
			lead = true
		}
		// Asked about for a slot freed (slotFreed): the slot is the
		// queue's while it is asked about (see markFull), and, should the
		// queue not take it, the next in line's (passOn).
		var reserved bool
		var gen uint64
		for survey, again := p.mayRace(q, acct), false; !asked; again = true {
			gen, reserved = p.reserve(acct, noSlot)
			var ok bool
			var first uint32
			if again {
				first = a.turn
			}
			a, ok = p.ask(q, reserved || survey, now)
			if reserved {
				p.unreserve(acct, gen)
			}
			if !ok {
				return nil
			}
			if again {
				// Asked again, in the same turn.
				a.turn, q.turn = first, first
			}
			now = p.now()
			if a.surveyed {
				p.learnCap(acct, a)
			}
			if q.n == 0 {
				q.where = nowhere
				p.passOn(acct, reserved)
				p.passLead(q, lead)
				continue queues
			}
			if q.heldUntil > now && !p.heldByAnOldState(q) && !a.failsFast {
				// A task of it refused while its scope was asked about:
				// its queue waits for the wait the refusal gave.
				p.repark(q, min(q.heldUntil, now+parkRecheck))
				p.passOn(acct, reserved)
				p.passLead(q, lead)
				continue queues
			}
			if a.why == nil && !reserved && !a.surveyed && p.mayRace(q, acct) {
				// A task of the account started while its scope was asked
				// about: asked again, for the slots free.
				survey = true
				continue
			}
			if a.why == nil && a.surveyed && a.decided && a.free > p.liveHolds(acct) {
				// A first call of the account's tasks was decided while
				// its scope was asked about for the slots free: the slot
				// it took may show free, and the task started for it
				// would be beaten to it (the answer counts it neither
				// taken nor to come). Asked again, for the slots free.
				continue
			}
			break
		}
		if a.why == nil && a.surveyed && p.mayRace(q, acct) && a.free <= p.liveHolds(acct) {
			// The first calls of the account's tasks started may take the
			// slots free: it waits for those calls, in its turn. So does a
			// queue asked for a slot the pool counted free (reserved): the
			// recheck's is a bet (see recheck), and the slot freed, its
			// answer shows, is one those calls will take.
			p.holdBack(q, noSlot, turn, now)
			continue
		}
		var loser heldQueue
		if a.why == nil && p.losers > 0 {
			loser = p.loserHold(q, acct, a.turn)
		}
		switch {
		case loser.t != nil:
			// Ready maybe only because a first call of its account,
			// started before it was asked, is not made yet: that
			// queue's head lost its last token to a queue asked after
			// it, and would lose it again, turn after turn (see
			// loserHold).
			p.park(q, loser.until, keepBehind(q, behind, a.turn))
			q.behind = true
			p.passLead(q, lead)
		case a.why == nil, a.failsFast || a.foundDead:
			// Ready; or its breaker is open, and the governor decides at
			// once (a refusal, recorded: a dead scope's queue fails fast).
			// Not a breaker that waits for its verdict (breaker_wait): its
			// first call would only be deferred, so its queue is parked
			// until the breaker lets a probe through. Unless the scope was
			// found dead with its breaker still closed: only a call's
			// admission opens it, and the first call, deferred for the
			// cooldown, holds the queue until the probe may go (parked,
			// the queue would go once the streak of failures grew old,
			// long before the cooldown, its calls sent to a dead scope).
			if noSlot && a.why == nil {
				// A slot freed, taken: the account's other queues put
				// back with it wait for the next one,
				// unless the answer showed more slots free (freedMore).
				p.tookSlot(acct)
				if reserved && !a.ended {
					p.freedMore(acct, gen, a.free-1)
				}
			}
			t := q.pop()
			if noSlot && a.why == nil {
				t.slotMark = p.full[acct].gen
			}
			p.hold(q, t, now) // until its first call is decided
			p.passOn(acct, reserved)
			if lead && (a.why != nil || !a.surveyed || a.free > p.liveHolds(acct)) {
				// Slots free beyond the first calls to come, this one's
				// included, or not known: the next queue held back is
				// asked.
				p.passLead(q, lead)
			}
			p.start(t)
			return t
		case errors.Is(a.why, resilience.ErrNoSlot) && a.ended:
			// A slot was freed while its scope was asked about (the
			// governor told the pool, slotFreed). Asked again in turn,
			// as the slot freed puts the queues waiting for one (unslot),
			// rather than slotted by an answer from before.
			q.noSlot = true
			p.ring.push(q)
			p.keepTurn(q, noSlot, turn)
		case errors.Is(a.why, resilience.ErrNoSlot):
			p.markFull(acct, a.gen)
			p.keepTurn(q, noSlot, turn)
			p.slot(q, now)
			p.fullBack(acct)
		case a.taskEnded:
			// A task of it ended while its scope was asked about: what it
			// met may have opened the breaker. Asked again in turn, as the
			// task's end puts its parked queue (unpark), rather than
			// parked by an answer from before.
			p.ring.push(q)
		case a.proveWait > 0:
			// Its scope's answers all failed, from fewer calls than the
			// rule that finds it dead needs: its head waits for a token
			// in a worker, its call the evidence (see proves).
			t := q.pop()
			t.proveWait, t.proving = a.proveWait, true
			q.proving++
			p.proving++
			p.hold(q, t, now)
			p.passOn(acct, reserved)
			p.passLead(q, lead)
			p.start(t)
			return t
		default:
			// Delay's wait counts from when it was asked, not from when
			// its answer came back: a read of the store across the
			// network later.
			p.park(q, a.at+min(a.d, parkRecheck), keepBehind(q, behind, a.turn))
			p.passLead(q, lead)
		}
		p.passOn(acct, reserved)
	}
	return nil
}

// answer is what the governor said of a queue's scope (see ask).
type answer struct {
	at   time.Duration // when it was asked, the pool's time: d counts from then
	turn uint32        // the queue's turn: the pool's count of asks when it was asked
	gen  uint64        // the governor's Generation when it was asked, before Delay read its state
	d    time.Duration // Delay's wait
	why  error         // Delay's reason
	// The slots of the scope's account free for the pool's tasks (its
	// cap less the calls holding one and those waiting for one), and its
	// cap, when surveyed says the queue was asked about for the slots free
	// (see ask); 0 otherwise.
	free, cap int
	surveyed  bool
	// What an open circuit means for the queue (see circuit).
	failsFast, foundDead bool
	// proveWait: the queue's head may run though its first call must wait
	// for a token, at most that long, to prove its scope dead or alive
	// (see proves); 0: it may not.
	proveWait time.Duration
	// A task of the pool ended while the governor was asked, or the
	// governor said a slot may be free (slotFreed), which may have freed
	// a slot of the scope's account; taskEnded: a task of the queue,
	// which may have opened its breaker. The answer may not show either.
	ended, taskEnded bool
	// decided: a first call of a task of the account started before it
	// was asked for the slots free was decided (or its hold ended)
	// meanwhile; the slot that call took may show free.
	decided bool
}

// ask asks the governor about q's scope, which pick took from the ring:
// Delay, and for an open circuit one snapshot of the scope (see circuit);
// or, when slots says that q is asked about for the slots free (a slot
// freed, see reserve; slots the first calls of tasks started
// may take, see mayRace), Delay's answer and the snapshot from one
// resilience.Survey's Look, whose count of the account's calls in flight
// tells how many slots are free (a task whose calls ran at once held as
// many), as for a queue looked at for a proof of its scope (see proves),
// whose snapshot is read with Delay's answer rather than after it, so
// that each bucket is read once. Both read the governor's store, which for a fleet's is
// a round trip across the network: p.mu is released meanwhile, so that
// Go, the tasks' ends and the other workers do not wait for it, and q is
// asking, out of every structure, placed by pick alone. It reports false, q put
// nowhere, when the pool was stopped meanwhile (the stop drops q's tasks,
// if it has not yet); otherwise q's head is a task whose context is not
// done, if it has tasks left. now is the pool's time, read since p.mu
// was last taken (pick reads it as it takes the lock, and again each time
// ask has taken it again): as the lock orders the pool's reads of its
// clock, it is the time q is asked about, to within pick's steps under
// the lock, and not read a second time there. p.mu is held, and released
// meanwhile.
func (p *Pool) ask(q *queue, slots bool, now time.Duration) (a answer, ok bool) {
	q.where, q.taskEnded = asking, false
	frees := p.frees.Load()
	a.at = now
	// Whether the scope is looked at for a proof (see proves): a queue
	// whose last answer was no token, or that its scope could go (its
	// answer now may be the first of no token: a queue looked at only once
	// told no token twice waited up to a second more, while the retries of
	// the calls in flight got in line for the scope's tokens before its
	// task, TestADeadScopeBehindItsOwnRetriesIsFoundWithinItsDeadSeconds),
	// not one held by a refusal, a pause or an open breaker; and once per
	// parkRecheck at most, about as often as a queue waiting for its scope
	// is asked anyway.
	look := p.mayProve(q) && q.lookable && (!q.looked || a.at-q.lookedAt >= parkRecheck)
	p.turns++
	a.turn = p.turns
	q.turn = a.turn
	acct := account{q.scope.Provider, q.scope.Account}
	held0, live0 := p.held, 0
	if slots {
		live0 = p.liveHolds(acct)
	}
	p.mu.Unlock()
	a.gen = p.gov.Generation()
	var snap state.ScopeSnapshot
	if slots || look {
		// Delay's answer and the snapshot from one read of each bucket:
		// with a fleet's store, a round trip each.
		st := p.gov.Survey().Look(q.scope)
		a.d, a.why, snap = st.Wait, st.Why, st.Snapshot
	} else {
		a.d, a.why = p.gov.Delay(q.scope)
	}
	if slots {
		a.free = snap.MaxInFlight - snap.InFlight - snap.Waiting
		a.cap, a.surveyed = snap.MaxInFlight, true
	}
	open := errors.Is(a.why, resilience.ErrCircuitOpen)
	short := errors.Is(a.why, resilience.ErrNoToken)
	if open && !slots && !look {
		snap = p.gov.Inspect(q.scope)
	}
	if slots || errors.Is(a.why, resilience.ErrNoSlot) {
		// Before frees is read again: a slot freed after that read
		// finds the account in slotWaits, and the pool (see slotFreed).
		p.waitsForSlot(acct)
	}
	if p.afterAsk != nil {
		p.afterAsk(q)
	}
	p.mu.Lock()
	q.where = nowhere
	if p.ctx.Err() != nil {
		return a, false
	}
	a.ended, a.taskEnded = p.frees.Load() != frees, q.taskEnded
	if slots {
		a.decided = p.liveHoldsBegunBefore(acct, held0) < live0
	}
	q.taskEnded = false
	if open {
		a.failsFast, a.foundDead = p.circuit(q.scope, snap)
	}
	q.lookable = short || a.why == nil
	if look {
		q.looked, q.lookedAt = true, a.at
		if short && p.mayProve(q) {
			a.proveWait = p.proves(q, snap, a.d)
		}
	}
	p.dropDone(q)
	return a, true
}

// mayProve reports whether a task of q may be started to prove its scope
// dead or alive (see proves), as far as the pool's bound goes: fewer than
// provers of such tasks are running, their retries included. Those of q
// whose first calls are not decided are bounded by proves, by the calls
// the scope lacks. p.mu is held.
func (p *Pool) mayProve(q *queue) bool {
	return p.proving < p.provers()
}

// provers bounds the tasks started to prove their scopes (see proves)
// running at once, from their first calls' wait for a token to their
// ends (their calls' retries hold their workers too): a quarter of the
// workers, at least one (of a pool of one worker, that one), so that
// failing scopes, or a scope throttled but alive that serves less than a
// call while its streaks last, hold no more, and the scopes that can go
// keep the others.
func (p *Pool) provers() int { return max(1, p.limit/4) }

// proves returns how long the head of q, whose scope has no token free
// now, may wait for one in a worker, from s, a snapshot of the scope
// taken after Delay's answer: 0 when it may not (the queue is parked, as
// any queue whose scope cannot go). It may, to prove the scope dead or
// alive, when every answer of the scope failed for a quarter of the
// provider's breaker_dead_seconds (s.Failing), the last of them within a
// quarter of it, from fewer distinct calls than breaker_threshold, its
// breaker closed and no pause holding it, the tasks of q so started in
// that streak sent fewer first calls than breaker_threshold, counting
// those not decided yet, which are fewer than the calls the streak lacks
// (so that they get in line together, before the retries that come
// meanwhile: TestADeadScopeBehindItsOwnRetriesIsFoundWithinItsDeadSeconds,
// whose seeds 3 and 12 found the scope dead at 2m04 and 1m28 with one
// at a time), and wait,
// Delay's, is within breaker_dead_seconds and ends before the head's
// deadline (a task whose turn comes at its deadline is dropped unrun). Such a
// scope's tokens go to the retries of its calls in flight, each taking a
// token as it comes, and a queued task, which the pool starts only when a
// token is free now, would not be sent before those retries end: the
// rule that finds a scope dead (breaker_threshold distinct calls whose
// every answer failed for breaker_dead_seconds) would lack its calls for
// minutes. The task waits in line with those retries, and its answer is
// evidence either way: a failure counts its call, a success ends the
// streak. A quarter of breaker_dead_seconds (2.5 s by default): a scope
// throttled but alive, a success between its throttles, ends its streaks
// before, so that no worker waits inside it (unless it serves less than a
// call in that time), and the calls the rule lacks are still sent within
// breaker_dead_seconds when its tokens come that fast; a streak with no
// failure for a quarter of it is a scope gone quiet (a pause, a burst of
// throttling past), not one whose calls keep failing. Its first call
// waits at most breaker_dead_seconds: a longer wait (others got in line
// first) is refused, nothing sent nor lost, and the task goes back to its
// queue. p.mu is held.
func (p *Pool) proves(q *queue, s state.ScopeSnapshot, wait time.Duration) time.Duration {
	f := s.Failing
	if q.n == 0 || f.Since.IsZero() || f.DeadFrom.IsZero() || f.CallsShort == 0 || s.Dead != "" || s.Breaker.State != state.Closed {
		return 0
	}
	now := p.clock.Now()
	dead := f.DeadFrom.Sub(f.Since)
	if now.Sub(f.Since) < dead/4 || now.Sub(f.Last) > dead/4 || s.PausedUntil.After(now) || wait > dead {
		return 0
	}
	// The deadline is wall time, and wait the clock's: compared as the
	// wall time the wait takes, from the wall clock's now.
	if dl, ok := q.head.deadlineAt(); ok && !dl.After(time.Now().Add(pace.ToWall(p.clock, wait))) {
		return 0 // its turn comes at its deadline: it is dropped then, not run (see dropDone)
	}
	if !q.provedIn.Equal(f.Since) {
		q.provedIn, q.proved = f.Since, 0
	}
	if q.proving >= f.CallsShort || q.proved+q.proving >= f.Calls+f.CallsShort {
		return 0
	}
	return dead
}

// heldByAnOldState reports whether q's hold may come from a state of the
// governor it no longer has: refusals of tasks started before a Reset or
// a Configure. The refusal's wait is then asked again of Delay, which
// answers for the state in force. p.mu is held.
func (p *Pool) heldByAnOldState(q *queue) bool {
	return uint32(p.gov.Generation()) != q.heldGen
}

// circuit reads what an open circuit (Delay's ErrCircuitOpen) means for
// scope's queue, from s, one snapshot of the scope (Governor.Inspect)
// taken after Delay's answer. failsFast: the breaker refuses its calls
// at once, open or closed on a scope found dead (the next call's
// admission opens it), and the provider does not wait for its breakers'
// verdicts (breaker_wait): the queue's head runs, and its call fails
// fast. foundDead: the scope was found dead with its breaker still
// closed, and the provider waits for its breakers' verdicts: the
// admission of its next call opens the breaker, which nothing else does,
// so the queue's head runs all the same. Neither for a half-open breaker
// whose probe is out, an open one with breaker_wait, nor a breaker closed
// since Delay read it on a scope that is not dead (its probe's success,
// which took the scope's token): the queue is parked until a task of it
// ends, or parkRecheck, and its scope is asked again. One snapshot for
// both answers: read again for each, a breaker that closed between the
// reads was taken for a dead scope's, or one that fails fast, and the
// queue's next task was run only for its first call to be deferred.
// p.mu is held.
func (p *Pool) circuit(scope resilience.Scope, s state.ScopeSnapshot) (failsFast, foundDead bool) {
	dead := s.Breaker.State == state.Closed && s.Dead != ""
	if p.breakerWaits(scope.Provider) {
		return false, dead
	}
	return s.Breaker.State == state.Open || dead, false
}

// breakerWaits is breakerWaits for the pool's governor, kept for the
// governor's generation: pick asks it of every task of a dead scope, and
// the governor's Config is a copy of the whole configuration. p.mu is
// held.
func (p *Pool) breakerWaits(provider string) bool {
	// The generation first: a Configure stores its configuration before
	// it moves the generation, so that the answer kept is never older
	// than the generation it is kept for.
	if gen := p.gov.Generation(); p.waits == nil || gen != p.waitsGen {
		p.waits, p.waitsGen = map[string]bool{}, gen
	}
	w, ok := p.waits[provider]
	if !ok {
		w = breakerWaits(p.gov, provider)
		p.waits[provider] = w
	}
	return w
}

// admitHold bounds how long a queue's next task waits for the first call
// of the task before it to be decided: a task that works a while before
// its first call (or makes none, or calls another scope first) holds its
// scope's other tasks back no longer than that.
const admitHold = 10 * time.Millisecond

// hold makes q admitting for t: its next task waits until the first call
// of t, just picked, is decided, or until admitHold has passed. A wake-up
// is armed for the hold's end when q has tasks left, t was started for a
// slot freed (tookSlot), which the hold's end gives on (endHolds), or its
// account has queues held back (holdBack), which wait for the first hold
// of the account to end, this one maybe: those kept in line behind the
// queue leading them (unholdBack) were held back before it began. p.mu is
// held.
func (p *Pool) hold(q *queue, t *task, now time.Duration) {
	p.unlead(q)
	q.where, q.holder, q.admitUntil = admitting, t, now+admitHold
	p.holds.push(heldQueue{t, q.admitUntil})
	p.held++
	if q.n > 0 || t.slotMark != 0 || p.heldBack[account{q.scope.Provider, q.scope.Account}] {
		p.arm(q.admitUntil)
	}
}

// loserHold returns a hold of a task of acct that another queue than q
// was started with at a turn before q's (turn), whose first call is not
// decided yet, of a queue whose head lost its last token (lost): its
// scope may share a bucket with q's (the operations of a service paced
// as one, an account's bucket), and q, told its scope can go before that
// call took the token, would take it first when that task works before
// its call (within admitHold), as it did the last time. q then waits
// until that hold ends, keeping its turn (keepBehind). The zero
// heldQueue: none. p.mu is held.
func (p *Pool) loserHold(q *queue, acct account, turn uint32) heldQueue {
	for _, h := range p.holds.all() {
		o := h.t.q
		if o != q && o.lost && h.live() && int32(turn-o.turn) > 0 && (account{o.scope.Provider, o.scope.Account}) == acct { // wraps around
			return h
		}
	}
	return heldQueue{}
}

// setLost notes whether q's head lost its last token (see loserHold),
// counted in p.losers. p.mu is held.
func (p *Pool) setLost(q *queue, lost bool) {
	switch {
	case lost && !q.lost:
		p.losers++
	case !lost && q.lost:
		p.losers--
	}
	q.lost = lost
}

// keepBehind returns the turn q is parked with, asked at turn: the one
// it was parked with before, when it waited behind a loser's hold
// (behind): it waited in line meanwhile, and the loser's queue, asked
// again as its call was decided, is not put before it.
func keepBehind(q *queue, behind bool, turn uint32) uint32 {
	if behind {
		return q.parkedAt
	}
	return turn
}

// heldQueue is a hold of a queue for a task, and its end: p.holds lists
// them in the order they began, which is the order they end.
type heldQueue struct {
	t     *task
	until time.Duration
}

// live reports whether the hold is still in force.
func (h heldQueue) live() bool {
	q := h.t.q
	return q.where == admitting && q.holder == h.t && q.admitUntil == h.until
}

// endHolds ends the holds that have lasted admitHold by now: their queues
// are ready again, and a slot freed that their task was started for goes
// on (gaveBack). It drops the entries of holds already decided. p.mu is
// held.
func (p *Pool) endHolds(now time.Duration) {
	for p.holds.len() > 0 {
		h := p.holds.front()
		live := h.live()
		if live && h.until > now {
			return
		}
		p.holds.pop()
		if live {
			// A task started for a slot freed (tookSlot) that works
			// past its hold before its first call has not taken the
			// slot: it goes to the next queue of the account in line
			// now, as the task's own queue goes on (decide), not at the
			// next recheck (slotRecheck). The wake-up armed for the
			// hold's end runs the recheck after this, which counts a
			// slot freed only for an account with queues waiting in
			// line: none for one whose line this put back in turn (the
			// slot is counted once), and none for one with no queue in
			// line, whose queue put back in turn before then and not
			// asked yet (no worker free) would otherwise find the
			// account full and wait for the next recheck. Should the
			// task's call come after that queue's took it, the call is
			// refused the slot and the task goes back to its queue.
			p.gaveBack(h.t)
			p.decide(h.t.q)
		}
	}
}

// nextHold returns the end of the first hold still in force, and whether
// there is one. p.mu is held.
func (p *Pool) nextHold() (time.Duration, bool) {
	for _, h := range p.holds.all() {
		if h.live() {
			return h.until, true
		}
	}
	return 0, false
}

// dropDone drops the tasks at the head of q whose context is done: they
// would be run only to return its error. It reports whether it dropped
// any. p.mu is held.
func (p *Pool) dropDone(q *queue) (dropped bool) {
	for q.n > 0 && q.head.expired() {
		t := q.pop()
		p.queued--
		p.dropTask(t, false)
		p.settle()
		dropped = true
	}
	return dropped
}

// expired reports whether t's context is done, or its deadline has come:
// a task whose turn comes at its deadline (the wait its scope gave ending
// then) is not run, as a call's wait ending at its deadline is not made,
// whichever of the pool's wake-up and the context's timer runs first. It
// reads what Go read of the context (task.done), calling none of its
// methods: p.mu is held.
func (t *task) expired() bool {
	select {
	case <-t.done:
		return true
	default:
	}
	dl, ok := t.deadlineAt()
	return ok && !time.Now().Before(dl)
}

// noDeadline is task.deadline for a context with none.
const noDeadline = time.Duration(math.MaxInt64)

// deadlineOf returns ctx's deadline as a task keeps it: the time from the
// pool's wallEpoch (a deadline 292 years away, past the longest
// Duration, is none), or noDeadline. p.mu is not held: it calls ctx's
// Deadline.
func (p *Pool) deadlineOf(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return noDeadline
	}
	return dl.Sub(p.wallEpoch)
}

// deadlineAt returns the deadline of t's context, as Go read it, and
// whether it has one.
func (t *task) deadlineAt() (time.Time, bool) {
	if t.deadline == noDeadline {
		return time.Time{}, false
	}
	return t.q.p.wallEpoch.Add(t.deadline), true
}

// start marks t running. The queues left in turn get a worker of their
// own, within the limit: a worker takes one task, and one worker is woken
// for several queues put in turn at once (the zero scope's, the parked
// ones whose time came, the slotted ones). p.mu is held.
func (p *Pool) start(t *task) {
	t.gen = uint32(p.gov.Generation())
	p.queued--
	p.running++
	t.q.running++
	t.q.live = append(t.q.live, t)
	if p.ring.len() > 0 {
		p.wake()
	}
}

// parkRecheck bounds how long a queue stays parked before its scope is
// asked again: the wait Delay gave is how long the scope's tokens or pause
// hold it, which a change since then moves (a breaker that opened, and
// whose queue then fails fast; a rate that rose), and a change the pool
// does not see (made by calls outside it) is seen within parkRecheck.
const parkRecheck = time.Second

// park makes q wait until at, after the queues due at the same time whose
// turn came before its own: turn is when it was asked about (ask), not
// when the answer came back, which the workers asking about several queues
// at once, their store read across the network, get in no fair order.
// p.mu is held.
func (p *Pool) park(q *queue, at time.Duration, turn uint32) {
	q.parkedAt = turn
	p.repark(q, at)
}

// repark makes q wait until at, keeping its turn among the queues due at
// the same time: a queue whose head was refused (another scope's call took
// the token they share first) did not have its turn. p.mu is held.
func (p *Pool) repark(q *queue, at time.Duration) {
	p.unlead(q)
	q.where, q.wakeAt = parked, at
	p.parked.push(q)
	p.arm(at)
}

// unpark puts q, parked, back in turn at once, so that its scope is asked
// again. p.mu is held.
func (p *Pool) unpark(q *queue) {
	heap.Remove(&p.parked, q.heap)
	p.ring.push(q)
	p.wake()
}

// slotRecheck is how often queues waiting for a concurrency slot are looked
// at again when the governor tells the pool of no slot freed (slotFreed):
// the first in line of each account (see recheck). A backstop: every
// slot freed is told at once, and a slot the pool gave a task (tookSlot)
// that works past its hold (admitHold) before its first call goes to the
// next queue in line as the hold ends (endHolds), but the pool's count of
// an account's slots taken is a bet (markFull) that the governor's answer
// corrects only when a queue is asked.
const slotRecheck = 50 * time.Millisecond

// slot makes q wait for a concurrency slot: until the governor tells the
// pool of one freed of its account (slotFreed), or slotRecheck. The
// queues waiting so are kept in a line for each account, in turn, by
// when they were last asked about (ask), not by when the answer came back, which
// the workers asking about several queues at once get in no fair order:
// a slot freed puts them back in the ring in that order (unslot), and the
// first asked takes the slot. p.mu is held.
func (p *Pool) slot(q *queue, now time.Duration) {
	p.unlead(q)
	q.where = slotted
	// After the last one of its account whose turn came before q's: most
	// come in turn, and are appended.
	acct := account{q.scope.Provider, q.scope.Account}
	p.waitsForSlot(acct)
	line := p.slots[acct]
	i := len(line)
	for i > 0 && int32(q.turn-line[i-1].turn) < 0 { // wraps around
		i--
	}
	p.slotSteps += uint64(2*(len(line)-i) + 1) // looked at, then moved
	if p.slots == nil {
		p.slots = map[account][]*queue{}
	}
	p.slots[acct] = slices.Insert(line, i, q)
	p.nSlots++
	p.arm(now + slotRecheck)
}

// keepTurn gives q, told no slot, back the turn it had before it was
// asked about, when it was waiting for a slot already (noSlot): it keeps
// its place among the queues waiting for one (see slot), not sent to the
// back of the line for being asked. p.mu is held.
func (p *Pool) keepTurn(q *queue, noSlot bool, turn uint32) {
	if noSlot {
		q.turn = turn
	}
}

// fullMark is what the pool knows of an account's slots: it had none free
// when it was made, in the governor's state of Generation govGen; of the
// slots freed since (more: those the governor said may be free, see
// slotFreed, counted by the recheck, and found free beyond them, see
// freedMore), the pool has given starts a task, and asking are promised
// to queues it asks about (see markFull). gen tells it from the marks
// made before it.
type fullMark struct {
	more, starts, asking, gen, govGen uint64
}

// markFull notes that acct has no slot free now (Delay's answer): the pool
// counts each slot the governor says was freed (slotFreed), so that until
// the next one, a queue of acct put back in turn by a slot freed (noSlot)
// waits for a slot again without asking the governor (pick), and after k
// slots freed, once k of them were given a task (tookSlot). The workers looking for work at once
// would otherwise each ask about the account (with a fleet's store, a
// round trip each), and be told of the slot a task just started, or a
// queue asked about meanwhile, has not taken yet: a task started for
// nothing, its first call refused, and tasks started out of turn. One slot
// is a bet, which the queue asked about for it corrects: a task whose
// calls ran at once held as many slots as calls, which that queue's answer
// shows free (freedMore). A task started for the freed slot whose first
// call is refused (for a token, say) takes none, and gives it back
// (gaveBack); one whose first call goes to another account's scope, let
// through, takes none either, and gives it back as that call's admission
// is decided (DecidedIn). The mark holds for the governor's state it was found in, of
// Generation govGen: a Configure (a cap raised) or a Reset replaces it.
// p.mu is held; the answer was asked for with no task ending meanwhile.
func (p *Pool) markFull(acct account, govGen uint64) {
	if p.full == nil {
		p.full = map[account]fullMark{}
	}
	p.fullGen++
	p.full[acct] = fullMark{gen: p.fullGen, govGen: govGen}
}

// reserve promises a slot of acct, found full (markFull) and freed since
// (slotFreed), to a queue put back in turn by a slot freed (noSlot)
// that pick asks about, until unreserve: the other workers do not ask
// about the account for it meanwhile. It reports whether it did, and the
// mark it did it in. p.mu is held.
func (p *Pool) reserve(acct account, noSlot bool) (gen uint64, ok bool) {
	m, ok := p.full[acct]
	if !noSlot || !ok {
		return 0, false
	}
	m.asking++
	p.full[acct] = m
	return m.gen, true
}

// unreserve ends the promise reserve made in mark gen, unless acct was
// found full again since, which ended it. p.mu is held.
func (p *Pool) unreserve(acct account, gen uint64) {
	if m, ok := p.full[acct]; ok && m.gen == gen && m.asking > 0 {
		m.asking--
		p.full[acct] = m
	}
}

// passOn puts back in turn the queues of acct waiting for a slot, when
// reserved says that the queue just asked about was promised a slot
// freed (reserve), or one put back in turn for a slot freed was found
// empty before it was asked about or held by a refusal's wait, or the
// task started for one gave it back (gaveBack), and the slot is free as
// far as the pool knows (isFull): the queue did not take it (its tasks
// dropped, its scope waiting for a token or failing fast, its task's
// first call refused), or more slots were freed meanwhile. The queues of
// acct that other workers found full while the promise held wait for
// that slot no longer than the queue asked about: the next in line is
// asked about at once, not at the next recheck (slotRecheck). p.mu is
// held.
func (p *Pool) passOn(acct account, reserved bool) {
	if !reserved || p.isFull(acct) {
		return
	}
	moved := false
	line := p.slots[acct]
	p.slotSteps += uint64(len(line))
	for _, q := range line {
		if q.where != slotted {
			continue
		}
		q.noSlot = true
		p.ring.push(q)
		moved = true
	}
	p.setLine(acct, nil)
	if moved {
		p.wake()
	}
}

// freedMore notes that n slots of acct more than the one just taken were
// free when a queue promised a slot freed (slotFreed) was asked about
// (the answer's free less one), in mark gen, no task ending meanwhile: a
// task whose calls ran at once freed as many slots. The slots promised to
// the other queues being asked about, and those of the tasks started
// whose first call is not decided yet (admitting), are counted among
// them: what is left is added to the slots the pool gives without asking
// again, so that passOn puts the queues waiting for one back in turn at
// once, each asked about in its turn. p.mu is held.
func (p *Pool) freedMore(acct account, gen uint64, n int) {
	m, ok := p.full[acct]
	if !ok || m.gen != gen {
		return
	}
	// The tasks started whose first call is not decided yet: their
	// calls may not have taken their slots yet.
	n -= p.liveHolds(acct)
	known := int64(m.more) - int64(m.starts+m.asking) // free as far as the pool knows
	if add := int64(n) - int64(m.asking) - known; add > 0 {
		m.more += uint64(add)
		p.full[acct] = m
	}
}

// liveHolds counts the tasks of acct started whose first call is not
// decided yet, their holds in force: the slots those calls will take may
// still show free. p.mu is held.
func (p *Pool) liveHolds(acct account) int {
	return p.liveHoldsBegunBefore(acct, p.held)
}

// liveHoldsBegunBefore counts the holds of acct in force, as liveHolds,
// among those begun before p.held was held0: those begun since are the
// last of p.holds. p.mu is held.
func (p *Pool) liveHoldsBegunBefore(acct account, held0 uint64) int {
	n := 0
	old := p.holds.len() - int(p.held-held0)
	for i, h := range p.holds.all() {
		if i >= old {
			break
		}
		if h.live() && (account{h.t.q.scope.Provider, h.t.q.scope.Account}) == acct {
			n++
		}
	}
	return n
}

// mayRace reports whether the first calls of acct's tasks started, not
// decided yet (liveHolds), may take every slot of acct that a queue asked
// about now would be told free: there are some, and the account's cap
// (max_concurrency) is not known to exceed the pool's workers. The
// workers looking for work at once would otherwise each ask about a queue
// of the account, each be told the slot is free, and each start a task,
// whose first call the first to reach the governor beats: the others
// refused, their tasks run for nothing and queued again, and the slot
// taken out of turn. Such a queue is asked about for the slots free
// (ask; asked again so, in the same turn, when a task of the account
// started while it was asked about, or a first call of one was decided
// then, the slot it took maybe shown free), and its task started only if
// they outnumber those calls (holdBack). An
// account whose cap exceeds the workers is asked as any (Delay): its
// calls race only with calls that take a slot beside the one each task
// holds (calls outside the pool, a task's calls at once, a call inside a
// call made without resilience.WithNestedCalls), more of which than the
// cap exceeds the workers by must be in flight for a task to run for
// nothing. An account whose cap equals the workers (GCP's and Azure's
// default max_concurrency, the pool's default workers) is not asked so,
// though the workers alone never fill more slots than the cap: with no
// slot to spare, a single such call makes a worker told the last slot
// free start a task that another's first call beats, run for nothing.
// An account of a provider turned off is asked as any, its calls taking
// no slot (sent at once, ungoverned), though its configuration gives it
// a cap. p.mu is held.
func (p *Pool) mayRace(q *queue, acct account) bool {
	if c, ok := p.capOf(q, acct); ok && c > p.limit {
		return false
	}
	return p.liveHolds(acct) > 0 && p.gov.Enabled(acct.provider)
}

// capOf returns acct's concurrency cap, if a queue of it was asked about
// for the slots free in the governor's state in force. q is a queue of
// acct, which keeps a copy of the cap (its entry of caps, or its
// absence) until caps changes (learnCap), so that pick, which asks for
// it twice a task, looks up no map (a hash of the account's strings,
// under the lock) while caps stays as it is, as it does once learnt.
// p.mu is held.
func (p *Pool) capOf(q *queue, acct account) (int, bool) {
	if p.caps == nil || p.capsGen != p.gov.Generation() {
		return 0, false
	}
	if q.capsSeq != p.capsSeq {
		q.cap, q.capKnown = p.caps[acct]
		q.capsSeq = p.capsSeq
	}
	return q.cap, q.capKnown
}

// learnCap keeps acct's concurrency cap from a, an answer for the slots
// free. p.mu is held.
func (p *Pool) learnCap(acct account, a answer) {
	if p.caps == nil || p.capsGen != a.gen {
		p.caps, p.capsGen = map[account]int{}, a.gen
	}
	p.caps[acct] = a.cap
	p.capsSeq++ // never 0 again: a new queue's copy (capsSeq 0) is read
}

// holdBack makes q, whose account's slots free are no more than the first
// calls of its tasks started may take (mayRace), wait for a slot until
// one of those is decided or its hold ends (admitHold; unholdBack), a
// slot is freed, or the recheck: the account is not found full, and q is not
// counted as told so (markFull). The queues of an account held back so
// are asked again one at a time, the first in line for them all (see
// unholdBack), and a queue of the account put back in turn by a slot
// freed or the recheck (noSlot) while some are, its first calls still to
// come, waits behind them without asking, unless its turn came before
// the leader's, still in turn: it then leads them in its place, so that
// a queue waiting for a slot before they were held back is not passed by
// one of them. p.mu is held.
func (p *Pool) holdBack(q *queue, noSlot bool, turn uint32, now time.Duration) {
	acct := account{q.scope.Provider, q.scope.Account}
	if p.heldBack == nil {
		p.heldBack = map[account]bool{}
	}
	p.heldBack[acct] = true
	p.keepTurn(q, noSlot, turn)
	p.slot(q, now)
	q.heldBack = true
	// The holds it waits for end by admitHold (endHolds, then
	// unholdBack): a wake-up is armed for the first, which hold arms
	// only when the holder's own queue has tasks left, or queues of the
	// account were held back as it began. The wake-up re-arms for the
	// next one.
	if at, ok := p.nextHold(); ok {
		p.arm(at)
	}
}

// unholdBack puts the first queue of acct that holdBack made wait back
// in turn, as a first call of a task of acct is decided (or its hold
// ends): it is asked again, in its turn, as a queue put back by a task's
// end is (noSlot), and leads the others, which wait behind it rather
// than each asking the governor for the slots free (with a fleet's
// store, a round trip each) to learn what its answer tells: told no slot,
// the others wait for one as queues told so do (fullBack); held back
// again, they wait on behind it; otherwise (its task started with slots
// free beyond the first calls to come, or it did not take the slot) the
// next in line leads (passLead). While a queue of acct leads them, in
// turn or asked about, none is put back: one leads at a time, and its
// answer, read after the first call decided or as it was, tells theirs
// (told a slot is free beyond those calls, it passes the lead). p.mu is
// held.
func (p *Pool) unholdBack(acct account) {
	if !p.heldBack[acct] || p.leaders[acct] != nil {
		return
	}
	held := func(q *queue) bool {
		return q.where == slotted && q.heldBack && (account{q.scope.Provider, q.scope.Account}) == acct
	}
	line := p.slots[acct]
	p.slotSteps += uint64(2 * len(line))
	i := slices.IndexFunc(line, held)
	if i < 0 {
		delete(p.heldBack, acct)
		return
	}
	q := line[i]
	line = slices.Delete(line, i, i+1)
	p.setLine(acct, line)
	if !slices.ContainsFunc(line[i:], held) {
		delete(p.heldBack, acct)
	}
	// In turn as a queue told no slot, which keeps its place among
	// those waiting for one (keepTurn) unless it takes one.
	q.heldBack, q.noSlot = false, true
	p.lead(q, acct)
	p.ring.push(q)
	p.wake()
}

// lead makes q, of acct, the queue leading acct's queues held back
// (unholdBack), until unlead: while it is, no other queue of acct is
// made to lead them. p.mu is held.
func (p *Pool) lead(q *queue, acct account) {
	if p.leaders == nil {
		p.leaders = map[account]*queue{}
	}
	q.leads = true
	p.leaders[acct] = q
}

// unlead ends q's lead of its account's queues held back, if it had it.
// p.mu is held.
func (p *Pool) unlead(q *queue) {
	if !q.leads {
		return
	}
	q.leads = false
	acct := account{q.scope.Provider, q.scope.Account}
	if p.leaders[acct] == q {
		delete(p.leaders, acct)
	}
}

// passLead ends q's lead of its account's queues held back (unholdBack),
// when lead says it had it: the next in line leads. p.mu is held.
func (p *Pool) passLead(q *queue, lead bool) {
	p.unlead(q)
	if lead {
		p.unholdBack(account{q.scope.Provider, q.scope.Account})
	}
}

// fullBack makes the queues of acct held back for its tasks' first calls
// (holdBack) wait for a slot as queues told no slot do, acct found full:
// a slot freed or the recheck puts them back in turn (unslot), the
// first asked, the others waiting without asking while the account is
// full (markFull). p.mu is held.
func (p *Pool) fullBack(acct account) {
	if !p.heldBack[acct] {
		return
	}
	delete(p.heldBack, acct)
	p.slotSteps += uint64(len(p.slots[acct]))
	for _, q := range p.slots[acct] {
		q.heldBack = false
	}
}

// tookSlot notes that a task of acct was started for a slot that was
// freed (see markFull). p.mu is held.
func (p *Pool) tookSlot(acct account) {
	if m, ok := p.full[acct]; ok {
		m.starts++
		p.full[acct] = m
	}
}

// gaveBack notes that t, started for a slot freed (tookSlot),
// did not take it: its first call was refused (for a token or a pause, a
// slot, an open breaker; of its scope or another one), before it took
// one, or was made to another account's scope (DecidedIn), or it ended
// with no first call decided (finish), or not made within its hold
// (endHolds). The slot is given to the next queue of the account in line at
// once (passOn), not at the next recheck of the queues waiting for one
// (slotRecheck). p.mu is held.
func (p *Pool) gaveBack(t *task) {
	gen := t.slotMark
	if gen == 0 {
		return
	}
	t.slotMark = 0
	acct := account{t.q.scope.Provider, t.q.scope.Account}
	m, ok := p.full[acct]
	if !ok || m.gen != gen || m.starts == 0 {
		return // found full again since: the mark is newer than the slot
	}
	m.starts--
	p.full[acct] = m
	p.passOn(acct, true)
}

// isFull reports whether acct has no slot free as far as the pool knows:
// it was found full in the governor's state in force, and every slot
// freed since was given a task, or is promised to a queue asked about
// (markFull); and its provider is on. A provider turned off (its state
// in force, a Configure) has no slots: its calls take none, and free
// none the governor could tell the pool of, so that the slots the pool
// gave its tasks since are never given back. p.mu is held.
func (p *Pool) isFull(acct account) bool {
	m, ok := p.full[acct]
	return ok && m.govGen == p.gov.Generation() && m.more <= m.starts+m.asking && p.gov.Enabled(acct.provider)
}

// account is the provider and account of a scope, whose slots its
// scopes share.
type account struct{ provider, account string }

// unslot puts the queues waiting for a slot back in turn, in their turn
// (see slot). counted says that a slot freed is counted for each account
// (markFull): a slot freed (slotFreed), or the recheck (see
// recheck). The queues are then marked noSlot, and once their account is
// found full again, or its freed slot given to a task (markFull), by any
// worker, the governor is not asked of each again until the next slot
// freed or recheck; of an account's queues held back (holdBack), the first in
// line leads the others, unless one leads them already (unholdBack).
// Otherwise every one is asked (the recheck once per parkRecheck: a
// breaker opened meanwhile). only, if not nil, puts back the first queue
// of that account in line alone (slotFreed: one slot freed), and leaves
// the others where they wait, rather than put each back in turn to be
// slotted again (with thousands of queues waiting, most of a scan's
// work): should that queue not take the slot, or more be free, passOn
// puts them back. That queue is looked for in its account's line alone,
// most often at its head: the work does not grow with the queues
// waiting. p.mu is held.
func (p *Pool) unslot(counted bool, only *account) {
	var led map[account]bool
	put := func(q *queue) (moved bool) {
		acct := account{q.scope.Provider, q.scope.Account}
		if q.heldBack && counted {
			// Held back for its account's first calls: the first of the
			// account leads the others (unholdBack), which wait behind it.
			if led[acct] || p.leaders[acct] != nil {
				// Or a queue of the account leads them already, in
				// turn or asked about: its answer tells theirs.
				if led == nil {
					led = map[account]bool{}
				}
				led[acct] = true
				return false
			}
			if led == nil {
				led = map[account]bool{}
			}
			led[acct] = true
			p.lead(q, acct)
		}
		q.heldBack = false
		q.noSlot = counted
		p.ring.push(q)
		return true
	}
	heldBack := func(q *queue) bool { return q.heldBack }
	if only != nil {
		// The first of the line that goes, most often at its head: the
		// others are not looked at.
		line := p.slots[*only]
		for i := 0; i < len(line); {
			q := line[i]
			p.slotSteps++
			waiting := q.where == slotted
			if waiting && !put(q) {
				i++
				continue
			}
			if i == 0 {
				line[0] = nil
				line = line[1:]
			} else {
				p.slotSteps += uint64(len(line) - i) // moved
				line = slices.Delete(line, i, i+1)
			}
			if waiting {
				break
			}
		}
		p.setLine(*only, line)
		if p.heldBack[*only] {
			p.slotSteps += uint64(len(line))
			if !slices.ContainsFunc(line, heldBack) {
				delete(p.heldBack, *only)
			}
		}
		return
	}
	// Every account's, in turn: the order they are asked about in.
	all := p.slotted()
	p.slotSteps += uint64(len(all))
	for acct := range p.slots {
		p.setLine(acct, nil)
	}
	for _, q := range all {
		if !put(q) { // waits on, in turn among its account's
			acct := account{q.scope.Provider, q.scope.Account}
			p.slots[acct] = append(p.slots[acct], q)
			p.nSlots++
		}
	}
	for acct := range p.heldBack {
		if !led[acct] || !slices.ContainsFunc(p.slots[acct], heldBack) {
			delete(p.heldBack, acct)
		}
	}
}

// slotted returns the queues waiting for a slot (slot), of every
// account, in turn. p.mu is held.
func (p *Pool) slotted() []*queue {
	all := make([]*queue, 0, p.nSlots)
	for _, line := range p.slots {
		for _, q := range line {
			if q.where == slotted {
				all = append(all, q)
			}
		}
	}
	slices.SortStableFunc(all, func(a, b *queue) int { return int(int32(a.turn - b.turn)) }) // wraps around
	return all
}

// setLine makes line acct's queues waiting for a slot. p.mu is held.
func (p *Pool) setLine(acct account, line []*queue) {
	p.nSlots += len(line) - len(p.slots[acct])
	if len(line) == 0 {
		delete(p.slots, acct)
		return
	}
	p.slots[acct] = line
}

// recheck puts the queues waiting for a slot back in turn when the
// governor told the pool of no slot freed (a wake-up: a slot the pool gave
// a task may be free still, see slotRecheck). Every one is asked again (unslot) once per
// parkRecheck, so that a queue whose scope's breaker opened meanwhile
// fails fast within that time; otherwise the pool counts one slot of each
// full account as freed, as a slot freed counts (markFull): the first
// queue of the account in line is asked, and told no slot, the others
// wait on without asking (pick's noSlot), one read of the account's
// buckets rather than one a queue (a round trip each with a fleet's
// store); told a slot is free, it takes it, and the next in line is
// asked in turn, as after an end (passOn), unless the first calls of the
// account's tasks started, still to come, may take the slots free: it
// then waits for those (holdBack). p.mu is held.
func (p *Pool) recheck() {
	if p.nSlots == 0 {
		return
	}
	if now := p.now(); now >= p.askAll {
		p.askAll = now + parkRecheck
		p.unslot(false, nil)
		return
	}
	p.countFreed(nil)
}

// slotFreed is the pool's watch of its governor's slots
// (resilience.Governor.WatchSlots): a slot of acct's account may be free,
// freed by a call that ended, in a task of the pool or outside it, or by
// a Configure raising the account's cap. The first queue of the account
// waiting for a slot is put back in turn at once (unslot), rather than
// at the next recheck (slotRecheck). A queue being asked about meanwhile (ask) is asked
// again, its answer maybe older than the slot (answer's ended). It runs
// on the goroutine that freed the slot, with no lock of the governor's
// held.
func (p *Pool) slotFreed(acct resilience.Scope) {
	p.frees.Add(1)
	// The pool waits on no account's slots (the common case: every call
	// of the process ends here, a task's included): the lookup, which
	// hashes the account, is skipped. waitsForSlot counts an account in
	// before its caller reads frees, so that of a slot freed as an
	// account is added, either the count is seen here, or frees there.
	if p.waitingOn.Load() == 0 {
		return
	}
	if _, ok := p.slotWaits.Load(account{acct.Provider, acct.Account}); !ok {
		// No queue was told no slot of the account since the watch
		// began (watch): a call beside a pool, of an account the pool
		// does not wait on, pays an atomic and a lookup, not the lock.
		return
	}
	p.slotLocks.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx.Err() != nil {
		return
	}
	switch a := (account{acct.Provider, acct.Account}); {
	case p.counted(a):
		// Counted whether queues of the account wait for a slot or not:
		// those put back in turn and not asked yet would otherwise find
		// the account full (pick's noSlot).
		if p.nSlots > 0 {
			p.unslot(true, &a)
		}
	case p.nSlots > 0:
		p.countFreed(&a)
	}
	if p.ring.len() > 0 {
		p.wake()
	}
}

// counted counts a slot of acct freed in its mark (markFull), if it has
// one in the governor's state in force, and reports whether it did. p.mu
// is held.
func (p *Pool) counted(acct account) bool {
	m, ok := p.full[acct]
	if !ok || m.govGen != p.gov.Generation() {
		return false
	}
	m.more++
	p.full[acct] = m
	return true
}

// countFreed counts one slot of each account with queues waiting for a
// slot (only, if not nil: of that account alone) as freed (markFull), and puts those queues back in turn (unslot): the
// first of an account in line is asked, the others wait without asking
// while it is found full. p.mu is held.
func (p *Pool) countFreed(only *account) {
	gen := p.gov.Generation()
	for acct, line := range p.slots {
		if only != nil && acct != *only || !slices.ContainsFunc(line, func(q *queue) bool { return q.where == slotted }) {
			continue
		}
		p.slotSteps++
		m, ok := p.full[acct]
		if !ok || m.govGen != gen {
			p.markFull(acct, gen)
			m = p.full[acct]
		} else if !p.isFull(acct) {
			continue // a slot free as far as the pool knows: one queue is asked for it
		}
		m.more++
		p.full[acct] = m
	}
	p.unslot(true, only)
}

// waitsForSlot adds acct to the accounts whose slots freed slotFreed
// looks at the pool for (slotWaits), if it is not among them yet, and
// counts it (waitingOn) once it is there. p.mu may be held or not.
func (p *Pool) waitsForSlot(acct account) {
	if _, ok := p.slotWaits.Load(acct); !ok {
		p.slotWaits.Store(acct, struct{}{})
		p.waitingOn.Add(1)
	}
}

// arm makes sure a worker is started at at, when a parked queue may go. p.mu
// is held.
func (p *Pool) arm(at time.Duration) {
	if p.armedAt != 0 && p.armedAt <= at {
		return
	}
	if p.armStop != nil {
		p.armStop()
	}
	p.armedAt = at
	ctx, stop := context.WithCancel(p.ctx)
	p.armStop = stop
	d := max(0, at-p.now())
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer stop()
		if p.clock.Sleep(ctx, d) != nil {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.armedAt != at {
			return
		}
		p.armedAt, p.armStop = 0, nil
		// The holds ended first: a slot one gives on (gaveBack) puts the
		// queues of its account in line back in turn, and the recheck,
		// which counts a slot freed only for an account with queues in
		// line, does not count that slot a second time.
		now := p.now()
		p.endHolds(now)
		p.recheck()
		// The parked queues whose time has come go back in turn now, as
		// pick would put them. Left parked while every worker is busy (wake
		// starts none), the soonest would re-arm the wake-up for a time
		// already past: it would sleep 0 and re-arm again, a busy loop until
		// a worker is free (forever on a bubble's clock, which that loop
		// keeps from advancing).
		for p.parked.Len() > 0 && p.parked.min().wakeAt <= now {
			p.ring.push(p.parked.popMin())
		}
		if p.parked.Len() > 0 {
			p.arm(p.parked.min().wakeAt)
		}
		if at, ok := p.nextHold(); ok {
			p.arm(at)
		}
		if p.nSlots > 0 {
			p.arm(p.now() + slotRecheck)
		}
		p.wake()
	}()
}

// finish records the end of t, which ended with err: returned says that
// its function returned it, rather than panicked or called
// runtime.Goexit. p.mu is not held.
func (p *Pool) finish(t *task, err error, returned bool) {
	defer p.record()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked(t, err, returned)
}

// finishNext is finish, then next: the worker that ran t records its end
// and looks for its next task under one hold of p.mu, not two, which the
// workers, Go and the tasks' first calls all take (a task costs the pool
// a few of them). When the end dropped tasks (a deferred run's, the pool
// stopped), their ledgers are told of it first, as finish tells them,
// before pick asks the governor. p.mu is not held.
func (p *Pool) finishNext(t *task, err error, returned bool) *task {
	p.mu.Lock()
	p.finishLocked(t, err, returned)
	if p.unrecorded.Load() {
		p.mu.Unlock()
		p.record()
		return p.next()
	}
	defer p.record() // the tasks pick dropped
	defer p.mu.Unlock()
	return p.nextLocked()
}

// finishLocked is finish with p.mu held.
func (p *Pool) finishLocked(t *task, err error, returned bool) {
	q := t.q
	q.running--
	p.running--
	if i := slices.Index(q.live, t); i >= 0 {
		q.live[i] = q.live[len(q.live)-1]
		q.live[len(q.live)-1] = nil
		q.live = q.live[:len(q.live)-1]
	}
	t.ended = true
	p.proven(t)
	if t.proveWait > 0 {
		p.proving--
	}
	if q.holder == t && !t.decided {
		p.decide(q) // it made no governed call, or not to its scope
	}
	if t.deferred && !returned {
		// Its first call was refused, but the task panicked (or called
		// runtime.Goexit) after that: a defect of the task, which running
		// it again would hide. It ends failed, as any panic does.
		t.deferred = false
	}
	ran := !t.deferred // not a deferred run
	if ran && !t.decided {
		// Started for a slot that was freed (tookSlot), it made no
		// governed call (or none that was decided): it took none, and the
		// next queue of its account in line is given it now (gaveBack).
		p.gaveBack(t)
	}
	if ran && q.where == slotted {
		// The slots its calls held were freed as each call ended, which
		// the governor told the pool of (slotFreed): its end frees none.
		// Its own queue is asked again whatever its account says: what
		// the task met may have opened its scope's breaker, whose calls
		// then fail fast. Not at a deferred run's end: it was refused
		// before it took a slot, and its own queue, put back in turn at
		// once, would run it again at once if its scope looks ready (an
		// open breaker; a first call to another account): a busy loop
		// until a slot is free.
		acct := account{q.scope.Provider, q.scope.Account}
		p.slotSteps += uint64(len(p.slots[acct]))
		p.setLine(acct, slices.DeleteFunc(p.slots[acct], func(o *queue) bool { return o == q }))
		q.heldBack, q.noSlot = false, false
		p.ring.push(q)
		p.wake()
	}
	if t.deferred && p.ctx.Err() == nil {
		// Nothing of it was sent: back to the head of its queue.
		t.deferred, t.decided, t.ended, t.proveWait = false, false, false, 0
		q.pushFront(t)
		p.queued++
		q.deferred++
		p.deferred++
		switch q.where {
		case nowhere: // Deferred placed it already, unless decided since
			p.ring.push(q)
		case admitting:
			// Another task's hold, which may have begun with the queue
			// empty, no wake armed for its end: it ends then, if that
			// task's first call is not made by then.
			p.arm(q.admitUntil)
		}
	} else if t.deferred {
		p.dropTask(t, true)
	} else if err != nil {
		q.failed++
		p.failed++
		p.errs = append(p.errs, err)
	} else {
		q.done++
		p.done++
	}
	if ran && q.where == parked {
		// A task of a parked scope ended: what it met may have changed
		// the scope (a breaker that opened on a dead scope, whose queue
		// then fails fast now rather than at the time its tokens gave).
		// A queue a refusal holds is parked again by pick, keeping its
		// turn, unless its breaker opened.
		p.unpark(q)
	} else if ran && q.where == asking {
		q.taskEnded = true // the same, once pick has the answer
	}
	p.settle()
}

// settle wakes Wait when nothing is queued, running or left to record.
// p.mu is held.
func (p *Pool) settle() {
	p.watch(p.queued > 0 || p.running > 0)
	if !p.busy() {
		p.quiet.Broadcast()
	}
}

// watch starts the pool's watch of its governor's slots (slotFreed), on,
// or ends it. The pool watches while it has tasks queued or running, and
// its context is not done (Go, settle): an idle pool, one dropped
// without Wait, its context never cancelled, included, is not held by
// its governor, nor told of every slot freed in the process. What it
// knew of its accounts' slots (markFull) is forgotten as the watch
// ends: it would miss the slots freed meanwhile; no task is left to
// count. p.mu is held (the governor's lock is taken after it; the
// governor calls slotFreed under none of its own).
func (p *Pool) watch(on bool) {
	switch {
	case on && p.unwatch == nil && p.ctx.Err() == nil:
		p.unwatch = p.gov.WatchSlots(p.slotFreed)
	case !on && p.unwatch != nil:
		p.unwatch()
		p.unwatch = nil
		// The count first: an account added while the accounts are
		// cleared is counted again after (waitsForSlot), whether the
		// clear removes it or not.
		p.waitingOn.Store(0)
		p.slotWaits.Clear()
		p.full = nil
	}
}

// busy reports whether a task is queued or running, or a dropped task's
// loss is still to be recorded: Wait waits until none is. p.mu is held.
func (p *Pool) busy() bool {
	return p.queued > 0 || p.running > 0 || len(p.drops) > 0 || p.recording > 0
}

// decide ends q's admission of its task in flight: q is ready again if it
// has tasks. p.mu is held.
func (p *Pool) decide(q *queue) {
	if q.where != admitting {
		return
	}
	q.where, q.holder = nowhere, nil
	if q.n > 0 {
		p.ring.push(q)
		p.wake()
	}
	p.unholdBack(account{q.scope.Provider, q.scope.Account})
}

// drop drops every queued task of a stopped pool. p.mu is held.
func (p *Pool) drop() {
	for _, q := range p.scopes {
		for t := q.pop(); t != nil; t = q.pop() {
			p.queued--
			p.dropTask(t, true)
		}
	}
}

// dropTask drops t, a task that will not run because the pool stopped
// (stop) or its own context is done (or its deadline came: see expired):
// a loss of the ledger its context carries, if any, which record writes
// once p.mu is released, and there reads the ledger and the cause of a
// task's own context (methods of a context of the user's type, which may
// read the pool). Wait returns each such context's cause, once. p.mu is
// held.
func (p *Pool) dropTask(t *task, stop bool) {
	t.q.dropped++
	p.dropped++
	var cause error
	if stop {
		if n := len(p.drops); n > 0 && p.drops[n-1].stop && p.drops[n-1].scope == t.q.scope {
			p.drops[n-1].ctxs = append(p.drops[n-1].ctxs, t.ctx) // its cause added as the batch began
			return
		}
		// The pool's own context's: Cause reads no context of the user's.
		cause = context.Cause(p.ctx)
		p.addCause(cause)
	}
	p.drops = append(p.drops, dropBatch{t.q.scope, cause, stop, []context.Context{t.ctx}})
	p.unrecorded.Store(true)
}

// addCause adds cause to the causes Wait returns, unless it is there
// already: a stop drops every queued task for one cause, and tasks with
// a deadline each drop for context.DeadlineExceeded. p.mu is held.
func (p *Pool) addCause(cause error) {
	if n := len(p.causes); n > 0 && sameError(p.causes[n-1], cause) || p.seenCause(cause) {
		return
	}
	p.causes = append(p.causes, cause)
}

// seenCause reports whether cause is among p.causes, and marks it seen.
// A cause that cannot be a map key (an error of a struct type holding a
// slice) is compared with each. p.mu is held.
func (p *Pool) seenCause(cause error) (seen bool) {
	defer func() {
		if recover() != nil { // hash of an unhashable type
			seen = slices.ContainsFunc(p.causes, func(c error) bool { return sameError(c, cause) })
		}
	}()
	if p.seen == nil {
		p.seen = map[error]struct{}{}
	}
	if _, seen = p.seen[cause]; !seen {
		p.seen[cause] = struct{}{}
	}
	return seen
}

// sameError reports whether a and b are the same error value; two values
// of a type that is not comparable are the same when deeply equal.
func sameError(a, b error) (same bool) {
	defer func() {
		if recover() != nil {
			same = reflect.DeepEqual(a, b)
		}
	}()
	return a == b
}

// record tells the ledgers of the tasks dropped so far of their loss
// (resilience.LossCancelled), with the scope (none for the zero scope)
// and the cause, and adds the causes of the tasks' own contexts to those
// Wait returns. It runs with p.mu released, after every step that may
// drop a task: it reads the tasks' contexts (their ledgers, their
// causes), whose methods may be a user's type's, the reason formats the
// cause with its Error method, and either may read the pool (its
// Progress, say); a ledger's Record is the ledger's own. The common
// call, nothing dropped, pays an atomic load.
func (p *Pool) record() {
	if !p.unrecorded.Load() {
		return
	}
	p.mu.Lock()
	drops := p.drops
	p.drops = nil
	p.unrecorded.Store(false)
	p.recording += len(drops)
	p.mu.Unlock()
	var causes []error
	for _, d := range drops {
		cause := d.cause
		if !d.stop {
			if cause = context.Cause(d.ctxs[0]); cause == nil { // its deadline came, its timer not run yet (expired)
				cause = context.DeadlineExceeded
			}
			causes = append(causes, cause)
		}
		var reason string
		for _, ctx := range d.ctxs {
			l := resilience.LedgerOf(ctx)
			if l == nil {
				continue
			}
			if reason == "" {
				// Its scope's, as a governed call's loss is listed, when
				// it declared one (see task.lostReason).
				reason = fmt.Sprintf("task not run: %v", cause)
				if d.scope != (resilience.Scope{}) {
					reason = scopekey.OneLine(d.scope.String()) + ": " + reason
				}
			}
			l.Record(resilience.LossCancelled, reason)
		}
	}
	p.mu.Lock()
	for _, c := range causes {
		p.addCause(c)
	}
	p.recording -= len(drops)
	p.settle()
	p.mu.Unlock()
}

// Wait waits until every task submitted (by Go, from anywhere, tasks
// included) has returned or been dropped, cancels the pool's context, and
// returns the tasks' errors joined (as errors.Join joins them), with the
// context's cause when the pool was stopped with tasks still queued, and
// the cause of each task's own context that was done before the task ran
// (each cause once). errors.Is and errors.As see every one of them, and
// so does a caller that lists them (Unwrap() []error); the message lists
// the first ten, one a line, and then how many more there are.
// A task refused before it sent anything and run again counts once, by
// its last run. Wait must not be called from a task of the pool, nor from
// anything a task waits for: it would wait for that task too, forever.
// From the moment Wait finds the pool quiet, before it cancels the pool's
// context, Go panics (see Go).
func (p *Pool) Wait() error {
	if p.scopes == nil {
		panic(notMade("Wait"))
	}
	p.mu.Lock()
	for p.busy() {
		p.quiet.Wait()
	}
	p.waited = true
	// Clipped: the causes appended go to an array of this call's own, not
	// to the room p.errs may have, which a concurrent Wait would write
	// while this one reads.
	errs := append(slices.Clip(p.errs), p.causes...)
	p.mu.Unlock()
	// Nothing is queued, and Go panics from now on: the stop would have
	// nothing to drop. keepStop keeps it from running, so that the cancel
	// below starts no goroutine; it reports true to one Wait only, and
	// false when ctx was done already: the stop runs, counted in p.wg.
	if p.keepStop() {
		p.wg.Done()
	}
	p.cancel(context.Canceled)
	p.wg.Wait()
	return joinErrors(errs)
}

// maxListed is how many errors the message of Wait's error lists at most.
const maxListed = 10

// joinErrors is errors.Join of errs (none nil), whose message lists at
// most maxListed of them (see manyErrors).
func joinErrors(errs []error) error {
	if len(errs) <= maxListed {
		return errors.Join(errs...)
	}
	return &manyErrors{errs}
}

// manyErrors is Wait's error when more than maxListed tasks failed: every
// error is in it, for errors.Is and errors.As and for a caller that lists
// them (Unwrap() []error, as errors.Join's), but its message gives the
// first maxListed, one a line as errors.Join writes them, and then how
// many more there are, so that a scan whose dead scope failed a hundred
// thousand tasks does not print a hundred thousand lines. It is never
// changed once Wait returns it.
type manyErrors struct{ errs []error }

func (e *manyErrors) Error() string {
	var b strings.Builder
	for _, err := range e.errs[:maxListed] {
		b.WriteString(err.Error())
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "... and %d more errors (%d in all)", len(e.errs)-maxListed, len(e.errs))
	return b.String()
}

func (e *manyErrors) Unwrap() []error { return e.errs }

// task is one queued function. A queued task costs its allocation: 80
// bytes, the size class it fits (TestATaskStaysInItsSizeClass,
// BenchmarkPoolQueued); its pool is its queue's (queue.p), a word the
// scope's queue holds once rather than each task.
type task struct {
	ctx  context.Context
	fn   func(context.Context) error
	q    *queue
	next *task

	// What its first call's admission said, and whether it has ended
	// (under p.mu).
	decided bool
	ended   bool
	// Whether it was started to prove its scope and its first call is
	// not decided yet (see Pool.proves): counted in its queue's proving.
	// Beside the flags above, in gen's padding, so that a task is 80
	// bytes, not 96 (BenchmarkPoolQueued).
	proving bool
	// Whether its first call was refused (Deferred): it goes back to its
	// queue as it ends (see Pool.finish). In the padding too.
	deferred bool
	// The governor's Generation when it was started (truncated: it fits
	// beside decided, and only its changes count), for a refusal of its
	// first call.
	gen uint32
	// The mark of its account's slots (fullMark's gen) it was started
	// for a slot of, freed (see tookSlot); 0: none.
	slotMark uint64
	// How long its first call may wait to be admitted, when it was
	// started to prove its scope (see Pool.proves); 0: the pool's
	// MaxWait.
	proveWait time.Duration
	// Its context's Done channel and deadline (noDeadline: none), read
	// by Go before it takes the pool's lock: the pool looks at whether
	// the context ended or its deadline came (expired, proves, Progress)
	// under its lock, where a method of a context of the user's type
	// (which may read the pool) must not run.
	done     <-chan struct{}
	deadline time.Duration // since the pool's wallEpoch
}

// run calls the task's function with its first call held by the governor
// (resilience.WithAdmission), turning a panic into an error: returned says
// whether the function returned, rather than panicked or called
// runtime.Goexit. A task that did not return is lost work, recorded as
// panicked (resilience.LossPanicked) in the ledger its context carries,
// once: unless a governed call made with its context recorded a panic
// there already, which the mark its context carries says.
func (t *task) run() (err error, returned bool) {
	ctx := t.ctx
	var mark *panicmark.Mark
	ledger := resilience.LedgerOf(ctx)
	if ledger != nil {
		ctx, mark = panicmark.With(ctx, ledger)
	}
	defer func() {
		// A call the task left running (in a goroutine of its own) that
		// has not made the first call yet makes an ordinary one: the task
		// will not run again.
		resilience.EndAdmission(ctx)
		r := recover()
		if r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
		if !returned && ledger != nil && !mark.Noted() {
			ledger.Record(resilience.LossPanicked, t.lostReason(r))
		}
	}()
	if t.q.scope.Provider != "" {
		ctx = resilience.WithAdmission(ctx, t, max(t.q.p.maxWait, t.proveWait))
	} else {
		// Not the hold of the task that submitted it, if its ctx derives
		// from that one's and that one's first call is still to come.
		ctx = resilience.WithAdmission(ctx, nil, 0)
	}
	err = t.fn(ctx)
	return err, true
}

// lostReason is what the ledger lists for a task that panicked with v
// (nil: it called runtime.Goexit, a panic with nil being a
// *runtime.PanicNilError): its scope's, as a governed call's loss is
// listed, when it declared one, and what it panicked with, or that it
// called runtime.Goexit. The scope is written on one line
// (scopekey.OneLine), so that a part holding a newline forges no line of
// the ledger.
func (t *task) lostReason(v any) string {
	why := "task called runtime.Goexit"
	if v != nil {
		why = fmt.Sprintf("task panicked: %v", v)
	}
	if t.q.scope == (resilience.Scope{}) {
		return why
	}
	return scopekey.OneLine(t.q.scope.String()) + ": " + why
}

// Decided implements resilience.Admission: the task's first call went (or
// ended, recorded): the next task of its scope may be given a worker.
func (t *task) Decided() { t.DecidedIn(t.q.scope) }

// DecidedIn implements resilience.ScopedAdmission: Decided, for a first
// call made to scope. A task started for a slot freed
// (tookSlot) whose first call was made to another account's scope took
// none of its own account's slots: the slot is given to the next queue of
// the account in line at once (gaveBack), not at the next recheck of the
// queues waiting for one (slotRecheck).
func (t *task) DecidedIn(scope resilience.Scope) { t.decidedIn(scope, false) }

// DecidedUnsent is DecidedIn for a first call that ended before it was
// sent, holding no slot of its own (an open breaker's skip, a deadline, a
// cancelled context): the slot a task started for a slot freed was given
// goes to the next queue of the account in line at once (gaveBack), as
// for a first call made to another account's scope. Package resilience
// calls it in place of DecidedIn, through an interface of its own.
func (t *task) DecidedUnsent(scope resilience.Scope) { t.decidedIn(scope, true) }

// decidedIn is DecidedIn, or DecidedUnsent when unsent.
func (t *task) decidedIn(scope resilience.Scope, unsent bool) {
	p := t.q.p
	p.mu.Lock()
	defer p.mu.Unlock()
	t.decided = true
	if t.proving {
		t.q.proved++ // its call was sent, or refused by an open breaker
	}
	p.proven(t)
	if !t.ended && (unsent || (account{scope.Provider, scope.Account}) != (account{t.q.scope.Provider, t.q.scope.Account})) {
		// Not a call the task left running after it returned: its end
		// was counted as freeing the slot already.
		p.gaveBack(t)
	}
	if t.q.holder == t { // not a task whose hold ended before: the queue's hold now is another's
		p.setLost(t.q, false)
		p.decide(t.q)
	}
}

// Deferred implements resilience.Admission: the task's first call would
// have waited; the task goes back to its queue when it returns, and its
// scope waits until it may go. The governor calls it before
// resilience.EndAdmission, which run calls as the task returns, returns:
// a first call, made in a goroutine the task left running, that is
// refused after the task returned is lost, and the governor records it
// (in its counters, the run's stats and the task's ledger) and calls
// Decided instead.
func (t *task) Deferred(wait time.Duration, err error) { t.refused(wait, err) }

// refused is Deferred under p.mu. Its scope cannot go before wait.
func (t *task) refused(wait time.Duration, err error) {
	p := t.q.p
	// Told it could go, it lost the token to another call: the
	// governor's error, read before the lock is taken all the same.
	lost := wait > 0 && errors.Is(err, resilience.ErrNoToken)
	if wait == 0 {
		p.waitsForSlot(account{t.q.scope.Provider, t.q.scope.Account}) // refused for a slot: see ask
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !t.ended { // always, from the governor: see Deferred
		t.decided, t.deferred = true, true
	}
	p.proven(t)
	q := t.q
	p.gaveBack(t)
	if q.holder == t {
		p.setLost(q, lost)
	}
	if wait > 0 {
		// Its queue runs nothing before then, wherever it is now, unless
		// the governor's state is replaced, but tasks whose calls fail
		// fast while its scope's breaker is open (closed again, the
		// breaker leaves the wait holding the queue): its hold may have
		// ended before the call was refused (pick parks it again until
		// then).
		//
		// The hold keeps the refusals of the tasks started in the newest
		// state: pick asks Delay again in place of an older one's, which
		// must not undo a newer one's wait (Delay cannot see it when the
		// call was to another scope).
		now := p.now()
		switch newer := int32(t.gen - q.heldGen); { // wraps around
		case q.heldUntil <= now || newer > 0:
			q.heldUntil, q.heldGen = now+wait, t.gen
		case newer == 0:
			q.heldUntil = max(q.heldUntil, now+wait)
		}
	}
	if q.holder == t {
		q.holder = nil
		if wait > 0 {
			p.repark(q, min(q.heldUntil, p.now()+parkRecheck))
		} else {
			p.slot(q, p.now())
		}
		p.unholdBack(account{q.scope.Provider, q.scope.Account})
	}
}

// proven ends t's proof of its scope (see Pool.proves), if it was out:
// its first call was decided, or it ended without one, and another task
// of its queue may be started to prove it. The task still counts in the
// pool's bound (provers) until it ends (see finish): its call's retries
// hold its worker. p.mu is held.
func (p *Pool) proven(t *task) {
	if t.proving {
		t.proving = false
		t.q.proving--
	}
}

// PanicError is the error of a task that panicked: the pool recovers it,
// so that one task does not end the scan, and reports it with the others
// (and records it in the task's ledger: see the package's documentation).
// The pool changes it no more once made: it is safe to read from several
// goroutines at once. Its zero value is a panic with nil and no stack.
type PanicError struct {
	Value any    // what the task panicked with
	Stack []byte // the task's goroutine's stack when it panicked
}

func (e *PanicError) Error() string { return fmt.Sprintf("pool: task panicked: %v", e.Value) }

// Unwrap returns the value the task panicked with when it is an error, and
// nil otherwise, so that errors.Is and errors.As find it through Wait's
// joined error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
