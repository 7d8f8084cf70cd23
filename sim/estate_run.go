package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/cloudg/cloudg/pool"
	"github.com/cloudg/cloudg/resilience"
)

// executeEstate runs the scan of sc's estate with the run's strategy: a
// scheduler over Workload.Workers workers runs the listing tasks, which
// page and submit a detail task per item, every call made by the
// strategy's client against the provider's bucket of its scope.
func (r *Run) executeEstate(ctx context.Context, clock Clock) (*Result, error) {
	sc := r.sc
	e := sc.Estate
	start := clock.Now()
	rec := &recorder{}
	prov := newProvider(&sc.Provider, sc.Workload.Actions, clock, start, sc.Seed, rec)
	caller, err := newEstateCaller(r.strategy, sc, clock)
	if err != nil {
		return nil, err
	}
	limit := sc.TimeLimit
	if limit <= 0 {
		limit = time.Hour
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The run's context, which the time limit (or the caller) ends; the
	// scheduler's, derived from it, package pool also ends when its Wait
	// returns.
	runCtx := ctx
	ctx, ledger := resilience.WithLedger(ctx, "estate scan")
	sched, ctx := newScheduler(ctx, r.strategy, sc, clock, caller.governor())

	n := sc.Workload.Calls
	var mu sync.Mutex
	lat := make([]time.Duration, n)
	ok := make([]bool, n)
	started := make([]bool, n)
	ended := make([]bool, n) // before the run was cut
	keyOf := make([]string, n)
	scopeDone := map[string]time.Duration{}
	var last time.Duration
	cut := false // a call ended by the time limit (or ctx), under mu

	// do makes one logical call, and records it unless the pool's
	// admission sent its task back before anything was sent (the task
	// runs again).
	do := func(ctx context.Context, key string, scope resilience.Scope, id int) error {
		t0 := clock.Now()
		sent := 0
		err := caller.call(context.WithValue(ctx, callKey{}, id), key, scope, func(ctx context.Context) error {
			a := sent
			sent++
			return prov.Request(ctx, key, id, a)
		})
		var ww *resilience.WouldWaitError
		if sent == 0 && errors.As(err, &ww) {
			return err
		}
		end := clock.Now()
		good := err == nil && ctx.Err() == nil
		t := end.Sub(start)
		mu.Lock()
		started[id], ok[id], lat[id], keyOf[id] = true, good, end.Sub(t0), key
		if ctx.Err() == nil {
			ended[id] = true
			scopeDone[key] = max(scopeDone[key], t)
			last = max(last, t)
		} else {
			cut = true
		}
		mu.Unlock()
		if ctx.Err() == nil {
			rec.call(t, good)
		}
		r.done.Add(1)
		return err
	}
	detail := func(l *listing, id int) func(context.Context) error {
		return func(ctx context.Context) error { return do(ctx, l.detail, l.detailScope, id) }
	}
	list := func(l *listing) func(context.Context) error {
		return func(ctx context.Context) error {
			for pg := range l.pages {
				if err := do(ctx, l.key, l.scope, l.id0+pg); err != nil {
					return err // the rest of the listing is never made: lost
				}
				for i := pg * l.pageSize; i < min(l.items, (pg+1)*l.pageSize); i++ {
					sched.Go(ctx, l.detailScope, detail(l, l.id0+l.pages+i))
				}
			}
			return nil
		}
	}
	ls := e.listings()
	// Every call's scope, for the calls the run never starts too (lost
	// with the rest of their scope's).
	for _, l := range ls {
		for pg := range l.pages {
			keyOf[l.id0+pg] = l.key
		}
		for i := range l.items {
			keyOf[l.id0+l.pages+i] = l.detail
		}
	}
	if r.strategy == Shuffle || r.strategy == RandomQueue {
		// CloudQuery shuffles its (table, client) pairs with a fixed seed.
		rng := rand.New(rand.NewPCG(sc.Seed, 7))
		rng.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
	}
	for i := range ls {
		sched.Go(ctx, ls[i].scope, list(&ls[i]))
	}

	stop := r.sample(runCtx, clock, start, limit, rec, caller.rate, cancel)
	sched.Wait()
	cutAt := stop()

	res := &Result{
		Strategy:  r.strategy,
		Calls:     n,
		Makespan:  last,
		Ideal:     sc.IdealMakespan(),
		Aborted:   runCtx.Err() != nil && (r.done.Load() < int64(n) || cut),
		ScopeDone: scopeDone,
		Affected:  e.Affected,
		InLedger:  ledger.Lost(),
	}
	var done []time.Duration
	for i := 0; i < n; i++ {
		if ok[i] {
			res.Succeeded++
		} else if keyOf[i] == e.Affected && e.Affected != "" {
			res.LostAffected++
		}
		if keyOf[i] == e.Affected && e.Affected != "" {
			res.AffectedTime += lat[i]
		} else if res.Aborted && !ended[i] {
			res.UnaffectedCut = true
		}
		if started[i] {
			done = append(done, lat[i])
		}
	}
	res.finish(sc, cutAt, done, rec)
	res.Unused, res.Overflowed = prov.left(res.Makespan)
	return res, nil
}

// estateCaller makes an estate's calls: through the governor (Do), or
// through the AWS SDK's adaptive retry mode.
type estateCaller interface {
	call(ctx context.Context, key string, scope resilience.Scope, attempt func(context.Context) error) error
	// rate returns the client's rate limit summed over the scopes, or NaN.
	rate() float64
	// governor returns the governor the calls go through, or nil.
	governor() *resilience.Governor
}

func newEstateCaller(strategy string, sc *Scenario, clock Clock) (estateCaller, error) {
	switch strategy {
	case PlainAdaptive:
		return &sdkCaller{clients: map[string]*awsStrategy{}}, nil
	case Plain, Shuffle, RandomQueue, PoolAIMD:
		gs, err := newGovernorStrategy(sc, clock, controllerAIMD)
		return (*govCaller)(gs), err
	case PoolGoodput:
		gs, err := newGovernorStrategy(sc, clock, controllerGoodput)
		return (*govCaller)(gs), err
	case PoolOracle:
		known := *sc
		known.Governor = sc.Estate.oracleConfig(sc.Governor)
		gs, err := newGovernorStrategy(&known, clock, controllerAIMD)
		return (*govCaller)(gs), err
	}
	return nil, fmt.Errorf("unknown estate strategy %q", strategy)
}

// govCaller makes every call with resilience.Do on the run's governor.
type govCaller governorStrategy

func (c *govCaller) call(ctx context.Context, _ string, scope resilience.Scope, attempt func(context.Context) error) error {
	return resilience.Do(ctx, scope, attempt, resilience.WithGovernor(c.g))
}

func (c *govCaller) rate() float64                  { return (*governorStrategy)(c).Rate() }
func (c *govCaller) governor() *resilience.Governor { return c.g }

// sdkCaller makes every call through the AWS SDK's retry middleware in
// adaptive mode, one retryer per client (account, region, service) as one
// SDK client per service and region of an account would have.
type sdkCaller struct {
	mu      sync.Mutex
	clients map[string]*awsStrategy
}

func (c *sdkCaller) call(ctx context.Context, key string, scope resilience.Scope, attempt func(context.Context) error) error {
	client := scope.Account + "/" + scope.Region + "/" + scope.Service
	c.mu.Lock()
	s := c.clients[client]
	if s == nil {
		s = newAWSStrategy(retry.NewAdaptiveMode())
		c.clients[client] = s
	}
	c.mu.Unlock()
	return s.Call(ctx, key, attempt)
}

func (c *sdkCaller) rate() float64                  { return math.NaN() }
func (c *sdkCaller) governor() *resilience.Governor { return nil }

// scheduler runs an estate's tasks on its workers. Go queues a task whose
// first call is to scope (tasks may call it); Wait runs the tasks queued
// and every task they queue, and returns when all are done or the
// context given to newScheduler is.
type scheduler interface {
	Go(ctx context.Context, scope resilience.Scope, fn func(context.Context) error)
	Wait()
}

// newScheduler returns the strategy's scheduler, and the context its tasks
// should derive from.
func newScheduler(ctx context.Context, strategy string, sc *Scenario, clock Clock, g *resilience.Governor) (scheduler, context.Context) {
	w := sc.Workload.Workers
	switch strategy {
	case PoolAIMD, PoolGoodput, PoolOracle:
		p, pctx := pool.New(ctx, pool.Workers(w), pool.WithGovernor(g))
		return poolScheduler{p}, pctx
	case Shuffle:
		return newQueueScheduler(ctx, clock, w, takeNewest, nil), ctx
	case RandomQueue:
		return newQueueScheduler(ctx, clock, w, takeRandom, rand.New(rand.NewPCG(sc.Seed, 11))), ctx
	}
	return newQueueScheduler(ctx, clock, w, takeOldest, nil), ctx
}

// poolScheduler is package pool.
type poolScheduler struct{ p *pool.Pool }

func (s poolScheduler) Go(ctx context.Context, scope resilience.Scope, fn func(context.Context) error) {
	s.p.Go(ctx, scope, fn)
}

func (s poolScheduler) Wait() { _ = s.p.Wait() } // the errors are the lost calls, counted by the run

// take says which queued task a worker of a queueScheduler takes.
type take uint8

const (
	takeOldest take = iota // first in, first out: a plain pool
	takeNewest             // last in, first out: depth first
	takeRandom             // any, at random
)

// queueScheduler is W workers over one queue of tasks, whatever their
// scope: a worker takes a task and runs it, waiting inside it for its
// scope's tokens or pauses.
type queueScheduler struct {
	ctx     context.Context
	clock   Clock
	workers int
	take    take
	rng     *rand.Rand // takeRandom's, under mu

	mu      sync.Mutex
	tasks   []qtask
	head    int // takeOldest: the first task still queued
	running int
	changed chan struct{} // closed at every change, then replaced
}

type qtask struct {
	ctx context.Context
	fn  func(context.Context) error
}

func newQueueScheduler(ctx context.Context, clock Clock, workers int, t take, rng *rand.Rand) *queueScheduler {
	return &queueScheduler{ctx: ctx, clock: clock, workers: max(1, workers), take: t, rng: rng, changed: make(chan struct{})}
}

func (s *queueScheduler) Go(ctx context.Context, _ resilience.Scope, fn func(context.Context) error) {
	s.mu.Lock()
	s.tasks = append(s.tasks, qtask{ctx, fn})
	s.signal()
	s.mu.Unlock()
}

// signal wakes the idle workers. s.mu is held.
func (s *queueScheduler) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// next returns the next task to run, or false when nothing is queued and
// nothing runs that could queue more, or the context is done. s.mu is
// held.
func (s *queueScheduler) next() (qtask, bool) {
	for {
		if s.ctx.Err() != nil {
			return qtask{}, false
		}
		if q := len(s.tasks) - s.head; q > 0 {
			var t qtask
			switch s.take {
			case takeOldest:
				t, s.tasks[s.head] = s.tasks[s.head], qtask{}
				if s.head++; s.head == len(s.tasks) {
					s.tasks, s.head = s.tasks[:0], 0
				}
			case takeNewest:
				t = s.tasks[len(s.tasks)-1]
				s.tasks = s.tasks[:len(s.tasks)-1]
			case takeRandom:
				i := s.rng.IntN(q)
				t = s.tasks[i]
				s.tasks[i] = s.tasks[len(s.tasks)-1]
				s.tasks = s.tasks[:len(s.tasks)-1]
			}
			s.running++
			return t, true
		}
		if s.running == 0 {
			return qtask{}, false
		}
		changed := s.changed
		s.mu.Unlock()
		<-changed
		s.mu.Lock()
	}
}

func (s *queueScheduler) Wait() {
	stop := context.AfterFunc(s.ctx, func() {
		s.mu.Lock()
		s.signal()
		s.mu.Unlock()
	})
	defer stop()
	var wg sync.WaitGroup
	for w := range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Workers start a microsecond apart, in order, as in the other
			// scenarios: a virtual-time run then depends less on the
			// scheduler.
			if s.clock.Sleep(s.ctx, time.Duration(w)*time.Microsecond) != nil {
				return
			}
			for {
				s.mu.Lock()
				t, ok := s.next()
				s.mu.Unlock()
				if !ok {
					return
				}
				_ = t.fn(t.ctx)
				s.mu.Lock()
				s.running--
				s.signal()
				s.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}
