package resilience

import (
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/cloudg/cloudg/state"
)

// A GovernorOption configures a governor: NewGovernor takes them. WithClock,
// WithRandom, WithLogger, WithLogInterval, WithReclaimAfter, WithObserver
// and WithStateStore make them. A CallOption is a different type: one
// given to NewGovernor does not compile. Options are values, safe to
// reuse and to share between goroutines.
type GovernorOption interface{ governorOption() }

// A CallOption configures one call: Call, Do, Wrap, WrapArg,
// Governor.Begin and a Bound's Do and Begin take them. WithGovernor,
// WithPolicy and WithNestedCalls make them (Begin reads WithPolicy
// only, and a Bound's Do and Begin do not read WithGovernor).
//
// Options are values: make one once and reuse it, from any number of
// goroutines at once. Passing options to a call does not allocate.
type CallOption interface{ callOption() }

// Option is CallOption, the options of a call.
//
// Deprecated: Option was the options of both a call and a governor, and an
// option of the wrong kind was ignored; use CallOption, and GovernorOption
// for NewGovernor's, so that the wrong kind does not compile.
type Option = CallOption

type governorChoice struct{ g *Governor }
type policyOption struct{ p *RetryPolicy }
type nestingOption struct{}
type clockOption struct{ c Clock }
type randomOption struct{ src rand.Source }
type loggerOption struct{ l *slog.Logger }
type logIntervalOption struct{ d time.Duration }
type reclaimOption struct{ d time.Duration }
type storeOption struct{ s state.Store }

func (governorChoice) callOption()        {}
func (policyOption) callOption()          {}
func (nestingOption) callOption()         {}
func (clockOption) governorOption()       {}
func (randomOption) governorOption()      {}
func (loggerOption) governorOption()      {}
func (reclaimOption) governorOption()     {}
func (storeOption) governorOption()       {}
func (logIntervalOption) governorOption() {}

// WithGovernor governs the call with g instead of the process governor
// (Default).
func WithGovernor(g *Governor) CallOption { return governorChoice{g} }

// WithPolicy bounds the call's retries with p; zero fields take the
// provider's settings.
func WithPolicy(p RetryPolicy) CallOption { return policyOption{&p} }

// WithNestedCalls makes the context a call gives its function carry the
// call, so that governed calls the function makes with that context (a
// Do inside a Do, or an SDK client governed by an integration) are known
// to be nested in it: such a call takes a free slot of its account's
// bulkhead if there is one and otherwise borrows the slot its caller
// holds, rather than wait for it (one nested call at a time: calls nested
// at once, a function fanning out with the context, go one after another
// on the borrowed slot unless others are free, within the cap), and it is
// let through as the probe its caller holds when the breaker of its scope
// is half-open (see Guard.Enter). It is nested while an attempt of the
// call runs: a goroutine the function started may use the context, and a
// call it makes once that attempt is over is nested in no attempt until
// the call's next one begins (the same context leads to the call in every
// attempt); waiting for a slot, or for its breaker's verdict, meanwhile,
// it looks again as that attempt begins, and may borrow its slot, or the
// probe it holds. A nested call that borrowed the slot
// and goes on once the attempt is over keeps it: the slot goes back to
// the bulkhead when that call gives it back, not when the enclosing call
// does. Only a slot of the nested call's own account is borrowed: a call
// nested in a call of another account waits for a slot of its account as
// any call does, so two calls of two accounts at their caps, each
// running a call nested of the other's account, wait for each other
// until a deadline (or the context's end) refuses one.
//
// Without it the function is given the caller's context as it was, and a
// governed call made inside it waits for a slot as any other call does: an
// account whose bulkhead is full of calls that each wait for a call nested
// in them (with max_concurrency 1, the first) waits until the deadline,
// and without a deadline for ever. The option costs the call one
// allocation (the call's state moves to the heap), which is why it is not
// the default. Call, Do, Wrap, WrapArg and a Bound's Do take it; Begin
// ignores it (an integration using a Guard puts the Guard in the attempt's
// context itself).
func WithNestedCalls() CallOption { return nestingOption{} }

// WithClock makes the governor read time from c and sleep on it. A nil c
// is the time package.
func WithClock(c Clock) GovernorOption { return clockOption{c} }

// WithRandom makes the governor draw its backoff jitter from src, so that
// retries are reproducible in tests. src need not be safe for concurrent
// use; the governor serialises it.
func WithRandom(src rand.Source) GovernorOption { return randomOption{src} }

// WithLogger makes the governor log what a person reading the log wants to
// know, each part of the scope as its own attribute:
//
//   - at Debug, each throttled answer ("cloudg: throttled");
//   - at Info, a scope throttled ("cloudg: scope throttled", with the
//     throttles counted), a pause of a second or more ("cloudg: scope
//     paused", for how long, until when, and the bucket paused), a breaker letting a probe
//     through or closing, and an empty retry budget;
//   - at Warn, a breaker opening with its reason (throttling, errors,
//     throttled for good, down), and the calls lost: given up after
//     their retries ("cloudg: call gave up"), skipped by an open breaker
//     ("cloudg: call skipped"), and failed, refused, cancelled, errored,
//     panicked or denied ("cloudg: call lost", with loss and reason).
//
// What repeats is rate-limited: a scope's throttles, and each way it loses
// calls, make a line at their first event and then at most one per
// interval (ten seconds, WithLogInterval), which counts the events since
// the scope's last line; a pause makes a line when it holds the scope a
// second or more longer than the log already said. Without WithLogger
// the governor logs none of these. Five things it says whatever the
// logger, to this one or, without it, to slog.Default: the first Guard
// dropped without End whose slot it gave back (at Warn), the first panic
// of its observer and of a scheduler's Admission (at Error), and, once
// for each configuration NewGovernor or Configure is given, each built-in
// service's or operation's rate too slow for its provider's
// deadline_seconds, with the setting, its rate, the deadline and what to
// set (at Warn; Config.Validate accepts such a rate, which the user did
// not write, but every call that waits for its token is refused), and
// each built-in service's or operation's rate above a max_rps the user
// writes at a wider level, which it stands over, with the user's setting
// and rate, the built-in entry and its rate, and the fixes (at Warn).
func WithLogger(l *slog.Logger) GovernorOption { return loggerOption{l} }

// WithLogInterval sets how often, at most, the log of WithLogger says
// again that one scope is throttled, or losing calls one way (default ten
// seconds); a d of 0 or less keeps the default.
func WithLogInterval(d time.Duration) GovernorOption { return logIntervalOption{d} }

// WithReclaimAfter sets how long a scope must go unused, with nothing
// learned (rate at its ceiling, bucket full, breaker closed, no streak of
// failed answers since its last success that breaker_dead_seconds may
// find dead) and no call in flight, before its state is dropped (default one minute). Dropping
// such a scope changes no behaviour; it keeps a sweep over millions of
// scopes from keeping millions of buckets. A call in flight longer than
// that keeps its scope listed by Governor.Scopes until it answers.
func WithReclaimAfter(d time.Duration) GovernorOption { return reclaimOption{d} }

// WithStateStore makes the governor keep its learned state in s (fleet
// mode's Redis store, for one). The default, MemoryStore, keeps it in the
// process. A store with a method UseLogger(*slog.Logger), as fleet's has,
// is given the governor's logger (WithLogger), so that its lines and its
// client's go where the governor's go.
//
// The store is user code. A panic of its methods goes on to the caller of
// the governor's method that called it, as a panic of the log handler
// does, and a governed call it ends gives its concurrency slot back (one
// let through to send is lost as panicked). A nil bucket, breaker or budget it returns is refused where
// it is made, with a panic that names the method and the key, so that the
// governor keeps no state it cannot use. Its answers that are no finite
// number (a rate of NaN) are reported as they are, and are null in JSON;
// waits past a Duration's range saturate.
func WithStateStore(s state.Store) GovernorOption { return storeOption{s} }

// loggerUser is the optional interface of a state store that logs: it
// takes the governor's logger unless it was given one of its own.
type loggerUser interface{ UseLogger(*slog.Logger) }

// callOptions picks the call options out of opts, the process governor
// when none is chosen. A type switch rather than a method call: calling
// through the interface would move the options to the heap on every call.
func callOptions(opts []CallOption) (g *Governor, p *RetryPolicy, nest bool) {
	g, p, nest = pickOptions(opts)
	if g == nil {
		g = Default()
	}
	return g, p, nest
}

// pickOptions is callOptions without the default governor, for a Bound,
// whose governor is its own: the governor chosen (nil when none), the
// retry policy, and whether the call nests (WithNestedCalls).
func pickOptions(opts []CallOption) (g *Governor, p *RetryPolicy, nest bool) {
	for _, o := range opts {
		switch o := o.(type) {
		case governorChoice:
			g = o.g
		case policyOption:
			p = o.p
		case nestingOption:
			nest = true
		}
	}
	return g, p, nest
}
