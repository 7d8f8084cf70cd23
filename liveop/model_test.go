//go:build go1.25

package liveop

// The stateful model test of the Guard: random sequences of steps against
// one guard (a cap of 1 or 2 per scope and 1 to 3 in all, a cooldown of 0,
// 10 or 60 s and sometimes another for aws, a cooldown after a failure or
// not, a caller quota of 0 to 2 per 30 s, a timeout or none), each
// sequence in its own testing/synctest bubble. The steps: Run of a request
// drawn from three keys (one empty), three scopes, two callers, Bypass,
// Wait and a timeout of its own, whose function returns a value or an
// error, panics, ignores its context or waits for it; time passing;
// a caller's context cancelled; Check; MarkCompleted, Reset and ResetAll.
//
// The model keeps the operations, their callers, the cooldowns and the
// callers' starts. Before a Run it decides what the Run gets: it joins
// an operation, starts one, or is refused with the reason, retry-after,
// scopes and caller the model works out (a busy Run with Wait waits). After
// every step the bubble settles and the model replays what happened in
// it, in time order, from what the functions and callers recorded: a
// timeout gives the callers the timeout refusal, a function's return
// frees its slots, starts the cooldown (after a failure only when the
// guard is told to) and gives its callers the result; an operation a
// waiting caller started must be one the rules let start then, and every
// waiting caller with its key joins it; a waiting caller refused must be
// refused for the reason the model finds then. Events of one instant
// happen in an order the records do not keep (two operations ending at
// once end one after another, and a caller woken between them sees the
// first end only), so a waiting caller may also have started before a
// cooldown begun at that instant, or been refused before an operation
// of its key or its caller's started then, or with a cooldown that an
// operation ending then lengthened. Then the invariants hold:
// every caller has the outcome the model expects and no other; a caller
// still waiting for a slot would still be refused by the caps, and by no
// rule before them (its quota, a cooldown); Status is
// the model's (slots in all and per scope within the caps, the
// operations in flight and their callers, started, joined, each cooldown
// left), as is CooldownRemaining. Each sequence ends with every caller's
// context cancelled and time passing until every function has returned,
// leaving no slot held, and the bubble fails it if a goroutine is left.
//
// Breaking the guard on purpose (no wake-up of the waiting callers when
// an operation ends, a failed operation cooling down when the guard is
// told not to, a start leaving the quota window a moment late, a
// timed-out operation left joinable) fails it within a few hundred
// sequences. A waiting caller that spins at one instant stops virtual
// time, and would hang the run until go test's -timeout: the watchdog
// then ends the process with the sequence's steps.
//
// CI runs modelChecks sequences of about modelSteps steps. A long soak:
//
//	go test -race -tags cloudgdebug -count=1 -run '^TestModel$' ./liveop/ -rapid.checks=20000

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
	modelChecks = 1000
	modelSteps  = 60
)

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

// watch records the steps of the sequence running, for the watchdog.
var watch modeltest.Watch

// kind is what an operation's function does.
type kind uint8

const (
	kOK       kind = iota // returns its value after d, or its context's cause when it ends first
	kFail                 // returns errFail after d, or its context's cause
	kPanic                // panics after d, or returns its context's cause
	kStubborn             // returns its value after d, whatever its context
	kHang                 // returns its context's cause when it ends
)

var kindNames = [...]string{"ok", "fail", "panic", "stubborn", "hang"}

var errFail = errors.New("AccessDenied")

var (
	modelScopes  = []string{"aws/1", "aws/2", "gcp/p"}
	modelKeys    = []string{"", "a", "b"}
	modelCallers = []string{"x", "y"}
)

// call is one Run.
type call struct {
	id      int
	req     Request
	kind    kind
	d       time.Duration
	cancel  context.CancelFunc
	op      *mop // the operation it started or joined
	waiting bool // for a slot
	direct  bool // the model decided it starts an operation at once
	want    *outcome
	done    bool // its outcome is checked
}

// mop is the model's operation.
type mop struct {
	starter   *call
	key       string
	scopes    []string
	start     time.Time
	timeout   time.Duration
	callers   []*call // waiting for the result
	returned  bool
	timedOut  bool
	abandoned bool
}

// event is what the functions and callers of a sequence recorded.
type event struct {
	at    time.Time
	order int // returns (1), then starts (2), then outcomes (3), at one instant; timeouts come before them
	id    int
	out   outcome
}

type machine struct {
	g   *Guard
	cfg Config
	set settings

	// quit, closed by abandon, lets the functions that wait for their
	// context alone (kHang) return after a failed sequence, whether or
	// not the guard cancels their context.
	quit chan struct{}

	mu     sync.Mutex
	events []event // recorded, not replayed yet

	calls   []*call
	ops     []*mop
	byID    map[int]*mop // the operation a call started
	cooling map[string]time.Time
	starts  map[string][]time.Time
	joined  int64
	// refusedAt holds the callers that got an outcome during the step
	// being replayed, and when.
	refusedAt map[int]time.Time
	// cooledAt holds when an operation's end last started each scope's
	// cooldown.
	cooledAt map[string]time.Time
	before   map[string]time.Time // each scope's cooldown before that
	// hideFrom hides the operations that started at that instant from
	// joinable: a caller refused then may have been refused before they
	// started.
	hideFrom time.Time
}

func newMachine(rt *rapid.T) *machine {
	cfg := Config{
		CooldownSeconds:         ptr(rapid.SampledFrom([]float64{0, 10, 60}).Draw(rt, "cooldown")),
		MaxConcurrent:           rapid.IntRange(1, 2).Draw(rt, "maxPerScope"),
		MaxConcurrentTotal:      rapid.IntRange(1, 3).Draw(rt, "maxTotal"),
		CallerMaxOperations:     rapid.IntRange(0, 2).Draw(rt, "callerMax"),
		CallerWindowSeconds:     30,
		CooldownAfterFailure:    ptr(rapid.Bool().Draw(rt, "coolAfterFailure")),
		OperationTimeoutSeconds: rapid.SampledFrom([]float64{0, 30}).Draw(rt, "timeout"),
	}
	if rapid.Bool().Draw(rt, "awsCooldown") {
		cfg.ProviderCooldownSeconds = map[string]float64{"aws": rapid.SampledFrom([]float64{0, 25}).Draw(rt, "aws")}
	}
	g, err := New(cfg)
	if err != nil {
		rt.Fatal(err)
	}
	watch.Begin("new guard: cooldown %vs (%v), after a failure %v, %d per scope, %d in all, %d per caller in 30s, timeout %vs",
		*cfg.CooldownSeconds, cfg.ProviderCooldownSeconds, *cfg.CooldownAfterFailure, cfg.MaxConcurrent, cfg.MaxConcurrentTotal, cfg.CallerMaxOperations, cfg.OperationTimeoutSeconds)
	return &machine{g: g, cfg: cfg, set: cfg.settings(), byID: map[int]*mop{}, quit: make(chan struct{}),
		cooling: map[string]time.Time{}, starts: map[string][]time.Time{}, cooledAt: map[string]time.Time{}, before: map[string]time.Time{}}
}

func (m *machine) record(e event) {
	e.at = time.Now()
	m.mu.Lock()
	m.events = append(m.events, e)
	m.mu.Unlock()
}

// fn is the function of c's operation.
func (m *machine) fn(c *call) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		m.record(event{order: 2, id: c.id})
		defer m.record(event{order: 1, id: c.id})
		val := fmt.Sprintf("v%d", c.id)
		switch c.kind {
		case kStubborn:
			time.Sleep(c.d)
			return val, nil
		case kHang:
			select {
			case <-ctx.Done():
				return "", context.Cause(ctx)
			case <-m.quit:
				return "", errSequenceAbandoned
			}
		}
		select {
		case <-time.After(c.d):
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
		switch c.kind {
		case kFail:
			return "", errFail
		case kPanic:
			panic("boom")
		}
		return val, nil
	}
}

func (m *machine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"run":     m.run,
		"advance": m.advance,
		"cancel":  m.cancelOne,
		"check":   m.check,
		"mark": func(rt *rapid.T) {
			scopes := m.drawScopes(rt)
			watch.Step("mark %v", scopes)
			m.g.MarkCompleted(scopes...)
			now := time.Now()
			for _, s := range scopes {
				if d := m.set.cooldownOf(s); d > 0 {
					m.cooling[s] = now.Add(d)
				}
			}
			m.settle(rt)
		},
		"reset": func(rt *rapid.T) {
			s := rapid.SampledFrom(modelScopes).Draw(rt, "scope")
			watch.Step("reset %s", s)
			m.g.Reset(s)
			delete(m.cooling, s)
			m.settle(rt)
		},
		"resetAll": func(rt *rapid.T) {
			if rapid.IntRange(0, 4).Draw(rt, "rarely") != 0 {
				return
			}
			watch.Step("reset all")
			m.g.ResetAll()
			clear(m.cooling)
			clear(m.starts)
			m.settle(rt)
		},
	}
}

func (m *machine) drawScopes(rt *rapid.T) []string {
	return rapid.SliceOfNDistinct(rapid.SampledFrom(modelScopes), 0, 2, rapid.ID[string]).Draw(rt, "scopes")
}

func (m *machine) drawRequest(rt *rapid.T) Request {
	return Request{
		Key:     rapid.SampledFrom(modelKeys).Draw(rt, "key"),
		Scopes:  m.drawScopes(rt),
		Caller:  rapid.SampledFrom(modelCallers).Draw(rt, "caller"),
		Bypass:  rapid.IntRange(0, 4).Draw(rt, "bypass") == 0,
		Wait:    rapid.Bool().Draw(rt, "wait"),
		Timeout: rapid.SampledFrom([]time.Duration{0, 0, -1, 20 * time.Second}).Draw(rt, "reqTimeout"),
	}
}

func (m *machine) run(rt *rapid.T) {
	c := &call{id: len(m.calls), req: m.drawRequest(rt),
		kind: kind(rapid.IntRange(0, len(kindNames)-1).Draw(rt, "kind")),
		d:    rapid.SampledFrom([]time.Duration{5 * time.Second, 40 * time.Second}).Draw(rt, "d")}
	m.calls = append(m.calls, c)
	watch.Step("run %d: %+v, %s after %v", c.id, c.req, kindNames[c.kind], c.d)
	now := time.Now()
	join, refused := m.decide(c.req, now, m.kept(nil))
	var ctx context.Context
	ctx, c.cancel = context.WithCancel(context.Background())
	fn := m.fn(c)
	go func() {
		v, err := Run(ctx, m.g, c.req, fn)
		m.record(event{order: 3, id: c.id, out: outcome{v, err}})
	}()
	switch {
	case join != nil:
		reached.Add("run: join")
		c.op = join
		join.callers = append(join.callers, c)
		m.joined++
	case refused == nil:
		reached.Add("run: start")
		c.direct = true
	case refused.Reason == ReasonBusy && c.req.Wait:
		reached.Add("run: wait")
		c.waiting = true
	default:
		reached.Add("run: refused " + string(refused.Reason))
		c.want = &outcome{err: refused}
	}
	m.settle(rt)
	if c.direct && m.byID[c.id] == nil {
		rt.Fatalf("call %d: the model starts it, the guard did not", c.id)
	}
}

func (m *machine) advance(rt *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{time.Second, 5 * time.Second, 20 * time.Second, 45 * time.Second}).Draw(rt, "sleep")
	watch.Step("sleep %v", d)
	time.Sleep(d)
	m.settle(rt)
}

// pending returns the calls with no outcome yet that cancelling affects.
func (m *machine) pending() []*call {
	var cs []*call
	for _, c := range m.calls {
		if c.want == nil && (c.waiting || c.op != nil && slices.Contains(c.op.callers, c)) {
			cs = append(cs, c)
		}
	}
	return cs
}

func (m *machine) cancelOne(rt *rapid.T) {
	cs := m.pending()
	if len(cs) == 0 {
		return
	}
	m.cancelCall(rapid.SampledFrom(cs).Draw(rt, "cancel"))
	m.settle(rt)
}

func (m *machine) cancelCall(c *call) {
	watch.Step("cancel %d", c.id)
	c.cancel()
	if c.waiting {
		reached.Add("cancel: waiting for a slot")
		c.waiting = false
		c.want = &outcome{err: &RefusedError{Reason: ReasonBusy, cause: context.Canceled}}
		return
	}
	reached.Add("cancel: waiting for a result")
	op := c.op
	op.callers = slices.DeleteFunc(op.callers, func(x *call) bool { return x == c })
	c.want = &outcome{err: context.Canceled}
	if len(op.callers) == 0 {
		reached.Add("abandoned")
		op.abandoned = true
	}
}

func (m *machine) check(rt *rapid.T) {
	r := m.drawRequest(rt)
	watch.Step("check %+v", r)
	join, refused := m.decide(r, time.Now(), m.kept(nil))
	err := m.g.Check(r)
	if join != nil || refused == nil {
		if err != nil {
			rt.Fatalf("Check(%+v) = %v; the model admits it", r, err)
		}
		return
	}
	sameRefusal(rt, "Check", err, refused)
}

// sameRefusal fails unless err is the refusal want, or, for a want with a
// cause, one wrapping it.
func sameRefusal(rt *rapid.T, what string, err error, want *RefusedError) {
	var got *RefusedError
	if !errors.As(err, &got) {
		rt.Fatalf("%s: got %v, want a %s refusal", what, err, want.Reason)
	}
	if want.cause != nil {
		if got.Reason != want.Reason || !errors.Is(err, want.cause) {
			rt.Fatalf("%s: got %s %v, want %s wrapping %v", what, got.Reason, err, want.Reason, want.cause)
		}
		return
	}
	if got.Reason != want.Reason || got.RetryAfter != want.RetryAfter || !slices.Equal(got.Scopes, want.Scopes) || got.Caller != want.Caller {
		rt.Fatalf("%s: got %s, retry %v, scopes %v, caller %q\nwant %s, retry %v, scopes %v, caller %q",
			what, got.Reason, got.RetryAfter, got.Scopes, got.Caller, want.Reason, want.RetryAfter, want.Scopes, want.Caller)
	}
}

// running returns the model's operations whose function has not returned.
func (m *machine) running() []*mop {
	var ops []*mop
	for _, op := range m.ops {
		if !op.returned {
			ops = append(ops, op)
		}
	}
	return ops
}

// joinable returns the operation a request with key joins, if any.
func (m *machine) joinable(key string) *mop {
	if key == "" {
		return nil
	}
	for _, op := range m.running() {
		if op.key == key && !op.timedOut && !op.abandoned && !op.start.Equal(m.hideFrom) {
			return op
		}
	}
	return nil
}

// decide is the rules of the package documentation, at now: the
// operation r joins, or its refusal (nil: it starts), with the slots kept
// for the callers waiting before it (kept; nil: none counted, for a check
// of what happened at an instant whose order of events the records do not
// keep, where only the running operations are sure to count).
func (m *machine) decide(r Request, now time.Time, kept map[string]int) (*mop, *RefusedError) {
	if op := m.joinable(r.Key); op != nil {
		return op, nil
	}
	scopes := slices.Compact(slices.Sorted(slices.Values(r.Scopes)))
	if max := m.cfg.CallerMaxOperations; max > 0 {
		var in []time.Time
		for _, s := range m.starts[r.Caller] {
			if s.After(now.Add(-30 * time.Second)) {
				in = append(in, s)
			}
		}
		if len(in) >= max {
			return nil, &RefusedError{Reason: ReasonQuota, RetryAfter: in[0].Add(30 * time.Second).Sub(now), Caller: r.Caller}
		}
	}
	if !r.Bypass {
		var cooling []string
		var longest time.Duration
		for _, s := range scopes {
			if left := m.cooling[s].Sub(now); left > 0 {
				cooling = append(cooling, s)
				longest = max(longest, left)
			}
		}
		if len(cooling) > 0 {
			return nil, &RefusedError{Reason: ReasonCooldown, RetryAfter: longest, Scopes: cooling, Caller: r.Caller}
		}
	}
	if full, busy := m.busy(scopes, kept); busy {
		return nil, &RefusedError{Reason: ReasonBusy, Scopes: full, Caller: r.Caller}
	}
	return nil, nil
}

// coolingOf returns got, a cooldown refusal of a caller waiting for a
// slot at at, if the model finds it right then, and otherwise the
// refusal want the model gives. Operations that ended at at end one after
// another: the caller may have been refused before the last of them
// started its cooldown, for some of want's scopes, with the time left of
// a cooldown that an operation ending at at then lengthened.
func (m *machine) coolingOf(got, want *RefusedError, at time.Time) *RefusedError {
	if len(got.Scopes) == 0 || slices.ContainsFunc(got.Scopes, func(s string) bool { return !slices.Contains(want.Scopes, s) }) {
		return want
	}
	lefts := func(s string) []time.Duration {
		l := []time.Duration{m.cooling[s].Sub(at)}
		if m.cooledAt[s].Equal(at) && m.before[s].After(at) {
			l = append(l, m.before[s].Sub(at))
		}
		return l
	}
	for _, s := range got.Scopes {
		if slices.Min(lefts(s)) > got.RetryAfter {
			return want // got's is shorter than s's shortest
		}
	}
	for _, s := range got.Scopes {
		if slices.Contains(lefts(s), got.RetryAfter) {
			return &RefusedError{Reason: ReasonCooldown, Scopes: got.Scopes, RetryAfter: got.RetryAfter, Caller: want.Caller}
		}
	}
	return want
}

// busy applies the caps to an operation on scopes, the slots kept for
// callers waiting before it counted as held.
func (m *machine) busy(scopes []string, kept map[string]int) ([]string, bool) {
	var full []string
	running := m.running()
	for _, s := range scopes {
		n := kept[s]
		for _, op := range running {
			if slices.Contains(op.scopes, s) {
				n++
			}
		}
		if n >= m.set.maxPerScope {
			full = append(full, s)
		}
	}
	return full, len(full) > 0 || len(running) >= m.set.maxTotal
}

// kept returns the slots kept, per scope, for the callers waiting before
// the call upTo (nil: every caller waiting), in the order they came: each
// the caps hold back keeps the free slots of its scopes, so that a caller
// after it does not take them.
func (m *machine) kept(upTo *call) map[string]int {
	kept := map[string]int{}
	for _, c := range m.calls {
		if c == upTo {
			break
		}
		if !c.waiting {
			continue
		}
		scopes := slices.Compact(slices.Sorted(slices.Values(c.req.Scopes)))
		if _, busy := m.busy(scopes, kept); !busy {
			continue
		}
		free := []string{}
		for _, s := range scopes {
			if full, _ := m.busy([]string{s}, kept); len(full) == 0 {
				free = append(free, s)
			}
		}
		for _, s := range free {
			kept[s]++
		}
	}
	if len(kept) > 0 {
		reached.Add("slots kept for a waiting caller")
	}
	return kept
}

// settle lets the bubble settle, replays what happened in it and checks
// the invariants.
func (m *machine) settle(rt *rapid.T) {
	synctest.Wait()
	now := time.Now()
	m.mu.Lock()
	events := m.events
	m.events = nil
	m.mu.Unlock()
	// A function that starts and returns at one instant returns after it
	// starts; a caller refused at the instant an operation of its key
	// starts did not join it.
	startedAt := map[int]time.Time{}
	refusedAt := map[int]time.Time{}
	for _, e := range events {
		switch e.order {
		case 2:
			startedAt[e.id] = e.at
		case 3:
			refusedAt[e.id] = e.at
		}
	}
	for i, e := range events {
		if at, ok := startedAt[e.id]; ok && e.order == 1 && at.Equal(e.at) {
			events[i].order = 2 // and after the start: stable
		}
	}
	sort.SliceStable(events, func(i, j int) bool {
		if !events[i].at.Equal(events[j].at) {
			return events[i].at.Before(events[j].at)
		}
		return events[i].order < events[j].order
	})
	m.refusedAt = refusedAt
	// The timeouts of the model's operations come between the events, as
	// their times fall: an operation a waiting caller started during the
	// step can time out during it too.
	timeoutsTo := func(until time.Time) {
		for {
			var next *mop
			for _, op := range m.running() {
				if op.timeout > 0 && !op.timedOut && !op.abandoned && !op.start.Add(op.timeout).After(until) &&
					(next == nil || op.start.Add(op.timeout).Before(next.start.Add(next.timeout))) {
					next = op
				}
			}
			if next == nil {
				return
			}
			m.timeOut(next)
		}
	}
	for _, e := range events {
		timeoutsTo(e.at)
		switch {
		case e.order == 1 || e.order == 2 && m.byID[e.id] != nil:
			m.returned(rt, m.byID[e.id], e.at)
		case e.order == 2:
			m.started(rt, m.calls[e.id], e.at)
		case e.order == 3:
			m.outcome(rt, m.calls[e.id], e.out, e.at)
		}
	}
	timeoutsTo(now)
	m.invariants(rt, now)
}

func (m *machine) timeOut(op *mop) {
	reached.Add("timeout")
	op.timedOut = true
	for _, c := range op.callers {
		c.want = &outcome{err: &RefusedError{Reason: ReasonTimeout, Scopes: op.scopes}}
	}
	op.callers = nil
}

func (m *machine) returned(rt *rapid.T, op *mop, at time.Time) {
	if op == nil || op.returned {
		rt.Fatalf("at %v, a function returned that the model did not start, or twice", at)
	}
	if op.timeout > 0 && !op.timedOut && !op.abandoned && !op.start.Add(op.timeout).After(at) {
		m.timeOut(op)
	}
	op.returned = true
	c := op.starter
	failed := op.timedOut || op.abandoned || c.kind == kFail || c.kind == kPanic
	if !op.timedOut && !op.abandoned {
		reached.Add("returned: " + kindNames[c.kind])
		var want outcome
		switch c.kind {
		case kOK, kStubborn:
			want.val = fmt.Sprintf("v%d", c.id)
		case kFail:
			want.err = errFail
		case kPanic:
			want.err = ErrPanicked
		case kHang:
			rt.Fatalf("call %d: a function waiting for its context returned before its timeout or abandonment", c.id)
		}
		for _, x := range op.callers {
			x.want = &want
		}
		op.callers = nil
	}
	if !failed || m.set.coolAfterFailure {
		for _, s := range op.scopes {
			if d := m.set.cooldownOf(s); d > 0 {
				if !m.cooledAt[s].Equal(at) {
					m.before[s] = m.cooling[s]
				}
				m.cooling[s] = at.Add(d)
				m.cooledAt[s] = at
			}
		}
	}
}

func (m *machine) started(rt *rapid.T, c *call, at time.Time) {
	if !c.direct {
		if !c.waiting {
			rt.Fatalf("call %d (%+v) started an operation at %v the model did not start (it joined one: %v; its outcome: %v)", c.id, c.req, at, c.op != nil, c.want.err)
		}
		reached.Add("a waiting caller starts")
		// Operations that ended at this instant end one after another:
		// the caller may have started before the last of them started
		// its cooldown.
		cooling := m.cooling
		m.cooling = maps.Clone(cooling)
		maps.DeleteFunc(m.cooling, func(s string, _ time.Time) bool { return m.cooledAt[s].Equal(at) })
		join, refused := m.decide(c.req, at, nil)
		m.cooling = cooling
		if join != nil || refused != nil {
			rt.Fatalf("call %d started an operation at %v; the model: join %v, %+v", c.id, at, join != nil, refused)
		}
	}
	c.waiting, c.direct = false, false
	timeout := c.req.Timeout
	if timeout == 0 {
		timeout = m.set.operationTimeout
	}
	op := &mop{starter: c, key: c.req.Key, scopes: slices.Compact(slices.Sorted(slices.Values(c.req.Scopes))),
		start: at, timeout: max(timeout, 0), callers: []*call{c}}
	m.ops = append(m.ops, op)
	m.byID[c.id] = op
	c.op = op
	if m.cfg.CallerMaxOperations > 0 {
		m.starts[c.req.Caller] = append(m.starts[c.req.Caller], at)
	}
	// Every caller waiting for a slot with its key joins it.
	for _, w := range m.calls {
		if at, refused := m.refusedAt[w.id]; refused && at.Equal(op.start) {
			continue // refused before it started
		}
		if w.waiting && op.key != "" && w.req.Key == op.key {
			reached.Add("a waiting caller joins")
			w.waiting = false
			w.op = op
			op.callers = append(op.callers, w)
			m.joined++
		}
	}
}

func (m *machine) outcome(rt *rapid.T, c *call, got outcome, at time.Time) {
	if c.waiting {
		// Refused when a slot freed or an operation started: the model
		// must refuse it then too, for the same reason.
		m.hideFrom = at
		join, refused := m.decide(c.req, at, nil)
		m.hideFrom = time.Time{}
		if r := (*RefusedError)(nil); errors.As(got.err, &r) && (refused == nil || r.Reason != refused.Reason) {
			// Operations that started at this instant start one after
			// another: the caller may have been refused before one of
			// them took its caller's quota.
			starts := m.starts
			m.starts = map[string][]time.Time{}
			for c, ts := range starts {
				m.starts[c] = slices.DeleteFunc(slices.Clone(ts), func(t time.Time) bool { return t.Equal(at) })
			}
			m.hideFrom = at
			join, refused = m.decide(c.req, at, nil)
			m.hideFrom = time.Time{}
			m.starts = starts
		}
		if join != nil || refused == nil || refused.Reason == ReasonBusy {
			rt.Fatalf("call %d, waiting for a slot, got %v at %v; the model: join %v, %+v", c.id, got.err, at, join != nil, refused)
		}
		reached.Add("a waiting caller refused: " + string(refused.Reason))
		var r *RefusedError
		if errors.As(got.err, &r) && r.Reason == ReasonCooldown && refused.Reason == ReasonCooldown {
			refused = m.coolingOf(r, refused, at)
		}
		sameRefusal(rt, fmt.Sprintf("call %d", c.id), got.err, refused)
		c.waiting = false
		c.want = &got
	}
	if c.want == nil {
		rt.Fatalf("call %d got %q, %v at %v; the model expects no outcome yet", c.id, got.val, got.err, at)
	}
	want := c.want
	what := fmt.Sprintf("call %d (%s, op of call %v)", c.id, kindNames[c.kind], c.op != nil)
	switch {
	case want.err == nil:
		if got.err != nil || got.val != want.val {
			rt.Fatalf("%s: got %q, %v; want %q", what, got.val, got.err, want.val)
		}
	case errors.As(want.err, new(*RefusedError)):
		var r *RefusedError
		errors.As(want.err, &r)
		if r.Reason == ReasonTimeout {
			var g *RefusedError
			if !errors.As(got.err, &g) || g.Reason != ReasonTimeout || !slices.Equal(g.Scopes, r.Scopes) || !errors.Is(got.err, context.DeadlineExceeded) {
				rt.Fatalf("%s: got %v; want the timeout refusal of %v", what, got.err, r.Scopes)
			}
		} else {
			sameRefusal(rt, what, got.err, r)
		}
	default:
		if !errors.Is(got.err, want.err) || got.val != "" {
			rt.Fatalf("%s: got %q, %v; want %v", what, got.val, got.err, want.err)
		}
	}
	c.done = true
}

func (m *machine) invariants(rt *rapid.T, now time.Time) {
	for _, c := range m.calls {
		if c.want != nil && !c.done {
			rt.Fatalf("call %d has no outcome; the model expects %q, %v", c.id, c.want.val, c.want.err)
		}
		if c.waiting {
			// A caller left waiting would be refused by the caps now, by
			// no rule before them (its quota, a cooldown: MarkCompleted's
			// too), and has no operation of its key to join.
			if join, refused := m.decide(c.req, now, m.kept(c)); join != nil || refused == nil || refused.Reason != ReasonBusy {
				what := "it starts"
				switch {
				case join != nil:
					what = "it joins"
				case refused != nil:
					what = fmt.Sprintf("refused %s, scopes %v", refused.Reason, refused.Scopes)
				}
				rt.Fatalf("call %d still waits for a slot; the model: %s", c.id, what)
			}
		}
	}
	st := m.g.Status()
	running := m.running()
	scopes := map[string]int{}
	var ops []string
	for _, op := range running {
		for _, s := range op.scopes {
			scopes[s]++
		}
		ops = append(ops, fmt.Sprintf("%v %q %v callers %d running %v", op.start.UnixNano(), op.key, op.scopes, len(op.callers), tenths(now.Sub(op.start))))
	}
	var got []string
	for _, o := range st.InFlight {
		got = append(got, fmt.Sprintf("%q %v callers %d running %v", o.Key, o.Scopes, o.Callers, o.RunningSeconds))
	}
	slices.Sort(ops)
	for i, o := range ops {
		_, ops[i], _ = strings.Cut(o, " ")
	}
	if st.Active != len(running) || !equalMaps(st.ActiveScopes, scopes) || st.Started != int64(len(m.ops)) || st.Joined != m.joined {
		rt.Fatalf("status %+v\nmodel: active %d %v, started %d, joined %d", st, len(running), scopes, len(m.ops), m.joined)
	}
	if !sameMultiset(got, ops) {
		rt.Fatalf("in flight:\n  %s\nmodel:\n  %s", strings.Join(got, "\n  "), strings.Join(ops, "\n  "))
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
	for _, s := range modelScopes {
		left := max(m.cooling[s].Sub(now), 0)
		if left > 0 {
			cooling[s] = tenthsUp(left)
		}
		if got := m.g.CooldownRemaining(s); got != left {
			rt.Fatalf("CooldownRemaining(%s) = %v; the model: %v", s, got, left)
		}
	}
	if !equalMaps(st.Cooling, cooling) {
		rt.Fatalf("cooling %v; the model: %v", st.Cooling, cooling)
	}
}

func equalMaps[V comparable](a, b map[string]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sameMultiset(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// abandon ends a sequence that failed: every caller's context is
// cancelled, the functions that wait for their context alone return
// (quit) and time passes until every function has returned, so that the
// bubble ends with the failure rather than with the goroutines it left,
// even when the guard leaves an operation no caller waits for running,
// its context not cancelled.
func (m *machine) abandon() {
	for _, c := range m.calls {
		c.cancel()
	}
	close(m.quit)
	time.Sleep(time.Hour)
}

// errSequenceAbandoned is what a function returns when abandon ends it.
var errSequenceAbandoned = errors.New("model: sequence abandoned")

// end cancels every caller's context and lets time pass until every
// function has returned.
func (m *machine) end(rt *rapid.T) {
	// One at a time: a caller cancelled may free a slot that a caller
	// waiting for one takes before its own cancel.
	for cs := m.pending(); len(cs) > 0; cs = m.pending() {
		m.cancelCall(cs[0])
		m.settle(rt)
	}
	for range 3 {
		watch.Step("end: sleep 1m")
		time.Sleep(time.Minute)
		m.settle(rt)
	}
	if st := m.g.Status(); st.Active != 0 || len(st.InFlight) != 0 || len(m.running()) != 0 {
		rt.Fatalf("at the end, status %+v, the model's running %d", st, len(m.running()))
	}
}
