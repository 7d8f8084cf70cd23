package resilience

import (
	"github.com/cloudg/cloudg/internal/breaker"
	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/internal/budget"
)

// The learned state of the governor (bucket balances and adaptive rates,
// breakers, retry budgets) sits behind these small interfaces, so that a
// shared backend can hold it for a fleet of processes without touching the
// call path. Times are nanoseconds since the governor's epoch.

// rateState is a token bucket.
type rateState interface {
	Reserve(now int64) (wait int64)
	TryReserve(now int64) bool
	Cancel(now int64)
	Throttle(now, pause int64) (rate float64, decreased bool)
	Pause(now, pause int64)
	Success(now int64) (rate float64, increased bool)
	// Recovering reports whether Success has anything to do: the rate is
	// below its ceiling, or the controller counts successes. It lets the
	// call path skip reading the clock after a call.
	Recovering() bool
	Snapshot(now int64) bucket.State
	Idle(now, minIdle int64) bool
}

// breakerState is a circuit breaker.
type breakerState interface {
	Allow(now int64) (wait int64, ok bool)
	Success() (closed bool)
	Failure(now int64) (opened bool)
	Snapshot(now int64) breaker.Snapshot
	Pristine() bool
}

// budgetState is a provider's retry budget.
type budgetState interface {
	Take() bool
	Succeed()
	Remaining() float64
}

// stateStore makes the state objects. key is the scope the state belongs
// to: the leaf scope for leaves and breakers, the account scope for account
// buckets, the provider alone for provider buckets and budgets.
type stateStore interface {
	newBucket(key Scope, spec bucket.Spec, now int64) rateState
	newBreaker(key Scope, spec breaker.Spec) breakerState
	newBudget(provider string, size int) budgetState
}

// memoryStore keeps everything in this process.
type memoryStore struct{}

func (memoryStore) newBucket(_ Scope, spec bucket.Spec, now int64) rateState {
	return bucket.New(spec, now)
}

func (memoryStore) newBreaker(_ Scope, spec breaker.Spec) breakerState { return breaker.New(spec) }

func (memoryStore) newBudget(_ string, size int) budgetState { return budget.New(size) }
