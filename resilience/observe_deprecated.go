package resilience

import "github.com/cloudg/cloudg/observe"

// The names below are the event vocabulary as package resilience exported
// it in v0.1.0, before it moved to package observe: each is the same type
// or constant under its old name, so that programs written against v0.1.0
// (and module cloudgotel v0.1.0) keep compiling.

// Event is observe.Event.
//
// Deprecated: use observe.Event.
type Event = observe.Event

// EventKind is observe.Kind.
//
// Deprecated: use observe.Kind.
type EventKind = observe.Kind

// Observer is observe.Observer.
//
// Deprecated: use observe.Observer.
type Observer = observe.Observer

// The kinds of event under their v0.1.0 names.
//
// Deprecated: use the constants of package observe: observe.Call for
// EventCall, observe.Wait for EventWait, and so on.
const (
	EventCall            = observe.Call
	EventWait            = observe.Wait
	EventThrottle        = observe.Throttle
	EventRateChange      = observe.RateChange
	EventPause           = observe.Pause
	EventBreakerChange   = observe.BreakerChange
	EventRetry           = observe.Retry
	EventGaveUp          = observe.GaveUp
	EventRejected        = observe.Rejected
	EventBudgetExhausted = observe.BudgetExhausted
)
