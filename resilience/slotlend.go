package resilience

import (
	"context"
	"errors"
	"sync"

	"github.com/cloudg/cloudg/internal/bulkhead"
)

// slotLend is a call's bulkhead slot as lent to the calls nested in its
// attempt (see Guard.Enter): one of them at a time goes on it, without a
// slot of its own; another waits for a free slot or for the slot to come
// back, so that calls nested at once (a function that fans out with its
// context) stay within the account's cap, and none waits for the slot its
// own caller holds. Its zero value has lent nothing. It is safe for
// concurrent use.
type slotLend struct {
	mu   sync.Mutex
	busy bool          // a nested call holds the slot
	back chan struct{} // closed as the slot comes back; made by the first call to wait for it
}

// take lends the slot and reports true when no nested call holds it;
// otherwise it returns a channel closed once the slot comes back.
func (l *slotLend) take() (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.busy {
		l.busy = true
		return true, nil
	}
	if l.back == nil {
		l.back = make(chan struct{})
	}
	return false, l.back
}

// giveBack ends the loan take made, and wakes the calls waiting for it.
func (l *slotLend) giveBack() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.busy = false
	if l.back != nil {
		close(l.back)
		l.back = nil
	}
}

// borrowSlot lends this call the slot of b that an enclosing call holds
// (or borrowed) inside its attempt: the call that made this one, found
// through ctx (Value(gov) answers with its Guard), or the call that made
// it, and so on (credentials fetched through a chain of roles), the
// nearest first. It reports whether the call may go without a slot of its
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
		if !ok || outer == gd || w.loops(outer) {
			return false, nil
		}
		if outer.lookIn() {
			held := outer.holdsSlotOf(b)
			var ok bool
			var back <-chan struct{}
			if held {
				if ok, back = outer.lent.take(); ok {
					gd.slotOf, gd.slotIn = outer, b
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
	return gd.slot == b || (gd.slotOf != nil && gd.slotIn == b)
}

// errSlotBack is waitSlot's: the slot lent to another nested call came
// back, which this call may borrow now.
var errSlotBack = errors.New("resilience: the enclosing call's slot came back")
