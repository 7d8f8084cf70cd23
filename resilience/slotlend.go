package resilience

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/cloudg/cloudg/internal/bulkhead"
)

// slotLend is one bulkhead slot a call holds (or borrowed) as lent to the
// calls nested in the attempt it holds it for (see Guard.Enter): one of
// them at a time goes on it, without a slot of its own; another waits for
// a free slot or for the slot to come back, so that calls nested at once
// (a function that fans out with its context) stay within the account's
// cap, and none waits for the slot its own caller holds. A nested call
// made by a goroutine the attempt started and did not wait for may go on
// after the attempt is over: the slot the enclosing call gives back
// meanwhile (Guard.Release) stays taken (keep) until the loan comes back
// (giveBack), so that the nested call is still counted against the cap,
// and the lend stays with that loan: the call lends the next slot it
// holds on another lend (Guard.lends), so that a call nested in a later
// attempt goes on that attempt's slot at once. A lender that borrowed the
// slot itself (a call nested in another's attempt) keeps its loan so
// rather than give it back to its own lender. Its zero value has lent
// nothing. It is safe for concurrent use.
type slotLend struct {
	mu   sync.Mutex
	st   atomic.Uint32 // lendBusy, and lendKept with it; changed by take and giveBack under mu, and by keep
	bk   atomic.Uint32 // 1 while back is read or written (lockBack): wake, which takes no mutex, writes it too
	back chan struct{} // closed as the slot comes back, or is kept (wake); made by the first call to wait for it
	kept *keptSlot     // what keep kept: written before it sets lendKept, read once giveBack finds it set
}

// keptSlot is what a lender keeps for a loan that outlived its attempt
// (slotLend.keep): a slot of b, or its own loan of of, an enclosing
// call's slot. It is made only then, so that a Guard keeps one pointer
// for it, and the common call's Guard stays in its size class.
type keptSlot struct {
	b  *bulkhead.Bulkhead
	of *slotLend
	// The governor and scope of the lender, whose watches (WatchSlots)
	// are told as b's slot goes back.
	g     *Governor
	scope Scope
}

const (
	lendBusy uint32 = 1 << iota // a nested call holds the slot
	lendKept                    // the lender gave its slot back meanwhile (keep), kept until the loan comes back
)

// take lends the slot and reports true when no nested call holds it;
// otherwise it returns a channel closed once the slot comes back.
func (l *slotLend) take() (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st.Load() == 0 {
		l.st.Store(lendBusy)
		return true, nil
	}
	return false, l.backChan()
}

// backChan returns a channel closed at the lend's next wake (wake,
// giveBack): take's, for a call waiting for the slot to come back, and
// lender's, for a call waiting for the probe lent on in the lender's
// attempt to come back (Guard.giveProbeBack wakes it). A wake of either
// kind wakes both: a call woken finds its own not back yet, and waits
// again.
func (l *slotLend) backChan() <-chan struct{} {
	l.lockBack()
	if l.back == nil {
		l.back = make(chan struct{})
	}
	back := l.back
	l.bk.Store(0)
	return back
}

// giveBack ends the loan take made, and wakes the calls waiting for it.
// The slot the lender gave back meanwhile (keep) goes back to its
// bulkhead now.
func (l *slotLend) giveBack() {
	l.mu.Lock()
	var kept *keptSlot
	if l.st.Swap(0)&lendKept != 0 {
		kept, l.kept = l.kept, nil
	}
	l.wake()
	l.mu.Unlock()
	switch {
	case kept == nil:
	case kept.b != nil:
		kept.b.Release()
		kept.g.slotFreed(kept.b, kept.scope)
	default:
		kept.of.giveBack()
	}
}

// lent reports whether a nested call holds the slot: the lender giving
// its slot back then keeps it for the loan (keep). It is one load, which
// the common call, whose slot no call borrowed, pays as it gives its slot
// back.
func (l *slotLend) lent() bool { return l.st.Load() != 0 }

// lentOut reports whether a nested call holds the slot and no slot of
// the lender's is kept for it yet: a lender that holds its slot across
// attempts sends none on it then (Guard.Enter, Guard.TryEnter).
func (l *slotLend) lentOut() bool { return l.st.Load() == lendBusy }

// keep keeps the lender's slot of b, which the lender is giving back while
// it is lent, until the loan comes back (giveBack): the nested call that
// borrowed it outlived the attempt. A lender that goes on a slot it
// borrowed keeps its loan of of, an enclosing call's slot, instead (b
// nil), which giveBack then gives back. It reports false when the loan
// came back meanwhile, or kept a slot already: the caller then releases
// b, or gives its loan of of back. g and scope are the lender's: the
// watches of g (WatchSlots) are told as the kept slot goes back. It
// takes no lock, so that the Guard of the common call, on its caller's
// stack, does not escape to the heap.
func (l *slotLend) keep(b *bulkhead.Bulkhead, of *slotLend, g *Governor, scope Scope) bool {
	if l.st.Load() != lendBusy {
		return false
	}
	l.kept = &keptSlot{b: b, of: of, g: g, scope: scope} // read by giveBack only once the compare-and-swap below set lendKept
	if l.st.CompareAndSwap(lendBusy, lendBusy|lendKept) {
		return true
	}
	l.kept = nil
	return false
}

// wake wakes the calls waiting for the slot to come back (take's
// channel): the lender kept it for its loan (keep), so that its coming
// back gives it to none of them (it goes back to its bulkhead, or to the
// lender's own lender), and they look again for a slot they may go on;
// giveBack wakes them too. It takes no mutex, as keep does. A call that
// takes the lend after it (take) is given a channel that giveBack
// closes; a call nested in a gated attempt takes it only while the
// attempt runs (see borrowSlot), before the lender keeps the lend.
func (l *slotLend) wake() {
	l.lockBack()
	back := l.back
	l.back = nil
	l.bk.Store(0)
	if back != nil {
		close(back)
	}
}

// lockBack readies back to be read or written, until bk is stored 0. It
// spins, as the others hold it for a few instructions only, and takes no
// mutex, whose slow path would move the common call's Guard (its inline
// lend, which keepLent wakes) to the heap.
func (l *slotLend) lockBack() {
	for !l.bk.CompareAndSwap(0, 1) {
		runtime.Gosched()
	}
}

// lends returns the lend of the slot the call holds now (or borrowed):
// its inline one, unless that is kept for a loan that outlived the
// attempt it was taken in (see keepLent).
func (gd *Guard) lends() *slotLend {
	if gd.lend != nil {
		return gd.lend
	}
	return &gd.lent
}

// keepLent keeps the slot the call is giving back, of b (or its loan of
// of, an enclosing call's slot, b nil), for the nested call it is lent
// to, if any, until that loan comes back (see slotLend.keep), and reports
// whether it did: otherwise the caller gives the slot back. A lend kept
// so stays with its loan, which alone gives it back: the call lends the
// slot it holds next on its inline lend if that is free, or on a new one
// (the rare call whose nested calls outlive two attempts in a row, the
// first still going on), and keeps no other, so that a call lending slot
// after slot (a listing's pages) holds one lend besides its inline one,
// however many of its loans are still out. The calls waiting for the
// lend kept so (see borrowSlot) are woken, to look again for a slot.
func (gd *Guard) keepLent(b *bulkhead.Bulkhead, of *slotLend) bool {
	l := gd.lends()
	if !l.lent() || !l.keep(b, of, gd.g, gd.scope) {
		return false
	}
	if l != &gd.lent && gd.lent.st.Load() == 0 {
		gd.lend = nil // the inline lend's loan came back: it lends the next slot
	} else {
		gd.lend = new(slotLend)
	}
	if gd.orphan != nil {
		// A loan of a lend apart from the Guard does not keep the Guard
		// reachable, as one of its inline lend does: collected meanwhile,
		// it keeps what it holds for that loan (see orphanSlot).
		gd.orphan.lendOn(gd.lend)
	}
	// The calls waiting for this lend's loan look again, once the lend
	// of the call's next slot is set: the slot of an enclosing call may
	// be free meanwhile.
	l.wake()
	return true
}

// attemptOver wakes the calls waiting for the slot the attempt just over
// went on, lent to a call nested in it that goes on (see borrowSlot), as
// keepLent wakes them when the slot is kept: the attempt's gate closed,
// they are nested in no attempt of this call until its next one begins,
// and look again, rather than wait for that loan while the call holds its
// slot across its attempts (an SDK's retries, a listing's pages): an
// enclosing call whose attempt runs may lend them its slot, as it would
// lend it to a call made now. So are the calls waiting for the verdict
// while the attempt's probe is lent to a call nested in it that goes on
// (see Guard.lender): past the closed gate, they look again as the
// call's next attempt begins, which asks the breaker (AllowProbe) and is
// the probe again unless a verdict opened it, and borrow its probe then,
// rather than wait for that loan or the probe's lease. A call without a
// gate (whose nested calls read it whether its attempt runs or not)
// wakes none. The common call pays a comparison for it.
func (gd *Guard) attemptOver() {
	if gd.gate != nil { // inlined: the common call, gateless, pays a test
		gd.wakeLenders()
	}
}

// wakeLenders is attemptOver for a gated Guard.
func (gd *Guard) wakeLenders() {
	if l := gd.lends(); l.lentOut() || gd.lease == leaseLent {
		l.wake()
	}
}

// borrowSlot lends this call the slot of b that an enclosing call holds
// (or borrowed) inside its attempt: the call that made this one, found
// through ctx (Value(gov) answers with its Guard), or the call that made
// it, and so on (credentials fetched through a chain of roles), the
// nearest first. A ctx that answers with this call's own Guard (the
// attempt context an integration readies the call's retry or resend
// with) leads on to the context the call began with. It reports whether the call may go without a slot of its
// own; when the slot is lent to another nested call, it returns a channel,
// back, closed once it comes back (nil when no enclosing call holds a slot of
// b). An enclosing call with a gate (made WithNestedCalls, or sent by an
// integration with its attempt context) is read while its attempt runs
// only (see Guard.lookIn); for each the walk passed between its attempts,
// opened holds a channel closed as its next attempt begins, when the
// call, nested in it again, may borrow that attempt's slot: a call that
// waits looks again then (see Guard.acquire), rather than wait that
// attempt out. It is looked up only when no slot is free, so the common
// call pays nothing for it.
func (gd *Guard) borrowSlot(ctx context.Context, b *bulkhead.Bulkhead) (ok bool, back <-chan struct{}, opened []<-chan struct{}) {
	var w walk
	for {
		outer, ok := ctx.Value(gd.g).(*Guard)
		if !ok || w.loops(outer) {
			return false, nil, opened
		}
		if outer == gd {
			// The call's own attempt context (an integration readies a
			// retry or a resend with it): on to the call that made it.
			ctx = gd.ctx
			continue
		}
		if outer.lookIn() {
			held := outer.holdsSlotOf(b)
			var ok bool
			var back <-chan struct{}
			if held {
				l := outer.lends()
				if ok, back = l.take(); ok {
					gd.loan, gd.slotIn = l, b
					if gd.orphan != nil {
						gd.orphan.borrow(l)
					}
					if testHookBorrow != nil {
						testHookBorrow(outer, l)
					}
				}
			}
			outer.lookedIn()
			if held {
				return ok, back, opened
			}
		} else {
			opened = append(opened, outer.gate.Opened()) // lookIn is false with a gate only
		}
		ctx = outer.ctx
	}
}

// testHookBorrow, set by tests only, is told each loan borrowSlot takes:
// the enclosing call whose slot it borrowed, and the lend it took. It
// runs while the enclosing call's attempt is read (its gate held open),
// so that a test learns which of its attempts lent the slot.
var testHookBorrow func(lender *Guard, l *slotLend)

// holdsSlotOf reports whether the call holds a slot of b, or goes on one
// it borrowed from an enclosing call. It reads the call only: the call
// that lent the slot (or the one that lent it to that one) may be over
// its attempt, its goroutine writing its Guard, while this call goes on.
func (gd *Guard) holdsSlotOf(b *bulkhead.Bulkhead) bool {
	return gd.slot == b || (gd.loan != nil && gd.slotIn == b)
}

// errSlotBack is waitSlot's: the slot lent to another nested call came
// back, which this call may borrow now, or the attempt of an enclosing
// call began, whose slot it may borrow.
var errSlotBack = errors.New("resilience: the enclosing call's slot came back")
