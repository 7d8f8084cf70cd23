//go:build go1.25

package pool

// The stateful model test of the Pool: random sequences of steps against
// one pool (1 to 4 workers, a max wait of 0 or a little) over a real
// resilience.Governor (four scopes at 1 to 5 rps, burst 1, sometimes a
// concurrency cap on their account, a breaker quick to open, calls that
// wait for their breakers' verdicts, scopes found dead in a second, and
// a store whose reads by the workers asking about a queue may take a
// while, as a fleet's store read across the network does), each
// sequence in its own testing/synctest bubble, so that minutes of virtual
// time pass in milliseconds. The steps: Go, of one task or a burst, of the
// four scopes or of the zero scope, whose functions make one governed
// call that succeeds, fails for good, is throttled with a Retry-After,
// panics inside it, or goes on after it; panic before any call; make two
// calls (a paginator); call another scope first; make no call; or submit
// tasks of their own (children drawn with them); time passing; a scope
// paused, a token and slot taken, or, rarely, the scope made dead (its
// breaker still closed) by calls outside the pool; Progress; and, rarely,
// a reset of the governor, the provider turned off or on or its
// account's concurrency cap changed (a Configure), or a cancel of the pool's parent context; and tasks
// given contexts of their own, maybe with a deadline, which a step
// cancels while they are queued or running (a task whose context is done
// when its turn comes is dropped, never run). Each task's function records
// its runs and returns in the model.
//
// After every step the bubble is let settle (synctest.Wait: every
// goroutine in it blocked on time or a channel) and machine.invariants
// hold, read from the pool's fields under p.mu: its counters are the
// model's (submitted = queued + running + done + failed + dropped, per
// scope too, a deferred run counted once); no more than the limit run;
// no task runs twice at once or ends twice; the ring, the parked heap,
// the slots and each queue's where agree (checkStructure); and the pool
// is live and work-conserving: ready work waits in turn only while every
// worker is busy, a parked queue's wake-up is armed by its time, a
// slotted one has a recheck or a task whose end rechecks it. Each
// sequence ends with Wait (from one or two goroutines), which must return
// in virtual time as the last task ends, with no worker left, every task
// ended or dropped once (a dropped one recorded as cancelled in its
// ledger), and the failed tasks' errors and the stop's cause joined; Go
// after it panics; and the bubble fails the sequence if a goroutine of the
// pool is left behind.
//
// CI runs modelChecks sequences of about modelSteps steps. A long soak:
//
//	go test -race -count=1 -timeout 0 -run '^TestModel$' ./pool/ -rapid.checks=5000
//
// A failure prints rapid's seed and the shrunk sequence of steps, which
// -rapid.seed (or the fail file rapid writes under testdata/rapid)
// replays: the steps and the virtual clock are the seed's, but goroutines
// runnable at the same instant run in the scheduler's order (the race
// detector shuffles it), so a failure that depends on that order may not
// replay every time (rapid then says the test is flaky, and prints the
// original failure). A goroutine spinning at one instant of the bubble's
// clock stops virtual time and would hang the run: the watchdog then ends
// the process with the sequence's steps. The TestRegress tests are the
// sequences found so far.
//
// The test is white-box: it reads the pool's fields under p.mu, and finds
// the *task a run belongs to through the admission context the pool gives
// it (taskOf).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/internal/childtest"
	"github.com/cloudg/cloudg/internal/modeltest"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// The budget of a run unless -rapid.checks and -rapid.steps say
// otherwise: about 10 s with -race on two cores.
const (
	modelChecks = 1000
	modelSteps  = 100
)

// waitBound is the virtual time Wait is given at the end of a sequence.
const waitBound = 24 * time.Hour

func TestModel(t *testing.T) {
	modeltest.Budget(t, modelChecks, modelSteps)
	reached.Reset()
	defer reached.Log(t)
	defer watch.Start("TestModel", time.Minute)()
	rapid.Check(t, func(rt *rapid.T) {
		rapid.SyncTest(rt, func(rt *rapid.T) {
			m := newMachine(rt)
			rt.Cleanup(m.abandon)
			rt.Repeat(m.actions())
			m.end(rt)
		})
	})
}

// reached tallies what the sequences of a run reached; go test -v logs it.
var reached modeltest.Tally

func reach(what string) { reached.Add(what) }

// watch records the steps of the sequence running, for the watchdog.
var watch modeltest.Watch

// step records the step a sequence takes.
func step(format string, args ...any) { watch.Step(format, args...) }

// ---- what a task does ----

// kind is what a task's function does.
type kind uint8

const (
	kOK           kind = iota // one call, answered after its latency
	kFatal                    // one call, answered AccessDenied: the task fails
	kThrottle                 // one attempt, throttled with a Retry-After: the scope is paused, the task fails
	kThrottleOnce             // throttled with a Retry-After, then answered on its retry
	kPanicBefore              // panics before any call
	kPanicIn                  // panics inside its call (sent)
	kSpawn                    // one call, then submits its children (zero scope: the children only)
	kNoCall                   // no governed call: sleeps its latency, returns nil or an error
	kPages                    // two calls, a paginator
	kOther                    // its first call is to another scope than its own
	kLinger                   // one call, then sleeps its latency before it returns the call's error
	kWorkFirst                // sleeps its latency (local work), then one call: the hold ends first if it is long
	kSpawnFirst               // submits its children, then one call (a zero-scope child must not take its hold)
	kGoexit                   // calls runtime.Goexit before any call (t.FailNow in a task)
	numKinds
)

var kindNames = [...]string{"ok", "fatal", "throttle", "throttle-once", "panic-before", "panic-in", "spawn", "no-call", "pages", "other", "linger", "work-first", "spawn-first", "goexit"}

func (k kind) String() string { return kindNames[k] }

// zeroKinds are the kinds of a zero-scope task: it calls nothing.
var zeroKinds = []kind{kSpawn, kNoCall, kPanicBefore, kGoexit}

// spec is a task's function, drawn when it is submitted.
type spec struct {
	kind     kind
	latency  time.Duration // each call's (kNoCall: its sleep)
	after    time.Duration // kThrottle, kThrottleOnce: the Retry-After
	fail     bool          // kNoCall: returns an error
	other    int           // kOther: the scope it calls
	children []child       // kSpawn
}

type child struct {
	scope int
	spec  *spec
}

func (s *spec) String() string {
	var b strings.Builder
	b.WriteString(s.kind.String())
	switch s.kind {
	case kOK, kPages, kSpawn, kNoCall, kThrottleOnce, kOther, kPanicIn, kLinger, kWorkFirst, kSpawnFirst:
		fmt.Fprintf(&b, "/%v", s.latency)
	}
	if s.after > 0 {
		fmt.Fprintf(&b, " after %v", s.after)
	}
	if s.fail {
		b.WriteString(" fails")
	}
	if s.other != 0 {
		fmt.Fprintf(&b, " calls s%d", s.other)
	}
	if len(s.children) > 0 {
		b.WriteString(" [")
		for i, c := range s.children {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "s%d:%s", c.scope, c.spec)
		}
		b.WriteString("]")
	}
	return b.String()
}

// taskPanic is what task id panics with.
type taskPanic struct{ id int }

// apiErr answers of the model's calls.
func fatalErr() error { return &apiErr{code: "AccessDenied", status: 403} }

// ---- the model ----

// askStore is the memory store whose bucket reads made by the pool's
// workers asking about a queue (Pool.ask) take latency, in the bubble's
// virtual time, as a store read across the network does: the model's own
// reads (invariants, under the pool's lock) and the calls' are not slowed.
//
// The pool's answer is the state as of when it asked, a slowed read
// before it acts on it: a scope found dead then may be dead no more by
// the time its task runs (see enter). dead, given a bucket's key, tells
// whether it is the leaf bucket of a scope that is dead now, which a
// slowed read asks as it begins, in a goroutine of its own (not slowed:
// not called from Pool.ask); the answer is kept by the key.
type askStore struct {
	state.Store
	latency time.Duration
	dead    func(key string) (dead, leaf bool)

	mu      sync.Mutex
	lastAsk time.Time            // when the last slowed read ended
	asked   map[string]askedRead // the last slowed read of each scope's leaf bucket
}

// askedRead is a slowed read of a scope's leaf bucket: when it began, and
// whether the scope was dead then.
type askedRead struct {
	at   time.Time
	dead bool
}

func (s *askStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return &askBucket{Bucket: bucket.New(spec, now), s: s, key: key}
}

// deadWhenAsked reports whether the last slowed read of the leaf bucket
// key found its scope dead as it began, no longer than the reads of one
// ask before now (an Inspect or a Survey reads the leaf bucket first,
// then the account's and the provider's).
func (s *askStore) deadWhenAsked(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.asked[key]
	return ok && r.dead && now.Sub(r.at) <= 3*s.latency
}

// askBucket is a bucket of an askStore.
type askBucket struct {
	*bucket.Bucket
	s   *askStore
	key string
}

func (b *askBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	if b.s.latency > 0 && askedByThePool() {
		if b.s.dead != nil {
			type verdict struct{ dead, leaf bool }
			c := make(chan verdict)
			go func() {
				dead, leaf := b.s.dead(b.key)
				c <- verdict{dead, leaf}
			}()
			if v := <-c; v.leaf {
				b.s.mu.Lock()
				if b.s.asked == nil {
					b.s.asked = map[string]askedRead{}
				}
				b.s.asked[b.key] = askedRead{time.Now(), v.dead}
				b.s.mu.Unlock()
			}
		}
		time.Sleep(b.s.latency)
		b.s.mu.Lock()
		b.s.lastAsk = time.Now()
		b.s.mu.Unlock()
	}
	return b.Bucket.Snapshot(now)
}

// lastAskEnd returns when the last read slowed by the store ended.
func (s *askStore) lastAskEnd() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastAsk
}

// askedByThePool reports whether its caller was called from Pool.ask.
func askedByThePool() bool {
	pc := make([]uintptr, 32)
	frames := runtime.CallersFrames(pc[:runtime.Callers(3, pc)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, ".(*Pool).ask") {
			return true
		}
		if !more {
			return false
		}
	}
}

// taskState is where the model has a task.
type taskState uint8

const (
	stQueued  taskState = iota // submitted (or deferred and put back), not running
	stRunning                  // its function runs
	stDone                     // returned nil
	stFailed                   // returned an error or panicked
	stDropped                  // the stopped pool will not run it
)

var stateNames = [...]string{"queued", "running", "done", "failed", "dropped"}

func (s taskState) String() string { return stateNames[s] }

// rec is the model's record of one task, kept by the task's own function.
type rec struct {
	id        int
	scope     int
	spec      *spec
	ledger    *resilience.Ledger
	state     taskState
	runs      int   // times its function was entered
	finals    int   // times it ended (returned for good, or dropped)
	err       error // the error it failed with (not a panic)
	panicked  bool
	atGo      bool                    // dropped by Go (counted in its scope's queue): the pool was stopped already
	ctx       context.Context         // the context it was submitted with
	cancel    context.CancelCauseFunc // its own context's cancel (goOwn), nil: none of its own
	stopTimer context.CancelFunc      // its own deadline's cancel (goOwn), called as the sequence ends
	notBefore time.Time               // deferred: when its scope may go, by the refusal
	resetsAt  int                     // the machine's resets when its function last started
	t         *task                   // the pool's task, found from its first run (not for the zero scope)
}

type recKey struct{}

// errStop is the cause the model cancels the pool's parent context with.
var errStop = errors.New("model: scan stopped")

// errTaskStop is the cause the model cancels a task's own context with
// (cancelTask).
var errTaskStop = errors.New("model: task cancelled")

// machine is one sequence's pool, governor and model.
type machine struct {
	gov     *resilience.Governor
	store   *askStore
	p       *Pool
	pctx    context.Context
	cancel  context.CancelCauseFunc
	limit   int
	maxWait time.Duration
	scopes  []resilience.Scope // 0: the zero scope
	desc    string

	outside sync.WaitGroup // calls made outside the pool
	over    bool           // the sequence ended: Wait returned

	mu         sync.Mutex // the records, written by the tasks
	tasks      []*rec
	active     int // functions running
	lastEnd    time.Time
	deferred   int // runs deferred and put back
	resets     int // reset steps so far
	cancelled  bool
	violations []string

	// The dying step's calls outside the pool, their answers throttled and
	// their outcomes open (ended as the sequence ends), and its settings.
	dyingCalls  []*resilience.Guard
	threshold   int
	deadSeconds float64
	cfg         resilience.Config // the configuration in force
}

const numScopes = 4 // besides the zero scope

func newMachine(rt *rapid.T) *machine {
	var st settings
	st.limit = rapid.IntRange(1, 4).Draw(rt, "workers")
	st.maxWait = rapid.SampledFrom([]time.Duration{0, 0, 100 * time.Millisecond, time.Second}).Draw(rt, "maxWait")
	st.maxConc = rapid.SampledFrom([]int{0, 0, 1, 2}).Draw(rt, "maxConcurrency")
	st.threshold = rapid.SampledFrom([]int{0, 2}).Draw(rt, "breakerThreshold")
	st.breakerWait = rapid.Bool().Draw(rt, "breakerWait")
	// A second: scopes whose throttled calls back off found dead while
	// their breakers are closed (Delay's ErrCircuitOpen, the cooldown).
	st.deadSeconds = rapid.SampledFrom([]float64{10, 1}).Draw(rt, "breakerDeadSeconds")
	st.rates = make([]float64, numScopes)
	for i := range numScopes {
		st.rates[i] = float64(rapid.IntRange(1, 5).Draw(rt, "rps"))
	}
	st.latency = rapid.SampledFrom([]time.Duration{0, 0, 5 * time.Millisecond, 50 * time.Millisecond, 300 * time.Millisecond}).Draw(rt, "storeLatency")
	m, err := buildMachine(st)
	if err != nil {
		rt.Fatal(err)
	}
	return m
}

// settings are what newMachine draws of a sequence's pool and governor.
type settings struct {
	limit       int           // the pool's workers
	maxWait     time.Duration // the pool's MaxWait
	maxConc     int           // the account's max_concurrency
	threshold   int           // breaker_threshold
	breakerWait bool          // breaker_wait
	deadSeconds float64       // breaker_dead_seconds
	rates       []float64     // the scopes' rps, numScopes of them
	latency     time.Duration // the store's reads by the pool's workers asking about a queue
}

// buildMachine makes the pool, governor and model of st.
func buildMachine(st settings) (*machine, error) {
	m := &machine{limit: st.limit, maxWait: st.maxWait}
	cfg := resilience.Config{}
	perOp := true
	cfg.AWS.Services = map[string]resilience.ServiceConfig{"svc": {MaxRPS: 5, Burst: 1, PerOperation: &perOp}}
	cfg.AWS.MaxConcurrency = st.maxConc
	cfg.AWS.BreakerThreshold = st.threshold
	cfg.AWS.BreakerCooldownSeconds = 5
	cfg.AWS.BreakerWait = st.breakerWait
	deadSeconds := st.deadSeconds
	cfg.AWS.BreakerDeadSeconds = &deadSeconds
	m.scopes = []resilience.Scope{{}}
	for i := range numScopes {
		op := "Op" + strconv.Itoa(i+1)
		cfg.AWS.Services["svc."+op] = resilience.ServiceConfig{MaxRPS: st.rates[i], Burst: 1}
		m.scopes = append(m.scopes, scope(op))
	}
	// The pool reads the governor's store with its lock released (Pool.ask):
	// a store read across the network takes a while, during which tasks
	// end, are submitted and refused, and other workers pick.
	m.store = &askStore{Store: resilience.MemoryStore(), latency: st.latency, dead: m.deadByKey}
	g, err := resilience.NewGovernor(cfg, resilience.WithRandom(rand.NewPCG(1, 2)), resilience.WithStateStore(m.store))
	if err != nil {
		return nil, err
	}
	m.gov = g
	m.cfg = cfg
	m.threshold, m.deadSeconds = cmp.Or(st.threshold, 5), st.deadSeconds
	parent, cancel := context.WithCancelCause(context.Background())
	m.cancel = cancel
	m.p, m.pctx = New(parent, Workers(m.limit), WithGovernor(g), MaxWait(m.maxWait))
	m.desc = fmt.Sprintf("workers %d, max wait %v, max concurrency %d, breaker threshold %d, breaker_wait %v, breaker_dead_seconds %v, rates %v, store latency %v", m.limit, m.maxWait, st.maxConc, st.threshold, st.breakerWait, st.deadSeconds, st.rates, st.latency)
	watch.Begin("new pool: %s", m.desc)
	return m, nil
}

func (m *machine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"":         m.check,
		"go":       m.goOne,
		"goOwn":    m.goOwn,
		"cancelT":  m.cancelTask,
		"goMany":   m.goMany,
		"sleep":    m.sleep,
		"pause":    m.pause,
		"outside":  m.outsideCall,
		"progress": m.progress,
		"cancel":   m.cancelPool,
		"reset":    m.reset,
		"dying":    m.dying,
		"toggle":   m.toggle,
		"recap":    m.recap,
	}
}

// violate records a broken invariant seen by a task; check fails on it.
// m.mu is held.
func (m *machine) violate(format string, args ...any) {
	m.violations = append(m.violations, fmt.Sprintf(format, args...))
}

// ---- drawing tasks ----

func (m *machine) drawScope(rt *rapid.T, label string) int {
	return rapid.IntRange(0, numScopes).Draw(rt, label)
}

func (m *machine) drawSpec(rt *rapid.T, sc, depth int, label string) *spec {
	var k kind
	if sc == 0 {
		k = rapid.SampledFrom(zeroKinds).Draw(rt, label+".kind")
	} else {
		k = kind(rapid.IntRange(0, int(numKinds)-1).Draw(rt, label+".kind"))
	}
	s := &spec{kind: k}
	s.latency = rapid.SampledFrom([]time.Duration{0, 10 * time.Millisecond, 200 * time.Millisecond, time.Second, 3 * time.Second}).Draw(rt, label+".latency")
	switch k {
	case kThrottle, kThrottleOnce:
		s.after = time.Duration(rapid.IntRange(1, 5).Draw(rt, label+".after")) * time.Second
	case kNoCall:
		s.fail = rapid.Bool().Draw(rt, label+".fail")
	case kOther:
		s.other = rapid.IntRange(1, numScopes).Draw(rt, label+".other")
	case kLinger:
		s.other = rapid.IntRange(0, numScopes).Draw(rt, label+".other") // 0: its own
	case kSpawn, kSpawnFirst:
		if depth < 2 {
			n := rapid.IntRange(0, 3).Draw(rt, label+".children")
			for i := range n {
				l := label + "." + strconv.Itoa(i)
				csc := m.drawScope(rt, l+".scope")
				s.children = append(s.children, child{csc, m.drawSpec(rt, csc, depth+1, l)})
			}
		}
	}
	return s
}

// submit submits a task of scope sc doing s, with a context derived from
// ctx carrying its own ledger and its record.
func (m *machine) submit(ctx context.Context, sc int, s *spec) {
	m.submitOwn(ctx, sc, s, false, 0)
}

// submitOwn is submit, the task's context given a cancel of its own when
// own says so (cancelTask cancels it), and a deadline timeout from now
// when timeout is not 0.
func (m *machine) submitOwn(ctx context.Context, sc int, s *spec, own bool, timeout time.Duration) {
	m.mu.Lock()
	r := &rec{id: len(m.tasks), scope: sc, spec: s}
	m.tasks = append(m.tasks, r)
	if own {
		ctx, r.cancel = context.WithCancelCause(ctx)
	}
	if timeout != 0 {
		ctx, r.stopTimer = context.WithTimeout(ctx, timeout)
	}
	ctx, r.ledger = resilience.WithLedger(ctx, "task "+strconv.Itoa(r.id))
	ctx = context.WithValue(ctx, recKey{}, r)
	r.ctx = ctx
	if m.pctx.Err() != nil {
		// The pool is stopped: Go drops it.
		r.state, r.atGo = stDropped, true
		r.finals++
	}
	m.mu.Unlock()
	m.p.Go(ctx, m.scopes[sc], m.fn(r))
}

// fn is task r's function: it does what r.spec says, and records its runs
// and returns in r.
func (m *machine) fn(r *rec) func(context.Context) error {
	return func(ctx context.Context) error {
		m.enter(r, ctx)
		s := r.spec
		own := m.scopes[r.scope]
		// until is when the scope may go by its first call's refusal
		// before sending (zero: not refused), whose wait counts from the
		// refusal (0: a slot, unknown).
		first, until := true, time.Time{}
		do := func(sc resilience.Scope, f func(context.Context) error, opts ...resilience.CallOption) error {
			err := resilience.Do(ctx, sc, f, append([]resilience.CallOption{resilience.WithGovernor(m.gov)}, opts...)...)
			if first {
				// The first call under the admission: ErrDeferred says it
				// was refused before anything was sent, and that the pool
				// runs the task again (the pool's count of deferred runs
				// is checked against the tasks' count of these).
				first = false
				if ww := (*resilience.WouldWaitError)(nil); errors.Is(err, resilience.ErrDeferred) && errors.As(err, &ww) {
					until = time.Now().Add(ww.Wait)
				}
			}
			return err
		}
		answer := func(context.Context) error {
			time.Sleep(s.latency)
			return nil
		}
		var err error
		switch s.kind {
		case kOK:
			err = do(own, answer)
		case kFatal:
			err = do(own, func(context.Context) error { return fatalErr() })
		case kThrottle:
			err = do(own, func(context.Context) error { return throttleAfter(s.after) },
				resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		case kThrottleOnce:
			attempts := 0
			err = do(own, func(ctx context.Context) error {
				if attempts++; attempts == 1 {
					return throttleAfter(s.after)
				}
				return answer(ctx)
			})
		case kPanicBefore:
			m.leave(r, nil, time.Time{}, true)
			panic(taskPanic{r.id})
		case kPanicIn:
			err = do(own, func(context.Context) error {
				time.Sleep(s.latency)
				m.leave(r, nil, time.Time{}, true)
				panic(taskPanic{r.id})
			})
		case kSpawn:
			if r.scope != 0 {
				err = do(own, answer)
			}
			if err == nil {
				for _, c := range s.children {
					m.submit(ctx, c.scope, c.spec)
				}
			}
		case kWorkFirst:
			time.Sleep(s.latency)
			err = do(own, answer)
		case kSpawnFirst:
			for _, c := range s.children {
				m.submit(ctx, c.scope, c.spec)
			}
			err = do(own, answer)
		case kGoexit:
			m.leave(r, ErrGoexit, time.Time{}, false)
			runtime.Goexit()
		case kNoCall:
			time.Sleep(s.latency)
			if s.fail {
				err = fmt.Errorf("task %d failed without a call", r.id)
			}
		case kPages:
			if err = do(own, answer); err == nil {
				err = do(own, answer)
			}
		case kOther:
			if err = do(m.scopes[s.other], answer); err == nil {
				err = do(own, answer)
			}
		case kLinger:
			// Still running after its first call was decided (or
			// deferred): its queue may move meanwhile, and the pool be
			// stopped.
			sc := own
			if s.other != 0 {
				sc = m.scopes[s.other]
			}
			err = do(sc, func(context.Context) error { return nil })
			time.Sleep(s.latency)
		}
		m.leave(r, err, until, false)
		return err
	}
}

// enter records that r's function starts.
func (m *machine) enter(r *rec, ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r.runs++
	r.resetsAt = m.resets
	if r.state != stQueued {
		m.violate("task %d (%s) started while %s", r.id, r.spec, r.state)
	}
	if m.pctx.Err() != nil {
		m.violate("task %d (%s) started after the pool was stopped", r.id, r.spec)
	}
	if errors.Is(context.Cause(r.ctx), errTaskStop) {
		// Cancelled at a step, the bubble settled: the pool drops it when
		// its turn comes, and does not run it.
		m.violate("task %d (%s) started after its context was cancelled", r.id, r.spec)
	}
	if dl, ok := r.ctx.Deadline(); ok && !time.Now().Before(dl) {
		// A task whose turn comes at its deadline is dropped, not run.
		m.violate("task %d (%s) started %v after its deadline", r.id, r.spec, time.Since(dl))
	}
	if now := time.Now(); now.Before(r.notBefore) && !m.dead(r.scope) {
		// Not before the refusal's wait: unless its scope is dead since
		// (its breaker open), and the task fails fast; dead now, or when
		// the pool asked about it, its answer the state as of then, a
		// store read earlier (a scope found dead with its breaker closed
		// is dead no more once its last failure is half of
		// breaker_dead_seconds old, which may come while the store
		// answers).
		if m.store.deadWhenAsked(m.scopes[r.scope].Key(), now) {
			reach("enter: a scope found dead when asked, dead no more")
		} else {
			m.violate("task %d (%s) runs again %v before the wait its refusal gave", r.id, r.spec, r.notBefore.Sub(now))
		}
	}
	r.state = stRunning
	if m.active++; m.active > m.limit {
		m.violate("%d tasks run at once, over the limit %d", m.active, m.limit)
	}
	if r.scope == 0 {
		return
	}
	t := taskOf(ctx)
	switch {
	case t == nil:
		m.violate("task %d (%s): its run's context holds no admission of a *task", r.id, r.spec)
	case r.t != nil && r.t != t:
		m.violate("task %d (%s) runs again as another *task", r.id, r.spec)
	case t.ctx.Value(recKey{}) != r:
		m.violate("task %d (%s) runs with another task's context", r.id, r.spec)
	}
	r.t = t
}

// dead reports whether scope sc's breaker is open, or the scope was found
// dead with its breaker closed (the next call's admission opens it): its
// calls are refused at once.
func (m *machine) dead(sc int) bool {
	switch m.gov.Inspect(m.scopes[sc]).Breaker.State {
	case state.Open:
		return true
	case state.Closed:
		if _, why := m.gov.Delay(m.scopes[sc]); errors.Is(why, resilience.ErrCircuitOpen) {
			reach("enter: a scope found dead, its breaker closed")
			return true
		}
	}
	return false
}

// deadByKey reports whether key is the leaf bucket of one of the model's
// scopes (leaf), and whether that scope is dead now (see dead).
func (m *machine) deadByKey(key string) (dead, leaf bool) {
	for sc := 1; sc < len(m.scopes); sc++ {
		if m.scopes[sc].Key() == key {
			return m.dead(sc), true
		}
	}
	return false, false
}

// leave records that r's function ends: err is what it returns, until
// when its scope may go by its first call's refusal before sending (zero:
// it was not refused), panicked whether it panics.
func (m *machine) leave(r *rec, err error, until time.Time, panicked bool) {
	deferred := !until.IsZero()
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.state != stRunning {
		m.violate("task %d (%s) returned while %s", r.id, r.spec, r.state)
	}
	m.active--
	m.lastEnd = time.Now()
	switch {
	case panicked:
		r.state, r.panicked = stFailed, true
		reach("end: panic")
	case deferred && m.pctx.Err() == nil:
		// The pool runs it again once its scope may go: not before,
		// unless the governor was reset since the task started (its
		// refusal may be the old state's, which the pool asks again).
		r.state, r.notBefore = stQueued, until
		if r.resetsAt != m.resets {
			r.notBefore = time.Time{}
			reach("end: deferred by a state reset since")
		}
		m.deferred++
		reach("end: deferred, put back")
		return
	case deferred:
		r.state = stDropped
		reach("end: deferred, dropped")
	case err != nil:
		r.state, r.err = stFailed, err
		switch {
		case errors.Is(err, resilience.ErrCircuitOpen):
			reach("end: failed, circuit open")
		case errors.Is(err, context.Canceled):
			reach("end: failed, cancelled")
		default:
			reach("end: failed")
		}
	default:
		r.state = stDone
		reach("end: done")
	}
	if r.finals++; r.finals > 1 {
		m.violate("task %d (%s) ended %d times", r.id, r.spec, r.finals)
	}
}

// taskOf returns the *task whose run got ctx: the Admission that
// resilience.WithAdmission bound into it, read by reflection (the
// context's type is resilience's).
func taskOf(ctx context.Context) *task {
	v := reflect.ValueOf(ctx)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	adm := v.Elem().FieldByName("adm")
	if !adm.IsValid() || adm.Kind() != reflect.Struct {
		return nil
	}
	a := adm.FieldByName("a")
	if !a.IsValid() || a.Kind() != reflect.Interface || a.IsNil() || a.Elem().Type() != reflect.TypeFor[*task]() {
		return nil
	}
	return (*task)(a.Elem().UnsafePointer())
}

// ---- the steps ----

func (m *machine) goOne(rt *rapid.T) {
	sc := m.drawScope(rt, "scope")
	s := m.drawSpec(rt, sc, 0, "task")
	step("go s%d: %s", sc, s)
	m.submit(m.pctx, sc, s)
	synctest.Wait()
}

// goOwn submits a task whose context has a cancel of its own, which
// cancelTask may call while it is queued or running (its children, whose
// contexts derive from its run's, are cancelled with it), and maybe a
// deadline.
func (m *machine) goOwn(rt *rapid.T) {
	sc := m.drawScope(rt, "scope")
	s := m.drawSpec(rt, sc, 0, "task")
	timeout := rapid.SampledFrom([]time.Duration{0, 0, 10 * time.Millisecond, 200 * time.Millisecond, time.Second, 5 * time.Second}).Draw(rt, "timeout")
	step("go own s%d (timeout %v): %s", sc, timeout, s)
	m.submitOwn(m.pctx, sc, s, true, timeout)
	synctest.Wait()
}

// cancelTask cancels the context of a task submitted by goOwn, not done
// yet, with the bubble settled.
func (m *machine) cancelTask(rt *rapid.T) {
	synctest.Wait()
	m.mu.Lock()
	var own []*rec
	for _, r := range m.tasks {
		if r.cancel != nil && r.ctx.Err() == nil && (r.state == stQueued || r.state == stRunning) {
			own = append(own, r)
		}
	}
	m.mu.Unlock()
	if len(own) == 0 {
		return
	}
	r := rapid.SampledFrom(own).Draw(rt, "cancelled")
	step("cancel task %d (%s, %s)", r.id, r.spec, r.state)
	r.cancel(errTaskStop)
	reach("step: cancel a task")
	synctest.Wait()
}

// dropsByOwnContexts marks dropped the tasks the model has queued whose
// contexts are done and which no queue of the pool holds: the pool
// dropped them as their turns came. m.mu and p.mu are held.
func (m *machine) dropsByOwnContexts() {
	held := map[*rec]bool{}
	for _, q := range m.p.scopes {
		for t := q.head; t != nil; t = t.next {
			if r, _ := t.ctx.Value(recKey{}).(*rec); r != nil {
				held[r] = true
			}
		}
	}
	for _, r := range m.tasks {
		if r.state == stQueued && r.ctx.Err() != nil && !held[r] {
			r.state = stDropped
			r.finals++
			reach("end: dropped by its own context")
		}
	}
}

// goMany submits a burst of tasks to one scope: a queue builds up.
func (m *machine) goMany(rt *rapid.T) {
	sc := m.drawScope(rt, "scope")
	n := rapid.IntRange(2, 6).Draw(rt, "n")
	specs := make([]*spec, n)
	for i := range n {
		specs[i] = m.drawSpec(rt, sc, 0, "task"+strconv.Itoa(i))
	}
	step("go s%d: %v", sc, specs)
	for _, s := range specs {
		m.submit(m.pctx, sc, s)
	}
	synctest.Wait()
}

func (m *machine) sleep(rt *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{0, 10 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond, time.Second, 3 * time.Second, 10 * time.Second}).Draw(rt, "d")
	step("sleep %v", d)
	time.Sleep(d)
	synctest.Wait()
}

// pause has the provider pause a scope, by a throttled call outside the
// pool.
func (m *machine) pause(rt *rapid.T) {
	sc := rapid.IntRange(1, numScopes).Draw(rt, "scope")
	d := time.Duration(rapid.IntRange(1, 10).Draw(rt, "seconds")) * time.Second
	m.pauseScope(sc, d)
}

// pauseScope pauses scope sc for d, by a throttled call outside the pool.
func (m *machine) pauseScope(sc int, d time.Duration) {
	step("pause s%d for %v", sc, d)
	resilience.Do(context.Background(), m.scopes[sc], func(context.Context) error { return throttleAfter(d) },
		resilience.WithGovernor(m.gov), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
	reach("step: pause")
	synctest.Wait()
}

// outsideCall starts a call outside the pool: it takes the scope's token
// and, under a concurrency cap, a slot, for its latency.
func (m *machine) outsideCall(rt *rapid.T) {
	sc := rapid.IntRange(1, numScopes).Draw(rt, "scope")
	d := rapid.SampledFrom([]time.Duration{0, 100 * time.Millisecond, time.Second, 3 * time.Second}).Draw(rt, "latency")
	step("outside call of s%d/%v", sc, d)
	m.outside.Go(func() {
		resilience.Do(context.Background(), m.scopes[sc], func(context.Context) error {
			time.Sleep(d)
			return nil
		}, resilience.WithGovernor(m.gov))
	})
	synctest.Wait()
}

// progress reads Progress: it agrees with the pool and changes nothing.
func (m *machine) progress(rt *rapid.T) {
	step("progress")
	synctest.Wait()
	before := m.snapshot()
	pr := m.p.Progress()
	if after := m.snapshot(); after != before {
		rt.Fatalf("Progress changed the pool:\nbefore %s\nafter  %s", before, after)
	}
	p := m.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr.Queued != p.queued || pr.Running != p.running || pr.Done != p.done || pr.Failed != p.failed || pr.Deferred != p.deferred || pr.Dropped != p.dropped {
		rt.Fatalf("Progress %+v, pool queued %d running %d done %d failed %d deferred %d dropped %d", pr, p.queued, p.running, p.done, p.failed, p.deferred, p.dropped)
	}
	if len(pr.Scopes) != len(p.scopes) {
		rt.Fatalf("Progress has %d scopes, the pool %d", len(pr.Scopes), len(p.scopes))
	}
	for _, s := range pr.Scopes {
		q := p.scopes[s.Scope]
		if q == nil || s.Queued != q.n || s.Running != q.running || s.Done != q.done || s.Failed != q.failed || s.Deferred != q.deferred {
			rt.Fatalf("Progress of %v: %+v, queue %+v", s.Scope, s, q)
		}
		if (s.Queued == 0) != (s.State == "idle") {
			rt.Fatalf("Progress of %v: %d queued, state %q", s.Scope, s.Queued, s.State)
		}
		if s.Queued > 0 && s.Scope.Provider != "" && !m.gov.Enabled(s.Scope.Provider) && (s.State != ScopeReady || s.Wait != 0 || s.ETA != 0) {
			// Nothing paces or refuses its calls, and no refusal in the
			// state in force holds its queue.
			rt.Fatalf("Progress of %v, its provider off: %+v; want ready, no wait, an ETA of 0", s.Scope, s)
		}
	}
	_ = pr.String()
}

// dying makes a scope dead, rarely, by calls outside the pool:
// breaker_threshold calls throttled over six tenths of
// breaker_dead_seconds (longer when their tokens come slower), their
// outcomes left open, and quiet for the rest: the scope is found dead
// with its breaker closed (Delay says ErrCircuitOpen, for the cooldown),
// or its breaker opened when the span reached breaker_dead_seconds. The
// calls end as the sequence does.
func (m *machine) dying(rt *rapid.T) {
	if rapid.IntRange(0, 4).Draw(rt, "roll") != 0 {
		return
	}
	if err := m.dyingScope(rapid.IntRange(1, numScopes).Draw(rt, "scope")); err != nil {
		rt.Fatal(err)
	}
}

// dyingScope makes scope sc dead, as dying does.
func (m *machine) dyingScope(sc int) error {
	step("dying s%d", sc)
	dead := time.Duration(m.deadSeconds * float64(time.Second))
	for i := range m.threshold {
		if i > 0 {
			time.Sleep(dead * 6 / 10 / time.Duration(m.threshold-1))
		}
		gd, err := m.gov.Begin(context.Background(), m.scopes[sc])
		if err != nil {
			return err
		}
		if err := gd.Enter(context.Background()); err != nil {
			gd.End(err) // its breaker open
			break
		}
		gd.Release()
		gd.After(&apiErr{code: "Throttling", status: 400})
		m.dyingCalls = append(m.dyingCalls, gd)
	}
	time.Sleep(dead * 4 / 10)
	reach("step: dying")
	synctest.Wait()
	return nil
}

// endDying ends the dying step's calls, failed.
func (m *machine) endDying() {
	for _, gd := range m.dyingCalls {
		gd.End(&apiErr{code: "Throttling", status: 400})
	}
	m.dyingCalls = nil
}

// reset has the governor forget what it learned (rates, pauses, breakers)
// while the pool runs, rarely.
func (m *machine) reset(rt *rapid.T) {
	if rapid.IntRange(0, 4).Draw(rt, "roll") != 0 {
		return
	}
	step("reset")
	m.mu.Lock()
	// A refusal before it binds the pool no more: it asks the governor
	// again (Pool.heldByAnOldState).
	m.resets++
	for _, r := range m.tasks {
		r.notBefore = time.Time{}
	}
	m.gov.Reset()
	m.mu.Unlock()
	reach("step: reset")
	synctest.Wait()
}

// toggle turns the provider off, or back on, rarely: a Configure, which
// replaces the governor's state as a reset does. Turned off, its calls go
// at once, unpaced and unrefused, and their tasks' first calls decide
// their admission as they begin.
func (m *machine) toggle(rt *rapid.T) {
	if rapid.IntRange(0, 4).Draw(rt, "roll") != 0 {
		return
	}
	on := m.cfg.AWS.Enabled != nil && !*m.cfg.AWS.Enabled
	step("provider on: %v", on)
	m.mu.Lock()
	m.resets++
	for _, r := range m.tasks {
		r.notBefore = time.Time{}
	}
	m.cfg.AWS.Enabled = &on
	err := m.gov.Configure(m.cfg)
	m.mu.Unlock() // before a failure: the tasks' records take m.mu, and abandon waits for the tasks
	if err != nil {
		rt.Fatal(err)
	}
	if on {
		reach("step: provider on")
	} else {
		reach("step: provider off")
	}
	synctest.Wait()
}

// recap changes the account's concurrency cap (max_concurrency: none, 1
// or 2), rarely: a Configure, which replaces the governor's state as a
// reset does, with calls in flight and queues waiting for a slot, which
// the pool found full under the cap before (Pool.markFull).
func (m *machine) recap(rt *rapid.T) {
	if rapid.IntRange(0, 4).Draw(rt, "roll") != 0 {
		return
	}
	c := rapid.IntRange(0, 2).Draw(rt, "maxConcurrency")
	step("max concurrency: %d", c)
	m.mu.Lock()
	m.resets++
	for _, r := range m.tasks {
		r.notBefore = time.Time{}
	}
	m.cfg.AWS.MaxConcurrency = c
	err := m.gov.Configure(m.cfg)
	m.mu.Unlock() // before a failure: the tasks' records take m.mu, and abandon waits for the tasks
	if err != nil {
		rt.Fatal(err)
	}
	reach(fmt.Sprintf("step: max concurrency %d", c))
	synctest.Wait()
}

// cancelPool cancels the pool's parent context, rarely, and once.
func (m *machine) cancelPool(rt *rapid.T) {
	if m.cancelled || rapid.IntRange(0, 4).Draw(rt, "roll") != 0 {
		return
	}
	step("cancel")
	m.mu.Lock()
	m.cancelled = true
	for _, r := range m.tasks {
		if r.state == stQueued {
			r.state = stDropped
			r.finals++
		}
	}
	m.mu.Unlock()
	m.cancel(errStop)
	reach("step: cancel")
	synctest.Wait()
}

// snapshot renders the pool's state, for Progress to be compared with.
func (m *machine) snapshot() string {
	p := m.p
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "queued %d running %d done %d failed %d deferred %d dropped %d workers %d armed %v;",
		p.queued, p.running, p.done, p.failed, p.deferred, p.dropped, p.workers, p.armedAt)
	keys := make([]string, 0, len(p.scopes))
	for sc := range p.scopes {
		keys = append(keys, sc.Key())
	}
	slices.Sort(keys)
	for _, k := range keys {
		for sc, q := range p.scopes {
			if sc.Key() == k {
				fmt.Fprintf(&b, " [%s n %d where %d wake %v heap %d r %d d %d f %d def %d drop %d]", k, q.n, q.where, q.wakeAt, q.heap, q.running, q.done, q.failed, q.deferred, q.dropped)
			}
		}
	}
	b.WriteString(" ring")
	for _, q := range p.ring.all() {
		b.WriteString(" " + q.scope.Key())
	}
	b.WriteString(" parked")
	for _, q := range p.parked {
		b.WriteString(" " + q.scope.Key())
	}
	b.WriteString(" slots")
	for _, q := range p.slotted() {
		b.WriteString(" " + q.scope.Key())
	}
	return b.String()
}

// ---- the invariants ----

// check checks the invariants, with the bubble settled: every goroutine
// of it blocked on time or a channel.
func (m *machine) check(rt *rapid.T) {
	synctest.Wait()
	if err := m.invariants(); err != nil {
		rt.Fatalf("%v\n%s\n%s", err, m.desc, m.snapshot())
	}
}

func (m *machine) invariants() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.violations) > 0 {
		return errors.New(strings.Join(m.violations, "\n"))
	}
	p := m.p
	p.mu.Lock()
	defer p.mu.Unlock()
	m.dropsByOwnContexts()

	// Conservation: the pool's counters are the model's, from the tasks'
	// own records.
	var n [5]int
	type perScope struct{ queued, running, done, failed, dropped int }
	want := map[resilience.Scope]*perScope{}
	for _, r := range m.tasks {
		n[r.state]++
		ps := want[m.scopes[r.scope]]
		if ps == nil {
			ps = &perScope{}
			want[m.scopes[r.scope]] = ps
		}
		switch r.state {
		case stQueued:
			ps.queued++
		case stRunning:
			ps.running++
		case stDone:
			ps.done++
		case stFailed:
			ps.failed++
		case stDropped:
			ps.dropped++
		}
	}
	if got := [5]int{p.queued, p.running, p.done, p.failed, p.dropped}; got != n {
		return fmt.Errorf("pool counts queued, running, done, failed, dropped %v, the tasks' records %v", got, n)
	}
	if sum := p.queued + p.running + p.done + p.failed + p.dropped; sum != len(m.tasks) {
		return fmt.Errorf("%d tasks submitted, the pool counts %d", len(m.tasks), sum)
	}
	if p.deferred != m.deferred {
		return fmt.Errorf("pool counts %d deferred runs, the tasks %d", p.deferred, m.deferred)
	}
	if p.running > p.limit || p.workers > p.limit {
		return fmt.Errorf("%d running, %d workers, over the limit %d", p.running, p.workers, p.limit)
	}
	// A worker blocks only in a task, or reading the store about a queue
	// (asking, which no other worker looks at meanwhile): settled, every
	// worker does one or the other.
	var askedAbout []*queue
	for _, q := range p.scopes {
		if q.where == asking {
			askedAbout = append(askedAbout, q)
		}
	}
	nasking := len(askedAbout)
	if p.workers != p.running+nasking {
		return fmt.Errorf("%d workers alive for %d running tasks and %d queues asked about", p.workers, p.running, nasking)
	}
	if nasking > 0 {
		reach("state: a queue asked about, the store read")
		if nasking > 1 {
			reach("state: several queues asked about at once")
		}
	}
	for sc, q := range p.scopes {
		ps := want[sc]
		if ps == nil {
			ps = &perScope{}
		}
		if got := (perScope{q.n, q.running, q.done, q.failed, q.dropped}); got != *ps {
			return fmt.Errorf("queue %v counts %+v, the tasks' records %+v", sc, got, *ps)
		}
		// Every queued task is one the model has queued, of this scope.
		for t := q.head; t != nil; t = t.next {
			r, _ := t.ctx.Value(recKey{}).(*rec)
			if r == nil || r.state != stQueued || m.scopes[r.scope] != sc {
				return fmt.Errorf("queue %v holds a task the model does not have queued there: %+v", sc, r)
			}
		}
	}
	for sc := range want {
		if p.scopes[sc] == nil && (want[sc].queued+want[sc].running+want[sc].done+want[sc].failed+want[sc].dropped) > 0 {
			return fmt.Errorf("the model has tasks of %v, the pool no queue", sc)
		}
	}

	// Structure.
	undecided := func(q *queue) int {
		k := 0
		for _, r := range m.tasks {
			if r.state == stRunning && m.scopes[r.scope] == q.scope && r.t != nil && !r.t.decided {
				k++
			}
		}
		return k
	}
	if err := checkStructure(p, undecided); err != nil {
		return err
	}

	// Liveness: a stopped pool starts nothing; a live one never sits idle
	// with ready work and nothing to pick it up.
	if p.ctx.Err() != nil {
		return nil
	}
	if p.ring.len() > 0 && p.workers == 0 {
		return fmt.Errorf("%d queues in the ring and no worker", p.ring.len())
	}
	if p.parked.Len() > 0 {
		if p.armedAt == 0 || p.armedAt > p.parked.min().wakeAt {
			return fmt.Errorf("the soonest parked queue wakes at %v, the wake-up is armed at %v", p.parked.min().wakeAt, p.armedAt)
		}
		reach("state: parked")
	}
	// Each account's line of queues waiting for a slot is in turn, and
	// nSlots counts them all, each once.
	inLine, lined := 0, map[*queue]bool{}
	for acct, line := range p.slots {
		for i, q := range line {
			if lined[q] || (account{q.scope.Provider, q.scope.Account}) != acct || q.where != slotted {
				return fmt.Errorf("queue %v in the line of %v for a slot: twice, of another account or not waiting (%v)", q.scope, acct, q.where)
			}
			lined[q] = true
			if i > 0 && int32(q.turn-line[i-1].turn) < 0 {
				return fmt.Errorf("queue %v (turn %d) after %v (turn %d) in the line of %v for a slot; want in turn", q.scope, q.turn, line[i-1].scope, line[i-1].turn, acct)
			}
		}
		inLine += len(line)
	}
	if inLine != p.nSlots {
		return fmt.Errorf("%d queues in the lines for a slot, nSlots %d", inLine, p.nSlots)
	}
	if p.nSlots > 0 {
		// The recheck is armed while queues wait for a slot: a task's end
		// frees none of its own (its calls' slots were told as they
		// ended), so no end rechecks them.
		if p.armedAt == 0 {
			return fmt.Errorf("%d queues wait for a slot, with no recheck armed", p.nSlots)
		}
		reach("state: slotted")
		// Two queues of an account waiting for a slot: what a task's end
		// puts back in turn, the second not asked again once the first
		// finds the account full (pick's noSlot).
		if p.nSlots > 1 {
			reach("state: several queues wait for a slot")
		}
	}
	// A slot freed is told at once (slotFreed): a queue waiting for a
	// slot, not held back for its account's first calls, whose scope can
	// go now (its account has a slot free), waits only for the slots the
	// pool gave tasks of the account whose first calls are still to come
	// (a hold in force; a task started for a slot freed, not decided), or
	// promised to a queue of the account asked about, or to the first of
	// the account in line, put back in turn for it (a slot freed puts
	// that one back alone: unslot), whose turn has not come (every worker
	// busy).
	for _, q := range p.slotted() {
		if q.heldBack || q.where != slotted {
			continue
		}
		if d, why := p.gov.Delay(q.scope); why != nil || d > 0 {
			continue
		}
		acct := account{q.scope.Provider, q.scope.Account}
		if p.liveHolds(acct) > 0 || slices.ContainsFunc(askedAbout, func(o *queue) bool { return (account{o.scope.Provider, o.scope.Account}) == acct }) {
			continue
		}
		if p.workers == p.limit && slices.ContainsFunc(p.ring.all(), func(o *queue) bool {
			return o.noSlot && (account{o.scope.Provider, o.scope.Account}) == acct
		}) {
			reach("state: a slot free promised to the first of the account in line, in turn, a queue waiting")
			continue
		}
		promised := false
		for _, r := range m.tasks {
			if r.state == stRunning && r.t != nil && r.t.slotMark != 0 && !r.t.decided && (account{r.t.q.scope.Provider, r.t.q.scope.Account}) == acct {
				promised = true
			}
		}
		if promised {
			reach("state: a slot free promised to a task started for it, a queue waiting")
			continue
		}
		return fmt.Errorf("queue %v waits for a slot, its account has one free, and nothing of the pool's is to take it", q.scope)
	}
	for _, q := range p.slotted() {
		if !q.heldBack {
			continue
		}
		// A queue held back for the first calls of its account's tasks
		// started (holdBack) waits for one of those holds, and no longer
		// than the first ends (admitHold): a wake-up is armed by then.
		reach("state: a queue held back for its account's first calls")
		acct := account{q.scope.Provider, q.scope.Account}
		if p.heldBack[acct] && slices.ContainsFunc(p.slotted(), func(o *queue) bool {
			return o != q && o.heldBack && (account{o.scope.Provider, o.scope.Account}) == acct
		}) {
			reach("state: several queues of an account held back")
		}
		first, ok := time.Duration(0), false
		for _, h := range p.holds.all() {
			if h.live() && (account{h.t.q.scope.Provider, h.t.q.scope.Account}) == acct {
				first, ok = h.until, true
				break
			}
		}
		if !ok {
			// Or, those holds decided, for the first queue of the
			// account held back, put in turn to be asked for them all
			// (unholdBack): it leads them, in turn or being asked about.
			if !slices.ContainsFunc(p.ring.all(), leads(acct)) && !slices.ContainsFunc(askedAbout, leads(acct)) {
				return fmt.Errorf("queue %v is held back for its account's first calls, with no hold of the account in force and no queue of it leading", q.scope)
			}
			reach("state: a queue held back behind its account's queue leading")
			continue
		}
		if p.armedAt == 0 || p.armedAt > first {
			return fmt.Errorf("queue %v is held back for a hold that ends at %v, the wake-up is armed at %v", q.scope, first, p.armedAt)
		}
	}
	for sc, q := range p.scopes {
		// A queue put back in turn to be asked for its account's queues
		// held back (unholdBack) leads them until it is asked: it is in
		// turn, or being asked about, and none of them waits behind a
		// queue that will not be asked.
		if q.leads && q.where != inRing && q.where != asking {
			return fmt.Errorf("queue %v leads its account's queues held back, and is not in turn (where %d)", sc, q.where)
		}
		if q.leads && q.where == asking {
			reach("state: a queue leading its account's queues held back, asked about")
		}
		// One queue of an account leads its queues held back at a time:
		// the one the pool notes as leading it.
		if acct := (account{q.scope.Provider, q.scope.Account}); q.leads != (p.leaders[acct] == q) {
			var noted any = "none"
			if l := p.leaders[acct]; l != nil {
				noted = l.scope
			}
			return fmt.Errorf("queue %v leads its account's queues held back: %v, and the pool notes %v as leading them", sc, q.leads, noted)
		}
		if q.n == 0 {
			continue
		}
		if q.where == nowhere {
			return fmt.Errorf("queue %v holds %d tasks and is nowhere", sc, q.n)
		}
		if q.where == admitting {
			reach("state: admitting with tasks queued")
			// Its hold ends by admitHold, and a wake-up is armed for it.
			if p.armedAt == 0 || p.armedAt > q.admitUntil {
				return fmt.Errorf("queue %v (%d tasks) is held until %v, the wake-up is armed at %v", sc, q.n, q.admitUntil, p.armedAt)
			}
		}
		_, why := p.gov.Delay(sc)
		if errors.Is(why, resilience.ErrCircuitOpen) && p.gov.Inspect(sc).Breaker.State == state.Closed {
			reach("state: a queue of a scope found dead, its breaker closed")
		}
		if why != nil && (!errors.Is(why, resilience.ErrCircuitOpen) || p.gov.Inspect(sc).Breaker.State == state.HalfOpen) {
			continue // it waits for a token, a slot, or the verdict of a probe
		}
		// Work conserving: a queue whose next task can go (pick would
		// start it) waits in turn only while every worker is busy, or a
		// worker's pass, which looks at it, is reading the store.
		if q.where == inRing && p.workers < p.limit && nasking == 0 {
			return fmt.Errorf("queue %v (%d tasks) can go now and waits in turn, with %d workers of %d", sc, q.n, p.workers, p.limit)
		}
		if why != nil {
			continue
		}
		if p.workers == 0 && p.armedAt == 0 {
			return fmt.Errorf("queue %v (%d tasks, where %d) can go now, with no worker and no wake-up armed", sc, q.n, q.where)
		}
	}
	return nil
}

// checkStructure checks the pool's structures: the ring, the parked heap,
// the slots and each queue's where agree; undecided, if not nil, counts
// the running tasks of q whose first call is not decided.
func checkStructure(p *Pool, undecided func(q *queue) int) error {
	ring := map[*queue]int{}
	for _, q := range p.ring.all() {
		ring[q]++
		if q.where != inRing {
			return fmt.Errorf("queue %v is in the ring, where %d", q.scope, q.where)
		}
	}
	slots := map[*queue]int{}
	for _, q := range p.slotted() {
		slots[q]++
		if q.where != slotted {
			return fmt.Errorf("queue %v is among the slots, where %d", q.scope, q.where)
		}
	}
	for i, q := range p.parked {
		if q.heap != i || q.where != parked {
			return fmt.Errorf("queue %v is at %d of the parked heap, its index %d, where %d", q.scope, i, q.heap, q.where)
		}
		if i > 0 && p.parked[(i-1)/2].wakeAt > q.wakeAt {
			return fmt.Errorf("the parked heap is out of order at %d", i)
		}
		if p.scopes[q.scope] != q {
			return fmt.Errorf("parked queue %v is not the pool's", q.scope)
		}
	}
	total := 0
	for sc, q := range p.scopes {
		if q.scope != sc {
			return fmt.Errorf("queue %v kept under %v", q.scope, sc)
		}
		total += q.n
		k, last := 0, (*task)(nil)
		for t := q.head; t != nil; t = t.next {
			if t.q != q {
				return fmt.Errorf("a task of queue %v belongs to %v", sc, t.q.scope)
			}
			k, last = k+1, t
		}
		if k != q.n || last != q.tail {
			return fmt.Errorf("queue %v lists %d tasks, counts %d", sc, k, q.n)
		}
		if q.where == inRing && ring[q] != 1 {
			return fmt.Errorf("queue %v is in the ring %d times", sc, ring[q])
		}
		if q.where != inRing && ring[q] != 0 {
			return fmt.Errorf("queue %v, where %d, is in the ring", sc, q.where)
		}
		if (q.where == parked) != (q.heap >= 0) {
			return fmt.Errorf("queue %v, where %d, at %d of the parked heap", sc, q.where, q.heap)
		}
		if q.where == parked && (q.heap >= len(p.parked) || p.parked[q.heap] != q) {
			return fmt.Errorf("parked queue %v is not at its index %d of the heap", sc, q.heap)
		}
		if q.where == slotted && slots[q] != 1 {
			return fmt.Errorf("slotted queue %v is among the slots %d times", sc, slots[q])
		}
		if q.where == admitting && sc.Provider == "" {
			return fmt.Errorf("the zero scope's queue is admitting")
		}
		if (q.where == admitting) != (q.holder != nil) {
			return fmt.Errorf("queue %v, where %d, is held for %p", sc, q.where, q.holder)
		}
		if q.where == admitting && (q.holder.q != q || q.holder.decided) {
			return fmt.Errorf("queue %v is admitting for a task decided or of another queue", sc)
		}
		if q.where == admitting && q.n > 0 && (p.armedAt == 0 || p.armedAt > q.admitUntil) {
			// Its hold ends by admitHold, and a wake-up is armed for it.
			return fmt.Errorf("queue %v (%d tasks) is held until %v, the wake-up is armed at %v", sc, q.n, q.admitUntil, p.armedAt)
		}
		if q.where == admitting && undecided != nil {
			// Its holder, and the tasks whose holds ended (admitHold)
			// before their first calls.
			if k := undecided(q); k < 1 {
				return fmt.Errorf("queue %v is admitting, with %d running tasks undecided", sc, k)
			}
		}
	}
	if total != p.queued {
		return fmt.Errorf("the queues hold %d tasks, the pool counts %d queued", total, p.queued)
	}
	// The tasks started to prove their scopes (see Pool.proves): the
	// pool counts those running, at most its bound, and a queue counts
	// those of its own running whose first calls are not decided.
	proving := 0
	for sc, q := range p.scopes {
		out := 0
		for _, t := range q.live {
			if t.proveWait > 0 {
				proving++
			}
			if t.proving {
				out++
				if t.proveWait == 0 || t.decided {
					return fmt.Errorf("queue %v's task proving its scope was not started to prove it, or its first call is decided", sc)
				}
			}
		}
		if out != q.proving {
			return fmt.Errorf("queue %v counts %d tasks proving its scope, their first calls not decided; %d run", sc, q.proving, out)
		}
	}
	if proving > 0 {
		reach("a task proving its scope runs")
	}
	if proving != p.proving || proving > p.provers() {
		return fmt.Errorf("%d tasks proving their scopes run, the pool counts %d; want at most %d", proving, p.proving, p.provers())
	}
	return nil
}

// leads returns whether a queue leads acct's queues held back for its
// tasks' first calls (see Pool.unholdBack).
func leads(acct account) func(*queue) bool {
	return func(q *queue) bool {
		return q.leads && (account{q.scope.Provider, q.scope.Account}) == acct
	}
}

// ---- the end ----

// end waits for the pool and checks the final invariants.
func (m *machine) end(rt *rapid.T) {
	m.endDying()
	// Wait, from one goroutine or two at once.
	waiters := rapid.IntRange(1, 2).Draw(rt, "waiters")
	step("wait (%d)", waiters)
	type waited struct {
		err     error
		workers int // the pool's workers as Wait returned
	}
	done := make(chan waited, waiters)
	start := time.Now()
	for range waiters {
		go func() {
			err := m.p.Wait()
			m.p.mu.Lock()
			defer m.p.mu.Unlock()
			done <- waited{err, m.p.workers}
		}()
	}
	timer := time.NewTimer(waitBound)
	var errs []error
	for len(errs) < waiters {
		select {
		case w := <-done:
			if w.workers != 0 {
				rt.Fatalf("Wait returned with %d workers alive", w.workers)
			}
			errs = append(errs, w.err)
		case <-timer.C:
			rt.Fatalf("Wait has not returned after %v of virtual time\n%s\n%s", waitBound, m.desc, m.snapshot())
		}
	}
	timer.Stop()
	// Wait returns as the last task ends: nothing of the pool (a wake-up
	// armed, a worker) outlives its tasks; but a worker reading the store
	// when the pool was stopped, whose read Wait waits for.
	m.mu.Lock()
	last := m.lastEnd
	cancelled, ends := false, maxTime(start, last)
	for _, r := range m.tasks {
		if r.cancel != nil && r.ctx.Err() != nil {
			cancelled = true
			if dl, ok := r.ctx.Deadline(); ok {
				ends = maxTime(ends, dl)
			}
		}
	}
	m.mu.Unlock()
	returned := time.Now()
	switch {
	case returned.Equal(start) || returned.Equal(last) || returned.Equal(m.store.lastAskEnd()):
	case cancelled && !returned.After(ends.Add(parkRecheck)):
		// A task whose own context ended (cancelled, or its deadline
		// come) is dropped as its queue's turn comes: within parkRecheck
		// of a parked queue's.
		reach("end: Wait returned as a cancelled task was dropped")
	default:
		rt.Fatalf("Wait returned %v after it was called, %v after the last task ended", returned.Sub(start), returned.Sub(last))
	}
	m.over = true
	m.outside.Wait()
	synctest.Wait()
	step("after wait")
	func() {
		defer func() {
			if recover() == nil {
				rt.Fatalf("Go after Wait did not panic")
			}
		}()
		m.p.Go(m.pctx, resilience.Scope{}, func(context.Context) error { return nil })
	}()

	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.tasks {
		if r.stopTimer != nil {
			defer r.stopTimer() // after the checks, which read its context's cause
		}
	}
	if len(m.violations) > 0 {
		rt.Fatalf("%s", strings.Join(m.violations, "\n"))
	}
	p := m.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.queued != 0 || p.running != 0 || p.workers != 0 {
		rt.Fatalf("after Wait: %d queued, %d running, %d workers", p.queued, p.running, p.workers)
	}
	m.dropsByOwnContexts()
	if err := checkStructure(p, nil); err != nil {
		rt.Fatalf("after Wait: %v", err)
	}
	var want []*rec // the failed tasks, whose errors Wait joins
	dropped := 0
	causes := map[error]bool{} // the causes of the drops, each once in Wait's error
	for _, r := range m.tasks {
		if r.finals != 1 {
			rt.Fatalf("task %d (%s) ended %d times, %s", r.id, r.spec, r.finals, r.state)
		}
		reasons := r.ledger.Reasons()
		notRun := slices.IndexFunc(reasons, func(s string) bool { return strings.Contains(s, "task not run") }) >= 0
		switch r.state {
		case stDropped:
			dropped++
			// Dropped by the stop, or by its own context (cancelTask, or
			// its deadline), whichever came first for it: its context's
			// cause, or its deadline come (Wait's cancel may have ended
			// the context first, at that instant).
			joined := strings.Join(reasons, ";")
			var cause error
			switch dl, ok := r.ctx.Deadline(); {
			case strings.Contains(joined, errStop.Error()):
				cause = errStop
			case strings.Contains(joined, errTaskStop.Error()) && errors.Is(context.Cause(r.ctx), errTaskStop):
				cause = errTaskStop
			case strings.Contains(joined, context.DeadlineExceeded.Error()) && ok && !time.Now().Before(dl):
				cause = context.DeadlineExceeded
			}
			if c := r.ledger.Count(resilience.LossCancelled); c != 1 || !notRun || cause == nil {
				rt.Fatalf("dropped task %d (%s): its ledger lists %d cancelled, %q (its context's cause %v)", r.id, r.spec, c, reasons, context.Cause(r.ctx))
			}
			causes[cause] = true
		case stDone, stFailed:
			if notRun {
				rt.Fatalf("task %d (%s) %s, its ledger says it was not run: %q", r.id, r.spec, r.state, reasons)
			}
			if r.state == stFailed {
				want = append(want, r)
			}
			// A task that panicked (or called runtime.Goexit) is in its
			// ledger once, inside a governed call or not; no other is.
			if c, w := r.ledger.Count(resilience.LossPanicked), b2i(r.panicked || r.spec.kind == kGoexit); c != w {
				rt.Fatalf("task %d (%s) %s, panicked %v: its ledger counts %d panicked, want %d: %q", r.id, r.spec, r.state, r.panicked, c, w, reasons)
			}
		default:
			rt.Fatalf("task %d (%s) still %s after Wait", r.id, r.spec, r.state)
		}
	}
	if dropped != p.dropped {
		rt.Fatalf("%d tasks dropped, the pool counts %d", dropped, p.dropped)
	}
	if dropped > 0 {
		reach("end: sequence with drops")
	}
	for _, err := range errs {
		m.checkWaitError(rt, err, want, causes)
	}
}

// maxTime returns the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// checkWaitError checks that err, Wait's, joins the errors of the failed
// tasks want, and the causes of the drops (the stop's, the tasks' own),
// each once.
func (m *machine) checkWaitError(rt *rapid.T, err error, want []*rec, causes map[error]bool) {
	var got []error
	if err != nil {
		if u, ok := err.(interface{ Unwrap() []error }); ok {
			got = u.Unwrap()
		} else {
			got = []error{err}
		}
	}
	used := make([]bool, len(got))
	take := func(match func(error) bool) bool {
		for i, e := range got {
			if !used[i] && match(e) {
				used[i] = true
				return true
			}
		}
		return false
	}
	for _, r := range want {
		ok := take(func(e error) bool {
			if r.panicked {
				pe, ok := e.(*PanicError)
				return ok && pe.Value == taskPanic{r.id}
			}
			return sameErr(e, r.err)
		})
		if !ok {
			rt.Fatalf("Wait's error lacks task %d's (%s): %v", r.id, r.spec, err)
		}
	}
	for cause := range causes {
		if !take(func(e error) bool { return e == cause }) {
			rt.Fatalf("Wait's error lacks the cause %q of tasks dropped: %v", cause, err)
		}
	}
	if i := slices.Index(used, false); i >= 0 {
		rt.Fatalf("Wait's error has %v, which no failed task returned", got[i])
	}
}

// sameErr reports whether a and b are the same error value.
func sameErr(a, b error) (same bool) {
	defer func() {
		if recover() != nil {
			same = false // not comparable
		}
	}()
	return a == b
}

// abandon stops a sequence that failed before its end, so that the
// bubble's goroutines end and the bubble reports the failure, not the
// goroutines left behind: the pool is cancelled and waited for, and if its
// counts keep Wait waiting (the pool is broken), they are forced to zero.
func (m *machine) abandon() {
	if m.over {
		return
	}
	m.over = true
	m.endDying()
	m.cancel(errors.New("model: sequence abandoned"))
	done := make(chan struct{})
	go func() {
		m.p.Wait()
		m.outside.Wait()
		close(done)
	}()
	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-timer.C:
	}
	p := m.p
	p.mu.Lock()
	p.queued, p.running = 0, 0
	p.quiet.Broadcast()
	p.mu.Unlock()
	timer.Reset(waitBound)
	select {
	case <-done:
	case <-timer.C:
	}
}

// ---- the sequences TestModel found ----

// Two tasks of the zero scope and two workers: the tasks run at once.
// Found by TestModel (shrunk: Workers 2, two zero-scope tasks submitted
// together, the first sleeping 10 ms): the first Go put the zero scope's
// queue in turn and woke a worker; the second found it in turn already and
// woke none; the worker took one task and put the queue back in turn, and
// the other task waited for that worker while the second stayed unborn.
func TestRegressZeroScopeTasksGetAWorkerEach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1, resilience.Config{})
		p, ctx := New(context.Background(), Workers(2), WithGovernor(g))
		start := time.Now()
		var mu sync.Mutex
		var ends []time.Duration
		for range 2 {
			p.Go(ctx, resilience.Scope{}, func(context.Context) error {
				time.Sleep(time.Second)
				mu.Lock()
				ends = append(ends, time.Since(start))
				mu.Unlock()
				return nil
			})
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ends, []time.Duration{time.Second, time.Second}) {
			t.Fatalf("the tasks ended at %v, want both at 1s (two workers)", ends)
		}
	})
}

// Two parked queues whose time comes at once, and two workers: each gets
// one. The wake-up woke one worker for both; it took the first queue's
// task, and the second queue waited in turn for it, with a worker free.
func TestRegressDueQueuesGetAWorkerEach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 10, resilience.Config{})
		a, b := scope("a"), scope("b")
		pause(t, g, a, 5*time.Second)
		pause(t, g, b, 5*time.Second)
		p, ctx := New(context.Background(), Workers(2), WithGovernor(g))
		start := time.Now()
		var mu sync.Mutex
		var ends []time.Duration
		for _, sc := range []resilience.Scope{a, b} {
			p.Go(ctx, sc, func(ctx context.Context) error {
				err := call(g, sc, 3*time.Second)(ctx)
				mu.Lock()
				ends = append(ends, time.Since(start))
				mu.Unlock()
				return err
			})
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		// Sent at 5 s, when the pause ends (and a token comes), answered
		// 3 s later; one worker after the other, the second would end 3 s
		// after the first.
		if len(ends) != 2 || ends[0] < 8*time.Second || ends[1] >= 9*time.Second {
			t.Fatalf("the tasks ended at %v, want both between 8 s and 9 s", ends)
		}
	})
}

// A task whose first call is to another scope than its queue's, refused for
// want of a concurrency slot, runs again when a slot may be free, not at
// once. Found by TestModel as a hang (a worker spinning at one instant of
// the bubble's clock): the queue's scope had an open breaker, which pick
// takes as ready (a dead scope fails fast); the task's first call, to
// another scope of the account, found the account's only slot taken and
// was deferred; the task's end put every slotted queue back in turn, its
// own included, though it freed no slot; and the worker took the task
// again at once, and again.
func TestRegressADeferredRunFreesNoSlot(t *testing.T) {
	if !childtest.InChild(t, time.Minute) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 10, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}})
		dead, other := scope("dead"), scope("other")
		for range 5 {
			resilience.Do(context.Background(), dead, func(context.Context) error { return &apiErr{code: "Throttling", status: 400} },
				resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		}
		if _, why := g.Delay(dead); !errors.Is(why, resilience.ErrCircuitOpen) {
			t.Fatalf("the dead scope's breaker is not open: %v", why)
		}
		// A call outside the pool holds the account's only slot for 1 s.
		var outside sync.WaitGroup
		outside.Go(func() { call(g, scope("outside"), time.Second)(context.Background()) })
		synctest.Wait()
		p, ctx := New(context.Background(), Workers(1), WithGovernor(g))
		var runs atomic.Int64
		p.Go(ctx, dead, func(ctx context.Context) error {
			runs.Add(1)
			return call(g, other, 0)(ctx)
		})
		start := time.Now()
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		outside.Wait()
		// Refused at 0, run again at each slot recheck until the slot is
		// free at 1 s.
		if d := time.Since(start); d < time.Second || d > time.Second+slotRecheck || runs.Load() > 2+int64(time.Second/slotRecheck) {
			t.Fatalf("the task ended after %v, in %d runs", d, runs.Load())
		}
	})
}

// A task refused for another scope's pause runs again before the pause
// ends when its own scope is found dead, by the answer of a store read
// that took longer than the scope stayed dead: the pool's answers are as
// of when it asked, and it cannot know that a verdict lapsed while the
// store answered without reading it again. Found by TestModel (shrunk:
// three workers, breaker_threshold 2, breaker_dead_seconds 1, a store
// read taking 300 ms, s3 paused for 10 s, a task of s4 whose first call
// is to s3, s4 then made dead by two throttled calls 0.6 s apart): the
// task was refused at 0 s, its queue held until 10 s and asked again at
// 1 s, when s4 was dead for another 100 ms (its last failure 0.4 s old,
// half of breaker_dead_seconds being 0.5 s); the answer came at 1.3 s,
// and the task ran then. The model judged the run by s4's state at 1.3
// s, not dead, and took it for a run before the refusal's wait: it now
// takes the scope's state when the pool read it too.
func TestRegressAnEarlyRunOnADeadScopesAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, err := buildMachine(settings{
			limit: 3, maxWait: time.Second, threshold: 2, deadSeconds: 1,
			rates: []float64{2, 1, 2, 4}, latency: 300 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer m.abandon()
		m.pauseScope(3, 10*time.Second)
		m.submit(m.pctx, 4, &spec{kind: kLinger, other: 3})
		synctest.Wait()
		if err := m.dyingScope(4); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		m.mu.Lock()
		runs := m.tasks[0].runs
		m.mu.Unlock()
		if runs < 2 {
			t.Fatalf("the task ran %d times by 2 s, want twice: the case is not reproduced", runs)
		}
		if err := m.invariants(); err != nil {
			t.Fatalf("%v\n%s\n%s", err, m.desc, m.snapshot())
		}
		m.endDying()
	})
}

// The queues of an account held back for the first calls of its tasks
// (Pool.holdBack) wait, once those are decided, behind the first of them,
// asked for them all (Pool.unholdBack): with the store's reads taking a
// while, they wait with no hold of the account in force, which
// TestModel's invariants took for queues nothing would put back in turn;
// they wait for the queue leading them, in turn or asked about. Here an
// account with one slot and fast rates, four workers, 5 ms reads, 15
// tasks of each scope working 8 ms (less than admitHold) before their 8
// ms call; the invariants are checked every millisecond.
func TestModelALineWaitsBehindTheQueueAskedForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, err := buildMachine(settings{
			limit: 4, maxConc: 1, deadSeconds: 10,
			rates: []float64{1000, 1000, 1000, 1000}, latency: 5 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer m.abandon()
		for range 15 {
			for sc := 1; sc <= numScopes; sc++ {
				m.submit(m.pctx, sc, &spec{kind: kWorkFirst, latency: 8 * time.Millisecond})
			}
		}
		acct := account{m.scopes[1].Provider, m.scopes[1].Account}
		lines := 0
		for range 2000 {
			synctest.Wait()
			p := m.p
			p.mu.Lock()
			if p.liveHolds(acct) == 0 && slices.ContainsFunc(p.slotted(), func(q *queue) bool { return q.heldBack }) {
				lines++
			}
			p.mu.Unlock()
			if err := m.invariants(); err != nil {
				t.Fatalf("%v\n%s\n%s", err, m.desc, m.snapshot())
			}
			time.Sleep(time.Millisecond)
		}
		if lines == 0 {
			t.Fatal("no queue was held back with no hold of its account in force: the case is not reproduced")
		}
	})
}

// A queue waiting in its account's line (Pool.unholdBack) goes as the
// first hold of the account it waits for ends (admitHold), not at the next
// recheck of the queues waiting for a slot (slotRecheck): a hold begun
// while queues of its account were held back armed no wake-up for its
// end unless its own queue had tasks left, and the queues kept in line
// across the first calls decided wait for holds begun since. Found by a
// targeted rapid run of the line (shrunk: an account with one slot and
// fast rates, two workers, 1 ms reads; four tasks of s3 and s1 calling at
// once, then tasks of s4, s2 and s1 working 100 ms or 8 ms before their
// calls): a queue waited 8 ms past the end of the hold it waited for.
func TestRegressALineGoesAtTheEndOfTheHoldItWaitsFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, err := buildMachine(settings{
			limit: 2, maxConc: 1, threshold: 2, deadSeconds: 1,
			rates: []float64{1000, 1000, 1000, 1000}, latency: time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer m.abandon()
		for _, x := range []struct {
			sc      int
			k       kind
			latency time.Duration
		}{
			{3, kOK, 8 * time.Millisecond}, {3, kOK, 30 * time.Millisecond}, {1, kOK, 8 * time.Millisecond}, {3, kOK, 8 * time.Millisecond},
			{4, kWorkFirst, 100 * time.Millisecond}, {4, kWorkFirst, 100 * time.Millisecond}, {2, kWorkFirst, 100 * time.Millisecond}, {1, kWorkFirst, 8 * time.Millisecond},
		} {
			m.submit(m.pctx, x.sc, &spec{kind: x.k, latency: x.latency})
		}
		lines := 0
		for range 1000 {
			synctest.Wait()
			p := m.p
			p.mu.Lock()
			now := p.now()
			for _, q := range p.slotted() {
				if !q.heldBack {
					continue
				}
				lines++
				for _, h := range p.holds.all() {
					if h.live() && (account{h.t.q.scope.Provider, h.t.q.scope.Account}) == (account{q.scope.Provider, q.scope.Account}) {
						if now > h.until {
							p.mu.Unlock()
							t.Fatalf("at %v, queue %v is held back %v past the end of its account's first hold (armed %v)", now, q.scope, now-h.until, p.armedAt)
						}
						break
					}
				}
			}
			p.mu.Unlock()
			if err := m.invariants(); err != nil {
				t.Fatalf("%v\n%s\n%s", err, m.desc, m.snapshot())
			}
			time.Sleep(time.Millisecond)
		}
		if lines == 0 {
			t.Fatal("no queue was held back: the case is not reproduced")
		}
	})
}

// Wait called from two goroutines at once: each returns every error, and
// they do not race. Wait appended the stop's cause to the tasks' errors in
// the array they share, and read it after unlocking: the second Wait wrote
// the slot the first was reading (the race detector's report, found by
// TestModel's abandon, which waits for a failed sequence's pool beside
// its own Wait).
func TestRegressConcurrentWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1, resilience.Config{})
		parent, cancel := context.WithCancelCause(context.Background())
		p, ctx := New(parent, Workers(1), WithGovernor(g))
		boom := errors.New("boom")
		for range 3 { // three errors: a slice with room for a fourth
			p.Go(ctx, resilience.Scope{}, func(context.Context) error { return boom })
		}
		synctest.Wait()
		p.Go(ctx, resilience.Scope{}, func(context.Context) error { time.Sleep(time.Second); return nil })
		p.Go(ctx, resilience.Scope{}, func(context.Context) error { return nil })
		synctest.Wait()
		cancel(errStop) // drops the last task
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = p.Wait() })
		}
		wg.Wait()
		for _, err := range errs {
			u, ok := err.(interface{ Unwrap() []error })
			if !ok || len(u.Unwrap()) != 4 || !errors.Is(err, boom) || !errors.Is(err, errStop) {
				t.Fatalf("Wait returned %v", err)
			}
		}
	})
}

// ---- the queue's moves ----

// rig drives a pool's queues by hand: its workers are all counted alive,
// so that wake starts none, and the test calls pick, Decided, Deferred,
// finish and unslot itself, as the workers and the governor would.
type rig struct {
	t       *testing.T
	g       *resilience.Governor
	p       *Pool
	ctx     context.Context
	cancel  context.CancelFunc
	running []*task // the tasks pick started, not finished yet

	hold    context.CancelFunc // ends the call holding the account's slot
	holding sync.WaitGroup
}

func newRig(t *testing.T, cfg resilience.Config) *rig {
	r := &rig{t: t, g: newGov(t, 1, cfg)}
	parent, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.p, r.ctx = New(parent, Workers(2), WithGovernor(r.g))
	r.p.mu.Lock()
	r.p.workers = r.p.limit
	r.p.mu.Unlock()
	return r
}

// submit queues a task of sc that is never run.
func (r *rig) submit(sc resilience.Scope) {
	r.p.Go(r.ctx, sc, func(context.Context) error { return nil })
}

func (r *rig) pick() *task {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	t := r.p.pick()
	if t != nil {
		r.running = append(r.running, t)
	}
	return t
}

func (r *rig) finish(t *task, err error) {
	r.running = slices.DeleteFunc(r.running, func(x *task) bool { return x == t })
	r.p.finish(t, err, true)
}

func (r *rig) unslot() {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	r.p.unslot(true, nil)
}

func (r *rig) where(sc resilience.Scope) where {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	if q := r.p.scopes[sc]; q != nil {
		return q.where
	}
	return nowhere
}

// holdSlot has a call outside the pool hold a slot of the account until
// the rig closes (under max_concurrency 1: the only one).
func (r *rig) holdSlot() {
	ctx, cancel := context.WithCancel(context.Background())
	r.hold = cancel
	r.holding.Go(func() {
		resilience.Do(ctx, scope("holder"), func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}, resilience.WithGovernor(r.g))
	})
	synctest.Wait()
}

// close ends the rig's pool: its context cancelled (the queued tasks
// dropped), the tasks pick started finished, and Wait returned.
func (r *rig) close() {
	r.cancel()
	synctest.Wait()
	for _, t := range slices.Clone(r.running) {
		r.finish(t, nil)
	}
	r.p.mu.Lock()
	r.p.workers = 0
	r.p.mu.Unlock()
	r.p.Wait()
	if r.hold != nil {
		r.freeSlot()
	}
}

// freeSlot ends the call outside the pool that holdSlot made, and waits
// for it: the account's slot is free.
func (r *rig) freeSlot() {
	r.hold()
	r.holding.Wait()
}

// Each legal move of a queue among the pool's structures, one row a move:
// the pool driven into the move's first state, the verb applied, the state
// it ends in checked, and the structures with it.
func TestQueueTransitions(t *testing.T) {
	sc, zero := scope("q"), resilience.Scope{}
	wouldWait := &resilience.WouldWaitError{Scope: sc, Err: resilience.ErrNoToken}
	// admitting: one of the two tasks of sc runs, its first call undecided.
	toAdmitting := func(r *rig) *task {
		r.submit(sc)
		r.submit(sc)
		return r.pick()
	}
	// slotted: a task of sc queued, its account's one slot held by a call
	// outside the pool, and pick told no slot (the rig's cfg has
	// max_concurrency 1).
	toSlotted := func(r *rig) *task {
		r.holdSlot()
		r.submit(sc)
		if r.pick() != nil {
			r.t.Fatal("pick started a task with no slot free")
		}
		return nil
	}
	rows := []struct {
		name     string
		cfg      resilience.Config
		from     where
		setup    func(r *rig) *task // drives sc's queue into from
		verb     func(r *rig, t *task)
		to       where
		queued   int  // the tasks of sc queued after the move
		zero     bool // the move is the zero scope's queue's
		mustPark bool // the wake-up is armed by the queue's time
	}{
		{
			name: "nowhere to inRing by Go", from: nowhere, to: inRing, queued: 1,
			setup: func(r *rig) *task {
				// A queue emptied: its one task picked and decided, and ended.
				r.submit(sc)
				t := r.pick()
				t.Decided()
				r.finish(t, nil)
				return nil
			},
			verb: func(r *rig, _ *task) { r.submit(sc) },
		},
		{
			name: "admitting to inRing by Decided (tasks queued)", from: admitting, to: inRing, queued: 1,
			setup: toAdmitting,
			verb:  func(r *rig, t *task) { t.Decided() },
		},
		{
			name: "admitting to nowhere by Decided (none queued)", from: admitting, to: nowhere,
			setup: func(r *rig) *task { r.submit(sc); return r.pick() },
			verb:  func(r *rig, t *task) { t.Decided() },
		},
		{
			name: "admitting to inRing by finish (no governed call, tasks queued)", from: admitting, to: inRing, queued: 1,
			setup: toAdmitting,
			verb:  func(r *rig, t *task) { r.finish(t, nil) },
		},
		{
			name: "admitting to nowhere by finish (no governed call, none queued)", from: admitting, to: nowhere,
			setup: func(r *rig) *task { r.submit(sc); return r.pick() },
			verb:  func(r *rig, t *task) { r.finish(t, nil) },
		},
		{
			name: "admitting to parked by Deferred (a wait)", from: admitting, to: parked, queued: 1, mustPark: true,
			setup: toAdmitting,
			verb:  func(r *rig, t *task) { t.Deferred(3*time.Second, wouldWait) },
		},
		{
			name: "admitting to slotted by Deferred (no slot)", from: admitting, to: slotted, queued: 1,
			setup: toAdmitting,
			verb:  func(r *rig, t *task) { t.Deferred(0, wouldWait) },
		},
		{
			// A task that works a while before its first call holds its
			// queue no longer than admitHold.
			name: "admitting to inRing by the end of its hold (admitHold, tasks queued)", from: admitting, to: inRing, queued: 1,
			setup: toAdmitting,
			verb: func(r *rig, _ *task) {
				time.Sleep(admitHold)
				synctest.Wait()
			},
		},
		{
			// The queue's hold is the next task's now.
			name: "admitting stays admitting at the Decided of a task whose hold ended", from: admitting, to: admitting, queued: 1,
			setup: func(r *rig) *task {
				a := toAdmitting(r)
				r.submit(sc)
				time.Sleep(admitHold)
				synctest.Wait()
				if r.pick() == nil {
					r.t.Fatal("pick started nothing once the hold ended")
				}
				return a
			},
			verb: func(r *rig, a *task) { a.Decided() },
		},
		{
			// Refused after its hold ended: its queue, in turn meanwhile,
			// runs nothing before the refusal's wait is over.
			name: "inRing to parked by pick (a refusal after the hold's end still holds it)", from: inRing, to: parked, queued: 1, mustPark: true,
			setup: func(r *rig) *task {
				a := toAdmitting(r)
				time.Sleep(admitHold)
				synctest.Wait()
				a.Deferred(3*time.Second, wouldWait)
				return nil
			},
			verb: func(r *rig, _ *task) {
				if r.pick() != nil {
					r.t.Fatal("pick started a task within its queue's refusal's wait")
				}
			},
		},
		{
			name: "inRing to admitting by pick (its scope can go)", from: inRing, to: admitting,
			setup: func(r *rig) *task { r.submit(sc); return nil },
			verb:  func(r *rig, _ *task) { r.pick() },
		},
		{
			name: "inRing to parked by pick (its scope is paused)", from: inRing, to: parked, queued: 1, mustPark: true,
			setup: func(r *rig) *task {
				pause(r.t, r.g, sc, 5*time.Second)
				r.submit(sc)
				return nil
			},
			verb: func(r *rig, _ *task) {
				if r.pick() != nil {
					r.t.Fatal("pick started a task of a paused scope")
				}
			},
		},
		{
			name: "inRing to slotted by pick (no slot)", cfg: resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}},
			from: inRing, to: slotted, queued: 1,
			setup: func(r *rig) *task {
				r.holdSlot()
				r.submit(sc)
				return nil
			},
			verb: func(r *rig, _ *task) {
				if r.pick() != nil {
					r.t.Fatal("pick started a task with no slot free")
				}
			},
		},
		{
			name: "inRing to nowhere by pick (empty)", zero: true, from: inRing, to: nowhere,
			setup: func(r *rig) *task {
				r.submit(zero)
				return r.pick() // the zero scope's queue goes back in turn, empty
			},
			verb: func(r *rig, _ *task) { r.pick() },
		},
		{
			name: "inRing to inRing by pick (the zero scope, tasks left)", zero: true, from: inRing, to: inRing, queued: 1,
			setup: func(r *rig) *task {
				r.submit(zero)
				r.submit(zero)
				return nil
			},
			verb: func(r *rig, _ *task) { r.pick() },
		},
		{
			name: "parked to inRing when due (the wake-up)", from: parked, to: inRing, queued: 1,
			setup: func(r *rig) *task {
				t := toAdmitting(r)
				t.Deferred(3*time.Second, wouldWait)
				return t
			},
			verb: func(r *rig, _ *task) {
				time.Sleep(3 * time.Second)
				synctest.Wait()
			},
		},
		{
			name: "parked to admitting when due (pick)", from: parked, to: admitting,
			setup: func(r *rig) *task {
				t := toAdmitting(r)
				t.Deferred(3*time.Second, wouldWait)
				r.p.mu.Lock()
				r.p.armStop() // pick alone, no wake-up
				r.p.armedAt, r.p.armStop = 0, nil
				r.p.mu.Unlock()
				return t
			},
			verb: func(r *rig, _ *task) {
				time.Sleep(3 * time.Second)
				synctest.Wait()
				if r.pick() == nil {
					r.t.Fatal("pick started nothing of a queue due")
				}
			},
		},
		{
			// What the task met may have changed its scope (a breaker that
			// opened): the scope is asked again at once.
			name: "parked to inRing by the end of a task of it", from: parked, to: inRing, queued: 1,
			setup: func(r *rig) *task {
				t := toAdmitting(r)
				t.Decided() // in turn, its second task queued
				pause(r.t, r.g, sc, 5*time.Second)
				if r.pick() != nil {
					r.t.Fatal("pick started a task of a paused scope")
				}
				return t
			},
			verb: func(r *rig, t *task) { r.finish(t, nil) },
		},
		{
			// Looked at again: its task may have opened the breaker (pick
			// parks it again otherwise, the refusal's wait not over).
			name: "parked to inRing at a task's end within its refusal's wait", from: parked, to: inRing, queued: 1,
			setup: func(r *rig) *task {
				r.submit(sc)
				t := toAdmitting(r)
				t.Decided()
				r.pick().Deferred(3*time.Second, wouldWait)
				return t
			},
			verb: func(r *rig, t *task) { r.finish(t, nil) },
		},
		{
			name: "parked to inRing by the park recheck (a pause longer than it)", from: parked, to: inRing, queued: 1,
			setup: func(r *rig) *task {
				pause(r.t, r.g, sc, 5*time.Second)
				r.submit(sc)
				if r.pick() != nil {
					r.t.Fatal("pick started a task of a paused scope")
				}
				return nil
			},
			verb: func(r *rig, _ *task) {
				time.Sleep(parkRecheck)
				synctest.Wait()
			},
		},
		{
			// A task's first call refused after its hold ended (admitHold)
			// and the next task's began, the queue then empty: its run
			// ends behind that hold, which a wake-up ends by admitHold.
			name: "admitting stays admitting at the end of a deferred run behind another task's hold", from: admitting, to: admitting, queued: 1,
			setup: func(r *rig) *task {
				r.submit(sc)
				a := r.pick() // admitting for a, none queued: no wake-up armed
				time.Sleep(admitHold)
				r.submit(sc) // the hold over: b is in turn
				synctest.Wait()
				r.pick() // admitting for b, none queued
				a.Deferred(time.Second, wouldWait)
				return a
			},
			verb: func(r *rig, t *task) { r.finish(t, wouldWait) },
		},
		{
			name: "slotted to inRing by unslot", from: slotted, to: inRing, queued: 1,
			setup: func(r *rig) *task {
				t := toAdmitting(r)
				t.Deferred(0, wouldWait)
				return t
			},
			verb: func(r *rig, _ *task) { r.unslot() },
		},
		{
			// The governor tells the pool of a slot freed (slotFreed): here
			// by a call outside the pool that ends.
			name: "slotted to inRing by a slot freed", cfg: resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}},
			from: slotted, to: inRing, queued: 1,
			setup: toSlotted,
			verb: func(r *rig, _ *task) {
				r.freeSlot() // the call outside the pool ends: the slot is free
			},
		},
		{
			// A task's end frees no slot of its own (its calls' slots were
			// freed as they ended, and the governor told the pool then),
			// but its own queue is asked again: what the task met may have
			// opened its breaker.
			name: "slotted to inRing by its own task's end", cfg: resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}},
			from: slotted, to: inRing, queued: 1,
			setup: func(r *rig) *task {
				r.submit(sc)
				r.submit(sc)
				t := r.pick()
				r.holdSlot() // the account's slot, held as t's call would
				t.Decided()
				if r.pick() != nil {
					r.t.Fatal("pick started a task with no slot free")
				}
				return t
			},
			verb: func(r *rig, t *task) { r.finish(t, nil) },
		},
		{
			// Put back in turn as a slot is freed, a queue is asked again
			// unless a pass found its account full before it: here none
			// did, and the slot is free.
			name: "slotted to admitting by a slot freed and pick",
			cfg:  resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}},
			from: slotted, to: admitting,
			setup: toSlotted,
			verb: func(r *rig, _ *task) {
				r.freeSlot() // the call outside the pool ends: the slot is free
				if r.pick() == nil {
					r.t.Fatal("the slot freed put the queue back in turn, and pick did not start its task, the slot free")
				}
			},
		},
		{
			// Its run held no slot: its end frees none (see
			// TestRegressADeferredRunFreesNoSlot).
			name: "slotted stays slotted at the end of its deferred run", from: slotted, to: slotted, queued: 2,
			setup: func(r *rig) *task {
				t := toAdmitting(r)
				t.Deferred(0, wouldWait)
				return t
			},
			verb: func(r *rig, t *task) { r.finish(t, wouldWait) },
		},
		{
			name: "slotted to inRing by the slot recheck", from: slotted, to: inRing, queued: 1,
			setup: func(r *rig) *task {
				t := toAdmitting(r)
				t.Deferred(0, wouldWait)
				return t
			},
			verb: func(r *rig, _ *task) {
				time.Sleep(slotRecheck)
				synctest.Wait()
			},
		},
		{
			name: "nowhere to inRing by finish (a deferred run, its queue emptied meanwhile)", from: nowhere, to: inRing, queued: 1,
			setup: func(r *rig) *task {
				r.submit(sc)
				t := r.pick()
				t.Deferred(3*time.Second, wouldWait) // parked, with none queued
				time.Sleep(3 * time.Second)          // the wake-up puts it in turn
				synctest.Wait()
				r.pick() // empty: nowhere
				return t
			},
			verb: func(r *rig, t *task) { r.finish(t, wouldWait) },
		},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, row.cfg)
				defer r.close()
				s := sc
				if row.zero {
					s = zero
				}
				tk := row.setup(r)
				synctest.Wait()
				if w := r.where(s); w != row.from {
					t.Fatalf("before the move: where %d, want %d", w, row.from)
				}
				row.verb(r, tk)
				synctest.Wait()
				p := r.p
				p.mu.Lock()
				defer p.mu.Unlock()
				q := p.scopes[s]
				if q.where != row.to {
					t.Fatalf("after the move: where %d, want %d", q.where, row.to)
				}
				if q.n != row.queued {
					t.Fatalf("after the move: %d queued, want %d", q.n, row.queued)
				}
				if row.mustPark && (p.armedAt == 0 || p.armedAt > q.wakeAt) {
					t.Fatalf("parked until %v, the wake-up armed at %v", q.wakeAt, p.armedAt)
				}
				if q.where == slotted && p.armedAt == 0 {
					t.Fatal("slotted, and no recheck armed")
				}
				if err := checkStructure(p, nil); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
