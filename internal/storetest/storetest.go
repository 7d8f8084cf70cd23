// Package storetest holds state stores for tests of the governor and its
// integrations.
package storetest

import (
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/state"
)

// SlowPauses returns a store whose buckets are s's but take d to record a
// throttle or a pause, as a shared store's do (a round trip to Redis, in
// fleet mode): a test of what a call waiting meanwhile sees. Its buckets
// have only the methods of state.Bucket, none of the optional ones of s's.
// It is safe for concurrent use if s is.
func SlowPauses(s state.Store, d time.Duration) state.Store {
	return slowStore{s, d}
}

type slowStore struct {
	state.Store
	d time.Duration
}

func (s slowStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return slowBucket{s.Store.Bucket(key, spec, now), s.d}
}

type slowBucket struct {
	state.Bucket
	d time.Duration
}

func (b slowBucket) Throttle(now, pause time.Duration) (float64, bool) {
	time.Sleep(b.d)
	return b.Bucket.Throttle(now, pause)
}

func (b slowBucket) Pause(now, pause time.Duration) {
	time.Sleep(b.d)
	b.Bucket.Pause(now, pause)
}

// BudgetReads is a store whose retry budgets are those of the store it
// wraps, but run a hook, once, as their tokens are next read (a budget's
// Remaining, after the read): a test of a read of the governor puts a
// change of the governor (a Configure that resizes a budget) between a
// read of a budget's tokens and what follows it. It is safe for
// concurrent use if the store it wraps is.
type BudgetReads struct {
	state.Store
	hook atomic.Pointer[func()]
}

// HookBudgetReads returns a BudgetReads whose state is s's, with no hook
// set.
func HookBudgetReads(s state.Store) *BudgetReads {
	return &BudgetReads{Store: s}
}

// OnNextRead sets f as the hook the next read of a budget's tokens runs,
// in place of one set before and not yet run.
func (s *BudgetReads) OnNextRead(f func()) {
	s.hook.Store(&f)
}

// Ran reports whether the hook set last has run, true if none was set:
// false after the read a test meant to hook tells that the read never
// came to a budget's tokens.
func (s *BudgetReads) Ran() bool {
	return s.hook.Load() == nil
}

// Budget returns the wrapped store's budget for provider, whose reads of
// its tokens run the hook.
func (s *BudgetReads) Budget(provider string, size int) state.Budget {
	return hookedBudget{s.Store.Budget(provider, size), s}
}

type hookedBudget struct {
	state.Budget
	s *BudgetReads
}

func (b hookedBudget) Remaining() float64 {
	left := b.Budget.Remaining()
	if f := b.s.hook.Swap(nil); f != nil {
		(*f)()
	}
	return left
}
