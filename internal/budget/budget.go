// Package budget implements a provider's retry budget: a pool of retry
// tokens that retries spend and successes slowly refill (the AWS SDKs'
// "retry quota").
package budget

import (
	"sync/atomic"

	"github.com/cloudg/cloudg/state"
)

// Unit is the number of internal units per token, so that a refund of 0.1
// token is exact integer arithmetic. A shared budget keeps units too.
const Unit = 10

// RetryCost is the number of tokens one paid retry spends.
const RetryCost = 1

// Refund is the share of a token each success gives back (0.1).
const Refund = 1

// Budget is safe for concurrent use. The zero value is an empty budget of
// size zero; call New.
type Budget struct {
	units atomic.Int64
	max   int64
}

// MaxSize is the largest budget, in tokens (about 9e14): larger sizes
// saturate to it, so that the count of units cannot overflow, and so that
// a float64 holds every count of units exactly (2^53 at most): Remaining
// of a full budget reads its size, as the governor's reads of a budget
// compare it with (a full budget read below its size would be spent).
const MaxSize = 1 << 53 / Unit

// New returns a full budget of size tokens (at most MaxSize).
func New(size int) *Budget {
	b := &Budget{max: min(int64(max(0, size)), MaxSize) * Unit}
	b.units.Store(b.max)
	return b
}

// Take spends one retry's cost. It reports false, spending nothing, when
// the budget cannot pay it.
func (b *Budget) Take() bool {
	for {
		v := b.units.Load()
		if v < RetryCost*Unit {
			return false
		}
		if b.units.CompareAndSwap(v, v-RetryCost*Unit) {
			return true
		}
	}
}

// Succeed refunds a tenth of a token, up to the budget's size. A full budget
// is only read, so successes do not contend on it.
func (b *Budget) Succeed() {
	for {
		v := b.units.Load()
		if v >= b.max {
			return
		}
		if b.units.CompareAndSwap(v, v+Refund) {
			return
		}
	}
}

// Remaining returns the tokens left.
func (b *Budget) Remaining() float64 { return float64(b.units.Load()) / Unit }

// Size returns the budget's size in tokens.
func (b *Budget) Size() int { return int(b.max / Unit) }

var _ state.Budget = (*Budget)(nil)
