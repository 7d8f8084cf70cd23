// Package state defines the learned state a governor keeps for its scopes
// (token buckets with their adaptive rates, circuit breakers, retry
// budgets) as small interfaces, and the Store that makes them. The
// governor of package resilience keeps its state in the process by
// default; fleet mode (module github.com/cloudg/cloudg/fleet) implements
// Store on Redis so that many processes share one state. Scope, which names
// where a call goes, is defined here too (resilience.Scope is the same
// type), so that every package below the governor shares it.
//
// Times are durations since the governor's epoch (its clock's reading when
// it was made), so that every implementation runs in real, virtual or
// scaled time alike. A shared store may keep its own time (Redis's TIME)
// and use these readings only for local caching.
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cloudg/cloudg/internal/jsonsec"
)

// Sentinels for the errors.Is checks of the governor's own errors: a call
// refused by an open circuit breaker matches ErrCircuitOpen, a retry
// refused by an empty retry budget matches ErrBudgetExhausted. A call
// stopped by its deadline matches context.DeadlineExceeded.
var (
	ErrCircuitOpen     = errors.New("circuit open")
	ErrBudgetExhausted = errors.New("retry budget exhausted")
)

// BucketSpec describes a token bucket. It is a comparable value, which
// any number of goroutines may read at once. The zero BucketSpec, with
// no rate, describes no bucket: the governor passes a Store the specs of
// its validated configuration, whose rates are positive.
type BucketSpec struct {
	Rate     float64 // the ceiling, in tokens per second; > 0
	Burst    float64 // capacity at the ceiling; <= 0 means twice the rate; never below 1
	Floor    float64 // the lowest adaptive rate; <= 0 means a tiny positive floor
	Adaptive bool    // halve on throttling, recover on success (AIMD)
	Goodput  bool    // adaptive, with the measured-goodput controller instead of AIMD
}

// Capacity returns the bucket's capacity at its ceiling: the burst, or
// twice the rate when no burst is given, and never below one token.
func (s BucketSpec) Capacity() float64 {
	c := s.Burst
	if c <= 0 {
		c = 2 * s.Rate
	}
	return math.Max(1, c)
}

// BucketSnapshot is a bucket's state at one time: a value that nothing
// updates, which any number of goroutines may read at once. The zero
// BucketSnapshot is no bucket (no rate, no tokens, no pause): a
// ScopeSnapshot's Account and Provider are zero when the scope's
// provider has no such bucket.
type BucketSnapshot struct {
	Rate    float64       `json:"rate_rps"`    // the current rate
	Ceiling float64       `json:"ceiling_rps"` // the configured rate
	Tokens  float64       `json:"tokens"`      // the balance; negative while callers queue
	Paused  time.Duration `json:"-"`           // the time left in a pause (paused_seconds)
}

// Queued returns the callers the snapshot shows waiting for the bucket's
// tokens: its balance below zero, in whole tokens (a pause keeps its
// callers queued in the balance until it ends). A balance too far below
// zero for an int counts math.MaxInt; one that is no number (NaN), none.
func (s BucketSnapshot) Queued() int {
	if !(s.Tokens < 0) { // NaN too
		return 0
	}
	q := math.Ceil(-s.Tokens - 1e-9)
	if q >= math.MaxInt { // 2^63 as a float64: past every int
		return math.MaxInt
	}
	return int(q)
}

// MarshalJSON writes Paused as paused_seconds, and a rate, a ceiling or
// a balance that is no finite number (NaN, +Inf or -Inf, as a Store of
// the user's may answer) as null, which JSON holds and no number is: the
// snapshot is still written, and a reader tells such a value from a real
// 0.
func (s BucketSnapshot) MarshalJSON() ([]byte, error) {
	type plain BucketSnapshot
	return jsonsec.Marshal(struct {
		plain
		Rate    jsonsec.Float `json:"rate_rps"`
		Ceiling jsonsec.Float `json:"ceiling_rps"`
		Tokens  jsonsec.Float `json:"tokens"`
	}{plain(s), jsonsec.Float(s.Rate), jsonsec.Float(s.Ceiling), jsonsec.Float(s.Tokens)}, "paused_seconds", s.Paused)
}

// UnmarshalJSON reads what MarshalJSON writes, Paused from
// paused_seconds, and a rate, a ceiling or a balance of null as NaN: a
// value that was no number. A null snapshot leaves s as it is, as
// encoding/json leaves any value it reads null into.
func (s *BucketSnapshot) UnmarshalJSON(b []byte) error {
	type plain BucketSnapshot
	w := struct {
		*plain
		Rate    jsonsec.Float `json:"rate_rps"`
		Ceiling jsonsec.Float `json:"ceiling_rps"`
		Tokens  jsonsec.Float `json:"tokens"`
	}{(*plain)(s), jsonsec.Float(s.Rate), jsonsec.Float(s.Ceiling), jsonsec.Float(s.Tokens)}
	if err := jsonsec.Unmarshal(b, &w, "paused_seconds", &s.Paused); err != nil {
		return err
	}
	s.Rate, s.Ceiling, s.Tokens = float64(w.Rate), float64(w.Ceiling), float64(w.Tokens)
	return nil
}

// A Bucket is a token bucket with an optional adaptive rate. Its methods
// are safe for concurrent use.
type Bucket interface {
	// Reserve takes a token and returns how long to wait before using it.
	// Reservations queue in arrival order.
	Reserve(now time.Duration) (wait time.Duration)
	// TryReserve takes a token only if it can be used at once.
	TryReserve(now time.Duration) bool
	// Cancel gives back a reserved token that will not be used.
	Cancel(now time.Duration)
	// Throttle records a throttling answer: an adaptive bucket decreases its
	// rate (once per congestion event) and drains its stored burst; a
	// positive pause holds every caller for that long.
	Throttle(now, pause time.Duration) (rate float64, decreased bool)
	// Pause holds every caller for pause without touching the rate.
	Pause(now, pause time.Duration)
	// Success records a success: an adaptive bucket below its ceiling
	// recovers additively.
	Success(now time.Duration) (rate float64, increased bool)
	// Recovering reports whether Success has anything to do, so that the
	// call path can skip reading the clock after a call.
	Recovering() bool
	// Snapshot returns the bucket's state at now.
	Snapshot(now time.Duration) BucketSnapshot
	// Idle reports whether the bucket holds nothing learned and has been
	// unused for minIdle: dropping it and making a new one later changes
	// nothing. It only reads: a bucket that holds what it must hand back
	// when it is dropped (a Dropper) does so in Drop.
	Idle(now, minIdle time.Duration) bool
}

// A Dropper is a Bucket that holds what its process alone knows of, and
// would lose if the governor let the bucket go as it is: fleet mode's
// bucket holds the tokens its process borrowed from Redis that no caller
// took (its lease), which Redis counts as taken. The governor drops the
// buckets it no longer needs (an idle scope's leaf, the bucket of an
// account none of its scopes uses any more, a forgotten provider's) and
// those it replaces with new ones (a Configure that changes a provider's
// bucket settings, a Reset), and then calls Drop, once per bucket,
// outside its locks. Drop gives back what the bucket holds without
// waiting for a shared store (it may send it in the background). The
// bucket stays usable: a call that held it as it was dropped may still
// take a token of it, which Drop must not lose either; the bucket the
// governor makes for the same key, later or (when it replaces one) before
// Drop, is another one. The governor checks for Dropper with a type
// assertion: a Bucket need not implement it. Drop may run while other
// goroutines still call the bucket's other methods, and must be safe for
// concurrent use with them.
type Dropper interface {
	// Drop tells the bucket that the governor dropped it at now.
	Drop(now time.Duration)
}

// BreakerSpec describes a circuit breaker. It is a comparable value,
// which any number of goroutines may read at once. The zero BreakerSpec
// is none the governor passes a Store (its validated configuration's
// threshold is at least 1); the in-process breaker reads a threshold
// below 1 as 1, and one above the most consecutive failures it counts
// (1<<28) as that most.
type BreakerSpec struct {
	Threshold   int           // consecutive failures that open it; at least 1
	Cooldown    time.Duration // the base open time
	MaxCooldown time.Duration // the cooldown doubles on a failed probe up to this
}

// BreakerState is a breaker's position. The zero value is Closed.
type BreakerState int32

// The positions of a breaker.
const (
	Closed   BreakerState = iota // calls flow
	HalfOpen                     // one probe call is out; the others are rejected (or wait for its verdict)
	Open                         // calls are rejected until the cooldown ends
)

// String returns closed, half_open or open; for any other value, which
// is no position, state.BreakerState(n).
func (s BreakerState) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	default:
		return fmt.Sprintf("state.BreakerState(%d)", int32(s))
	}
}

// MarshalText returns the String form, so that JSON shows the name.
func (s BreakerState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the String form back: closed, half_open or open,
// or state.BreakerState(n) for a value that is no position. Other text
// is a *BreakerStateError, and leaves s as it is.
func (s *BreakerState) UnmarshalText(b []byte) error {
	text := string(b)
	switch text {
	case "closed":
		*s = Closed
		return nil
	case "half_open":
		*s = HalfOpen
		return nil
	case "open":
		*s = Open
		return nil
	}
	if n, ok := strings.CutPrefix(text, "state.BreakerState("); ok {
		if n, ok := strings.CutSuffix(n, ")"); ok {
			if v, err := strconv.ParseInt(n, 10, 32); err == nil && strconv.FormatInt(v, 10) == n {
				*s = BreakerState(v)
				return nil
			}
		}
	}
	return &BreakerStateError{Text: text}
}

// BreakerStateError is BreakerState's error when it reads text that
// names no breaker position (a snapshot's "state" in JSON): Text is the
// text read. Nothing changes a BreakerStateError once returned: several
// goroutines may read one at once. The zero BreakerStateError is the
// error of an empty text.
type BreakerStateError struct {
	Text string
}

// Error returns state: breaker state "<text>": want closed, half_open or
// open, the text quoted as strconv.Quote quotes it.
func (e *BreakerStateError) Error() string {
	return fmt.Sprintf("state: breaker state %q: want closed, half_open or open", e.Text)
}

// BreakerSnapshot is a breaker's state at one time: a value that nothing
// updates, which any number of goroutines may read at once. The zero
// BreakerSnapshot is a closed breaker with no failures.
type BreakerSnapshot struct {
	State    BreakerState  `json:"state"`
	Failures int           `json:"failures"` // consecutive failures while closed
	Cooldown time.Duration `json:"-"`        // the current cooldown (cooldown_seconds)
	// Wait is, while open, the time until a probe may go; while half-open,
	// the time left in the probe's lease (retry_in_seconds).
	Wait time.Duration `json:"-"`
}

// MarshalJSON writes the durations as cooldown_seconds and retry_in_seconds.
func (s BreakerSnapshot) MarshalJSON() ([]byte, error) {
	type plain BreakerSnapshot
	return jsonsec.Marshal(plain(s), "cooldown_seconds", s.Cooldown, "retry_in_seconds", s.Wait)
}

// UnmarshalJSON reads what MarshalJSON writes, Cooldown and Wait from
// cooldown_seconds and retry_in_seconds. A null leaves s as it is, as
// encoding/json leaves any value it reads null into.
func (s *BreakerSnapshot) UnmarshalJSON(b []byte) error {
	type plain BreakerSnapshot
	return jsonsec.Unmarshal(b, (*plain)(s), "cooldown_seconds", &s.Cooldown, "retry_in_seconds", &s.Wait)
}

// A Breaker is a circuit breaker: closed, open, or half-open with one
// probe that holds a lease of one cooldown. Its methods are safe for
// concurrent use.
type Breaker interface {
	// Allow reports whether a call may be sent; when not, how long until a
	// probe may go. probe is true for the caller a half-open breaker lets
	// through as its one probe.
	Allow(now time.Duration) (wait time.Duration, ok, probe bool)
	// AllowProbe lets the probe send its retries: true while the breaker is
	// half-open or closed, false (with the wait) once it is open. The
	// governor asks it only while the probe's lease runs, as Snapshot told
	// it just after Allow let the probe through (half-open, Wait the lease
	// left): past the lease, Allow may have let another call through as
	// the probe, and the first probe asks Allow as any call does, so that
	// two probes never go at once. A Snapshot that tells no lease (Wait 0)
	// leaves the probe on AllowProbe until its verdict.
	AllowProbe(now time.Duration) (wait time.Duration, ok bool)
	// Success resets the failure count and closes a half-open breaker; it
	// reports whether it closed it.
	Success() (closed bool)
	// Failure counts a failed call; it reports whether the breaker opened.
	Failure(now time.Duration) (opened bool)
	// Snapshot returns the breaker's state at now.
	Snapshot(now time.Duration) BreakerSnapshot
	// Pristine reports whether the breaker is closed with no failures.
	Pristine() bool
}

// A Budget is a provider's retry budget: retries spend tokens, successes
// refund a tenth of one. Its methods are safe for concurrent use.
type Budget interface {
	// Take spends one retry token; false, spending nothing, when the budget
	// cannot pay.
	Take() bool
	// Succeed refunds a tenth of a token, up to the budget's size.
	Succeed()
	// Remaining returns the tokens left.
	Remaining() float64
}

// A Store makes the state of a governor's scopes. key names the scope the
// state belongs to (a leaf scope for leaf buckets and breakers, an account
// for account buckets, a provider for provider buckets): distinct scopes
// have distinct keys, the buckets of an account or a provider never share
// a leaf's key, and a key is the same in every process, so that a shared
// store shares state by it. A Store must be safe for concurrent use.
//
// A governor calls Bucket and Breaker while it holds the lock of its table
// of scopes, and Budget while it holds its own, so that every other call
// that makes a scope, and every read of the governor, waits for them: a
// Store's methods must return without waiting on a network, and must not
// call back into the governor that uses the store (Governor.Inspect, a
// governed call), which waits for that lock for good. The state they
// return is used outside those locks.
//
// A read of the governor calls Bucket and Breaker too, outside those
// locks: Governor.Inspect, or a Survey's, of a scope no call of this
// process has used asks the Store given to the governor
// (resilience.WithStateStore; the governor's own, in the process, is not
// asked) for the scope's leaf bucket and breaker, its account's bucket,
// and, when no call of this process has used the scope's provider, its
// provider's provider-wide bucket (global_max_rps), only to take their
// Snapshot, and then lets them go without Drop. A bucket or breaker must
// therefore hold nothing its process alone knows of until a call uses
// it, and a Store must not count on the governor keeping what it made.
type Store interface {
	Bucket(key string, spec BucketSpec, now time.Duration) Bucket
	Breaker(key string, spec BreakerSpec) Breaker
	Budget(provider string, size int) Budget
}

// ScopeSnapshot is where one scope stands: its leaf bucket, its account
// bucket (zero when the provider has none), its provider's provider-wide
// bucket (global_max_rps; zero when the provider has none), its breaker,
// its account's bulkhead and its provider's retry budget. It is a value
// that nothing updates, which any number of goroutines may read at once;
// the zero ScopeSnapshot is what Governor.Inspect of package resilience
// returns for a scope without a provider.
type ScopeSnapshot struct {
	// Scope is the leaf the scope's state is kept under: the scope with
	// its operation where the service is paced per operation, without it
	// where the service is one leaf.
	Scope   Scope          `json:"scope"`
	Leaf    BucketSnapshot `json:"leaf"`
	Account BucketSnapshot `json:"account,omitzero"`
	// Provider is the provider-wide bucket every scope of the provider
	// takes a token of (global_max_rps), shared by its accounts; zero
	// when the provider has none.
	Provider BucketSnapshot  `json:"provider,omitzero"`
	Breaker  BreakerSnapshot `json:"breaker"`
	// PausedUntil is the end of the longest pause holding the scope (its
	// leaf's, its account's or its provider's), on the governor's clock;
	// zero when none.
	PausedUntil time.Time `json:"paused_until,omitzero"`
	InFlight    int       `json:"in_flight"` // calls holding a slot of the account's bulkhead
	Waiting     int       `json:"waiting"`   // calls waiting for one
	// Queued is the calls waiting for a token of the scope's leaf,
	// account or provider bucket (a pause holds them there), as the
	// bucket's balance below zero counts them (the most of the three).
	// With a Store shared by processes, the balance is the fleet's: it
	// counts every process's callers, and may count tokens another
	// process borrowed in advance and has not handed out (see the store's
	// documentation).
	Queued int `json:"queued"`
	// Dead says how a scope every answer of which failed for the
	// provider's breaker_dead_seconds, from at least breaker_threshold
	// calls, is dead (as this process saw it, or, with a shared store
	// that keeps why its breaker opened, as the process that opened it
	// said, while the breaker is not closed): "throttled for good" (every
	// failed answer was throttling) or "down"; empty when it is not. A
	// scope found dead stays dead, through its breaker's cooldown and any
	// quiet after it (nothing answered since), until an answer shows it
	// works (with a shared store that records its successes, as fleet's
	// does, any process's answer: the probe's that closed the shared
	// breaker, or a success that reset its failures).
	Dead string `json:"dead,omitempty"`
	// OpenReason says why the breaker last opened: "throttling" or
	// "errors" (calls failed after their retries, the last with that kind
	// of answer), "throttled for good" or "down" (the scope was dead);
	// empty when it never opened in this process (with a shared store
	// that keeps it, as fleet's does: in any process that said why).
	OpenReason string `json:"open_reason,omitempty"`
	// Failing is the scope's streak of failed answers, what the rule that
	// finds a scope dead (Dead) counts: since when every answer failed,
	// and from how many distinct calls; zero when no streak is on (no
	// call failed, or an answer since proved the scope works).
	Failing     StreakSnapshot `json:"failing,omitzero"`
	MaxInFlight int            `json:"max_in_flight"` // the bulkhead's cap
	RetryBudget float64        `json:"retry_budget"`  // tokens left in the provider's budget
}

// MarshalJSON writes the snapshot as its fields' tags say, and a retry
// budget that is no finite number (NaN, +Inf or -Inf, as a Store of the
// user's may answer) as null, as BucketSnapshot writes its rates: the
// snapshot is still written, and a reader tells such a value from a
// real 0.
func (s ScopeSnapshot) MarshalJSON() ([]byte, error) {
	type plain ScopeSnapshot
	return json.Marshal(struct {
		plain
		RetryBudget jsonsec.Float `json:"retry_budget"`
	}{plain(s), jsonsec.Float(s.RetryBudget)})
}

// UnmarshalJSON reads what MarshalJSON writes, a retry budget of null as
// NaN: a value that was no number. A null snapshot leaves s as it is, as
// encoding/json leaves any value it reads null into.
func (s *ScopeSnapshot) UnmarshalJSON(b []byte) error {
	type plain ScopeSnapshot
	w := struct {
		*plain
		RetryBudget jsonsec.Float `json:"retry_budget"`
	}{(*plain)(s), jsonsec.Float(s.RetryBudget)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	s.RetryBudget = float64(w.RetryBudget)
	return nil
}

// StreakSnapshot is a scope's streak of failed answers at one time, as
// the process that read it saw them: every answer since Since failed.
// With a Store shared by processes (fleet mode), the streak is this
// process's answers only, but a success of the scope that another
// process recorded in the store (as fleet's does) ends it as this
// process's own success would. It is a value that nothing updates,
// which any number of goroutines may read at once; the zero
// StreakSnapshot is no streak: every answer the process saw last (if
// any) was a success.
type StreakSnapshot struct {
	// Since is the streak's first failed answer, on the governor's
	// clock; Last is its latest.
	Since time.Time `json:"since"`
	Last  time.Time `json:"last"`
	// Calls is how many distinct calls had a failed answer in the
	// streak: a call's own retries count once.
	Calls int `json:"calls"`
	// Throttled says whether every failed answer of the streak was
	// throttling.
	Throttled bool `json:"throttled"`
	// DeadFrom is when the streak has lasted the provider's
	// breaker_dead_seconds (Since plus that), from which it makes the
	// scope dead once it counts breaker_threshold calls and its last
	// failed answer is recent (within half of breaker_dead_seconds); zero
	// when breaker_dead_seconds is 0, the rule off.
	DeadFrom time.Time `json:"dead_from,omitzero"`
	// CallsShort is how many more distinct calls must fail in the streak
	// for it to count the provider's breaker_threshold: 0 once it does.
	CallsShort int `json:"calls_short"`
}
