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
	Kind  EventKind
	Scope Scope     // the call's scope (for scope events, the leaf's)
	Time  time.Time // on the governor's clock
	// Context is the call's context (for a span to add the event to); nil
	// for events of no call.
	Context context.Context

	Wait  time.Duration // EventWait: the wait; EventRetry: the delay before the retry
	Level string        // EventWait: "provider", "account" or "leaf", the slowest bucket
	Retry int           // EventRetry: 1 for the first retry of the call

	Err     error         // EventThrottle, EventGaveUp, EventBudgetExhausted: the provider's answer
	Hint    time.Duration // EventThrottle: the provider's hint (HasHint)
	HasHint bool
	Reason  string // EventGaveUp: "retries", "deadline", "breaker" or "sdk"

	Rate, OldRate, Ceiling float64   // EventRateChange, in requests per second
	Until                  time.Time // EventPause: the end of the pause
	From, To               state.BreakerState
}

type observerOption struct{ o Observer }

func (observerOption) option() {}

// WithObserver makes the governor send every event to o. Without an
// observer the events cost nothing.
func WithObserver(o Observer) Option { return observerOption{o} }

// emit sends ev to the observer and the logger, if any. It runs outside
// every lock of the governor.
func (gd *Guard) emit(ev Event) {
	g := gd.g
	ev.Scope = gd.scope
	ev.Context = gd.ctx
	ev.Time = g.epoch.Add(g.now())
	if g.logger != nil {
		g.log(ev)
	}
	if g.observer != nil {
		g.observe(ev)
	}
}

// observe calls the observer, recovering a panic.
func (g *Governor) observe(ev Event) {
	defer func() {
		if r := recover(); r != nil && g.observerPanicked.CompareAndSwap(false, true) {
			g.logTo(slog.LevelError).LogAttrs(context.Background(), slog.LevelError,
				"cloudg: the observer panicked; the call went on (logged once)",
				slog.String("event", ev.Kind.String()), slog.Any("panic", r))
		}
	}()
	g.observer.Observe(ev)
}

// logTo returns the governor's logger, or slog's default one.
func (g *Governor) logTo(slog.Level) *slog.Logger {
	if g.logger != nil {
		return g.logger
	}
	return slog.Default()
}

// log writes the events a person reading the log wants: throttles at
// Debug; pauses of a second or more, breaker changes and budget
// exhaustion at Info; give-ups at Warn. Each part of the scope is its own
// attribute.
func (g *Governor) log(ev Event) {
	var level slog.Level
	var msg string
	attrs := make([]slog.Attr, 0, 8)
	switch ev.Kind {
	case EventThrottle:
		level, msg = slog.LevelDebug, "cloudg: throttled"
		if ev.HasHint {
			attrs = append(attrs, slog.Duration("hint", ev.Hint))
		}
	case EventPause:
		if ev.Until.Sub(ev.Time) < time.Second {
			return
		}
		level, msg = slog.LevelInfo, "cloudg: scope paused"
		attrs = append(attrs, slog.Duration("for", ev.Until.Sub(ev.Time)))
	case EventBreakerChange:
		level, msg = slog.LevelInfo, "cloudg: circuit breaker "+ev.To.String()
		attrs = append(attrs, slog.String("from", ev.From.String()))
	case EventBudgetExhausted:
		level, msg = slog.LevelInfo, "cloudg: retry budget exhausted"
	case EventGaveUp:
		level, msg = slog.LevelWarn, "cloudg: call gave up"
		attrs = append(attrs, slog.String("reason", ev.Reason))
	default:
		return
	}
	if !g.logger.Enabled(context.Background(), level) {
		return
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.String("error", ev.Err.Error()))
	}
	attrs = append(attrs, scopeAttrs(ev.Scope)...)
	g.logger.LogAttrs(context.Background(), level, msg, attrs...)
}

// scopeAttrs returns a scope's parts as attributes, with the scope's
// String form as "scope".
func scopeAttrs(sc Scope) []slog.Attr {
	attrs := []slog.Attr{slog.String("scope", sc.String()), slog.String("provider", sc.Provider)}
	for _, p := range [...]struct{ k, v string }{{"account", sc.Account}, {"region", sc.Region}, {"service", sc.Service}, {"operation", sc.Operation}} {
		if p.v != "" {
			attrs = append(attrs, slog.String(p.k, p.v))
		}
	}
	return attrs
}
