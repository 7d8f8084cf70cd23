package sim

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Result holds the figures of one strategy's run of a scenario. Execute
// returns a new one, which nothing changes after: several goroutines may
// read it at once, as long as none changes it. The zero Result is a run
// of no calls, whose RejectedShare, Efficiency and Goodput are 0.
type Result struct {
	Strategy string

	Calls     int // logical calls of the workload
	Succeeded int
	Lost      int // failed after all retries (or unfinished at the time limit)
	Aborted   bool

	Attempts  int // requests the provider received
	Throttled int // requests it rejected (throttling)
	Failed    int // requests that failed with a 5xx (transient or outage)

	Makespan time.Duration // until the last call ended
	Ideal    time.Duration // IdealMakespan of the scenario
	Capacity float64       // Scenario.Capacity over the makespan

	// What the provider's buckets did not serve: Unused is the tokens
	// they held when the run ended (capacity left behind: a client that
	// tracked the limit closely ends with its buckets nearly empty), and
	// Overflowed the refill they lost while full. Summed over the
	// buckets. In a scenario without outages, pauses, dead operations or
	// transient errors, Capacity - Succeeded = Unused + Overflowed, so
	// they say where a strategy's goodput below 100% went.
	Unused, Overflowed float64

	P50, P99 time.Duration // latency of a logical call, waits and retries included

	// Series has one sample per second of the run.
	Series []Sample

	// An estate's figures (zero in the other scenarios).
	//
	// ScopeDone is when the last call of each scope (by key) ended, lost
	// or not.
	ScopeDone map[string]time.Duration
	// Affected is the key of the scope the scenario pauses or kills, ""
	// for none; LostAffected counts the calls of it that were lost.
	Affected     string
	LostAffected int
	// AffectedTime is the time the calls of that scope took, waits and
	// retries included, summed: the worker time it held.
	AffectedTime time.Duration
	// UnaffectedCut says that the run was cut (Aborted) before every
	// call of the scopes it does not pause or kill had ended: Unaffected
	// is then the time it was cut, by which they were not done, and the
	// table prints it after a '>', as it does the makespan.
	UnaffectedCut bool
	// InLedger counts the calls the scan's resilience.Ledger recorded as
	// lost (given up, skipped, failed, refused, cancelled, errored,
	// panicked or denied): for the governed strategies, every lost call
	// should be there.
	InLedger int
}

// DoneExcept returns when the last call of every scope but except ended:
// for an estate run, when the scopes a pause or a dead operation does not
// touch were done.
func (r *Result) DoneExcept(except string) time.Duration {
	var last time.Duration
	for k, d := range r.ScopeDone {
		if k != except {
			last = max(last, d)
		}
	}
	return last
}

// Unaffected returns when the last call of a scope the scenario does not
// pause or kill ended (DoneExcept of Affected), or, when the run was cut
// before they all had (UnaffectedCut), the time it was cut (Makespan).
func (r *Result) Unaffected() time.Duration {
	if r.UnaffectedCut {
		return r.Makespan
	}
	return r.DoneExcept(r.Affected)
}

// Sample is one second of a run, a plain value that several goroutines
// may read at once while none changes it. The zero Sample is a second in
// which nothing was sent or ended, under a rate limit of 0: a second of a
// run whose strategy exposes no rate has a Rate of NaN instead.
type Sample struct {
	Sent      int     // requests sent in the second
	OK        int     // of which succeeded
	Throttled int     // of which were rejected
	Failed    int     // of which failed with a 5xx
	Done      int     // calls that ended in the second with a success
	Lost      int     // calls that ended in the second with an error
	Rate      float64 // the client's rate limit at the start of the second, summed over the actions; NaN when the strategy has none it exposes
}

// RejectedShare is the share of requests the provider rejected.
func (r *Result) RejectedShare() float64 {
	if r.Attempts == 0 {
		return 0
	}
	return float64(r.Throttled) / float64(r.Attempts)
}

// Efficiency is the ideal makespan over the makespan.
func (r *Result) Efficiency() float64 {
	if r.Makespan <= 0 {
		return 0
	}
	return float64(r.Ideal) / float64(r.Makespan)
}

// Goodput is the successful calls as a fraction of the true capacity: of
// the calls the provider could have served over the makespan (its bursts
// and its refill net of the second tenant; Scenario.Capacity), the share
// that succeeded.
func (r *Result) Goodput() float64 {
	if r.Capacity <= 0 {
		return 0
	}
	return float64(r.Succeeded) / r.Capacity
}

// recorder collects what happens in a run, per second of simulated time.
type recorder struct {
	mu      sync.Mutex
	samples []Sample
}

func (r *recorder) bin(t time.Duration) *Sample {
	i := max(0, int(t/time.Second))
	for len(r.samples) <= i {
		r.samples = append(r.samples, Sample{Rate: math.NaN()})
	}
	return &r.samples[i]
}

func (r *recorder) attempt(t time.Duration, o Outcome) {
	r.mu.Lock()
	s := r.bin(t)
	s.Sent++
	switch o {
	case OK:
		s.OK++
	case Throttled:
		s.Throttled++
	case Failed:
		s.Failed++
	}
	r.mu.Unlock()
}

// call records a logical call that ended at t.
func (r *recorder) call(t time.Duration, ok bool) {
	r.mu.Lock()
	if s := r.bin(t); ok {
		s.Done++
	} else {
		s.Lost++
	}
	r.mu.Unlock()
}

func (r *recorder) rate(t time.Duration, v float64) {
	r.mu.Lock()
	r.bin(t).Rate = v
	r.mu.Unlock()
}

// Run is one strategy's run of a scenario, in progress or done: make one
// with NewRun and Execute it once: a second Execute returns
// ErrRunExecuted (an Execute that Scenario.Validate refused ran nothing,
// and does not count). Progress and Strategy may be called from any
// goroutine while Execute runs. The zero Run has no scenario: its Execute
// panics, saying so.
type Run struct {
	sc       *Scenario
	strategy string
	executed atomic.Bool // Execute was called
	done     atomic.Int64
	elapsed  atomic.Int64 // simulated time of the last progress sample
}

// ErrRunExecuted is the error of a second Execute of one Run, which runs
// nothing: a Run counts the calls of one run (Progress). An Execute that
// Scenario.Validate refused is not the first.
var ErrRunExecuted = errors.New("sim: the Run was executed already: make another with NewRun")

// NewRun prepares a run of strategy on sc.
func NewRun(sc *Scenario, strategy string) *Run { return &Run{sc: sc, strategy: strategy} }

// Progress returns the calls finished so far and the simulated time.
func (r *Run) Progress() (done int, elapsed time.Duration) {
	return int(r.done.Load()), time.Duration(r.elapsed.Load())
}

// Strategy returns the strategy's name.
func (r *Run) Strategy() string { return r.strategy }

// Execute runs the workload on clock and returns the figures; a run that
// the time limit or ctx ends before it is done is Aborted there, its
// makespan the time it was cut. Inside a testing/synctest bubble, with
// SystemClock, it runs in virtual time. The AWS SDK reads time through its
// own package variables: with any clock but SystemClock, install the clock
// with UseSDKClock first. A scenario that Scenario.Validate refuses is
// not run: Execute returns Validate's *Error, naming the key.
func (r *Run) Execute(ctx context.Context, clock Clock) (*Result, error) {
	if r.sc == nil {
		panic("sim: Execute of a Run without a scenario: make one with NewRun")
	}
	if err := r.sc.Validate(); err != nil {
		return nil, err // nothing ran: the Run may execute once its scenario is mended
	}
	if r.executed.Swap(true) {
		return nil, ErrRunExecuted
	}
	if r.sc.Estate != nil {
		return r.executeEstate(ctx, clock)
	}
	sc := r.sc
	start := clock.Now()
	rec := &recorder{}
	prov := newProvider(&sc.Provider, sc.Workload.Actions, clock, start, sc.Seed, rec)
	strat, err := newStrategy(r.strategy, sc, clock)
	if err != nil {
		return nil, err
	}
	limit := sc.TimeLimit
	if limit <= 0 {
		limit = time.Hour
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	n := sc.Workload.Calls
	lat := make([]time.Duration, n)
	ok := make([]bool, n)
	started := make([]bool, n)
	var last atomic.Int64
	var next atomic.Int64
	var cut atomic.Bool // a call ended by the time limit (or ctx)
	var wg sync.WaitGroup
	for w := 0; w < sc.Workload.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Workers start a microsecond apart, in order: goroutines
			// started together run in the scheduler's order, which would
			// make a virtual-time run depend on it.
			if clock.Sleep(ctx, time.Duration(w)*time.Microsecond) != nil {
				return
			}
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				action := sc.Workload.Actions[i%len(sc.Workload.Actions)]
				started[i] = true
				t0 := clock.Now()
				attempt := 0
				// The call's index rides in its context for the SDK's sleeps
				// (sdkWake).
				err := strat.Call(context.WithValue(ctx, callKey{}, i), action, func(ctx context.Context) error {
					a := attempt
					attempt++
					return prov.Request(ctx, action, i, a)
				})
				end := clock.Now()
				lat[i] = end.Sub(t0)
				ok[i] = err == nil && ctx.Err() == nil
				if ctx.Err() == nil {
					rec.call(end.Sub(start), ok[i])
				} else {
					cut.Store(true)
				}
				for {
					l := last.Load()
					e := int64(end.Sub(start))
					if e <= l || last.CompareAndSwap(l, e) {
						break
					}
				}
				r.done.Add(1)
			}
		}()
	}

	stop := r.sample(ctx, clock, start, limit, rec, strat.Rate, cancel)
	wg.Wait()
	cutAt := stop()
	strat.Close()

	res := &Result{
		Strategy: r.strategy,
		Calls:    n,
		Makespan: time.Duration(last.Load()),
		Ideal:    sc.IdealMakespan(),
		// Aborted: calls were never started, or were cut (their ends
		// count in done).
		Aborted: ctx.Err() != nil && (r.done.Load() < int64(n) || cut.Load()),
	}
	var done []time.Duration
	for i := 0; i < n; i++ {
		if ok[i] {
			res.Succeeded++
		}
		if started[i] {
			done = append(done, lat[i])
		}
	}
	res.finish(sc, cutAt, done, rec)
	res.Unused, res.Overflowed = prov.left(res.Makespan)
	return res, nil
}

// finish completes a run's result from its calls' outcomes (Calls and
// Succeeded set): the calls lost, the time the run was cut (cutAt: the
// time limit, or when its context ended) as the makespan of an aborted
// run, the capacity the provider offered, the latency quantiles of
// the calls that started (done, in any order), and the recorder's series
// with the attempts, throttles and failures they add up to.
func (res *Result) finish(sc *Scenario, cutAt time.Duration, done []time.Duration, rec *recorder) {
	res.Lost = res.Calls - res.Succeeded
	if res.Aborted {
		res.Makespan = cutAt
	}
	res.Capacity = sc.Capacity(res.Makespan)
	slices.Sort(done)
	res.P50, res.P99 = quantile(done, 0.50), quantile(done, 0.99)
	rec.mu.Lock()
	res.Series = slices.Clone(rec.samples)
	rec.mu.Unlock()
	for _, s := range res.Series {
		res.Attempts += s.Sent
		res.Throttled += s.Throttled
		res.Failed += s.Failed
	}
}

// sample starts the sampler, which records the client's rate once a
// second and enforces the time limit (calling cancel); stop ends it and
// returns when the run was cut: at the time limit, or when ctx ended
// before it (the limit if neither came).
func (r *Run) sample(ctx context.Context, clock Clock, start time.Time, limit time.Duration, rec *recorder, rate func() float64, cancel func()) (stop func() (cutAt time.Duration)) {
	sctx, stopCtx := context.WithCancel(ctx)
	sampled := make(chan struct{})
	cutAt := limit
	// sleep waits until at of the run; false when the run ended first,
	// noting when ctx did if it was ctx.
	sleep := func(at time.Duration) bool {
		if clock.Sleep(sctx, start.Add(at).Sub(clock.Now())) == nil {
			return true
		}
		if ctx.Err() != nil {
			cutAt = min(limit, clock.Now().Sub(start))
		}
		return false
	}
	go func() {
		defer close(sampled)
		for t := time.Duration(0); ; t += time.Second {
			now := clock.Now().Sub(start)
			r.elapsed.Store(int64(now))
			rec.rate(t, rate())
			if now >= limit {
				cancel()
				return
			}
			// The limit ends the run when it falls, which may be
			// within the second.
			if limit < t+time.Second {
				if !sleep(limit) {
					return
				}
				r.elapsed.Store(int64(clock.Now().Sub(start)))
				cancel()
				return
			}
			if !sleep(t + time.Second) {
				return
			}
		}
	}()
	return func() time.Duration {
		stopCtx()
		<-sampled
		return cutAt
	}
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
