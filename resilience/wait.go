package resilience

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/state"
)

// WithMaxWait returns a context under which a governed call waits at most
// d to be admitted (for its breaker's verdict, a rate token or a pause,
// the Retry-After of a retry, a concurrency slot) before each attempt it
// sends. A call that would wait longer is refused at once, before sending,
// with a *WouldWaitError (or, for an open breaker, a *CircuitOpenError)
// whose RetryAfter says when the scope can go, and that classifies as
// Throttled: a scheduler requeues the task and gives its worker to
// another scope instead of leaving it blocked. The call is recorded as
// lost (LossRefused, or LossSkipped for the breaker), not as a give-up.
// A call refused because its rate token would come too late takes none
// (in fleet mode, its process's lease keeps the token it looked at, and
// such a refusal costs no Redis operation when the lease shows the wait),
// so that calls refused one after another do not push the scope's queue
// later. A d of 0 or less admits only a call that can go at once; one longer than
// any configured time (about 36 years, math.MaxInt64 among them) is held
// to that. The bound holds through every SDK integration, whose hooks see
// the context of the SDK call.
func WithMaxWait(ctx context.Context, d time.Duration) context.Context {
	b := *bindingOf(ctx)
	b.maxWait, b.bounded, b.held = min(max(d, 0), maxDuration), true, true
	return context.WithValue(ctx, bindingKey{}, &b)
}

// Delay reports, changing nothing, how long a call to scope would wait now
// before it could be sent, and which check binds: nil when it can go at
// once; ErrCircuitOpen when its breaker is open, or half-open with its
// probe out (the wait is until the breaker lets a probe through), or when
// the scope is dead (state.ScopeSnapshot's Dead: a streak of failures
// the next call's admission opens the breaker for; the wait is the
// breaker's cooldown); ErrNoToken when a rate token of the provider,
// account or leaf bucket, or a pause of one, holds it (the wait is until
// the token is usable);
// ErrNoSlot when the account's concurrency cap is full (the wait is not
// known, and 0). The breaker binds first, then the tokens, then the slot,
// as Enter checks them. A scope the governor holds no state for can go at
// once, and so can any call of a disabled provider. A scheduler asks Delay
// to give a worker only work whose scope can go (see the package's doc on
// structuring a scan); the answer may be stale by the time the call is
// made, which then waits as any call does.
func (g *Governor) Delay(scope Scope) (time.Duration, error) {
	if scope.Provider == "" {
		return 0, nil
	}
	p := g.existing(scope.Provider)
	if p == nil || !p.set.enabled {
		return 0, nil
	}
	e, acct := p.scopes.peek(scope)
	return delay(p, e, acct, g.now(), nil, nil)
}

// delay is Delay's answer at now for a scope of p, enabled, whose entry
// is e and account acct (either nil: none yet). Its breaker and buckets
// are read where Delay needs them, unless given: breaker, when not nil,
// is e's breaker read at now, and s, when not nil, the scope's snapshot
// at now, whose buckets' parts stand for the buckets' (see Survey, which
// reads each once).
func delay(p *provider, e *scopeEntry, acct *accountEntry, now time.Duration, breaker *state.BreakerSnapshot, s *state.ScopeSnapshot) (time.Duration, error) {
	var leaf, account, global *state.BucketSnapshot
	if s != nil {
		leaf, account, global = &s.Leaf, &s.Account, &s.Provider
	}
	if e != nil {
		closed := true
		if !e.breaker.Pristine() || staleView(e.breaker, now) {
			var b state.BreakerSnapshot
			if breaker != nil {
				b = *breaker
			} else {
				b = e.breaker.Snapshot(now)
			}
			if b.State != state.Closed && b.Wait > 0 {
				return b.Wait, ErrCircuitOpen
			}
			closed = b.State == state.Closed
		}
		if closed && e.deadClosed(p.set, now) {
			// Found dead without a new answer: the next call's admission
			// opens the breaker and is refused, as Inspect's Dead says.
			return p.set.breaker.Cooldown, ErrCircuitOpen
		}
	}
	var w time.Duration
	if acct != nil {
		w = max(tokenWait(acct.global, global, now), tokenWait(acct.bucket, account, now))
	} else {
		w = tokenWait(p.scopes.global, global, now)
	}
	if e != nil {
		w = max(w, tokenWait(e.leaf, leaf, now))
	}
	if w > 0 {
		return w, ErrNoToken
	}
	if acct != nil && !acct.bulkhead.Free() {
		return 0, ErrNoSlot
	}
	return 0, nil
}

// viewedBreaker is the optional interface of a breaker whose Pristine
// reads a cached view of a state kept elsewhere (a fleet's shared
// breaker): Stale reports whether that view is too old at now for its
// Allow to trust, so that the next call asks the store, which may hold a
// breaker another process opened.
type viewedBreaker interface {
	Stale(now time.Duration) bool
}

// staleView reports whether b is a viewedBreaker whose view is stale at
// now: Delay then reads the breaker (Snapshot) instead of trusting
// Pristine, as the next call's Allow does.
func staleView(b state.Breaker, now time.Duration) bool {
	v, ok := b.(viewedBreaker)
	return ok && v.Stale(now)
}

// LedgerOf returns the Ledger ctx carries (WithLedger), or nil: for a
// scheduler that drops a task and records its loss, say.
func LedgerOf(ctx context.Context) *Ledger { return bindingOf(ctx).ledger }

// leasedBucket is the optional interface of a bucket whose process holds
// tokens its Snapshot does not show (a fleet's shared bucket: its lease
// borrowed them from the balance in the store): LeaseWait reports the wait
// of the token a caller at now would take from the lease, ok false when
// the caller would take none of it (it asks the store).
type leasedBucket interface {
	LeaseWait(now time.Duration) (wait time.Duration, ok bool)
}

// tokenWait is how long a caller arriving at now would wait for a token of
// b (nil: none), read from its snapshot (snap, when not nil: b's at now,
// read already), or from its lease when no pause holds it (leasedBucket).
// A wait past a Duration's range is the longest Duration; a negative
// pause (a Store's answer) is none.
func tokenWait(b state.Bucket, snap *state.BucketSnapshot, now time.Duration) time.Duration {
	if b == nil {
		return 0
	}
	var s state.BucketSnapshot
	if snap != nil {
		s = *snap
	} else {
		s = b.Snapshot(now)
	}
	if l, ok := b.(leasedBucket); ok && s.Paused <= 0 {
		if w, ok := l.LeaseWait(now); ok {
			return w
		}
	}
	w := max(s.Paused, 0)
	if s.Tokens < 1 && s.Rate > 0 {
		// Saturated at the longest Duration: a Store's balance and rate
		// (-Inf, or far below zero at a tiny rate) may put the token
		// past a Duration's range, where the conversion and the sum
		// wrap around to a wait that says the scope can go at once. A
		// wait that is no number (-Inf tokens at a rate of +Inf) is the
		// longest too.
		ns := (1 - s.Tokens) / s.Rate * float64(time.Second)
		if !(ns < float64(math.MaxInt64)) { // 2^63, past every Duration; NaN too
			return math.MaxInt64
		}
		if d := time.Duration(ns); d < math.MaxInt64-w {
			return w + d
		}
		return math.MaxInt64
	}
	return w
}

// An Admission is a scheduler's hold on the first governed call a task
// makes (see WithAdmission). The governor calls it from the call's
// goroutine, outside its locks (Deferred under the hold's own, which
// EndAdmission waits for), exactly once per context. A panic in
// Decided or Deferred (or a ScopedAdmission's DecidedIn) is recovered and
// logged once per governor, with the method's name: the call
// goes on as if the method had returned, and keeps or gives back its
// concurrency slot as it would have.
type Admission interface {
	// Decided reports that the first call's admission was decided: it is
	// being sent, or it ended before sending and was recorded as any call
	// is (an open breaker's skip, a deadline, a cancelled context). The
	// scheduler may give a worker the next task of the call's scope.
	Decided()
	// Deferred reports that the first call would have had to wait longer
	// than the admission allows: nothing was sent, nothing was recorded as
	// lost, and the call ends with err (a *WouldWaitError, its Deferred
	// set, which errors.Is(err, ErrDeferred) tells the task). The scheduler
	// runs the task again once its scope can go, after wait (0: unknown,
	// a concurrency slot).
	Deferred(wait time.Duration, err error)
}

// A ScopedAdmission is an Admission that is told the scope the first call
// was made to: the governor calls its DecidedIn in place of Decided (never
// both), as it calls Decided: from the call's goroutine, outside its
// locks, once per context, a panic recovered and logged (see Admission). A
// scheduler that gave the task a concurrency slot of the account of the
// scope it declared (max_concurrency) learns so that a first call made to
// another account's scope took none of the account's slots, and may give
// the slot to another task at once.
type ScopedAdmission interface {
	Admission
	// DecidedIn is Decided, for a first call made to scope.
	DecidedIn(scope Scope)
}

// An unsentAdmission is an Admission told that the first call ended
// before it was sent holding no concurrency slot of its own (an open
// breaker's skip, a deadline, a cancelled context, recorded as any call
// is): the governor calls its DecidedUnsent in place of Decided or
// DecidedIn, as it calls them (see Admission). Package pool's tasks
// implement it: a task started for a slot freed of its account gives the
// slot to the next queue of the account at once, as one whose first call
// went to another account's scope does.
type unsentAdmission interface {
	DecidedUnsent(scope Scope)
}

// admission is WithAdmission's hold, claimed by the first call.
type admission struct {
	a       Admission
	maxWait time.Duration
	claimed atomic.Bool

	// mu orders a deferral of the first call (Deferred) with the end of
	// the hold (EndAdmission): ended says the task has returned, after
	// which a refusal of the first call is a lost call, not a deferral.
	mu    sync.Mutex
	ended bool
}

// deferCall tells the scheduler (Deferred) that gd, the first call, was
// refused for a wait w longer than the admission allows, marks err
// Deferred (ErrDeferred), and ends gd,
// unless the task has returned (EndAdmission): then it reports false and
// does nothing, and the caller records the refusal as any call's. Deferred
// is called under a.mu, so that EndAdmission returns only after it: the
// scheduler hears of a deferral before the task's end, while it can still
// run the task again.
func (a *admission) deferCall(gd *Guard, w time.Duration, err *WouldWaitError) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended {
		return false
	}
	err.Deferred = true // before anyone else sees err
	gd.adm = nil
	gd.stop()
	gd.g.admissionDeferred(a.a, w, err)
	return true
}

// claim reports whether the caller is the first call of the context, and
// marks the admission taken.
func (a *admission) claim() bool { return !a.claimed.Load() && a.claimed.CompareAndSwap(false, true) }

// EndAdmission ends the hold that WithAdmission put on ctx, if no call
// under ctx has claimed it yet: the calls made under ctx from then on are
// ordinary calls, which wait as any call does and are recorded as any
// call is. A scheduler calls it when a task returns (or panics), so that
// a call the task left running in a goroutine is not refused on behalf
// of a task that will not run again. A first call that claimed the hold
// before, and that is refused for a wait longer than the admission allows
// after it, is lost: it is recorded as refused (LossRefused), as any
// call is, and the scheduler is told Decided, not Deferred. A Deferred
// already under way is finished before EndAdmission returns, so the
// scheduler must not hold anything its Deferred waits for when it calls
// EndAdmission. It changes nothing more for a ctx that carries no such
// hold, and it is safe for concurrent use.
func EndAdmission(ctx context.Context) {
	if a := bindingOf(ctx).adm; a != nil {
		a.claimed.Store(true)
		a.mu.Lock()
		a.ended = true
		a.mu.Unlock()
	}
}

// admitUngoverned decides the admission ctx carries, if its first call
// has not claimed it yet, for a call of a disabled provider: such a call
// is sent at once, ungoverned, and a scheduler holding the next task of
// its scope until the first call is decided would otherwise hold it until
// the task ends.
func (g *Governor) admitUngoverned(ctx context.Context, scope Scope) {
	if a := bindingOf(ctx).adm; a != nil && a.claim() {
		g.admissionDecided(a.a, scope, false)
	}
}

// admissionDecided calls a.Decided, or a.DecidedIn with scope, the first
// call's, for a ScopedAdmission, or, for a first call unsent that holds
// no slot, a.DecidedUnsent for an unsentAdmission, recovering a panic
// (see Admission).
func (g *Governor) admissionDecided(a Admission, scope Scope, unsent bool) {
	if ua, ok := a.(unsentAdmission); ok && unsent {
		defer g.recoverAdmission("DecidedUnsent")
		ua.DecidedUnsent(scope)
		return
	}
	if sa, ok := a.(ScopedAdmission); ok {
		defer g.recoverAdmission("DecidedIn")
		sa.DecidedIn(scope)
		return
	}
	defer g.recoverAdmission("Decided")
	a.Decided()
}

// admissionDeferred calls a.Deferred, recovering a panic (see Admission).
func (g *Governor) admissionDeferred(a Admission, wait time.Duration, err error) {
	defer g.recoverAdmission("Deferred")
	a.Deferred(wait, err)
}

// recoverAdmission recovers a panic of the Admission's method, and logs
// the governor's first.
func (g *Governor) recoverAdmission(method string) {
	if r := recover(); r != nil {
		g.logPanicOnce(&g.admissionPanicked, "cloudg: the scheduler's Admission panicked; the call went on (logged once)",
			slog.String("method", method), slog.Any("panic", r))
	}
}

// logPanicOnce logs, at Error, the first panic of a user's callback that
// once stands for (the observer's, the scheduler's), and nothing after it.
func (g *Governor) logPanicOnce(once *atomic.Bool, msg string, attrs ...slog.Attr) {
	if !once.CompareAndSwap(false, true) {
		return
	}
	l := g.logger
	if l == nil {
		l = slog.Default()
	}
	l.LogAttrs(context.Background(), slog.LevelError, msg, attrs...)
}

// WithAdmission returns a context under which the first governed call
// waits at most maxWait to be admitted (for a rate token, a pause, a
// slot, or with breaker_wait the breaker's verdict), as WithMaxWait would
// bound it, except that a call refused for it is not lost: a tells the
// scheduler to run the task again (Deferred), and nothing is recorded
// (unless the task has returned: see EndAdmission). A tells it too when
// the first call's admission was decided (Decided, or DecidedIn with the
// call's scope for a ScopedAdmission), so that it may
// dispatch the next task of the scope. Later calls under the
// context wait as any call does: a task runs again only if nothing of it
// was sent. An open breaker still refuses the first call at once (unless
// the provider waits for its breakers' verdicts), which is recorded as a
// skip: a dead scope's queue fails fast. A call of a disabled provider,
// sent at once and ungoverned, is Decided as it begins. A nil a returns a
// context under which no call claims the admission ctx carries, if any:
// the context of a task that declared no scope, submitted by a task whose
// first call is still to come, so that its calls do not take that hold.
// A scheduler ends the hold with EndAdmission when the task returns.
// Package pool is the scheduler of this module; any scheduler can be
// built on it.
func WithAdmission(ctx context.Context, a Admission, maxWait time.Duration) context.Context {
	if a == nil {
		b := bindingOf(ctx)
		if b.adm == nil {
			return ctx
		}
		nb := *b
		nb.adm, nb.held = nil, nb.bounded
		return context.WithValue(ctx, bindingKey{}, &nb)
	}
	ac := &admittedCtx{Context: ctx, b: *bindingOf(ctx)}
	ac.adm = admission{a: a, maxWait: min(max(maxWait, 0), maxDuration)}
	ac.b.adm, ac.b.held = &ac.adm, true
	return ac
}

// admittedCtx is a context carrying a binding with an admission: the
// context, the binding and the admission in one allocation (a scheduler
// makes one per task).
type admittedCtx struct {
	context.Context
	b   binding
	adm admission
}

// Value returns the binding for bindingKey, and asks the parent otherwise.
func (c *admittedCtx) Value(key any) any {
	if key == (bindingKey{}) {
		return &c.b
	}
	return c.Context.Value(key)
}
