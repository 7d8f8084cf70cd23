//go:build go1.25

package liveop

// TestNestedModel is the stateful model test of nested Runs: a Run made
// by an operation's function with its context, which joins another
// operation or waits (Request.Wait) for a slot. TestModel makes none.
// Random sequences of steps run against one guard (a cap of 1 or 2 per
// scope and 2 to 4 in all, a cooldown of 0 or 10 s, a cooldown after a
// failure or not, an operation timeout of 30 s or none), each sequence in
// its own testing/synctest bubble. The steps: a caller's Run (with a
// deadline or none); a Run made by the function of a running operation
// (with a deadline of its own or none), which joins an operation or
// waits for a slot of other scopes; a function returning a value or an
// error; time passing; a caller's context cancelled. Every function also
// returns by itself after a while, or never, and returns its context's
// cause when its context ends.
//
// The model does not replay the guard; it reads what the functions and
// Runs recorded: the operations whose function runs, the Run each
// function waits in, the operation each Run waits for (the one it
// started, or the running one of its key it joined) or that it waits for
// a slot. From that it works out, on its own, which operations can end:
// one cancelled (timed out, or every caller gone) can; one whose
// function waits for the result of one that cannot, or for a slot of
// scopes whose slots are all held by operations that cannot (counting
// only those), cannot; the others can. After every step:
//
//   - every running operation can end (the guard never deadlocks);
//   - a cancelled operation's function has returned, and a running
//     operation that no Run waits for has been cancelled;
//   - a Run whose deadline has passed has returned, and so has the
//     function of an operation whose timeout has passed;
//   - a nested Run got what the model decided before it was made: to
//     join, to start, to wait, a cooldown or busy refusal, or ErrNested
//     exactly when the Run would have left its own operation unable to
//     end (for a wait, a busy refusal wrapping ErrNested); no other Run
//     gets ErrNested;
//   - Status is the model's: the slots held in all and per scope, within
//     the caps; the operations in flight with their callers; started,
//     joined; each cooldown left.
//
// Each sequence ends with every caller's context cancelled and time
// passing: every Run returns and every function returns, and the bubble
// fails it if a goroutine is left.
//
// Time passes in steps a millisecond past whole seconds, so that no step
// comes at the instant of a deadline or a timeout, which the records
// could not order. Breaking Guard.stuck on purpose (reporting no Run as
// one that would wait for itself) fails it at once: the nested Run the
// model refuses waits, and the operations wait for each other.
//
//	go test -race -tags cloudgdebug -count=1 -run '^TestNestedModel$' ./liveop/ -rapid.checks=5000

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/cloudg/cloudg/internal/modeltest"
)

const (
	nestedChecks = 500
	nestedSteps  = 50
)

func TestNestedModel(t *testing.T) {
	modeltest.Budget(t, nestedChecks, nestedSteps)
	nestedReached.Reset()
	defer nestedReached.Log(t)
	defer nestedWatch.Start("TestNestedModel", time.Minute)()
	rapid.Check(t, func(rt *rapid.T) {
		rapid.SyncTest(rt, func(rt *rapid.T) {
			m := newNestMachine(rt)
			rt.Cleanup(m.abandon)
			rt.Repeat(m.actions())
			m.end(rt)
		})
	})
}

var (
	nestedReached modeltest.Tally
	nestedWatch   modeltest.Watch
)

// What the model decides a nested Run gets.
const (
	nJoin     = "join"
	nStart    = "start"
	nWait     = "wait"
	nNested   = "ErrNested"
	nBusy     = "busy"
	nCooldown = "cooldown"
)

// nrun is one Run: a caller's (parent nil) or one made by the function
// of the operation parent.
type nrun struct {
	id       int
	req      Request
	parent   *nop
	issued   time.Time
	deadline time.Time // zero: none
	life     time.Duration
	cancel   context.CancelFunc
	decided  string // a nested Run: what the model decided it gets
	started  *nop   // the operation it started
	awaits   *nop   // the operation whose result it waits for: the one it started or joined
	joined   bool   // it joined an operation
	done     bool
	at       time.Time
	out      outcome
}

// nop is an operation whose function started.
type nop struct {
	id       int // of the Run that started it
	key      string
	scopes   []string
	start    time.Time
	timeout  time.Duration
	ctx      context.Context
	cmds     chan ncmd
	nested   *nrun // the Run its function waits in (nil: none)
	returned bool
	endedAt  time.Time
	failed   bool
	cooled   bool // the model has started its scopes' cooldown (or not) for its end
}

// ncmd tells an operation's function to return, or to make a Run.
type ncmd struct {
	fail bool
	run  *nrun // nil: return
}

type nestMachine struct {
	g   *Guard
	set settings

	// quit, closed by abandon, lets the functions waiting for the test's
	// word return after a failed sequence, whether or not the guard
	// cancels their context.
	quit chan struct{}

	mu      sync.Mutex // guards what the functions and Runs record
	runs    []*nrun
	ops     []*nop
	cooling map[string]time.Time
	joined  int64
}

func newNestMachine(rt *rapid.T) *nestMachine {
	cfg := Config{
		CooldownSeconds:         ptr(rapid.SampledFrom([]float64{0, 10}).Draw(rt, "cooldown")),
		MaxConcurrent:           rapid.IntRange(1, 2).Draw(rt, "maxPerScope"),
		MaxConcurrentTotal:      rapid.IntRange(2, 4).Draw(rt, "maxTotal"),
		CooldownAfterFailure:    ptr(rapid.Bool().Draw(rt, "coolAfterFailure")),
		OperationTimeoutSeconds: rapid.SampledFrom([]float64{0, 30}).Draw(rt, "timeout"),
	}
	g, err := New(cfg)
	if err != nil {
		rt.Fatal(err)
	}
	nestedWatch.Begin("new guard: cooldown %vs, after a failure %v, %d per scope, %d in all, timeout %vs",
		*cfg.CooldownSeconds, *cfg.CooldownAfterFailure, cfg.MaxConcurrent, cfg.MaxConcurrentTotal, cfg.OperationTimeoutSeconds)
	return &nestMachine{g: g, set: cfg.settings(), cooling: map[string]time.Time{}, quit: make(chan struct{})}
}

func (m *nestMachine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"run":     m.run,
		"nest":    m.nest,
		"return":  m.ret,
		"advance": m.advance,
		"cancel":  m.cancelOne,
	}
}

// The lives of operations' functions (0: until their context ends) and
// the deadlines of Runs, on grids apart, so that a function rarely
// returns at the instant a caller's deadline passes or a timeout ends.
var (
	nestLives     = []time.Duration{0, 7310 * time.Millisecond, 23370 * time.Millisecond}
	nestDeadlines = []time.Duration{0, 0, 15 * time.Second, 50 * time.Second}
	nestKeys      = []string{"", "a", "b", "c"}
)

// drawRun draws a Run, by parent's function (nil: a caller's); m.runs
// is the test goroutine's.
func (m *nestMachine) drawRun(rt *rapid.T, parent *nop) *nrun {
	r := &nrun{id: len(m.runs), parent: parent, req: Request{
		Key:     rapid.SampledFrom(nestKeys).Draw(rt, "key"),
		Scopes:  rapid.SliceOfNDistinct(rapid.SampledFrom(modelScopes), 0, 2, rapid.ID[string]).Draw(rt, "scopes"),
		Caller:  "x",
		Bypass:  rapid.IntRange(0, 2).Draw(rt, "bypass") == 0,
		Wait:    rapid.IntRange(0, 3).Draw(rt, "wait") != 0,
		Timeout: rapid.SampledFrom([]time.Duration{0, 0, -1, 20 * time.Second}).Draw(rt, "reqTimeout"),
	}, life: rapid.SampledFrom(nestLives).Draw(rt, "life"), issued: time.Now()}
	if d := rapid.SampledFrom(nestDeadlines).Draw(rt, "deadline"); d > 0 {
		r.deadline = time.Now().Add(d)
	}
	m.runs = append(m.runs, r)
	return r
}

// fn is the function of the operation r starts: it returns its value
// after r.life (never when 0), its context's cause when its context
// ends, or what the test tells it, and makes the Runs the test tells it
// to, with its context.
func (m *nestMachine) fn(r *nrun) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		timeout := r.req.Timeout
		if timeout == 0 {
			timeout = m.set.operationTimeout
		}
		op := &nop{id: r.id, key: r.req.Key, scopes: slices.Compact(slices.Sorted(slices.Values(r.req.Scopes))),
			start: time.Now(), timeout: max(timeout, 0), ctx: ctx, cmds: make(chan ncmd)}
		m.mu.Lock()
		m.ops = append(m.ops, op)
		r.started = op
		m.mu.Unlock()
		val, err := m.body(ctx, op, r.life)
		m.mu.Lock()
		op.returned, op.endedAt, op.failed = true, time.Now(), err != nil || ctx.Err() != nil
		m.mu.Unlock()
		return val, err
	}
}

func (m *nestMachine) body(ctx context.Context, op *nop, life time.Duration) (string, error) {
	var expired <-chan time.Time
	if life > 0 {
		t := time.NewTimer(life)
		defer t.Stop()
		expired = t.C
	}
	val := fmt.Sprintf("v%d", op.id)
	for {
		select {
		case <-expired:
			return val, nil
		case <-ctx.Done():
			return "", context.Cause(ctx)
		case <-m.quit:
			return "", errSequenceAbandoned
		case c := <-op.cmds:
			if c.run == nil {
				if c.fail {
					return "", errFail
				}
				return val, nil
			}
			rctx, cancel := context.WithCancel(ctx)
			if !c.run.deadline.IsZero() {
				rctx, cancel = context.WithDeadline(ctx, c.run.deadline)
			}
			defer cancel()
			m.mu.Lock()
			c.run.cancel = cancel // for abandon only
			m.mu.Unlock()
			v, err := Run(rctx, m.g, c.run.req, m.fn(c.run))
			m.mu.Lock()
			op.nested = nil
			c.run.done, c.run.at, c.run.out = true, time.Now(), outcome{v, err}
			m.mu.Unlock()
		}
	}
}

func (m *nestMachine) run(rt *rapid.T) {
	r := m.drawRun(rt, nil)
	nestedWatch.Step("run %d: %+v, life %v, deadline %v", r.id, r.req, r.life, r.deadline)
	ctx := context.Background()
	if r.deadline.IsZero() {
		ctx, r.cancel = context.WithCancel(ctx)
	} else {
		ctx, r.cancel = context.WithDeadline(ctx, r.deadline)
	}
	fn := m.fn(r)
	go func() {
		v, err := Run(ctx, m.g, r.req, fn)
		m.mu.Lock()
		r.done, r.at, r.out = true, time.Now(), outcome{v, err}
		m.mu.Unlock()
	}()
	m.settle(rt)
}

// idle returns the running operations whose function waits for the
// test's word, not in a Run, and not cancelled, nor at the instant of
// its timeout (whose timer may not have fired yet: a function that
// returns then ends as the guard finds it first, timed out or not).
func (m *nestMachine) idle() []*nop {
	var ops []*nop
	now := time.Now()
	for _, op := range m.running() {
		if op.nested == nil && op.ctx.Err() == nil && (op.timeout == 0 || now.Before(op.start.Add(op.timeout))) {
			ops = append(ops, op)
		}
	}
	return ops
}

func (m *nestMachine) nest(rt *rapid.T) {
	m.mu.Lock()
	ops := m.idle()
	m.mu.Unlock()
	if len(ops) == 0 {
		return
	}
	// Drawn with m.mu let go: a draw may panic, as rapid shrinks.
	p := ops[rapid.IntRange(0, len(ops)-1).Draw(rt, "parent")]
	r := m.drawRun(rt, p)
	m.mu.Lock()
	r.decided = m.decide(p, r.req)
	p.nested = r
	m.mu.Unlock()
	nestedReached.Add("nested: " + r.decided)
	nestedWatch.Step("nested run %d by op %d: %+v, life %v, deadline %v; the model: %s", r.id, p.id, r.req, r.life, r.deadline, r.decided)
	m.tell(rt, p, ncmd{run: r})
	m.settle(rt)
}

// tell gives the idle operation p's function the command c: with the
// bubble settled, its function waits for it (were it not, the send
// would wait while time passed).
func (m *nestMachine) tell(rt *rapid.T, p *nop, c ncmd) {
	select {
	case p.cmds <- c:
	default:
		m.mu.Lock()
		defer m.mu.Unlock()
		rt.Fatalf("op %d's function does not wait for the test's word\n%s", p.id, m.describe())
	}
}

func (m *nestMachine) ret(rt *rapid.T) {
	m.mu.Lock()
	ops := m.idle()
	m.mu.Unlock()
	if len(ops) == 0 {
		return
	}
	p := ops[rapid.IntRange(0, len(ops)-1).Draw(rt, "op")]
	fail := rapid.Bool().Draw(rt, "fail")
	nestedWatch.Step("op %d returns (failed %v)", p.id, fail)
	m.tell(rt, p, ncmd{fail: fail})
	m.settle(rt)
}

func (m *nestMachine) advance(rt *rapid.T) {
	// A millisecond more, so that no step comes at the instant of a
	// deadline or a timeout (each a whole number of seconds after the
	// step that set it): a timer due at the instant the test goroutine
	// wakes may not have fired when the bubble settles, and a function
	// told to return then would end before or after it.
	d := rapid.SampledFrom([]time.Duration{time.Second, 5 * time.Second, 20 * time.Second}).Draw(rt, "sleep") + time.Millisecond
	nestedWatch.Step("sleep %v", d)
	time.Sleep(d)
	m.settle(rt)
}

// callers returns the callers' Runs (not nested) that have not returned.
func (m *nestMachine) callers() []*nrun {
	var rs []*nrun
	for _, r := range m.runs {
		if r.parent == nil && !r.done {
			rs = append(rs, r)
		}
	}
	return rs
}

func (m *nestMachine) cancelOne(rt *rapid.T) {
	m.mu.Lock()
	rs := m.callers()
	m.mu.Unlock()
	if len(rs) == 0 {
		return
	}
	r := rs[rapid.IntRange(0, len(rs)-1).Draw(rt, "cancel")]
	nestedWatch.Step("cancel %d", r.id)
	r.cancel()
	m.settle(rt)
}

// running returns the operations whose function has not returned; m.mu
// is held.
func (m *nestMachine) running() []*nop {
	var ops []*nop
	for _, op := range m.ops {
		if !op.returned {
			ops = append(ops, op)
		}
	}
	return ops
}

// joinable returns the operation a Run of key joins: the running one of
// that key that is not cancelled; m.mu is held.
func (m *nestMachine) joinable(key string) *nop {
	if key == "" {
		return nil
	}
	for _, op := range m.running() {
		if op.key == key && op.ctx.Err() == nil {
			return op
		}
	}
	return nil
}

// abandonedAsItReturned reports whether the operation op, whose function
// returned with its context not cancelled, had no caller left to take
// its result: every Run that waited for it has returned with its own
// context's end, not the result, the last at the instant the function
// returned (a deadline or a timeout set at the step that set the one
// ending the Run the function waited in, after which it returned its
// value, its life over). The function's return and the last caller's
// leaving then come at one instant of the bubble's clock, in no order
// that the test or the guard sets: the guard ends the operation as it
// finds the one or the other first under its lock, finished (the callers
// still there take its result, and its scopes cool down) or abandoned (a
// failure: every caller has gone, each with its own context's error).
// The Runs' results say which it found. A Run that left earlier leaves
// the operation to the others; were they all gone before the function
// returned, its context would have been cancelled (ErrAbandoned) first.
// m.mu is held.
func (m *nestMachine) abandonedAsItReturned(op *nop) bool {
	var last time.Time
	for _, r := range m.runs {
		if r.awaits != op {
			continue
		}
		var re *RefusedError
		if !r.done || errors.As(r.out.err, &re) || !errors.Is(r.out.err, context.Canceled) && !errors.Is(r.out.err, context.DeadlineExceeded) {
			return false // it waits still, or took the result (or a refusal)
		}
		if r.at.After(last) {
			last = r.at
		}
	}
	return last.Equal(op.endedAt) && !last.IsZero()
}

// endable returns the running operations that can end, worked out from
// what the functions and Runs recorded: a cancelled one can; one whose
// function waits in a Run for an operation that cannot, or for a slot
// of scopes all of whose slots (or the total's) are held by operations
// that cannot, cannot; the others can. It counts one more Run made by
// p's function (p nil: none), waiting for join or, join nil, for a slot
// of scopes. m.mu is held.
func (m *nestMachine) endable(p, join *nop, scopes []string) map[*nop]bool {
	running := m.running()
	ends := map[*nop]bool{}
	for changed := true; changed; {
		changed = false
		total, held := 0, map[string]int{}
		for _, o := range running {
			if !ends[o] {
				total++
				for _, s := range o.scopes {
					held[s]++
				}
			}
		}
		frees := func(scopes []string) bool {
			if total >= m.set.maxTotal {
				return false
			}
			for _, s := range scopes {
				if held[s] >= m.set.maxPerScope {
					return false
				}
			}
			return true
		}
		waitsOK := func(join *nop, scopes []string) bool {
			if join != nil {
				return join.returned || ends[join]
			}
			return frees(scopes)
		}
		for _, o := range running {
			if ends[o] {
				continue
			}
			can := true
			if o.ctx.Err() == nil {
				if r := o.nested; r != nil && !r.done {
					can = waitsOK(r.awaits, slices.Compact(slices.Sorted(slices.Values(r.req.Scopes))))
				}
				if o == p {
					can = can && waitsOK(join, scopes)
				}
			}
			if can {
				ends[o], changed = true, true
			}
		}
	}
	return ends
}

// decide is what a Run of req made by p's function gets, by the rules of
// the package documentation: it joins the running operation of its key,
// unless it would wait for its own result (ErrNested); else it is
// refused for a cooldown; else, the caps full (for a nested Run, only
// the slots operations hold count), it waits, unless it would wait for
// itself (ErrNested), or is refused as busy without Wait; else it
// starts. m.mu is held, with everything settled: no slot is handed to a
// waiting caller that has not taken it.
func (m *nestMachine) decide(p *nop, req Request) string {
	if y := m.joinable(req.Key); y != nil {
		if !m.endable(p, y, nil)[p] {
			nestedReached.Add("ErrNested: a join")
			return nNested
		}
		return nJoin
	}
	scopes := slices.Compact(slices.Sorted(slices.Values(req.Scopes)))
	now := time.Now()
	if !req.Bypass {
		for _, s := range scopes {
			if m.cooling[s].After(now) {
				return nCooldown
			}
		}
	}
	running := m.running()
	busy := len(running) >= m.set.maxTotal
	for _, s := range scopes {
		n := 0
		for _, o := range running {
			if slices.Contains(o.scopes, s) {
				n++
			}
		}
		busy = busy || n >= m.set.maxPerScope
	}
	switch {
	case !busy:
		return nStart
	case !req.Wait:
		return nBusy
	case !m.endable(p, nil, scopes)[p]:
		nestedReached.Add("ErrNested: a wait")
		return nNested
	}
	return nWait
}

// settle lets the bubble settle, brings the model up to what was
// recorded and checks the invariants.
func (m *nestMachine) settle(rt *rapid.T) {
	synctest.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()

	// The operation each Run waits for: the one it started, or the
	// running one of its key, which a Run waiting for a slot joins as it
	// starts.
	// A Run that joined an operation and returned within the step (its
	// deadline passed) got what a caller of it gets: not a refusal of
	// its own (a busy one wraps the end of its context), nor ErrNested.
	for _, r := range m.runs {
		switch {
		case r.awaits != nil || r.joined:
		case r.started != nil:
			r.awaits = r.started
		case !r.done:
			if y := m.joinable(r.req.Key); y != nil {
				r.awaits, r.joined = y, true
				m.joined++
				nestedReached.Add("joined")
			}
		default:
			var re *RefusedError
			if !errors.Is(r.out.err, ErrNested) && (!errors.As(r.out.err, &re) || re.Reason == ReasonTimeout) {
				r.joined = true
				m.joined++
				nestedReached.Add("joined and returned within a step")
			}
		}
	}

	// The ends of functions, in time order, start their scopes'
	// cooldowns, but for a failure (with no cooldown after one): an
	// error, a cancelled context, or every caller gone at the instant
	// the function returned (abandonedAsItReturned).
	var ended []*nop
	for _, op := range m.ops {
		if op.returned && !op.cooled {
			ended = append(ended, op)
		}
	}
	sort.SliceStable(ended, func(i, j int) bool { return ended[i].endedAt.Before(ended[j].endedAt) })
	for _, op := range ended {
		op.cooled = true
		if !op.failed && m.abandonedAsItReturned(op) {
			op.failed = true
			nestedReached.Add("abandoned as its function returned")
		}
		if !op.failed || m.set.coolAfterFailure {
			for _, s := range op.scopes {
				if d := m.set.cooldownOf(s); d > 0 {
					m.cooling[s] = op.endedAt.Add(d)
				}
			}
		}
	}

	// A nested Run got what the model decided; no other Run gets
	// ErrNested.
	for _, r := range m.runs {
		if r.done && errors.Is(r.out.err, ErrNested) && (r.parent == nil || r.decided != nNested || !r.at.Equal(r.issued)) {
			rt.Fatalf("Run %d (%+v, by op %v) got %v at %v; the model decided %q when it was made", r.id, r.req, r.parentID(), r.out.err, r.at, r.decided)
		}
		if r.parent == nil || r.decided == "" {
			continue
		}
		d := r.decided
		r.decided = "" // checked once, as it is made
		var ok bool
		switch d {
		case nJoin:
			ok = !r.done && r.started == nil && r.awaits != nil
		case nStart:
			ok = r.started != nil
		case nWait:
			ok = !r.done && r.started == nil && r.awaits == nil
		case nNested:
			ok = r.done && errors.Is(r.out.err, ErrNested)
			r.decided = nNested // kept, for the check above
		case nBusy, nCooldown:
			var re *RefusedError
			ok = r.done && errors.As(r.out.err, &re) && string(re.Reason) == d && !errors.Is(r.out.err, ErrNested)
		}
		if !ok {
			rt.Fatalf("nested Run %d (%+v) by op %d: the model decided %q; got done %v %q %v, started %v, waits for op %v",
				r.id, r.req, r.parent.id, d, r.done, r.out.val, r.out.err, r.started != nil, r.awaitsID())
		}
	}

	// Every running operation can end; a cancelled one has returned; one
	// no Run waits for has been cancelled; the timeouts and deadlines
	// hold.
	ends := m.endable(nil, nil, nil)
	waitedFor := map[*nop]int{}
	for _, r := range m.runs {
		if !r.done && r.awaits != nil {
			waitedFor[r.awaits]++
		}
		if !r.done && !r.deadline.IsZero() && !now.Before(r.deadline) {
			rt.Fatalf("Run %d (%+v, by op %v), deadline %v, has not returned at %v\n%s", r.id, r.req, r.parentID(), r.deadline, now, m.describe())
		}
	}
	for _, op := range m.running() {
		switch {
		case !ends[op]:
			rt.Fatalf("op %d cannot end: it waits for itself\n%s", op.id, m.describe())
		case op.ctx.Err() != nil:
			rt.Fatalf("op %d, cancelled (%v), has not returned\n%s", op.id, context.Cause(op.ctx), m.describe())
		case waitedFor[op] == 0:
			rt.Fatalf("op %d runs on, not cancelled, for no caller\n%s", op.id, m.describe())
		case op.timeout > 0 && !now.Before(op.start.Add(op.timeout)):
			rt.Fatalf("op %d, timeout %v, has not returned at %v\n%s", op.id, op.timeout, now, m.describe())
		}
	}

	// Status is the model's.
	st := m.g.Status()
	running := m.running()
	scopes := map[string]int{}
	var want, got []string
	for _, op := range running {
		for _, s := range op.scopes {
			scopes[s]++
		}
		want = append(want, fmt.Sprintf("%q %v callers %d running %v", op.key, op.scopes, waitedFor[op], tenths(now.Sub(op.start))))
	}
	for _, o := range st.InFlight {
		got = append(got, fmt.Sprintf("%q %v callers %d running %v", o.Key, o.Scopes, o.Callers, o.RunningSeconds))
	}
	if st.Active != len(running) || !equalMaps(st.ActiveScopes, scopes) || st.Started != int64(len(m.ops)) || st.Joined != m.joined {
		rt.Fatalf("status %+v\nmodel: active %d %v, started %d, joined %d", st, len(running), scopes, len(m.ops), m.joined)
	}
	if !sameMultiset(got, want) {
		rt.Fatalf("in flight:\n  %s\nmodel:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if st.Active > m.set.maxTotal {
		rt.Fatalf("%d operations run; the cap is %d", st.Active, m.set.maxTotal)
	}
	for s, n := range st.ActiveScopes {
		if n > m.set.maxPerScope {
			rt.Fatalf("%d operations run on %s; the cap is %d", n, s, m.set.maxPerScope)
		}
	}
	cooling := map[string]float64{}
	for s, until := range m.cooling {
		if left := until.Sub(now); left > 0 {
			cooling[s] = tenthsUp(left)
		}
	}
	if !equalMaps(st.Cooling, cooling) {
		var ends []string
		for _, op := range m.ops {
			if op.returned {
				ends = append(ends, fmt.Sprintf("op %d %v started %v timeout %v ended %v failed %v (%v)", op.id, op.scopes,
					op.start.Format("15:04:05.000"), op.timeout, op.endedAt.Format("15:04:05.000"), op.failed, context.Cause(op.ctx)))
			}
		}
		rt.Fatalf("cooling %v; the model: %v; at %v the ends:\n  %s", st.Cooling, cooling, now.Format("15:04:05.000"), strings.Join(ends, "\n  "))
	}
}

func (r *nrun) parentID() any {
	if r.parent == nil {
		return "none"
	}
	return r.parent.id
}

func (r *nrun) awaitsID() any {
	if r.awaits == nil {
		return "none"
	}
	return r.awaits.id
}

// describe lists the running operations and the Runs that have not
// returned, for a failure; m.mu is held.
func (m *nestMachine) describe() string {
	var b strings.Builder
	for _, op := range m.running() {
		fmt.Fprintf(&b, "  op %d %q %v started %v timeout %v cancelled %v", op.id, op.key, op.scopes, op.start.Format("15:04:05.000"), op.timeout, context.Cause(op.ctx))
		if op.nested != nil {
			fmt.Fprintf(&b, ", its function in Run %d", op.nested.id)
		}
		b.WriteString("\n")
	}
	for _, r := range m.runs {
		if !r.done {
			fmt.Fprintf(&b, "  Run %d %+v by op %v deadline %v: waits for op %v\n", r.id, r.req, r.parentID(), r.deadline, r.awaitsID())
		}
	}
	return b.String()
}

// abandon ends a sequence that failed: the context of every Run, nested
// ones too, is cancelled, the functions waiting for the test's word
// return (quit) and time passes, so that the bubble ends with the
// failure rather than with the goroutines it left, even when the guard
// let operations wait for each other, or left one no caller waits for
// running, its context not cancelled (a goroutine left blocked ends the
// bubble with a deadlock, which rapid reports in place of the failure).
func (m *nestMachine) abandon() {
	m.mu.Lock()
	var cancels []context.CancelFunc
	for _, r := range m.runs {
		if r.cancel != nil {
			cancels = append(cancels, r.cancel)
		}
	}
	m.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
	close(m.quit)
	time.Sleep(time.Hour)
}

// end cancels every caller's context, one at a time, and lets time pass:
// every Run and every function returns, and no slot stays held.
func (m *nestMachine) end(rt *rapid.T) {
	for {
		m.mu.Lock()
		rs := m.callers()
		m.mu.Unlock()
		if len(rs) == 0 {
			break
		}
		nestedWatch.Step("end: cancel %d", rs[0].id)
		rs[0].cancel()
		m.settle(rt)
	}
	for range 2 {
		nestedWatch.Step("end: sleep 1m")
		time.Sleep(time.Minute)
		m.settle(rt)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.runs {
		if !r.done {
			rt.Fatalf("at the end, Run %d has not returned\n%s", r.id, m.describe())
		}
	}
	if st := m.g.Status(); st.Active != 0 || len(st.InFlight) != 0 || len(m.running()) != 0 {
		rt.Fatalf("at the end, status %+v, the model's running %d", st, len(m.running()))
	}
}
