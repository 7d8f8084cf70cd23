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
	"github.com/cloudg/cloudg/state"
)

// The lending of a half-open breaker's probe to the calls nested in the
// attempt of the call that holds it (see Guard.Enter), on a provider with
// breaker_wait, against a model of calls that wait, in virtual time. A
// breaker opened by a failure lets its probe through after its cooldown
// to the sequence's first call (the root: a Do WithNestedCalls, or an
// integration's call whose attempt context is gated, or a Guard of Begin
// put in the attempt's context as is), whose attempt runs until the
// sequence is over. Random sequences make calls nested in a running
// attempt (the root's, or a nested call's: a chain of roles), each a Do
// WithNestedCalls of one attempt, on the attempt's own goroutine or on
// one it starts, and end a running attempt that has no call running in
// it: with a success or a throttle (the breaker's verdict), a local
// error, or its context cancelled (no verdict); cancel a waiting call; or
// let time pass (less than the probe's lease, a cooldown).
//
// After every step, every goroutine blocked (synctest.Wait), until a
// verdict: one call holds the probe, the root or the call that borrowed
// it last from an enclosing call whose attempt runs, which holds it
// again once the borrower ends with no verdict; a nested call's attempt
// begins only on the probe borrowed from the nearest such call that
// holds it (no second probe); and no call waits for the verdict while
// the probe is held by a call its context leads to, whose attempt runs
// and has not lent it (no stall: it would wait out the probe's lease).
// At the end every call is ended.
func TestProbeLendingWaitingModel(t *testing.T) {
	modeltest.Budget(t, 300, 60)
	reachEach(t, probeCases, func(reached map[string]int) {
		rapid.Check(t, func(rt *rapid.T) {
			rapid.SyncTest(rt, func(rt *rapid.T) {
				m := newProbeModel(rt)
				defer func() {
					for k := range m.reached {
						reached[k]++
					}
				}()
				defer m.stop()
				rt.Repeat(map[string]func(*rapid.T){
					"":           m.check,
					"nested":     m.nested,
					"nested too": m.nested,
					"end":        m.end,
					"cancel":     m.cancelWaiting,
					"tick":       m.tick,
				})
				m.stop()
			})
		})
	})
}

// The cases the rules are for, which a run's sequences must reach.
const (
	pcaseGivenBack   = "a nested call ends with no verdict, and the probe goes back to its lender"
	pcaseNextBorrows = "a call nested in the attempt borrows the probe given back"
	pcaseWaitedLent  = "a nested call waits for the verdict while the probe is lent to another"
	pcaseDeep        = "a call nested in a nested call's attempt borrows the probe"
	pcaseVerdict     = "a nested call gives the verdict"
)

var probeCases = []string{pcaseGivenBack, pcaseNextBorrows, pcaseWaitedLent, pcaseDeep, pcaseVerdict}

// How a pActor's attempt ends.
const (
	pOK = iota
	pThrottle
	pLocal
	pCancel
)

var pEndNames = [...]string{"a success", "a throttle", "a local error", "its context cancelled"}

type pState int

const (
	pWait pState = iota // waiting to be let through
	pRun                // its attempt runs
	pBusy               // its attempt runs a call nested in it on its own goroutine
	pDone
)

var pStates = [...]string{"waiting", "running", "running a nested call", "done"}

// pActor is a call of the model.
type pActor struct {
	id     int
	parent *pActor
	inline bool
	cmds   chan int
	ctx    context.Context
	cancel context.CancelFunc

	// Published under probeModel.mu.
	st       pState
	actx     context.Context
	lease    lease   // the lease its attempt began with
	holds    bool    // the model's: it holds the probe, lent to no live call
	from     *pActor // the call it borrowed the probe from
	gotBack  bool    // a probe it lent was given back
	children int     // its calls not done
	err      error
}

func (a *pActor) String() string {
	s := fmt.Sprintf("call %d", a.id)
	if a.parent != nil {
		how := "a goroutine of"
		if a.inline {
			how = "the goroutine of"
		}
		s += fmt.Sprintf(" (on %s call %d's attempt)", how, a.parent.id)
	}
	return s
}

type probeModel struct {
	g       *Governor
	root    *pActor
	rootHow string
	actors  []*pActor
	verdict bool          // a nested call gave the breaker's verdict: the rules are over
	elapsed time.Duration // the time ticks let pass
	reached map[string]bool

	mu  sync.Mutex
	bad string
}

var probeScope = Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}

func newProbeModel(t *rapid.T) *probeModel {
	fast := 1e9
	cfg := Config{AWS: ProviderConfig{
		BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 60,
		MaxConcurrency: 100, GlobalMaxRPS: &fast, GlobalBurst: fast, AccountMaxRPS: &fast, AccountBurst: fast,
		Services: map[string]ServiceConfig{"ec2": {MaxRPS: fast, Burst: fast}},
	}}
	g, err := NewGovernor(cfg, WithLogger(slog.New(slog.DiscardHandler)), WithRandom(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	m := &probeModel{g: g, reached: map[string]bool{}}
	sdkLoop(context.Background(), g, probeScope, 1, func() error { return transientErr() })
	if st := g.Inspect(probeScope).Breaker.State; st != state.Open {
		t.Fatalf("breaker %v after a failure, threshold 1; want open", st)
	}
	time.Sleep(time.Minute) // the cooldown: the root is the probe
	m.rootHow = rapid.SampledFrom([]string{"Do", "gated", "ungated"}).Draw(t, "the root")
	root := &pActor{id: 0, cmds: make(chan int, 1), holds: true}
	root.ctx, root.cancel = context.WithCancel(context.Background())
	m.root = root
	m.actors = append(m.actors, root)
	started := make(chan struct{})
	go m.runRoot(started)
	<-started
	return m
}

// runRoot makes the root's call, whose one attempt runs until the
// sequence is over.
func (m *probeModel) runRoot(started chan struct{}) {
	a := m.root
	attempt := func(actx context.Context, gd *Guard) error {
		m.mu.Lock()
		a.st, a.actx, a.lease = pRun, actx, gd.lease
		m.mu.Unlock()
		close(started)
		return m.serve(a)
	}
	var err error
	switch m.rootHow {
	case "Do":
		err = Do(a.ctx, probeScope, func(actx context.Context) error {
			gd, _ := actx.Value(m.g).(*Guard)
			return attempt(actx, gd)
		}, WithGovernor(m.g), WithNestedCalls())
	default:
		gd, _ := m.g.Begin(a.ctx, probeScope)
		var actx context.Context = context.WithValue(a.ctx, m.g, gd)
		var gate *nestgate.Gate
		if m.rootHow == "gated" {
			gate = new(nestgate.Gate)
			nestgate.Attach(gd, gate)
			actx = &loopCtx{Context: a.ctx, gd: gd}
		}
		if err = gd.Enter(a.ctx); err == nil {
			if gate != nil {
				gate.SetOpen(true)
			}
			err = attempt(actx, gd)
			if gate != nil {
				gate.SetOpen(false)
			}
			gd.After(err)
		}
		gd.End(err)
	}
	m.mu.Lock()
	a.st, a.err = pDone, err
	m.mu.Unlock()
}

// serve runs a's attempt: it makes the calls nested in it on its
// goroutine, and ends as the sequence says.
func (m *probeModel) serve(a *pActor) error {
	for {
		select {
		case <-a.actx.Done():
			return a.actx.Err()
		case c := <-a.cmds:
			if c >= 0 {
				m.mu.Lock()
				child := m.actors[c]
				a.st = pBusy
				m.mu.Unlock()
				m.run(child)
				m.mu.Lock()
				a.st = pRun
				m.mu.Unlock()
				continue
			}
			switch -c - 1 {
			case pOK:
				return nil
			case pThrottle:
				return throttle()
			case pLocal:
				return errors.New("the response could not be read")
			}
			a.cancel()
			<-a.actx.Done()
			return a.actx.Err()
		}
	}
}

// run makes a's call, nested in its parent's attempt, on the goroutine it
// is called on.
func (m *probeModel) run(a *pActor) {
	err := Do(a.ctx, probeScope, func(actx context.Context) error {
		gd, _ := actx.Value(m.g).(*Guard)
		m.mu.Lock()
		a.st, a.actx, a.lease = pRun, actx, gd.lease
		m.began(a)
		m.mu.Unlock()
		return m.serve(a)
	}, WithGovernor(m.g), WithNestedCalls(), WithPolicy(RetryPolicy{MaxAttempts: 1}))
	m.mu.Lock()
	a.st, a.err = pDone, err
	a.parent.children--
	m.mu.Unlock()
}

// began takes a's attempt, just begun, as the model sees it: before a
// verdict, it borrowed the probe from the nearest enclosing call whose
// attempt runs and holds it. m.mu is held.
func (m *probeModel) began(a *pActor) {
	if m.verdict {
		return
	}
	l := m.holderOf(a)
	if l == nil {
		m.wrong(fmt.Sprintf("%v's attempt began, the breaker half-open with its probe held by no call its context leads to (a second probe)\n%s", a, m.dump()))
		return
	}
	if a.lease != leaseProbe {
		m.wrong(fmt.Sprintf("%v's attempt began with the lease %v; want the probe, borrowed from %v", a, a.lease, l))
	}
	if l != m.root {
		m.reached[pcaseDeep] = true
	}
	if l.gotBack {
		m.reached[pcaseNextBorrows] = true
	}
	l.holds, a.holds, a.from = false, true, l
}

// holderOf is the call a borrows the probe from: the nearest enclosing
// call whose attempt runs and holds it (see Guard.lender), or nil. m.mu
// is held.
func (m *probeModel) holderOf(a *pActor) *pActor {
	for p := a.parent; p != nil; p = p.parent {
		if (p.st == pRun || p.st == pBusy) && p.holds {
			return p
		}
	}
	return nil
}

func (m *probeModel) wrong(s string) {
	if m.bad == "" {
		m.bad = s
	}
}

func (m *probeModel) pick(t *rapid.T, what string, ok func(*pActor) bool) *pActor {
	var as []*pActor
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

func (m *probeModel) nested(t *rapid.T) {
	if len(m.actors) > 12 {
		t.Skip("enough calls")
	}
	p := m.pick(t, "running", func(a *pActor) bool { return a.st == pRun })
	// Drawn first: a draw that ends the sequence (shrinking) leaves no
	// call that never runs.
	a := &pActor{id: len(m.actors), parent: p, cmds: make(chan int, 1), inline: rapid.Bool().Draw(t, "on the attempt's goroutine")}
	m.mu.Lock()
	a.ctx, a.cancel = context.WithCancel(p.actx)
	p.children++
	m.actors = append(m.actors, a)
	m.mu.Unlock()
	if a.inline {
		p.cmds <- a.id
		return
	}
	go m.run(a)
}

// end ends a nested call's running attempt that runs no call.
func (m *probeModel) end(t *rapid.T) {
	a := m.pick(t, "running, nesting none", func(a *pActor) bool { return a != m.root && a.st == pRun && a.children == 0 })
	// No verdict twice as likely: what follows one is what the rules are for.
	how := rapid.SampledFrom([]int{pOK, pThrottle, pLocal, pLocal, pCancel, pCancel}).Draw(t, "how it ends")
	m.mu.Lock()
	if !m.verdict && a.holds {
		switch how {
		case pOK, pThrottle:
			m.verdict = true
			m.reached[pcaseVerdict] = true
		default:
			// No verdict: the probe goes back to its lender, whose
			// attempt runs (a call ends no attempt that runs another).
			a.holds, a.from.holds, a.from.gotBack = false, true, true
			m.reached[pcaseGivenBack] = true
		}
	}
	m.mu.Unlock()
	a.cmds <- -how - 1
	synctest.Wait()
}

// cancelWaiting cancels a call waiting to be let through.
func (m *probeModel) cancelWaiting(t *rapid.T) {
	a := m.pick(t, "waiting", func(a *pActor) bool { return a != m.root && a.st == pWait && a.ctx.Err() == nil })
	a.cancel()
	synctest.Wait()
}

// tick lets time pass, less than a cooldown all told (the probe's lease).
func (m *probeModel) tick(t *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{time.Millisecond, time.Second, 5 * time.Second}).Draw(t, "time passes")
	if m.elapsed += d; m.elapsed >= 50*time.Second {
		t.Skip("the probe's lease runs out")
	}
	time.Sleep(d)
}

// check holds the rules, every goroutine of the bubble blocked.
func (m *probeModel) check(t *rapid.T) {
	synctest.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bad != "" {
		t.Fatal(m.bad)
	}
	if m.verdict {
		return
	}
	for _, a := range m.actors {
		if a.st != pWait || a == m.root || a.ctx.Err() != nil {
			continue
		}
		if l := m.holderOf(a); l != nil {
			t.Fatalf("stall: %v waits for the verdict while %v, whose attempt runs, holds the probe lent to no call\n%s", a, l, m.dump())
		}
		m.reached[pcaseWaitedLent] = true
	}
}

func (m *probeModel) dump() string {
	var b strings.Builder
	for _, a := range m.actors {
		fmt.Fprintf(&b, "%v: %s", a, pStates[a.st])
		if a.holds {
			b.WriteString(", holds the probe")
		}
		if a.from != nil {
			fmt.Fprintf(&b, ", borrowed it from call %d", a.from.id)
		}
		if a.err != nil {
			fmt.Fprintf(&b, ", ended with %v", a.err)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// stop ends every call: the waiting ones cancelled, the running ones
// ended deepest first, the root last.
func (m *probeModel) stop() {
	for _, a := range m.actors[1:] {
		if a.st == pWait {
			a.cancel()
		}
	}
	for {
		synctest.Wait()
		m.mu.Lock()
		var next *pActor
		live := 0
		for _, a := range m.actors {
			if a.st == pDone {
				continue
			}
			live++
			if a.st == pRun && a.children == 0 && a != m.root {
				next = a
			}
		}
		if next == nil && live == 1 && m.root.st == pRun {
			next = m.root
		}
		m.mu.Unlock()
		if live == 0 {
			return
		}
		if next == nil {
			for _, a := range m.actors[1:] {
				a.cancel()
			}
			time.Sleep(time.Second)
			continue
		}
		next.cmds <- -pOK - 1
	}
}
