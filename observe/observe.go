// Package observe is what a governor of package resilience reports as its
// calls go: one Event for each step a call takes (sent, waited, throttled,
// retried, given up, refused) and for each thing the governor learned from
// it (a rate change, a pause, a breaker change). An Observer given to
// resilience.WithObserver receives them; module cloudgotel turns them into
// OpenTelemetry metrics and span events. (Package statuspage receives
// none: it reads where each scope stands from the governor, as
// resilience.Governor.Scopes gives it.)
//
// The package has no state and no dependencies beyond package state: it is
// the vocabulary shared by the governor and whatever watches it.
package observe

import (
	"context"
	"fmt"
	"time"

	"github.com/cloudg/cloudg/state"
)

// An Observer receives a governor's events, by value, as the calls record
// them. Observe is called from the goroutine of the call, never under one
// of the governor's locks; it must be safe for concurrent use and quick,
// since the call waits for it. A panic in Observe is recovered (and logged
// once); the call goes on.
type Observer interface {
	Observe(Event)
}

// Func is an Observer that is a function: observe.Func(f) observes with f.
// It is as safe for concurrent use as f is; a nil Func panics when called,
// which the governor recovers (and logs once).
type Func func(Event)

// Observe calls f(e).
func (f Func) Observe(e Event) { f(e) }

// Kind says what an Event reports. The zero Kind is no kind; String names
// it observe.Kind(0).
type Kind uint8

// The events of a call, in the order a call may meet them.
const (
	Call            Kind = iota + 1 // a call is sent, as resilience.Counters.Calls counts it (an AWS SDK operation's retries are Retry events only)
	Wait                            // it waited Wait for a rate token of Level
	Throttle                        // the provider throttled it (Err, Hint)
	RateChange                      // the scope's rate moved from OldRate to Rate (of Ceiling)
	Pause                           // the scope is paused until Until
	BreakerChange                   // the scope's breaker went from From to To (opened for Reason)
	Retry                           // retry number Retry goes after Wait
	GaveUp                          // the call failed after its retries (Err, Reason)
	Rejected                        // an open breaker refused the call before it was sent
	BudgetExhausted                 // the provider's retry budget refused a retry
	Lost                            // the call ended lost otherwise (Loss: failed, refused, cancelled, errored, panicked or denied; Err, Reason)
)

var kindNames = [...]string{"", "call", "wait", "throttle", "rate_change", "pause", "breaker_change", "retry", "gave_up", "rejected", "budget_exhausted", "lost"}

// String returns the kind's snake_case name: call, wait, throttle, ...
func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("observe.Kind(%d)", k)
}

// Event is one thing that happened to a call, and what it taught the
// governor. The fields that do not apply to its Kind are zero. An Event is
// a value, copied to each Observe: an observer may keep it, and read it
// from any goroutine.
type Event struct {
	Kind Kind
	// Scope is the call's scope, as given to Begin; an event about the
	// scope's state (a rate change, a pause, a breaker change) is about the
	// leaf or account the call's scope belongs to.
	Scope state.Scope
	Time  time.Time // on the governor's clock
	// Context is the call's context, for a span to add the event to.
	Context context.Context

	Wait time.Duration // Wait: the wait; Retry: the delay before the retry
	// Level is the bucket concerned: for Wait the slowest one, "provider",
	// "account" or "leaf"; for Pause the one paused, "account" or "leaf".
	Level string
	Retry int // Retry: 1 for the first retry of the call

	Err     error         // Throttle, GaveUp, Rejected, BudgetExhausted, Lost: the answer or refusal
	Hint    time.Duration // Throttle: the provider's hint (HasHint)
	HasHint bool
	// Reason says what stopped a GaveUp or Lost call: "retries" (no
	// attempts left), "deadline", "breaker" (it refused the retry),
	// "budget" (the retry budget did), "sdk" (the SDK's own loop gave up,
	// or an integration's: cloudghttp's Transport does not send again a
	// request whose body it cannot rewind, nor one not idempotent after a
	// transient answer), "wait" (its wait would have passed its deadline
	// or its max wait), "context" (its context ended), "local" (a local
	// error it was not retried after), "panic" (its function panicked) or
	// "quota" (the provider denied it for a quota the governor does not
	// pace).
	// For a BreakerChange to Open it says why the breaker opened:
	// "throttling" or "errors" (calls failed after their retries, the last
	// with that kind of answer), "throttled for good" or "down" (every
	// answer of the scope failed for the provider's breaker_dead_seconds).
	Reason string
	// Loss says how a Lost call was lost: "failed" (transient errors after
	// its retries), "refused" (not sent: its wait would have passed its
	// deadline or its max wait), "cancelled" (its context ended), "errored" (a local error
	// no provider answered ended it), "panicked" (its function panicked;
	// Err is nil) or "denied" (the provider's answer, Err, denied it for
	// a quota the governor does not pace: see resilience.LossDenied). A call given up after throttling is a GaveUp event, one
	// an open breaker refused a Rejected event.
	Loss string

	Rate, OldRate, Ceiling float64   // RateChange, in requests per second
	Until                  time.Time // Pause: the end of the pause, on the governor's clock
	From, To               state.BreakerState
}
