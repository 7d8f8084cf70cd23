package resilience

import (
	"time"

	"github.com/cloudg/cloudg/internal/breaker"
	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/internal/budget"
)

// The learned state of a governor (bucket balances and adaptive rates,
// breakers, retry budgets) sits behind the small interfaces of this file,
// made by a StateStore. The default store keeps it in the process; fleet
// mode (module github.com/cloudg/cloudg/fleet) keeps it in Redis, shared by
// every process of a fleet, without touching the call path.
//
// Times are the governor's clock readings, in nanoseconds since the
// governor was made ("now"); durations are nanoseconds too. A shared store
// may keep its own time (Redis's TIME) and use now only for local caching.

// BucketSpec describes a token bucket.
type BucketSpec struct {
	Rate     float64 // the ceiling, in tokens per second
	Burst    float64 // capacity at the ceiling; <= 0 means twice the rate; never below 1
	Floor    float64 // the lowest adaptive rate
	Adaptive bool    // halve on throttling, recover on success (AIMD)
	Goodput  bool    // adaptive with the measured-goodput controller instead of AIMD
}

// BucketSnapshot is a bucket's state at a time.
type BucketSnapshot struct {
	Rate    float64       // current rate
	Ceiling float64       // configured rate
	Tokens  float64       // balance (negative: callers queued)
	Paused  time.Duration // time left in a pause
}

// A Bucket is a token bucket with an optional adaptive rate. Its methods
// are safe for concurrent use.
type Bucket interface {
	// Reserve takes a token and returns how long to wait before using it.
	Reserve(now int64) (wait int64)
	// TryReserve takes a token only if it can be used at once.
	TryReserve(now int64) bool
	// Cancel gives back a reserved token that will not be used.
	Cancel(now int64)
	// Throttle records a throttling answer: an adaptive bucket decreases
	// its rate (once per congestion event) and drains its burst; a
	// positive pause holds every caller for that long.
	Throttle(now, pause int64) (rate float64, decreased bool)
	// Pause holds every caller for pause without touching the rate.
	Pause(now, pause int64)
	// Success records a success: an adaptive bucket below its ceiling
	// recovers additively.
	Success(now int64) (rate float64, increased bool)
	// Recovering reports whether Success has anything to do, so that the
	// call path can skip reading the clock after a call.
	Recovering() bool
	Snapshot(now int64) BucketSnapshot
	// Idle reports whether the bucket holds nothing learned and has been
	// unused for minIdle: dropping it and making a new one later changes
	// nothing.
	Idle(now, minIdle int64) bool
}

// BreakerSpec describes a circuit breaker.
type BreakerSpec struct {
	Threshold   int           // consecutive failures that open it
	Cooldown    time.Duration // base open time
	MaxCooldown time.Duration // the cooldown doubles on a failed probe up to this
}

// BreakerSnapshot is a breaker's state at a time.
type BreakerSnapshot struct {
	State    string // closed, open or half_open
	Failures int
	Cooldown time.Duration // current cooldown
	Wait     time.Duration // open: until a probe may go; half-open: left in the probe's lease
}

// A Breaker is a circuit breaker: closed, open, half-open with one probe
// holding a lease of one cooldown. Its methods are safe for concurrent use.
type Breaker interface {
	// Allow reports whether a call may be sent; when not, how long until a
	// probe may go. probe is true for the caller a half-open breaker lets
	// through as its one probe.
	Allow(now int64) (wait int64, ok, probe bool)
	// AllowProbe lets the probe send its retries: true while the breaker is
	// half-open or closed, false (with the wait) once it is open.
	AllowProbe(now int64) (wait int64, ok bool)
	// Success resets the failure count and closes a half-open breaker; it
	// reports whether it closed it.
	Success() (closed bool)
	// Failure counts a failed call; it reports whether the breaker opened.
	Failure(now int64) (opened bool)
	Snapshot(now int64) BreakerSnapshot
	// Pristine reports whether the breaker is closed with no failures.
	Pristine() bool
}

// A Budget is a provider's retry budget. Its methods are safe for
// concurrent use.
type Budget interface {
	// Take spends one retry token; false when the budget cannot pay.
	Take() bool
	// Succeed refunds a tenth of a token, up to the budget's size.
	Succeed()
	Remaining() float64
}

// A StateStore makes the state objects of a governor. key is the scope
// the state belongs to: the leaf scope for leaf buckets and breakers, the
// account scope (AccountScope) for account buckets, the provider alone for
// provider buckets. A store must be safe for concurrent use.
type StateStore interface {
	Bucket(key Scope, spec BucketSpec, now int64) Bucket
	Breaker(key Scope, spec BreakerSpec) Breaker
	Budget(provider string, size int) Budget
}

// WithStateStore makes the governor keep its learned state in s (fleet
// mode's Redis store, for one). The default keeps it in the process.
func WithStateStore(s StateStore) Option {
	return optionFunc(func(g *Governor) {
		if s != nil {
			g.store = s
		}
	})
}

// MemoryStore returns the store that keeps state in the process: the
// default, and the local fallback of a shared store.
func MemoryStore() StateStore { return memoryStore{} }

// memoryStore keeps everything in this process.
type memoryStore struct{}

func (memoryStore) Bucket(_ Scope, s BucketSpec, now int64) Bucket {
	return memBucket{bucket.New(bucket.Spec(s), now)}
}

func (memoryStore) Breaker(_ Scope, s BreakerSpec) Breaker {
	return memBreaker{breaker.New(breaker.Spec{Threshold: s.Threshold, Cooldown: int64(s.Cooldown), MaxCooldown: int64(s.MaxCooldown)})}
}

func (memoryStore) Budget(_ string, size int) Budget { return budget.New(size) }

// memBucket adapts the internal bucket to Bucket.
type memBucket struct{ *bucket.Bucket }

func (b memBucket) Snapshot(now int64) BucketSnapshot {
	s := b.Bucket.Snapshot(now)
	return BucketSnapshot{Rate: s.Rate, Ceiling: s.Ceiling, Tokens: s.Tokens, Paused: time.Duration(s.PausedNS)}
}

// memBreaker adapts the internal breaker to Breaker.
type memBreaker struct{ *breaker.Breaker }

func (b memBreaker) Snapshot(now int64) BreakerSnapshot {
	s := b.Breaker.Snapshot(now)
	return BreakerSnapshot{State: s.State.String(), Failures: s.Failures, Cooldown: time.Duration(s.Cooldown), Wait: time.Duration(s.Wait)}
}
