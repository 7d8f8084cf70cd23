package resilience

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/cloudg/cloudg/internal/bulkhead"
)

// slotLend is the loan of a bulkhead slot a call holds (or borrowed) to
// the calls nested in the attempt it holds it for (see Guard.Enter): one
// of them at a time goes on it, without a slot of its own; another waits
// for a free slot or for the slot to come back, so that calls nested at
// once (a function that fans out with its context) stay within the
// account's cap, and none waits for the slot its own caller holds. A
// nested call made by a goroutine the attempt started and did not wait
// for may go on after the attempt is over: the slot the enclosing call
// gives back meanwhile (Guard.Release) stays taken (keep) until the loan
// comes back (giveBack), so that the nested call is still counted against
// the cap. A lender that borrowed the slot itself (a call nested in
// another's attempt) keeps its loan so rather than give it back to its
// own lender. A call lends each slot it holds on a slotLend of its own:
// the one a Guard holds inline lends its first slot, and once it is kept
// for a loan that outlived its attempt, the call lends the slots it holds
// after it on the next one, which keep made with what it kept
// (Guard.lends), so that a later attempt's slot is lent at once, the
// earlier loan still out. Its zero value has lent nothing.
// It is safe for concurrent use.
type slotLend struct {
	mu   sync.Mutex
	st   atomic.Uint32 // lendBusy, and lendKept; changed by take and giveBack under mu, and by keep
	back chan struct{} // closed as the slot comes back; made by the first call to wait for it
	kept *keptSlot     // what keep kept, and the lend after this one: written before keep sets lendKept, and no more once it is set
}

// keptSlot is what a lender keeps for a loan that outlived its attempt
// (slotLend.keep): a slot of b, or its own loan of of, an enclosing
// call's slot, until the loan comes back; and the lend of the slots the
// lender holds after it. It is made only then, so that a Guard keeps one
// pointer for it, and the common call's Guard stays in its size class.
type keptSlot struct {
	b    *bulkhead.Bulkhead
	of   *slotLend
	next slotLend
}

const (
	lendBusy uint32 = 1 << iota // a nested call holds the slot
	lendKept                    // the lender gave its slot back meanwhile (keep), kept until the loan comes back, and lends its next slots on kept.next; set for good
)

// take lends the slot and reports true when no nested call holds it;
// otherwise it returns a channel closed once the slot comes back. It is
// asked of the lend a call lends its slot on now (Guard.lends), which
// keep has not set lendKept on.
func (l *slotLend) take() (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.st.Load() == 0 {
		l.st.Store(lendBusy)
		return true, nil
	}
	if l.back == nil {
		l.back = make(chan struct{})
	}
	return false, l.back
}

// giveBack ends the loan take made, and wakes the calls waiting for it.
// The slot the lender gave back meanwhile (keep) goes back to its
// bulkhead now; the lend stays kept, leading to the next one.
func (l *slotLend) giveBack() {
	l.mu.Lock()
	var b *bulkhead.Bulkhead
	var of *slotLend
	for {
		// keep may set lendKept meanwhile, without the lock.
		st := l.st.Load()
		if !l.st.CompareAndSwap(st, st&lendKept) {
			continue
		}
		if st&lendKept != 0 {
			b, of = l.kept.b, l.kept.of
			l.kept.b, l.kept.of = nil, nil // given back once; nor is an enclosing call's lend kept alive by this one
		}
		break
	}
	if l.back != nil {
		close(l.back)
		l.back = nil
	}
	l.mu.Unlock()
	switch {
	case b != nil:
		b.Release()
	case of != nil:
		of.giveBack()
	}
}

// lent reports whether a nested call holds the slot: one that holds its
// slot across attempts sends none on it (Guard.Enter, Guard.TryEnter),
// and gives it back, kept for the loan (keep), before it takes another.
func (l *slotLend) lent() bool { return l.st.Load()&lendBusy != 0 }

// idle reports whether the lend has lent nothing and was never kept: the
// lend of the slot the call holds, which no nested call holds. It is one
// load, which the common call, whose slot no call borrowed, pays as it
// gives its slot back; asked of a Guard's inline lend, false leads on to
// the lend of the slot the call holds now (Guard.lends).
func (l *slotLend) idle() bool { return l.st.Load() == 0 }

// keep keeps the lender's slot of b, which the lender is giving back while
// it is lent, until the loan comes back (giveBack): the nested call that
// borrowed it outlived the attempt. A lender that goes on a slot it
// borrowed keeps its loan of of, an enclosing call's slot, instead (b
// nil), which giveBack then gives back. The lender lends its next slots
// on the next lend (Guard.lends). It reports false when the loan came
// back meanwhile, which is all it needs: the caller then releases b, or
// gives its loan of of back. It takes no lock, so that the Guard of the
// common call, on its caller's stack, does not escape to the heap.
func (l *slotLend) keep(b *bulkhead.Bulkhead, of *slotLend) bool {
	if l.st.Load() != lendBusy {
		return false
	}
	l.kept = &keptSlot{b: b, of: of} // read by giveBack and Guard.lends only once the compare-and-swap below set lendKept
	if l.st.CompareAndSwap(lendBusy, lendBusy|lendKept) {
		return true
	}
	l.kept = nil
	return false
}

// lends returns the lend of the slot the call holds now, or holds next:
// its inline one, or, once that was kept for a loan that outlived its
// attempt (slotLend.keep), the one that follows it, and so on. Only the
// call's own goroutine moves it on (Release), between attempts; a call
// nested in an attempt reads it as it reads the slot the call holds.
func (gd *Guard) lends() *slotLend {
	l := &gd.lent
	for l.st.Load()&lendKept != 0 {
		l = &l.kept.next
	}
	return l
}

// borrowSlot lends this call the slot of b that an enclosing call holds
// (or borrowed) inside its attempt: the call that made this one, found
// through ctx (Value(gov) answers with its Guard), or the call that made
// it, and so on (credentials fetched through a chain of roles), the
// nearest first. A ctx that answers with this call's own Guard (the
// attempt context an integration readies the call's retry or resend
// with) leads on to the context the call began with. It reports whether the call may go without a slot of its
// own; when the slot is lent to another nested call, it returns a channel
// closed once it comes back (nil when no enclosing call holds a slot of
// b). An enclosing call with a gate (made WithNestedCalls, or sent by an
// integration with its attempt context) is read while its attempt runs
// only (see Guard.lookIn). It is looked up only when no slot is
// free, so the common call pays nothing for it.
func (gd *Guard) borrowSlot(ctx context.Context, b *bulkhead.Bulkhead) (bool, <-chan struct{}) {
	var w walk
	for {
		outer, ok := ctx.Value(gd.g).(*Guard)
		if !ok || w.loops(outer) {
			return false, nil
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
				loan := outer.lends()
				if ok, back = loan.take(); ok {
					gd.loan, gd.slotIn = loan, b
					if gd.orphan != nil {
						gd.orphan.borrow(loan)
					}
				}
			}
			outer.lookedIn()
			if held {
				return ok, back
			}
		}
		ctx = outer.ctx
	}
}

// holdsSlotOf reports whether the call holds a slot of b, or goes on one
// it borrowed from an enclosing call. It reads the call only: the call
// that lent the slot (or the one that lent it to that one) may be over
// its attempt, its goroutine writing its Guard, while this call goes on.
func (gd *Guard) holdsSlotOf(b *bulkhead.Bulkhead) bool {
	return gd.slot == b || (gd.loan != nil && gd.slotIn == b)
}

// errSlotBack is waitSlot's: the slot lent to another nested call came
// back, which this call may borrow now.
var errSlotBack = errors.New("resilience: the enclosing call's slot came back")
