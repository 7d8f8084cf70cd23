package resilience

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/cloudg/cloudg/internal/bulkhead"
	"github.com/cloudg/cloudg/state"
)

// orphanSlot gives back the slot of a Guard dropped without Release or End
// (an SDK hook that never fired, a listing abandoned without Close) when
// the garbage collector finds the guard unreachable, so that the account's
// bulkhead does not lose a slot for good: the slot the guard holds, or
// the one it borrowed from an enclosing call (see Guard.borrowSlot),
// which that call, its attempt over, keeps for the loan until it comes
// back (slotLend.keep). What the guard holds and lent to a call that goes
// on, on a lend of its own (Guard.keepLent), is kept so until that loan
// comes back. It lives apart from the guard, which it must not keep
// alive.
type orphanSlot struct {
	held  atomic.Pointer[bulkhead.Bulkhead]
	loan  atomic.Pointer[slotLend] // the enclosing call's, whose slot the guard borrowed
	lend  atomic.Pointer[slotLend] // the guard's lend of what it holds, when not its inline one (Guard.lend)
	g     *Governor
	scope Scope
}

// watchOrphan makes the orphanSlot of a guard Begin returned.
func watchOrphan(gd *Guard) *orphanSlot {
	o := &orphanSlot{g: gd.g, scope: gd.scope}
	runtime.AddCleanup(gd, (*orphanSlot).collected, o)
	return o
}

func (o *orphanSlot) hold(b *bulkhead.Bulkhead) { o.held.Store(b) }

// borrow notes the loan the guard took of l, an enclosing call's slot.
func (o *orphanSlot) borrow(l *slotLend) { o.loan.Store(l) }

// lendOn notes the lend the guard lends what it holds on now, l (nil:
// its inline one, which a loan of keeps the guard reachable).
func (o *orphanSlot) lendOn(l *slotLend) { o.lend.Store(l) }

// repay forgets the loan the guard is about to give back; false when the
// collector gave it back already, as drop has it.
func (o *orphanSlot) repay() bool { return o.loan.Swap(nil) != nil }

// drop forgets the slot the guard is about to release; false when the
// collector released it already (the guard cannot be both released and
// collected, but the check keeps the release exactly once).
func (o *orphanSlot) drop() bool { return o.held.Swap(nil) != nil }

// collected runs once the guard is unreachable: a slot it still held, or
// borrowed, is given back, and the first such leak of the governor is
// logged; so is a half-open breaker's probe it borrowed (probeNotes)
// from a call whose attempts are gated, which is not logged.
func (o *orphanSlot) collected() {
	if n, ok := probeNotes.LoadAndDelete(o); ok && n.(*probeNote).lender.gate != nil {
		// The half-open breaker's probe the guard borrowed, with no
		// verdict: no verdict comes from it now. Given back to a lender
		// whose attempts are gated only, read while its attempt runs: one
		// without a gate (a Begin's guard a caller put in a context of
		// its own) is read by its nested calls during its attempt only,
		// which the collector cannot know of; it asks the breaker again
		// at its next attempt.
		n.(*probeNote).giveBack()
	}
	b, l := o.held.Swap(nil), o.loan.Swap(nil)
	if b == nil && l == nil {
		return
	}
	// What the guard holds may be lent to a call still going on, on a lend
	// apart from the guard (Guard.keepLent), which does not keep it
	// reachable: kept for that loan until it comes back, as Release keeps
	// it. The guard is unreachable, so nothing else keeps on the lend.
	ln := o.lend.Swap(nil)
	kept := func(b *bulkhead.Bulkhead, of *slotLend) bool {
		return ln != nil && ln.lent() && ln.keep(b, of, o.g, o.scope)
	}
	if l != nil && !kept(nil, l) {
		l.giveBack() // a borrower is not counted in flight
	}
	if b != nil {
		o.g.unbusyLive(o.scope) // the count is on the live entry (entryFlags); first, as Release
		if !kept(b, nil) {
			b.Release()
			o.g.slotFreed(b, o.scope)
		}
	}
	if o.g.leakLogged.CompareAndSwap(false, true) {
		l := o.g.logger
		if l == nil {
			l = slog.Default()
		}
		l.LogAttrs(context.Background(), slog.LevelWarn,
			"cloudg: a governed call was dropped without End; its concurrency slot was released when it was garbage collected",
			slog.String("scope", o.scope.String()))
	}
}

// probeNotes holds, by the orphanSlot of the guard that took it (a
// *probeNote by its *orphanSlot), each loan of a half-open breaker's
// probe a guard Begin returned took from an enclosing call
// (Guard.borrowProbe) and still holds with no verdict: the guard gives
// it back to that call as it ends (Guard.giveProbeBack), whatever context
// its Begin was given, and a guard dropped without End gives it back as
// it is collected (orphanSlot.collected), as it gives back its slot, so
// that a call nested in the lender's attempt later borrows the probe
// rather than wait out its lease (breaker_wait) or be refused. It lives
// apart from the guards, so that a Begin pays nothing for it: only a
// guard that borrows the probe, a rare call, touches it.
var probeNotes sync.Map

// probeNote is a loan of the probe's lease of breaker, taken from lender
// in its turn turn (Guard.holdProbe).
type probeNote struct {
	lender  *Guard
	breaker state.Breaker
	turn    uint32
}

// giveBack gives the loan back to its lender, if the lender's attempt
// still runs with it lent (Guard.takeProbeBack).
func (n *probeNote) giveBack() { n.lender.takeProbeBack(n.breaker, n.turn) }
