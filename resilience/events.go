package resilience

import (
	"context"
	"log/slog"
	"time"

	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/state"
)

type observerOption struct{ o observe.Observer }

func (observerOption) governorOption() {}

// WithObserver makes the governor send every event of a call (package
// observe: an attempt sent, a wait, a throttle, a rate change, a pause, a
// breaker change, a retry, a give-up, a rejection, an empty budget) to o,
// from the call's goroutine and outside every lock. Without an
// observer the events cost nothing.
func WithObserver(o observe.Observer) GovernorOption { return observerOption{o} }

// emit sends ev to the observer and the logger, if any. It runs outside
// every lock of the governor. ev is a pointer so that the event, a few
// hundred bytes, is copied once, into the observer's argument.
func (gd *Guard) emit(ev *observe.Event) {
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
func (g *Governor) observe(ev *observe.Event) {
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
func logged(k observe.Kind) bool {
	switch k {
	case observe.Throttle, observe.Pause, observe.BreakerChange, observe.BudgetExhausted, observe.GaveUp:
		return true
	}
	return false
}

// log writes the events a person reading the log wants: throttles at
// Debug; pauses of a second or more, a breaker's probe and close and
// budget exhaustion at Info; give-ups and a breaker opening at Warn. Each part of the scope is its own
// attribute, so that a log query selects an account or a service without
// parsing the scope's string form.
func (g *Governor) log(ev *observe.Event) {
	level, msg := slog.LevelInfo, ""
	switch ev.Kind {
	case observe.Throttle:
		level, msg = slog.LevelDebug, "cloudg: throttled"
	case observe.Pause:
		if ev.Until.Sub(ev.Time) < time.Second {
			return // the ordinary pacing of a busy scope
		}
		msg = "cloudg: scope paused"
	case observe.BreakerChange:
		msg = "cloudg: circuit breaker " + ev.To.String()
		if ev.To == state.Open {
			level = slog.LevelWarn // calls are skipped until it closes
		}
	case observe.BudgetExhausted:
		msg = "cloudg: retry budget exhausted"
	case observe.GaveUp:
		level, msg = slog.LevelWarn, "cloudg: call gave up"
	}
	if !g.logger.Enabled(context.Background(), level) {
		return
	}
	attrs := make([]slog.Attr, 0, 10)
	switch ev.Kind {
	case observe.Throttle:
		if ev.HasHint {
			attrs = append(attrs, slog.Duration("hint", ev.Hint))
		}
	case observe.Pause:
		attrs = append(attrs, slog.Duration("for", ev.Until.Sub(ev.Time)), slog.String("level", ev.Level))
	case observe.BreakerChange:
		attrs = append(attrs, slog.String("from", ev.From.String()))
	case observe.GaveUp:
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
