package resilience

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cloudg/cloudg/state"
)

// An Observer receives the governor's events (WithObserver), by value, as
// the calls record them: what each call did, what the governor learned.
// Observe is called from the goroutine of the call, never under one of
// the governor's locks; it must be safe for concurrent use and quick, since
// the call waits for it. A panic in Observe is recovered (and logged once);
// the call goes on.
type Observer interface {
	Observe(Event)
}

// EventKind says what an Event reports.
type EventKind uint8

// The events of a call, in the order a call may meet them.
const (
	EventCall            EventKind = iota + 1 // an attempt (or a listing's page) is sent
	EventWait                                 // it waited Wait for a rate token of Level
	EventThrottle                             // the provider throttled it (Err, Hint)
	EventRateChange                           // the scope's rate moved from OldRate to Rate (of Ceiling)
	EventPause                                // the scope is paused until Until
	EventBreakerChange                        // the scope's breaker went from From to To
	EventRetry                                // retry number Retry goes after Wait
	EventGaveUp                               // the call failed after its retries (Err, Reason)
	EventRejected                             // an open breaker refused the call before it was sent
	EventBudgetExhausted                      // the provider's retry budget refused a retry
)

var eventNames = [...]string{"", "call", "wait", "throttle", "rate_change", "pause", "breaker_change", "retry", "gave_up", "rejected", "budget_exhausted"}

// String returns the kind's snake_case name: call, wait, throttle, ...
func (k EventKind) String() string {
	if int(k) < len(eventNames) && k != 0 {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// Event is one thing that happened to a call, and what it taught the
// governor. The fields that do not apply to its Kind are zero.
type Event struct {
	Kind EventKind
	// Scope is the call's scope, as given to Begin; an event about the
	// scope's state (a rate change, a pause, a breaker change) is about the
	// leaf or account the call's scope belongs to.
	Scope Scope
	Time  time.Time // on the governor's clock
	// Context is the call's context, for a span to add the event to.
	Context context.Context

	Wait time.Duration // EventWait: the wait; EventRetry: the delay before the retry
	// Level is the bucket concerned: for EventWait the slowest one,
	// "provider", "account" or "leaf"; for EventPause the one paused,
	// "account" or "leaf".
	Level string
	Retry int // EventRetry: 1 for the first retry of the call

	Err     error         // EventThrottle, EventGaveUp, EventRejected, EventBudgetExhausted: the answer or refusal
	Hint    time.Duration // EventThrottle: the provider's hint (HasHint)
	HasHint bool
	// Reason says what stopped an EventGaveUp call: "retries" (no attempts
	// left), "deadline", "breaker" (it refused the retry), "budget" (the
	// retry budget did) or "sdk" (the SDK's own loop gave up).
	Reason string

	Rate, OldRate, Ceiling float64   // EventRateChange, in requests per second
	Until                  time.Time // EventPause: the end of the pause, on the governor's clock
	From, To               state.BreakerState
}

type observerOption struct{ o Observer }

func (observerOption) option() {}

// WithObserver makes the governor send every event to o. Without an
// observer the events cost nothing.
func WithObserver(o Observer) Option { return observerOption{o} }

// emit sends ev to the observer and the logger, if any. It runs outside
// every lock of the governor. ev is a pointer so that the event, a few
// hundred bytes, is copied once, into the observer's argument.
func (gd *Guard) emit(ev *Event) {
	g := gd.g
	if g.observer == nil && !logged(ev.Kind) {
		return // only a logger, which keeps none of these: not even the clock is read
	}
	ev.Scope = gd.scope
	ev.Context = gd.ctx
	if ev.Time.IsZero() {
		// A pause comes with the time it was computed from, so that
		// Until - Time is the pause itself.
		ev.Time = g.epoch.Add(g.now())
	}
	if g.logger != nil && logged(ev.Kind) {
		g.log(ev)
	}
	if g.observer != nil {
		g.observe(ev)
	}
}

// observe calls the observer, recovering a panic.
func (g *Governor) observe(ev *Event) {
	defer func() {
		if r := recover(); r != nil && g.observerPanicked.CompareAndSwap(false, true) {
			l := g.logger
			if l == nil {
				l = slog.Default()
			}
			l.LogAttrs(context.Background(), slog.LevelError,
				"cloudg: the observer panicked; the call went on (logged once)",
				slog.String("event", ev.Kind.String()), slog.Any("panic", r))
		}
	}()
	g.observer.Observe(*ev)
}

// logged reports whether the log may show events of kind k.
func logged(k EventKind) bool {
	switch k {
	case EventThrottle, EventPause, EventBreakerChange, EventBudgetExhausted, EventGaveUp:
		return true
	}
	return false
}

// log writes the events a person reading the log wants: throttles at
// Debug; pauses of a second or more, a breaker's probe and close and
// budget exhaustion at Info; give-ups and a breaker opening at Warn. Each part of the scope is its own
// attribute, so that a log query selects an account or a service without
// parsing the scope's string form.
func (g *Governor) log(ev *Event) {
	level, msg := slog.LevelInfo, ""
	switch ev.Kind {
	case EventThrottle:
		level, msg = slog.LevelDebug, "cloudg: throttled"
	case EventPause:
		if ev.Until.Sub(ev.Time) < time.Second {
			return // the ordinary pacing of a busy scope
		}
		msg = "cloudg: scope paused"
	case EventBreakerChange:
		msg = "cloudg: circuit breaker " + ev.To.String()
		if ev.To == state.Open {
			level = slog.LevelWarn // calls are skipped until it closes
		}
	case EventBudgetExhausted:
		msg = "cloudg: retry budget exhausted"
	case EventGaveUp:
		level, msg = slog.LevelWarn, "cloudg: call gave up"
	}
	if !g.logger.Enabled(context.Background(), level) {
		return
	}
	attrs := make([]slog.Attr, 0, 10)
	switch ev.Kind {
	case EventThrottle:
		if ev.HasHint {
			attrs = append(attrs, slog.Duration("hint", ev.Hint))
		}
	case EventPause:
		attrs = append(attrs, slog.Duration("for", ev.Until.Sub(ev.Time)), slog.String("level", ev.Level))
	case EventBreakerChange:
		attrs = append(attrs, slog.String("from", ev.From.String()))
	case EventGaveUp:
		attrs = append(attrs, slog.String("reason", ev.Reason))
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.String("error", ev.Err.Error()))
	}
	attrs = append(attrs, scopeAttrs(ev.Scope)...)
	g.logger.LogAttrs(context.Background(), level, msg, attrs...)
}

// scopeAttrs returns a scope's parts as attributes, with the scope's
// String form as "scope" for reading.
func scopeAttrs(sc Scope) []slog.Attr {
	attrs := []slog.Attr{slog.String("scope", sc.String()), slog.String("provider", sc.Provider)}
	for _, p := range [...]struct{ k, v string }{{"account", sc.Account}, {"region", sc.Region}, {"service", sc.Service}, {"operation", sc.Operation}} {
		if p.v != "" {
			attrs = append(attrs, slog.String(p.k, p.v))
		}
	}
	return attrs
}
