//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"github.com/cloudg/cloudg/internal/modeltest"
	"github.com/cloudg/cloudg/internal/nestgate"
)

// The lending of bulkhead slots (see Guard.Enter, slotLend) against a
// model of calls that wait, in virtual time: TestSlotLendingModel drives
// its calls through TryEnter, which never waits, and so cannot see a call
// that waits for a slot it could take. Random sequences start calls on
// one of two accounts (Do WithNestedCalls, or Begin and Enter as an
// integration does, its slot given back after each attempt or held
// across them, or held across an SDK's retries readied by Pace or Admit
// after the SDK's backoff), some bounded by a max wait (WithMaxWait) or a
// deadline, make calls nested in a running attempt (on the attempt's
// own goroutine, or on one it starts, as a paginator's), fail an attempt
// (the call retries after its backoff), end one, cancel a call's context,
// let time pass, and Reset or Configure (the cap raised) the governor
// while calls are in flight. Each call runs on its own goroutine in the
// bubble, its attempts waiting for the sequence's word.
//
// Each loan is taken of an attempt of an enclosing call of the borrower's
// account whose gate is open (the lookup tells the model which, through
// testHookBorrow), and goes on that attempt's slot: the attempt running,
// or one that ended as the loan was taken, its function returned and its
// gate not closed yet, whose slot the loan then outlives.
// After every step, every goroutine blocked (synctest.Wait): the slots the
// running attempts go on (their own, or the one they borrowed: the slot
// their lender's attempt goes on) are no more than the cap, and no more
// than the bulkhead counts taken; no two attempts borrowed one lender's
// attempt at once; a call whose context is canceled waits for nothing;
// and no call waits while it could go on (no stall): no call waits for a
// slot while one is free, and a call nested in a running attempt (the
// nearest enclosing call of its account whose attempt runs, as the
// lookup walks) does not wait while that attempt's slot is lent to no
// call; nor does a call wait longer than its max wait at once. At the
// end every call is ended, attempt by attempt, and every slot is back; a
// call that never ends is a deadlock, reported with the sequence, unless
// it waits in a cycle of the calls' own across accounts (see
// cycleWaiter), which its context's end then ends.
func TestSlotLendingWaitingModel(t *testing.T) {
	modeltest.Budget(t, 1000, 100)
	reachEach(t, waitCases, func(reached map[string]int) { checkWaitModel(t, reached) })
}

// reachEach runs a model's sequences (run, which counts in reached the
// sequences that reached each case) and fails the test if a case of cases
// is reached by none. The rarest cases of the lending models are reached
// by 7 to 15 sequences in 1000: a run that reached one by none (about one
// in a thousand) runs again, up to three times, so that the test fails
// for a rule the model no longer reaches, not for a draw.
func reachEach(t *testing.T, cases []string, run func(reached map[string]int)) {
	t.Helper()
	reached := map[string]int{}
	for i := 0; i < 3 && !t.Failed() && (i == 0 || missing(reached, cases)); i++ {
		run(reached)
	}
	t.Logf("sequences that reached each case: %v", reached)
	for _, c := range cases {
		if !t.Failed() && reached[c] == 0 {
			t.Errorf("no sequence reached the case: %s", c)
		}
	}
}

// missing reports whether a case of cases is reached by no sequence.
func missing(reached map[string]int, cases []string) bool {
	for _, c := range cases {
		if reached[c] == 0 {
			return true
		}
	}
	return false
}

// checkWaitModel runs TestSlotLendingWaitingModel's sequences, counting
// in reached the sequences that reached each case.
func checkWaitModel(t *testing.T, reached map[string]int) {
	rapid.Check(t, func(rt *rapid.T) {
		// Each sequence runs in a bubble of its own.
		rapid.SyncTest(rt, func(rt *rapid.T) {
			m := newWaitModel(rt)
			testHookBorrow = m.borrowed
			defer func() { testHookBorrow = nil }()
			m.reached = map[string]bool{}
			defer func() {
				for k := range m.reached {
					reached[k]++
				}
			}()
			defer m.stop()
			rt.Repeat(map[string]func(*rapid.T){
				"":            m.check,
				"start":       m.start,
				"nested":      m.nested,
				"nested too":  m.nested, // nested calls are what the rules are about: twice as likely
				"fail":        m.fail,
				"finish":      m.finish,
				"cancel":      m.cancelOne,
				"tick":        m.tick,
				"reconfigure": m.reconfigure,
			})
			m.drain(rt)
		})
	})
}

// The cases the rules are for, which a run's sequences must reach.
const (
	caseWaitsForLoan = "a nested call waits for the slot of its lender's attempt, lent"
	caseCallerRetry  = "a nested call waits, its caller between attempts and an enclosing call's attempt running"
	caseLoanOutlives = "a loan outlives its lender's attempt"
	caseLaterLoan    = "a call nested in a later attempt borrows, an earlier loan of its lender out"
	casePacedLoan    = "a call nested in an SDK's retry (Pace or Admit) borrows its slot"
	caseMaxWait      = "a call's max wait ends its wait for a slot"
	caseDeadline     = "a call's deadline ends it"
	caseCycle        = "calls nested across accounts wait for each other's slots, a deadline ends it" // reached by few sequences, not one of waitCases
)

var waitCases = []string{caseWaitsForLoan, caseCallerRetry, caseLoanOutlives, caseLaterLoan, casePacedLoan, caseMaxWait, caseDeadline}

// waitModel is the model of TestSlotLendingWaitingModel.
type waitModel struct {
	g      *Governor
	cfg    Config
	caps   int
	actors []*wActor
	next   int

	reached map[string]bool // the cases this sequence reached
	pub     chan struct{}   // closed as an attempt publishes what it goes on

	// takes holds, by lend, the attempt that lent it last (see borrowed),
	// under mu.
	takes map[*slotLend]wTake

	mu      sync.Mutex // guards the actors' published state, bad and stopped
	bad     string     // what an actor found wrong, reported by check
	stopped bool       // the sequence is over (stop): no call waits for an attempt to be published
}

// wState is where a wActor's call is.
type wState int

const (
	wEnter wState = iota // waiting for its attempt: a new call's first, or Enter's after the backoff
	wRun                 // an attempt runs, waiting for the sequence's word
	wBusy                // an attempt runs a call nested in it on its own goroutine
	wRetry               // between attempts: the backoff, then Do's wait for the next
	wDone
)

var wStates = [...]string{"waiting to enter", "running", "running a nested call", "between attempts", "done"}

// How a wActor makes its call.
const (
	wDo     = iota // Do WithNestedCalls
	wPerTry        // Begin, Enter, Release after each attempt
	wHold          // Begin, Enter, its slot held across attempts
	wPace          // Begin, Enter, its slot held across an SDK's retries, each readied by Pace (or Admit)
	wModes
)

var wModeNames = [...]string{"Do", "Begin/Enter", "Begin/Enter holding", "Begin/Enter, SDK retries"}

var waitAccounts = [2]string{"111111111111", "222222222222"}

// wActor is a call of the model, on its own goroutine.
type wActor struct {
	id     int
	acct   int
	mode   int
	parent *wActor // the call in whose attempt it was made, or nil
	inline bool    // made on its parent's attempt's goroutine
	admit  bool    // wPace: the retries readied by Admit, not Pace
	cmds   chan int
	ctx    context.Context
	cancel context.CancelFunc

	// maxWait bounds each of its attempts' waits (WithMaxWait), 0 none;
	// deadline is its context's timeout, 0 none.
	maxWait, deadline time.Duration

	// Published under waitModel.mu.
	gd            *Guard   // its Guard, published with its first attempt
	over          []wTried // its attempts over, the first first
	st            wState
	since         time.Time       // when st was set
	attempt       int             // the attempts entered
	key           string          // the slot the running attempt goes on
	lender        *wActor         // the call whose attempt's slot it borrowed, or nil
	lenderAttempt int             // that attempt
	via           []wTry          // the attempts whose slot the running attempt borrowed: its lender's, that one's lender's, ...
	loan          *slotLend       // the lend it borrowed from (Guard.loan), as its last attempt began
	lend          *slotLend       // the lend of the slot its last attempt went on (Guard.lends)
	actx          context.Context // the running attempt's context
	err           error
}

// wTry is an attempt of a call.
type wTry struct {
	a       *wActor
	attempt int
}

// wTried is what an attempt went on: the slot, the attempts whose slot
// it borrowed, and the lend of the slot.
type wTried struct {
	key  string
	via  []wTry
	lend *slotLend
}

// wTake is a loan as it was taken (see waitModel.borrowed): the Guard of
// the lender, and its attempt that lent the slot.
type wTake struct {
	lender  *Guard
	attempt int
}

const (
	cmdFail = iota
	cmdFinish
)

func (a *wActor) String() string {
	s := fmt.Sprintf("call %d (%s, account %d", a.id, wModeNames[a.mode], a.acct)
	if a.admit {
		s += ", Admit"
	}
	if a.maxWait > 0 {
		s += fmt.Sprintf(", max wait %v", a.maxWait)
	}
	if a.deadline > 0 {
		s += fmt.Sprintf(", deadline %v", a.deadline)
	}
	if a.parent != nil {
		how := "a goroutine of"
		if a.inline {
			how = "the goroutine of"
		}
		s += fmt.Sprintf(", on %s call %d's attempt", how, a.parent.id)
	}
	return s + ")"
}

func newWaitModel(t *rapid.T) *waitModel {
	fast := 1e9 // no call waits for a token
	dead := 0.0 // no breaker opens at once
	retries := 2
	m := &waitModel{caps: rapid.IntRange(1, 3).Draw(t, "max_concurrency"), pub: make(chan struct{}), takes: map[*slotLend]wTake{}}
	m.cfg = Config{AWS: ProviderConfig{
		MaxConcurrency: m.caps, GlobalMaxRPS: &fast, GlobalBurst: fast, AccountMaxRPS: &fast, AccountBurst: fast,
		Services:         map[string]ServiceConfig{"ec2": {MaxRPS: fast, Burst: fast}},
		BreakerThreshold: 1 << 28, BreakerDeadSeconds: &dead, MaxBackoffSeconds: 2, MaxRetries: &retries,
	}}
	g, err := NewGovernor(m.cfg, WithLogger(slog.New(slog.DiscardHandler)), WithRandom(rand.NewPCG(1, 2))) // the backoffs the same in every run
	if err != nil {
		t.Fatal(err)
	}
	m.g = g
	return m
}

func (m *waitModel) scope(a *wActor) Scope {
	return Scope{Provider: "aws", Account: waitAccounts[a.acct], Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
}

func (m *waitModel) set(a *wActor, st wState) {
	m.mu.Lock()
	a.st, a.since = st, time.Now()
	m.mu.Unlock()
}

// newActor makes a call, nested in parent's running attempt if parent is
// not nil.
func (m *waitModel) newActor(t *rapid.T, parent *wActor) *wActor {
	live := 0
	m.mu.Lock()
	for _, a := range m.actors {
		if a.st != wDone {
			live++
		}
	}
	var ctx context.Context = context.Background()
	if parent != nil {
		ctx = parent.actx
	}
	m.mu.Unlock()
	if live >= 8 {
		t.Skip("enough calls")
	}
	a := &wActor{
		id:     m.next,
		acct:   rapid.IntRange(0, 1).Draw(t, "account"),
		mode:   rapid.IntRange(0, wModes-1).Draw(t, "how"),
		parent: parent,
		cmds:   make(chan int, 1),
	}
	m.next++
	if parent != nil && rapid.IntRange(0, 3).Draw(t, "on its caller's account (not 0)") != 0 {
		a.acct = parent.acct
	}
	if a.mode == wPace {
		a.admit = rapid.Bool().Draw(t, "Admit")
	}
	bounds := []time.Duration{time.Second, 3 * time.Second, 10 * time.Second}
	switch rapid.IntRange(0, 5).Draw(t, "bounded (1 max wait, 2 deadline)") {
	case 1:
		a.maxWait = rapid.SampledFrom(bounds).Draw(t, "max wait")
		ctx = WithMaxWait(ctx, a.maxWait)
	case 2:
		a.deadline = rapid.SampledFrom(bounds).Draw(t, "deadline")
	}
	if a.deadline > 0 {
		a.ctx, a.cancel = context.WithTimeout(ctx, a.deadline)
	} else {
		a.ctx, a.cancel = context.WithCancel(ctx)
	}
	a.since = time.Now()
	m.mu.Lock()
	m.actors = append(m.actors, a)
	m.mu.Unlock()
	return a
}

// run makes a's call, on the goroutine it is called on.
func (m *waitModel) run(a *wActor) {
	var err error
	if a.mode == wDo {
		m.set(a, wEnter)
		err = Do(a.ctx, m.scope(a), func(actx context.Context) error {
			gd, _ := actx.Value(m.g).(*Guard)
			return m.attempt(a, gd, actx)
		}, WithGovernor(m.g), WithNestedCalls())
	} else {
		err = m.runGuard(a)
	}
	m.mu.Lock()
	a.st, a.since, a.err = wDone, time.Now(), err
	if errors.Is(err, ErrNoSlot) {
		m.reached[caseMaxWait] = true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		m.reached[caseDeadline] = true
	}
	m.mu.Unlock()
}

// runGuard makes a's call as an SDK integration does: Begin with the
// context it was given (a running attempt's, for a nested call), Enter
// with it, a gate open while the attempt runs, and the retries: Enter
// again after the backoff Retry gave, or for an SDK that retries on the
// slot the call holds, Pace or Admit with the attempt's context after the
// SDK's backoff (a second at least).
func (m *waitModel) runGuard(a *wActor) error {
	gd, err := m.g.Begin(a.ctx, m.scope(a))
	if err != nil {
		return err
	}
	gate := new(nestgate.Gate)
	nestgate.Attach(gd, gate)
	actx := &loopCtx{Context: a.ctx, gd: gd}
	m.set(a, wEnter)
	for first := true; ; first = false {
		var err error
		switch {
		case first || a.mode != wPace:
			err = gd.Enter(a.ctx)
		case a.admit:
			err = gd.Admit(actx)
		default:
			err = gd.Pace(actx)
		}
		if err != nil {
			gd.End(err)
			return err
		}
		gate.SetOpen(true)
		res := m.attempt(a, gd, actx)
		gate.SetOpen(false)
		gd.After(res)
		if res == nil || a.ctx.Err() != nil {
			gd.End(res)
			return res
		}
		if a.mode == wPerTry {
			gd.Release()
		}
		delay, err := gd.Retry(0)
		if err != nil {
			gd.End(err)
			return err
		}
		if a.mode == wPace {
			delay = max(delay, time.Second) // the SDK's own backoff
		}
		time.Sleep(delay)
		m.set(a, wEnter)
	}
}

// attempt is the function of a's attempt: it publishes the slot it goes
// on, and waits for the sequence's word (or the context's end), making
// the calls nested in it that the sequence makes on its goroutine.
func (m *waitModel) attempt(a *wActor, gd *Guard, actx context.Context) error {
	var loan, lend *slotLend
	if gd != nil {
		loan, lend = onLoan(gd), gd.lends()
	}
	m.mu.Lock()
	held := (a.mode == wHold || a.mode == wPace) && loan != nil && loan == a.loan // a loan held across its attempts, as its own slot
	if p := m.lenderOf(a, loan); held && p != nil && p.attempt != a.lenderAttempt {
		// The same lend, lent by a later attempt of its lender, which
		// published it first: the call gave its loan back (kept for a
		// call it lent it on to) and borrowed the slot of that attempt
		// (see reborrowed).
		held = false
	}
	// The attempt that lent the loan, as the lookup took it (borrowed):
	// the lender publishes its attempt as that begins, its gate open
	// already, and a call that borrowed meanwhile waits for it; a call
	// that borrowed as the attempt ended, its gate still open, goes on
	// the slot of that attempt, over by now.
	var from wTry
	for loan != nil && !held && m.bad == "" && !m.stopped {
		var ok bool
		if from, ok = m.lentBy(a, loan); ok {
			break
		}
		pub := m.pub
		m.mu.Unlock()
		<-pub
		m.mu.Lock()
	}
	close(m.pub)
	m.pub = make(chan struct{})
	a.gd = gd
	a.lend = lend
	a.attempt++
	a.st, a.since, a.actx = wRun, time.Now(), actx
	a.loan = loan
	if !held {
		a.lender, a.lenderAttempt, a.via = nil, 0, nil
		a.key = fmt.Sprintf("%d/%d", a.id, a.attempt)
	}
	switch {
	case held:
	case gd == nil:
		m.wrong(fmt.Sprintf("%v: its attempt's context answers no Guard", a))
	case from.a != nil:
		m.borrows(a, from)
	}
	m.reborrowed(a)
	m.mu.Unlock()
	for {
		select {
		case <-actx.Done():
			m.over(a, gd)
			return actx.Err()
		case c := <-a.cmds:
			if c >= 0 { // a call nested in the attempt, on this goroutine
				m.mu.Lock()
				child := m.actors[c]
				m.mu.Unlock()
				m.set(a, wBusy)
				m.run(child)
				m.set(a, wRun)
				continue
			}
			m.over(a, gd)
			if -c-1 == cmdFail {
				return transientErr()
			}
			return nil
		}
	}
}

// over ends a's attempt, on its goroutine: its gate closes, as it does
// once the attempt's function returns, and then the attempt is over for
// the model, so that an attempt the model has running is one whose gate
// is open, and a loan taken while the gate is open is taken of the
// attempt the model has running, or of the next if none runs (see
// borrowed).
func (m *waitModel) over(a *wActor, gd *Guard) {
	if gd != nil && gd.gate != nil {
		gd.gate.SetOpen(false)
	}
	m.mu.Lock()
	a.over = append(a.over, wTried{a.key, a.via, a.lend})
	a.st, a.since = wRetry, time.Now()
	m.mu.Unlock()
}

// borrowed is testHookBorrow: a lookup took l, the lend of lender's
// slot, while lender's gate was open, which excludes the gate's closing
// (see over). It notes the attempt of lender's call that lent it: the
// one running, or if none runs (the gate open for the next one, not
// published yet), the next.
func (m *waitModel) borrowed(lender *Guard, l *slotLend) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := wTake{lender: lender, attempt: 1} // its first attempt, not published yet
	for _, p := range m.actors {
		if p.gd == lender {
			t.attempt = p.attempt
			if p.st != wRun && p.st != wBusy {
				t.attempt++
			}
			break
		}
	}
	m.takes[l] = t
}

// lentBy returns the attempt that lent a its loan (see borrowed), and
// true once its call published it: the attempt runs, or it is over (the
// loan taken as it ended). It is a wrong (and true) when that call is not
// one a is nested in, of a's account, or when that attempt lent another
// slot. m.mu is held.
func (m *waitModel) lentBy(a *wActor, loan *slotLend) (wTry, bool) {
	t, ok := m.takes[loan]
	if !ok {
		m.wrong(fmt.Sprintf("%v went on a loan no lookup took", a))
		return wTry{}, true
	}
	for p := a.parent; p != nil; p = p.parent {
		if p.gd == t.lender {
			if p.acct != a.acct {
				m.wrong(fmt.Sprintf("%v borrowed the slot of %v, of another account", a, p))
				return wTry{}, true
			}
			if p.attempt < t.attempt {
				return wTry{}, false
			}
			if m.tried(wTry{p, t.attempt}).lend != loan {
				m.wrong(fmt.Sprintf("%v went on a loan taken of %v's attempt %d, which went on another slot", a, p, t.attempt))
				return wTry{}, true
			}
			return wTry{p, t.attempt}, true
		}
	}
	for _, p := range m.actors {
		if p.gd == t.lender {
			m.wrong(fmt.Sprintf("%v borrowed the slot of %v, a call it is not nested in", a, p))
			return wTry{}, true
		}
	}
	return wTry{}, false // its lender's first attempt, not published yet
}

// tried returns what attempt t went on: the slot, and the attempts whose
// slot it borrowed. m.mu is held.
func (m *waitModel) tried(t wTry) wTried {
	if p := t.a; p.attempt != t.attempt {
		return p.over[t.attempt-1]
	}
	return wTried{t.a.key, t.a.via, t.a.lend}
}

// borrows notes that a's running attempt goes on the slot of attempt t,
// which it borrowed, and so do the running attempts that borrowed a's:
// their slot is t's. m.mu is held.
func (m *waitModel) borrows(a *wActor, t wTry) {
	p, on := t.a, m.tried(t)
	a.lender, a.lenderAttempt, a.key = p, t.attempt, on.key
	a.via = append([]wTry{t}, on.via...)
	if p.mode == wPace && t.attempt > 1 {
		m.reached[casePacedLoan] = true
	}
	for _, x := range m.actors {
		if x != a && (x.st == wRun || x.st == wBusy) && x.lender == a && x.lenderAttempt == a.attempt {
			m.borrows(x, wTry{a, a.attempt})
		}
	}
}

// reborrowed notes, as p's attempt begins, the running attempts that
// borrowed its slot though the model has them on an earlier attempt's: a
// call that holds its loan across its attempts (wHold, wPace) and lent it
// on to a call that goes on gives it back as its next attempt begins
// (kept for that call: see Guard.Enter), and waits for a slot; once that
// loan comes back, it borrows the slot of its lender's next attempt,
// often the same lend (its lender's inline one), and may publish its
// attempt before its lender does, as held. A loan held across attempts
// is never the lend of its lender's later attempt: a lender whose slot is
// lent as its attempt begins takes another, on another lend. m.mu is
// held.
func (m *waitModel) reborrowed(p *wActor) {
	for _, x := range m.actors {
		if x != p && (x.st == wRun || x.st == wBusy) && x.loan != nil && x.loan == p.lend && x.lender == p && x.lenderAttempt < p.attempt {
			m.borrows(x, wTry{p, p.attempt})
		}
	}
}

// wrong notes what an actor found wrong; m.mu is held.
func (m *waitModel) wrong(s string) {
	if m.bad == "" {
		m.bad = s
	}
}

// lenderOf is the call a call nested in an attempt borrows from (see
// borrowSlot): the nearest enclosing call whose attempt runs on a slot
// of a's account; with loan not nil, the one whose attempt lends it.
// m.mu is held.
func (m *waitModel) lenderOf(a *wActor, loan *slotLend) *wActor {
	for p := a.parent; p != nil; p = p.parent {
		if (p.st == wRun || p.st == wBusy) && p.acct == a.acct {
			if loan == nil || p.lend == loan {
				return p
			}
		}
	}
	return nil
}

// lentNow returns a call running on the slot of p's running attempt,
// which p lent (or which p's borrower lent on, and so on), or one that
// holds that loan across its attempts (an SDK's retries on a held slot)
// and is between them, or nil. m.mu is held.
func (m *waitModel) lentNow(p *wActor) *wActor {
	for _, x := range m.actors {
		if (x.st == wRun || x.st == wBusy || x.holdsLoan()) && x.borrowed(p) {
			return x
		}
	}
	return nil
}

// holdsLoan reports whether a is between the attempts of a call that
// holds the slot it went on across them (wHold, wPace), a loan of an
// enclosing call's slot included: a call nested in that call's attempt
// at once waits for the loan, which goes on.
func (a *wActor) holdsLoan() bool {
	return (a.mode == wHold || a.mode == wPace) && (a.st == wRetry || a.st == wEnter) && a.attempt > 0
}

// borrowed reports whether a's running attempt goes on the slot of p's
// running attempt, which p lent (or which p's borrower lent on, and so on).
func (a *wActor) borrowed(p *wActor) bool {
	for _, v := range a.via {
		if v.a == p && v.attempt == p.attempt {
			return true
		}
	}
	return false
}

func (m *waitModel) pick(t *rapid.T, what string, ok func(*wActor) bool) *wActor {
	var as []*wActor
	m.mu.Lock()
	for _, a := range m.actors {
		if ok(a) {
			as = append(as, a)
		}
	}
	m.mu.Unlock()
	if len(as) == 0 {
		t.Skip("no call " + what)
	}
	return as[rapid.IntRange(0, len(as)-1).Draw(t, "call "+what)]
}

func (m *waitModel) start(t *rapid.T) {
	a := m.newActor(t, nil)
	go m.run(a)
}

func (m *waitModel) nested(t *rapid.T) {
	p := m.pick(t, "running", func(a *wActor) bool { return a.st == wRun })
	a := m.newActor(t, p)
	if a.inline = rapid.Bool().Draw(t, "on the attempt's goroutine"); a.inline {
		p.cmds <- a.id
		return
	}
	go m.run(a)
}

func (m *waitModel) fail(t *rapid.T) {
	m.pick(t, "running", func(a *wActor) bool { return a.st == wRun }).cmds <- -cmdFail - 1
}

func (m *waitModel) finish(t *rapid.T) {
	m.pick(t, "running", func(a *wActor) bool { return a.st == wRun }).cmds <- -cmdFinish - 1
}

func (m *waitModel) cancelOne(t *rapid.T) {
	m.pick(t, "not done", func(a *wActor) bool { return a.st != wDone && a.ctx.Err() == nil }).cancel()
}

func (m *waitModel) tick(t *rapid.T) {
	time.Sleep(rapid.SampledFrom([]time.Duration{time.Millisecond, time.Second, 3 * time.Second}).Draw(t, "time passes"))
}

// reconfigure resets the governor, or configures it anew, the cap the
// same or one more.
func (m *waitModel) reconfigure(t *rapid.T) {
	if rapid.Bool().Draw(t, "reset") {
		m.g.Reset()
		return
	}
	m.caps = rapid.IntRange(m.caps, min(m.caps+1, 4)).Draw(t, "max_concurrency now")
	m.cfg.AWS.MaxConcurrency = m.caps
	if err := m.g.Configure(m.cfg); err != nil {
		t.Fatal(err)
	}
}

// check holds the invariants, every goroutine of the bubble blocked.
func (m *waitModel) check(t *rapid.T) {
	synctest.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bad != "" {
		t.Fatal(m.bad)
	}
	for acct := range waitAccounts {
		used, _ := m.inUse(acct)
		keys := map[string][]*wActor{}
		for _, a := range m.actors {
			if a.acct != acct || (a.st != wRun && a.st != wBusy) {
				continue
			}
			keys[a.key] = append(keys[a.key], a)
			if p := a.lender; p != nil {
				if (p.st != wRun && p.st != wBusy) || p.attempt != a.lenderAttempt {
					m.reached[caseLoanOutlives] = true
				}
				for _, x := range m.actors {
					if x.lender == p && x.lenderAttempt < a.lenderAttempt && (x.st == wRun || x.st == wBusy) {
						m.reached[caseLaterLoan] = true
					}
				}
			}
		}
		for k, as := range keys { // the calls on one slot: its holder, its borrower, the borrower's, ...
			for i, a := range as {
				for _, b := range as[i+1:] {
					if !a.borrowed(b) && !b.borrowed(a) {
						t.Fatalf("account %d: %v and %v go on one slot (%s), neither borrowing it from the other's attempt\n%s", acct, a, b, k, m.dump())
					}
				}
			}
		}
		if len(keys) > m.caps || len(keys) > used {
			t.Fatalf("account %d: the running attempts go on %d slots (%s), the bulkhead counts %d taken, the cap is %d", acct, len(keys), m.describe(keys), used, m.caps)
		}
		for _, a := range m.actors {
			if a.acct != acct {
				continue
			}
			waits := a.st == wEnter || (a.st == wRetry && time.Since(a.since) >= 3*time.Second)
			if !waits {
				continue
			}
			if p := m.lenderOf(a, nil); p != nil {
				if m.lentNow(p) != nil {
					m.reached[caseWaitsForLoan] = true
				}
				if a.parent.st != wRun && a.parent.st != wBusy {
					m.reached[caseCallerRetry] = true
				}
			}
			if a.ctx.Err() != nil {
				t.Fatalf("%v still waits (%s), its context canceled", a, wStates[a.st])
			}
			// The backoff before Do's Enter is 2 s at most.
			if waited := time.Since(a.since); a.maxWait > 0 && (a.st == wEnter && waited > a.maxWait || waited > a.maxWait+2*time.Second) {
				t.Fatalf("%v still waits (%s) after %v, past its max wait", a, wStates[a.st], waited)
			}
			if used < m.caps {
				t.Fatalf("stall: %v waits (%s) while %d of %d slots of its account are taken", a, wStates[a.st], used, m.caps)
			}
			if p := m.lenderOf(a, nil); p != nil && m.lentNow(p) == nil {
				t.Fatalf("stall: %v waits (%s), the cap full (%d), while the slot of %v's running attempt %d is lent to no call\n%s", a, wStates[a.st], m.caps, p, p.attempt, m.dump())
			}
		}
	}
}

// inUse is the account's bulkhead's InUse: 0, 0 before its first call.
func (m *waitModel) inUse(acct int) (used, waiting int) {
	t := m.g.provider("aws").scopes
	t.mu.Lock()
	a := t.accounts[waitAccounts[acct]]
	t.mu.Unlock()
	if a == nil {
		return 0, 0
	}
	return a.bulkhead.InUse()
}

// dump describes every call; m.mu is held.
func (m *waitModel) dump() string {
	var b strings.Builder
	for _, a := range m.actors {
		fmt.Fprintf(&b, "%v: %s since %v, attempt %d on %s", a, wStates[a.st], time.Since(a.since), a.attempt, a.key)
		for _, v := range a.via {
			fmt.Fprintf(&b, ", borrowed from call %d's attempt %d", v.a.id, v.attempt)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (m *waitModel) describe(keys map[string][]*wActor) string {
	var b strings.Builder
	for k, as := range keys {
		fmt.Fprintf(&b, "%s: %v; ", k, as)
	}
	return b.String()
}

// drain ends every call, attempt by attempt, and checks that every slot
// is back; a call that never ends is a deadlock.
func (m *waitModel) drain(t *rapid.T) {
	m.endAll(t, false)
	for acct := range waitAccounts {
		if used, waiting := m.inUse(acct); used != 0 || waiting != 0 {
			t.Fatalf("account %d: bulkhead %d used, %d waiting once every call ended; want 0, 0", acct, used, waiting)
		}
	}
}

// endAll ends every running attempt until every call is done, letting
// time pass for the backoffs; with check, the invariants hold throughout.
func (m *waitModel) endAll(t *rapid.T, quiet bool) {
	idle := 0
	for {
		if quiet {
			synctest.Wait()
		} else {
			m.check(t)
		}
		sent, live := 0, 0
		m.mu.Lock()
		for _, a := range m.actors {
			switch a.st {
			case wRun:
				a.cmds <- -cmdFinish - 1
				sent++
			case wDone:
				continue
			}
			live++
		}
		var stuck []string
		for _, a := range m.actors {
			if a.st != wDone {
				stuck = append(stuck, fmt.Sprintf("%v %s", a, wStates[a.st]))
			}
		}
		m.mu.Unlock()
		if live == 0 {
			return
		}
		if sent > 0 {
			idle = 0
			continue
		}
		if idle++; idle > 20 {
			if quiet {
				return
			}
			m.mu.Lock()
			w := m.cycleWaiter()
			m.mu.Unlock()
			if w == nil {
				t.Fatalf("deadlock: calls never end: %s", strings.Join(stuck, "; "))
			}
			w.cancel() // its deadline, the calls' way out
			idle = 0
			continue
		}
		time.Sleep(3 * time.Second)
	}
}

// cycleWaiter returns a call that waits for a slot in a cycle of the
// calls' own, or nil: every slot of its account taken (as many slots as
// the bulkhead counts taken), by attempts that each run a call nested in
// them on their goroutine, which waits for a slot in turn (a call of
// account 0 whose attempt makes a call of account 1, while a call of
// account 1 makes one of account 0, the cap 1). No governor ends such a
// wait without going past the cap; the calls' deadlines do. It is asked
// once no call has moved for a while, the invariants holding (no call
// waits while a slot of its account is free, or lent to none by its
// lender): a slot taken that no such attempt goes on is a slot lost, and
// no cycle. m.mu is held.
func (m *waitModel) cycleWaiter() *wActor {
	var w *wActor
	for _, a := range m.actors {
		if a.st == wDone || a.st == wBusy {
			continue
		}
		if a.st != wEnter && a.st != wRetry {
			return nil // it may go on
		}
		on := map[string]bool{}
		for _, x := range m.actors {
			if x.acct == a.acct && x.st == wBusy {
				on[x.key] = true
			}
		}
		if used, _ := m.inUse(a.acct); len(on) < used {
			return nil
		}
		if w == nil {
			w = a
		}
	}
	if w != nil {
		m.reached[caseCycle] = true
	}
	return w
}

// stop ends every call, canceling their contexts, so that the bubble's
// goroutines end after a failed sequence too: a goroutine left blocked
// would end the bubble with a deadlock, which rapid reports in place of
// the sequence's failure. So the calls waiting for their lender's
// attempt to be published go on.
func (m *waitModel) stop() {
	m.mu.Lock()
	m.stopped = true
	close(m.pub)
	m.pub = make(chan struct{})
	m.mu.Unlock()
	for _, a := range m.actors {
		a.cancel()
	}
	m.endAll(nil, true)
}
