package resilience

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/internal/nestgate"
)

// A guard dropped without End gives its slot back when it is garbage
// collected, and the first such leak is logged once, at Warn, with its
// scope. The collector runs on its own goroutine, so this test runs in real
// time (it loops on runtime.GC, it does not sleep).
func TestDroppedGuardReleasesItsSlotWhenCollected(t *testing.T) {
	var buf logBuffer
	g := newGov(t, Config{GCP: ProviderConfig{MaxConcurrency: 2}}, WithLogger(buf.logger()))
	sc := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
	// The two guards stay reachable until the third call has been refused,
	// so that a collection meanwhile cannot free their slots early.
	var abandoned []*Guard
	for range 2 {
		gd, _ := g.Begin(context.Background(), sc)
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		abandoned = append(abandoned, gd)
	}
	other, _ := g.Begin(context.Background(), sc)
	if err := other.TryEnter(); err == nil {
		t.Fatal("a third slot with a cap of 2")
	}
	runtime.KeepAlive(abandoned)
	for i := 0; g.Inspect(sc).InFlight != 0; i++ {
		if i == 1000 {
			t.Fatalf("%d slots still held after %d collections", g.Inspect(sc).InFlight, i)
		}
		runtime.GC()
	}
	if err := other.TryEnter(); err != nil {
		t.Fatalf("after the collection: %v", err)
	}
	other.End(nil)
	buf.collectedLine()
	if n := strings.Count(buf.String(), "dropped without End"); n != 1 || !strings.Contains(buf.String(), "level=WARN") || !buf.contains("gcp/projects/p1/*/cloudasset/ListAssets") {
		t.Fatalf("log (%d lines): %s", n, buf.String())
	}
}

// A guard that released its slot leaves nothing for the collector to do.
func TestEndedGuardIsNotReleasedAgain(t *testing.T) {
	g := newGov(t, Config{GCP: ProviderConfig{MaxConcurrency: 1}})
	sc := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset"}
	func() {
		gd, _ := g.Begin(context.Background(), sc)
		gd.Enter(context.Background())
		gd.End(nil)
	}()
	held, _ := g.Begin(context.Background(), sc)
	if err := held.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		runtime.GC() // a second release would panic in the bulkhead, or free held's slot
	}
	if s := g.Inspect(sc); s.InFlight != 1 {
		t.Fatalf("%d in flight, want the held one", s.InFlight)
	}
	held.End(nil)
}

// A borrower (a Guard of an integration's, nested in another call's
// attempt, that borrowed that call's slot) dropped without End gives the
// slot back when it is garbage collected, as it would a slot of its own:
// the enclosing call, its attempt over, kept its slot for the loan, which
// no one else would give back. The first such leak is logged, as a
// Guard's own slot is.
func TestDroppedBorrowerGivesTheKeptSlotBackWhenCollected(t *testing.T) {
	var buf logBuffer
	g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}}, WithLogger(buf.logger()))
	// The borrower stays reachable until the enclosing call is over, so
	// that a collection meanwhile cannot end the loan early.
	var borrowers []*Guard
	err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
		gd, err := g.Begin(ctx, ec2Subnets)
		if err != nil {
			return err
		}
		if err := gd.Enter(ctx); err != nil {
			return err
		}
		borrowers = append(borrowers, gd)
		return nil
	}, WithGovernor(g), WithNestedCalls())
	if err != nil {
		t.Fatal(err)
	}
	bh := g.provider("aws").scopes.accountBulkhead(ec2Vpcs.Account)
	if used, _ := bh.InUse(); used != 1 {
		t.Fatalf("bulkhead %d used once the enclosing call is over, want 1: the borrower still goes on its slot", used)
	}
	runtime.KeepAlive(borrowers)
	borrowers = nil
	for i := 0; ; i++ {
		if used, _ := bh.InUse(); used == 0 {
			break
		}
		if i == 1000 {
			t.Fatalf("bulkhead still 1 used after %d collections: the slot kept for the dropped borrower leaked", i)
		}
		runtime.GC()
	}
	other, _ := g.Begin(context.Background(), iamUsers)
	if err := other.TryEnter(); err != nil {
		t.Fatalf("after the collection: %v", err)
	}
	other.End(nil)
	buf.collectedLine()
	if n := strings.Count(buf.String(), "dropped without End"); n != 1 || !buf.contains("aws/") {
		t.Fatalf("log (%d lines): %s", n, buf.String())
	}
}

// A lender from Begin dropped without End, its second attempt's slot lent
// to a call nested in that attempt and its first attempt's slot kept for
// a call nested in that one (both going on), gives back only what it
// holds once it is collected, after the loans: the nested calls keep it
// reachable (their contexts lead to it), each loan gives its slot back
// as it comes back, the first attempt's at once, and the second
// attempt's, which the lender still holds, once the lender is collected.
// With max_concurrency 2, no other call goes while both loans are out.
func TestADroppedLenderLeavesItsLoansTheirSlots(t *testing.T) {
	g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 2}}, WithLogger(slog.New(slog.DiscardHandler)))
	other := func() bool {
		gd, _ := g.Begin(context.Background(), iamUsers)
		defer gd.End(nil)
		return gd.TryEnter() == nil
	}
	x, _ := g.Begin(context.Background(), iamUsers)
	if err := x.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	bh := g.provider("aws").scopes.accountBulkhead(ec2Vpcs.Account)
	lender, _ := g.Begin(context.Background(), ec2Vpcs)
	var gate nestgate.Gate
	nestgate.Attach(lender, &gate)
	actx := &loopCtx{Context: context.Background(), gd: lender}
	nested := func() *Guard {
		gate.SetOpen(true)
		defer gate.SetOpen(false)
		gd, _ := g.Begin(actx, ec2Subnets)
		if err := gd.TryEnter(); err != nil || gd.loan == nil {
			t.Fatalf("the nested call: %v, on a loan: %v; want it sent on its caller's slot", err, gd.loan != nil)
		}
		return gd
	}
	if err := lender.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := nested()
	lender.After(transientErr())
	lender.Release() // kept for the first nested call
	x.End(nil)
	if _, err := lender.Retry(0); err != nil {
		t.Fatal(err)
	}
	if err := lender.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	second := nested()
	lender = nil // dropped: no After, no End
	for range 20 {
		runtime.GC()
	}
	if used, _ := bh.InUse(); used != 2 || other() {
		t.Fatalf("bulkhead %d used with both loans out and the lender dropped; want 2, and no other call sent", used)
	}
	first.After(nil)
	first.End(nil)
	if used, _ := bh.InUse(); used != 1 {
		t.Fatalf("bulkhead %d used once the first loan came back; want 1: the second attempt's slot", used)
	}
	second.After(nil)
	second.End(nil)
	runtime.KeepAlive(actx)
	first, second, actx = nil, nil, nil
	for i := 0; ; i++ {
		if used, _ := bh.InUse(); used == 0 {
			break
		}
		if i == 1000 {
			t.Fatalf("bulkhead still used after %d collections: the dropped lender's slot leaked", i)
		}
		runtime.GC()
	}
	if !other() || !other() {
		t.Fatal("another call refused once every slot came back")
	}
}

// A lender dropped without End gives back the slot it holds only once the
// call that borrowed it is done with it, when that loan is on the lend a
// later attempt's slot is lent on (its first attempt's kept for a call
// still going on) and nothing but the loan leads the borrower to the
// lender: a borrower that began with a context of its own and entered its
// attempt with the lender's attempt context. With max_concurrency 2, the
// second loan out and the lender collected, one slot stays taken, for
// that loan, until it comes back.
func TestACollectedLenderKeepsItsSlotForALoanOnALaterLend(t *testing.T) {
	g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 2}}, WithLogger(slog.New(slog.DiscardHandler)))
	// The lender is made in a function of its own, so that nothing on
	// this test's stack leads to it once the function returns.
	var gate nestgate.Gate
	first, second := func() (*Guard, *Guard) {
		lender, _ := g.Begin(context.Background(), ec2Vpcs)
		nestgate.Attach(lender, &gate)
		actx := &loopCtx{Context: context.Background(), gd: lender}
		nested := func() *Guard {
			gate.SetOpen(true)
			defer gate.SetOpen(false)
			gd, _ := g.Begin(context.Background(), ec2Subnets)
			if err := gd.Enter(actx); err != nil || gd.loan == nil {
				t.Fatalf("the nested call: %v, on a loan: %v; want it sent on its caller's slot", err, gd.loan != nil)
			}
			return gd
		}
		if err := lender.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		x, _ := g.Begin(context.Background(), iamUsers)
		if err := x.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		first := nested()
		x.End(nil)
		lender.After(transientErr())
		lender.Release() // kept for the first nested call
		if _, err := lender.Retry(0); err != nil {
			t.Fatal(err)
		}
		if err := lender.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		second := nested()
		return first, second // the lender dropped: no After, no End
	}()
	bh := g.provider("aws").scopes.accountBulkhead(ec2Vpcs.Account)
	first.After(nil)
	first.End(nil)
	first = nil
	for i := 0; !g.leakLogged.Load(); i++ {
		if i == 1000 {
			t.Fatalf("the dropped lender not collected after %d collections", i)
		}
		runtime.GC()
	}
	if used, _ := bh.InUse(); used != 1 {
		t.Fatalf("bulkhead %d used with the second loan out, the first back and the lender dropped; want 1: the slot the second loan is on", used)
	}
	second.After(nil)
	second.End(nil)
	second = nil
	for i := 0; ; i++ {
		if used, _ := bh.InUse(); used == 0 {
			break
		}
		if i == 1000 {
			t.Fatalf("bulkhead still used after %d collections: the dropped lender's slot leaked", i)
		}
		runtime.GC()
	}
}

// So with a lender that went on a slot it borrowed (a call nested in
// another's attempt) and lent that loan on: collected while the call it
// lent it to goes on, it keeps its loan for that call, rather than give
// it back to the enclosing call, whose slot another call nested in it
// would then borrow while the first still goes on it. With
// max_concurrency 2: the enclosing call's slot, and the lender's first
// attempt's, kept for a call nested in it that goes on, then another
// call's once that call is over.
func TestACollectedLenderKeepsItsLoanForALoanOnALaterLend(t *testing.T) {
	g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 2}}, WithLogger(slog.New(slog.DiscardHandler)))
	outer, _ := g.Begin(context.Background(), iamUsers)
	var outerGate nestgate.Gate
	nestgate.Attach(outer, &outerGate)
	octx := &loopCtx{Context: context.Background(), gd: outer}
	if err := outer.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	outerGate.SetOpen(true)
	defer outerGate.SetOpen(false)
	var gate nestgate.Gate
	second := func() *Guard {
		lender, _ := g.Begin(context.Background(), ec2Vpcs)
		nestgate.Attach(lender, &gate)
		actx := &loopCtx{Context: context.Background(), gd: lender}
		nested := func() *Guard {
			gate.SetOpen(true)
			defer gate.SetOpen(false)
			gd, _ := g.Begin(context.Background(), ec2Subnets)
			if err := gd.Enter(actx); err != nil || gd.loan == nil {
				t.Fatalf("the call nested in the lender: %v, on a loan: %v; want it sent on its caller's slot", err, gd.loan != nil)
			}
			return gd
		}
		if err := lender.Enter(octx); err != nil || lender.loan != nil {
			t.Fatalf("the lender's first attempt: %v, on a loan: %v; want it sent on the free slot", err, lender.loan != nil)
		}
		first := nested()
		lender.After(transientErr())
		lender.Release() // kept for the first nested call
		if _, err := lender.Retry(0); err != nil {
			t.Fatal(err)
		}
		if err := lender.Enter(octx); err != nil || lender.loan == nil {
			t.Fatalf("the lender's retry: %v, on a loan: %v; want it sent on the enclosing call's slot", err, lender.loan != nil)
		}
		second := nested()
		first.After(nil)
		first.End(nil)
		return second // the lender dropped: no After, no End
	}()
	x, _ := g.Begin(context.Background(), iamUsers)
	if err := x.TryEnter(); err != nil {
		t.Fatalf("another call, the first loan back: %v; want it sent on the slot that loan was on", err)
	}
	defer x.End(nil)
	for i := 0; !g.leakLogged.Load(); i++ {
		if i == 1000 {
			t.Fatalf("the dropped lender not collected after %d collections", i)
		}
		runtime.GC()
	}
	another, _ := g.Begin(octx, ec2Subnets)
	if err := another.TryEnter(); err == nil {
		t.Fatalf("another call nested in the enclosing call went while the call the collected lender lent its loan to still goes on it (max_concurrency 2: the enclosing call's slot, and another call's); want ErrNoSlot")
	}
	another.End(nil)
	second.After(nil)
	second.End(nil)
	if err := another.TryEnter(); err != nil || another.loan == nil {
		t.Fatalf("another call nested in the enclosing call once that loan came back: %v, on a loan: %v; want it sent on the enclosing call's slot", err, another.loan != nil)
	}
	another.After(nil)
	another.End(nil)
}
