package fleet

import (
	"sync"
	"sync/atomic"

	"github.com/cloudg/cloudg/internal/budget"
	"github.com/cloudg/cloudg/state"
)

// sharedBudget is a provider's retry budget in Redis, in tenths of a token.
// Spending goes to Redis at once (a retry is rare and must not overspend);
// the refunds of successes (a tenth each) are added up locally and sent
// with the next spend, a whole token's worth, or the heartbeat, which also
// refreshes the process's view of the budget.
//
// Its local budget, for when Redis does not take an operation, starts
// from the fleet's budget as the process last read it (known), shared
// among the live processes (fallback); after Close it is the budget alone,
// spent by the retries and refilled by the successes, as the in-process
// one.
type sharedBudget struct {
	s       *Store
	keys    []string
	units   atomic.Int64 // size in tenths
	pending atomic.Int64 // refunds not yet sent
	known   atomic.Int64 // units at Redis's last answer
	reads   atomic.Int64 // counts Redis's answers (see fallback)

	mu         sync.Mutex
	local      state.Budget
	localEp    int64 // the episode it was made for
	localReads int64 // the answer it was made from (its count: reads)
	localOut   bool  // made while the store was on local limits (an outage's)
}

func newSharedBudget(s *Store, key string, size int) *sharedBudget {
	b := &sharedBudget{s: s, keys: []string{key}}
	b.resize(size)
	b.known.Store(b.units.Load())
	return b
}

// resize sets the budget's size: the governor asks for the budget again
// when it is reconfigured or reset.
// resize sets the budget's size. A size past budget.MaxSize saturates, as
// the in-process budget does, so that the count of units cannot overflow.
func (b *sharedBudget) resize(size int) {
	b.units.Store(min(int64(max(0, size)), budget.MaxSize) * budget.Unit)
}

// fallback returns the local budget. An outage's serves that outage: a
// new outage makes another. Once the store is back on the shared state,
// the next fallback (an operation Redis refuses or does not answer, a
// call after Close) makes it again from the fleet's budget as last read
// when it was an outage's, or Redis answered since it was made, so that
// an earlier outage's local budget, spent then, does not refuse the
// retries after it.
func (b *sharedBudget) fallback() state.Budget {
	b.mu.Lock()
	defer b.mu.Unlock()
	ep, out := b.s.outage()
	reads := b.reads.Load()
	if !b.keepsLocal(ep, out, reads) {
		b.local = b.fromKnown()
		b.localEp, b.localOut, b.localReads = ep, out, reads
	}
	return b.local
}

// keepsLocal reports whether fallback keeps the local budget, in the
// outage ep (out: the store is on local limits), Redis having answered
// reads times (see fallback). mu must be held.
func (b *sharedBudget) keepsLocal(ep int64, out bool, reads int64) bool {
	return b.local != nil && b.localEp == ep && (out || !b.localOut && b.localReads == reads)
}

// fromKnown returns a new local budget: the process's share of the
// fleet's budget as last read. It changes nothing of b: fallback installs
// it, and Remaining only reads it.
func (b *sharedBudget) fromKnown() state.Budget {
	return b.s.local.Budget("", int(b.s.share(float64(b.known.Load()/budget.Unit))))
}

// onLocal reports whether the budget is the local one: while Redis does
// not answer, and after Close.
func (b *sharedBudget) onLocal() bool { return b.s.degraded() || b.s.shut.Load() }

// exchange sends the pending refunds and, when take is set, spends a
// token; it reports whether the token was spent. Refunds Redis did not
// run are sent again with the next exchange; those whose answer was lost
// (Redis may have added them) are not, so that a refund counts at most
// once.
func (b *sharedBudget) exchange(take bool) (taken, ok bool) {
	refund := b.pending.Swap(0)
	takeArg := "0"
	if take {
		takeArg = "1"
	}
	res, ok, unsent := b.s.runOnce(budgetScript, b.keys, b.units.Load(), b.s.ttlMS(), refund, takeArg)
	if !ok {
		if unsent {
			b.pending.Add(refund)
		}
		return false, false
	}
	if len(res) < 2 {
		return false, false
	}
	b.known.Store(min(max(0, toInt(res[1])), b.units.Load()))
	b.reads.Add(1)
	return toInt(res[0]) == 1, true
}

func (b *sharedBudget) Take() bool {
	if taken, ok := b.exchange(true); ok {
		return taken
	}
	return b.fallback().Take()
}

// Succeed refunds a tenth of a token: to Redis (added up, see
// sharedBudget), or to the local budget while Redis does not answer and
// after Close, which nothing sends to Redis any more.
func (b *sharedBudget) Succeed() {
	if b.onLocal() {
		b.fallback().Succeed()
		return
	}
	if b.known.Load()+b.pending.Load() >= b.units.Load() {
		return // full as far as we know: nothing to refund
	}
	if b.pending.Add(1) >= budget.Unit {
		b.exchange(false)
	}
}

// Remaining returns the tokens left: the fleet's as far as the process
// knows, with its refunds not yet sent; while Redis does not answer and
// after Close, those of the local budget the next retry would spend: the
// one fallback keeps, or the one it would make, which Remaining makes
// only to read (a read has no side effect: it installs no local budget).
func (b *sharedBudget) Remaining() float64 {
	if b.onLocal() {
		b.mu.Lock()
		defer b.mu.Unlock()
		l := b.local
		if ep, out := b.s.outage(); !b.keepsLocal(ep, out, b.reads.Load()) {
			l = b.fromKnown()
		}
		return l.Remaining()
	}
	return float64(min(b.units.Load(), b.known.Load()+b.pending.Load())) / budget.Unit
}

// flush sends the pending refunds, and refreshes what this process knows
// of the budget (others spend it): Succeed refunds only while the budget
// is not full as far as it knows, so that view is at most a heartbeat old.
func (b *sharedBudget) flush() {
	if !b.s.degraded() {
		b.exchange(false)
	}
}

var _ state.Budget = (*sharedBudget)(nil)
