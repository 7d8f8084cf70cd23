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
// breaker change, a retry, a give-up, a rejection, an empty budget, a
// call lost otherwise) to o, from the call's goroutine and outside every
// lock. Without an observer the events cost nothing.
//
// An observer that also reads the governor's state (its live scopes, for
// gauges) has a method Attach(*Governor): NewGovernor calls it once the
// governor is made, before returning it, so that one value given once
// wires both (module cloudgotel's Instrument is such an observer).
func WithObserver(o observe.Observer) GovernorOption { return observerOption{o} }

// attacher is the optional interface of an observer that reads the
// governor it observes.
type attacher interface{ Attach(*Governor) }

// emit sends ev to the observer and then the logger, if any. It runs outside
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
	// The observer first: it cannot panic (observe recovers), and a log
	// handler's panic, which goes on to the caller, then takes the event
	// from no one.
	if g.observer != nil {
		g.observe(ev)
	}
	if g.logger != nil && logged(ev.Kind) {
		g.log(ev)
	}
}

// observe calls the observer, recovering a panic.
func (g *Governor) observe(ev *observe.Event) {
	defer func() {
		if r := recover(); r != nil {
			g.logPanicOnce(&g.observerPanicked, "cloudg: the observer panicked; the call went on (logged once)",
				slog.String("event", ev.Kind.String()), slog.Any("panic", r))
		}
	}()
	g.observer.Observe(*ev)
}

// logged reports whether the log may show events of kind k.
func logged(k observe.Kind) bool {
	switch k {
	case observe.Throttle, observe.Pause, observe.BreakerChange, observe.BudgetExhausted,
		observe.GaveUp, observe.Rejected, observe.Lost:
		return true
	}
	return false
}

// defaultLogEvery is how often, at most, the log says again that one
// scope is throttled or losing calls (WithLogInterval).
const defaultLogEvery = 10 * time.Second

// minLoggedPause is the shortest pause logged: shorter ones are the
// ordinary pacing of a busy scope.
const minLoggedPause = time.Second

// log writes the events a person reading the log wants (see WithLogger).
// Each part of the scope is its own attribute, so that a log query
// selects an account or a service without parsing the scope's string
// form. What repeats is rate-limited per scope: a throttled scope, and
// each way a scope loses calls, gets a line at its first event and then at
// most one per interval, with the events counted since its last line; a
// pause gets a line when it holds the scope a second or more past what
// the log already said.
func (g *Governor) log(ev *observe.Event) {
	ctx := context.Background()
	now := ev.Time.Sub(g.epoch)
	g.logDue(ctx, now)
	switch ev.Kind {
	case observe.Throttle:
		if g.logger.Enabled(ctx, slog.LevelDebug) {
			attrs := make([]slog.Attr, 0, 10)
			if ev.HasHint {
				attrs = append(attrs, slog.Duration("hint", ev.Hint))
			}
			g.logEvent(ctx, slog.LevelDebug, "cloudg: throttled", ev, attrs)
		}
		g.logRepeated(ctx, ev, now)
	case observe.Pause:
		d := ev.Until.Sub(ev.Time)
		if d < minLoggedPause || !g.logger.Enabled(ctx, slog.LevelInfo) || !g.logs.extends(ev, now, d, g.logEvery) {
			return
		}
		g.logEvent(ctx, slog.LevelInfo, "cloudg: scope paused", ev,
			[]slog.Attr{slog.Duration("for", d), slog.String("bucket", ev.Level), slog.Time("until", ev.Until)})
	case observe.BreakerChange:
		level := slog.LevelInfo
		attrs := []slog.Attr{slog.String("from", ev.From.String())}
		if ev.To == state.Open {
			level = slog.LevelWarn // calls are skipped until it closes
			attrs = append(attrs, slog.String("reason", ev.Reason))
		}
		g.logEvent(ctx, level, "cloudg: circuit breaker "+ev.To.String(), ev, attrs)
	case observe.BudgetExhausted, observe.GaveUp, observe.Rejected, observe.Lost:
		g.logRepeated(ctx, ev, now)
	}
}

// logEvent writes one line for ev at level: msg, attrs, the error, and
// the scope's parts.
func (g *Governor) logEvent(ctx context.Context, level slog.Level, msg string, ev *observe.Event, attrs []slog.Attr) {
	if !g.logger.Enabled(ctx, level) {
		return
	}
	if ev.Err != nil {
		attrs = append(attrs, slog.String("error", errorText(ev.Err)))
	}
	g.logger.LogAttrs(ctx, level, msg, append(attrs, scopeAttrs(ev.Scope)...)...)
}

// repeated is how the log words an event that repeats: its message, its
// level, and the name of its count.
type repeated struct {
	msg   string
	level slog.Level
	count string
}

// repeatedOf returns how the log words ev, and the key its lines are
// rate-limited by: the scope and what happened (a provider's retry budget
// is the provider's).
func repeatedOf(ev *observe.Event) (repeated, logKey) {
	k := logKey{scope: ev.Scope, kind: ev.Kind}
	switch ev.Kind {
	case observe.Throttle:
		return repeated{"cloudg: scope throttled", slog.LevelInfo, "throttles"}, k
	case observe.BudgetExhausted:
		k.scope = Scope{Provider: ev.Scope.Provider}
		return repeated{"cloudg: retry budget exhausted", slog.LevelInfo, "retries"}, k
	case observe.GaveUp:
		return repeated{"cloudg: call gave up", slog.LevelWarn, "calls"}, k
	case observe.Rejected:
		return repeated{"cloudg: call skipped", slog.LevelWarn, "calls"}, k
	default: // observe.Lost
		k.loss = ev.Loss
		return repeated{"cloudg: call lost", slog.LevelWarn, "calls"}, k
	}
}

// logRepeated counts ev, and writes its line when its scope has had none
// for the interval: the events counted since the last one, and over how
// long they came.
func (g *Governor) logRepeated(ctx context.Context, ev *observe.Event, now time.Duration) {
	r, k := repeatedOf(ev)
	if !g.logger.Enabled(ctx, r.level) {
		return
	}
	n, over, ok := g.logs.note(k, now, ev, g.logEvery)
	if !ok {
		return
	}
	attrs := eventAttrs(ev.Kind, ev.Loss, ev.Reason, ev.HasHint, ev.Hint)
	attrs = append(attrs, slog.Int64(r.count, n))
	if over > 0 {
		attrs = append(attrs, slog.Duration("over", over.Round(time.Millisecond)))
	}
	g.logEvent(ctx, r.level, r.msg, ev, attrs)
}

// eventAttrs are the attributes of a repeated event's kind, with room
// for the count, the time it covers, the error and the scope's parts.
func eventAttrs(kind observe.Kind, loss, reason string, hasHint bool, hint time.Duration) []slog.Attr {
	attrs := make([]slog.Attr, 0, 12)
	switch kind {
	case observe.Throttle:
		if hasHint {
			attrs = append(attrs, slog.Duration("hint", hint))
		}
	case observe.Lost:
		attrs = append(attrs, slog.String("loss", loss), slog.String("reason", reason))
	case observe.GaveUp:
		attrs = append(attrs, slog.String("reason", reason))
	}
	return attrs
}

// logDue writes the lines that rate limiting held back and that are due:
// the events a scope had since its last line, once the interval has
// passed, as the next logged event finds them.
func (g *Governor) logDue(ctx context.Context, now time.Duration) {
	for _, p := range g.logs.due(now, g.logEvery) {
		ev := &observe.Event{Kind: p.key.kind, Scope: p.key.scope}
		r, _ := repeatedOf(ev)
		if !g.logger.Enabled(ctx, r.level) {
			continue
		}
		attrs := eventAttrs(p.key.kind, p.key.loss, p.reason, p.hasHint, p.hint)
		attrs = append(attrs, slog.Int64(r.count, p.n))
		if p.over > 0 {
			attrs = append(attrs, slog.Duration("over", p.over.Round(time.Millisecond)))
		}
		if p.err != "" {
			attrs = append(attrs, slog.String("error", p.err))
		}
		g.logger.LogAttrs(ctx, r.level, r.msg, append(attrs, scopeAttrs(p.key.scope)...)...)
	}
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
