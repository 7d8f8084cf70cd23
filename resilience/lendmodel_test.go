package resilience

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"pgregory.net/rapid"

	"github.com/cloudg/cloudg/internal/modeltest"
	"github.com/cloudg/cloudg/internal/nestgate"
)

// The lending of bulkhead slots (see Guard.Enter, slotLend) against a
// model, through TryEnter, which never waits: random sequences of the
// attempts of two calls that lend their slots (each given back after its
// attempt, or held across its attempts, as an integration's listing
// holds it), calls nested in them (in an attempt, or made with the
// context once the attempt is over, as a goroutine's), which go on for
// as long as the sequence says, calls nested in those (credentials
// fetched through a chain of roles), which borrow the slot or the loan
// their caller goes on, and other calls of the account. A call
// takes a free slot if there is one; otherwise a call nested in a running
// attempt borrows the slot its caller holds for that attempt, unless
// another nested call holds that loan; otherwise it is refused
// (ErrNoSlot). A lender whose slot is lent to a call still going on
// keeps it for that call as it gives it back, and its next attempt takes
// another, which it lends anew; a call that borrowed a slot and lent it
// on keeps its loan so as it ends. After every step the account's bulkhead
// holds what the model holds, never more than the cap are in flight (a
// call whose slot a nested call borrowed counts once), and
// no loan is held by two calls at once; once every call ends, every slot
// is back. The run fails if no sequence lent a later attempt's slot while
// an earlier loan of its lender was kept: the case the rule is for.
func TestSlotLendingModel(t *testing.T) {
	modeltest.Budget(t, 1000, 100)
	later := 0 // the sequences that reached the case
	rapid.Check(t, func(rt *rapid.T) {
		fast := 1e9 // no call waits for a token
		caps := rapid.IntRange(1, 3).Draw(rt, "max_concurrency")
		g, err := NewGovernor(Config{AWS: ProviderConfig{
			MaxConcurrency: caps, GlobalMaxRPS: &fast, GlobalBurst: fast, AccountMaxRPS: &fast, AccountBurst: fast,
			Services: map[string]ServiceConfig{"ec2": {MaxRPS: fast, Burst: fast}, "iam": {MaxRPS: fast, Burst: fast}},
		}}, WithLogger(slog.New(slog.DiscardHandler))) // a failed sequence drops its Guards
		if err != nil {
			rt.Fatal(err)
		}
		m := &lendModel{g: g, caps: caps, later: &later}
		for i := range m.lenders {
			m.lenders[i].hold = rapid.Bool().Draw(rt, fmt.Sprintf("lender %d holds its slot across attempts", i))
			m.begin(rt, i)
		}
		rt.Repeat(map[string]func(*rapid.T){
			"":        m.check,
			"attempt": m.attempt,
			"answer":  m.answer,
			"end":     m.end,
			"nested":  m.nested,
			"chained": m.chained,
			"other":   m.other,
			"done":    m.done,
		})
		m.drain(rt)
	})
	t.Logf("%d sequences lent a later attempt's slot, an earlier loan of its lender kept", later)
	if !t.Failed() && later == 0 {
		t.Errorf("no sequence lent a later attempt's slot while an earlier loan of its lender was kept")
	}
}

// lendModel is the model of TestSlotLendingModel.
type lendModel struct {
	g       *Governor
	caps    int
	used    int // the account's slots taken: held, or kept for a loan
	lenders [2]lendCaller
	calls   []*lendCall // the nested calls and the others, going on
	reached bool        // this sequence lent a later attempt's slot, an earlier loan of its lender kept
	later   *int        // the sequences that did
}

// lendCaller is a call that lends its slot to the calls nested in its
// attempts.
type lendCaller struct {
	gd      *Guard
	gate    *nestgate.Gate
	ctx     context.Context // the attempt's: answers Value(gov) with gd
	hold    bool            // holds its slot across attempts, as a listing does
	running bool            // an attempt is sent, its answer not yet reported
	holds   bool            // holds a slot
	lentTo  *lendCall       // the call its slot is lent to, if any
}

// lendCall is a call that goes on: nested in a lender's attempt (of), in
// another call's (by), or another call of the account (of -1).
type lendCall struct {
	gd     *Guard
	of     int
	by     *lendCall       // the call it is nested in, when not a lender's
	ctx    context.Context // answers Value(gov) with gd: the calls nested in it
	loan   bool            // on its caller's slot (or loan) it borrowed
	kept   bool            // that slot, given back by its caller meanwhile, kept for it
	lentTo *lendCall       // the call its slot (or loan) is lent to, if any
}

var lendScopes = [2]Scope{ec2Vpcs, {Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeInstances"}}

// begin starts lender i's next call.
func (m *lendModel) begin(t *rapid.T, i int) {
	l := &m.lenders[i]
	gd, err := m.g.Begin(context.Background(), lendScopes[i])
	if err != nil {
		t.Fatal(err)
	}
	l.gd, l.gate = gd, new(nestgate.Gate)
	nestgate.Attach(gd, l.gate)
	l.ctx = &loopCtx{Context: context.Background(), gd: gd}
}

// release is what the lender's Release does in the model.
func (m *lendModel) release(l *lendCaller) {
	if !l.holds {
		return
	}
	if l.lentTo != nil {
		l.lentTo.kept = true // kept for the call it is lent to
	} else {
		m.used--
	}
	l.holds, l.lentTo = false, nil
}

// attempt sends a lender's next attempt.
func (m *lendModel) attempt(t *rapid.T) {
	i := rapid.IntRange(0, 1).Draw(t, "lender")
	l := &m.lenders[i]
	if l.running {
		t.Skip("its attempt is running")
	}
	if l.holds && l.lentTo != nil {
		m.release(l) // a held slot lent to a call still going on: kept for it
	}
	want := l.holds || m.used < m.caps
	err := l.gd.TryEnter()
	if got := err == nil; got != want {
		t.Fatalf("lender %d's attempt (%d of %d slots taken, it holds one: %v): %v, want it sent %v", i, m.used, m.caps, l.holds, err, want)
	}
	if err != nil {
		if !errors.Is(err, ErrNoSlot) {
			t.Fatalf("lender %d's attempt: %v, want ErrNoSlot", i, err)
		}
		return
	}
	if !l.holds {
		m.used++
		l.holds = true
	}
	l.running = true
	l.gate.SetOpen(true)
}

// answer reports a lender's attempt's answer: a success, the slot given
// back unless the lender holds it across its attempts.
func (m *lendModel) answer(t *rapid.T) {
	i := rapid.IntRange(0, 1).Draw(t, "lender")
	l := &m.lenders[i]
	if !l.running {
		t.Skip("no attempt running")
	}
	l.gate.SetOpen(false)
	l.running = false
	l.gd.After(nil)
	if !l.hold {
		l.gd.Release()
		m.release(l)
	}
}

// end ends a lender's call, between its attempts, and begins its next.
func (m *lendModel) end(t *rapid.T) {
	i := rapid.IntRange(0, 1).Draw(t, "lender")
	l := &m.lenders[i]
	if l.running {
		t.Skip("its attempt is running")
	}
	l.gd.End(nil)
	m.release(l)
	m.begin(t, i)
}

// nested makes a call with a lender's attempt context: nested in the
// attempt while it runs, and a call of its own once it is over.
func (m *lendModel) nested(t *rapid.T) {
	i := rapid.IntRange(0, 1).Draw(t, "lender")
	l := &m.lenders[i]
	c := &lendCall{of: i}
	gd, err := m.g.Begin(l.ctx, ec2Subnets)
	if err != nil {
		t.Fatal(err)
	}
	c.gd, c.ctx = gd, &loopCtx{Context: context.Background(), gd: gd}
	free := m.used < m.caps
	borrows := !free && l.running && l.holds && l.lentTo == nil
	err = gd.TryEnter()
	if got := err == nil; got != (free || borrows) {
		t.Fatalf("a call nested in lender %d (its attempt running: %v, holding a slot: %v, lent to another call: %v; %d of %d slots taken): %v, want it sent %v",
			i, l.running, l.holds, l.lentTo != nil, m.used, m.caps, err, free || borrows)
	}
	if err != nil {
		gd.End(nil)
		return
	}
	if c.loan = onLoan(gd) != nil; c.loan != borrows {
		t.Fatalf("a call nested in lender %d went on a loan %v, want %v (%d of %d slots taken)", i, c.loan, borrows, m.used, m.caps)
	}
	if borrows {
		l.lentTo = c
		for _, e := range m.calls {
			if e.of == i && e.kept && !m.reached {
				m.reached = true
				*m.later++
			}
		}
	} else {
		m.used++
	}
	m.calls = append(m.calls, c)
}

// chained makes a call nested in a call going on (credentials fetched
// through a chain of roles): it takes a free slot if there is one, and
// otherwise borrows the slot (or the loan) that call goes on, unless it
// is lent already. A call whose slot is lent to a call nested in it that
// goes on keeps it for that call as it ends, a loan as its own slot.
func (m *lendModel) chained(t *rapid.T) {
	if len(m.calls) == 0 {
		t.Skip("no call going on")
	}
	by := m.calls[rapid.IntRange(0, len(m.calls)-1).Draw(t, "caller")]
	gd, err := m.g.Begin(by.ctx, ec2Subnets)
	if err != nil {
		t.Fatal(err)
	}
	c := &lendCall{gd: gd, of: -1, by: by, ctx: &loopCtx{Context: context.Background(), gd: gd}}
	free := m.used < m.caps
	borrows := !free && by.lentTo == nil
	err = gd.TryEnter()
	if got := err == nil; got != (free || borrows) {
		t.Fatalf("a call nested in a call going on (on a loan: %v, lent to another call: %v; %d of %d slots taken): %v, want it sent %v",
			by.loan, by.lentTo != nil, m.used, m.caps, err, free || borrows)
	}
	if err != nil {
		gd.End(nil)
		return
	}
	if c.loan = onLoan(gd) != nil; c.loan != borrows {
		t.Fatalf("a call nested in a call going on went on a loan %v, want %v (%d of %d slots taken)", c.loan, borrows, m.used, m.caps)
	}
	if borrows {
		by.lentTo = c
	} else {
		m.used++
	}
	m.calls = append(m.calls, c)
}

// other sends a call of the account nested in no call.
func (m *lendModel) other(t *rapid.T) {
	gd, err := m.g.Begin(context.Background(), iamUsers)
	if err != nil {
		t.Fatal(err)
	}
	want := m.used < m.caps
	if err := gd.TryEnter(); (err == nil) != want {
		t.Fatalf("another call (%d of %d slots taken): %v, want it sent %v", m.used, m.caps, err, want)
	} else if err != nil {
		gd.End(nil)
		return
	}
	m.used++
	m.calls = append(m.calls, &lendCall{gd: gd, of: -1, ctx: &loopCtx{Context: context.Background(), gd: gd}})
}

// done ends one of the calls going on.
func (m *lendModel) done(t *rapid.T) {
	if len(m.calls) == 0 {
		t.Skip("no call going on")
	}
	k := rapid.IntRange(0, len(m.calls)-1).Draw(t, "call")
	m.finish(k)
}

func (m *lendModel) finish(k int) {
	c := m.calls[k]
	m.calls = append(m.calls[:k], m.calls[k+1:]...)
	c.gd.After(nil)
	c.gd.End(nil)
	if c.lentTo != nil {
		c.lentTo.kept = true // its slot, or its loan, kept for the call nested in it
		return
	}
	m.giveBack(c)
}

// giveBack is what c's End gives back, lent to no call: its own slot, or
// its loan, and with the loan what its caller kept for it.
func (m *lendModel) giveBack(c *lendCall) {
	switch {
	case !c.loan:
		m.used--
	case !c.kept && c.by == nil:
		m.lenders[c.of].lentTo = nil
	case !c.kept:
		c.by.lentTo = nil
	case c.by == nil:
		m.used-- // a lender's own slot, kept for it
	default:
		m.giveBack(c.by) // the caller's own slot, or its loan, kept for it
	}
}

// check holds the invariants against the Guards and the bulkhead.
func (m *lendModel) check(t *rapid.T) {
	b := m.g.provider("aws").scopes.accountBulkhead(ec2Vpcs.Account)
	if used, waiting := b.InUse(); used != m.used || waiting != 0 {
		t.Fatalf("bulkhead %d used, %d waiting; want %d, 0", used, waiting, m.used)
	}
	going := 0
	for _, c := range m.calls {
		if c.lentTo == nil {
			going++ // one whose slot is lent waits for the call it is lent to
		}
	}
	for i := range m.lenders {
		l := &m.lenders[i]
		if l.running && !lentNow(l.gd) {
			going++ // one whose slot is lent waits for the call it is lent to
		}
	}
	if going > m.caps {
		t.Fatalf("%d calls in flight, over the cap of %d", going, m.caps)
	}
	loans := map[*slotLend]bool{}
	for _, c := range m.calls {
		if !c.loan {
			continue
		}
		if ln := onLoan(c.gd); loans[ln] {
			t.Fatalf("a loan held by two calls at once: %p", ln)
		} else {
			loans[ln] = true
		}
	}
}

// drain ends every call: every slot comes back.
func (m *lendModel) drain(t *rapid.T) {
	for i := range m.lenders {
		if l := &m.lenders[i]; l.running {
			l.gate.SetOpen(false)
			l.running = false
			l.gd.After(nil)
		}
		m.lenders[i].gd.End(nil)
		m.release(&m.lenders[i])
	}
	for len(m.calls) > 0 {
		m.finish(0)
	}
	m.check(t)
	if m.used != 0 {
		t.Fatalf("the model holds %d slots once every call ended", m.used)
	}
}

// onLoan returns the lend whose slot gd borrowed, or nil.
func onLoan(gd *Guard) *slotLend { return gd.loan }

// lentNow reports whether the slot gd holds now is lent to a nested call.
func lentNow(gd *Guard) bool { return gd.lends().lent() }
