package resilience

import (
	"context"
	"errors"
	"time"
)

// Guard carries one logical call through the governor step by step. It is
// the API of the SDK integrations, whose SDK runs its own retry loop: an
// AWS middleware, an azcore policy and a gax retryer each drive the same
// governor through it, in the order their SDK's hooks fire:
//
//	gd, err := gov.Begin(ctx, scope)      // resolve the scope
//	defer gd.End()                        // release whatever is still held
//	if err := gd.Admit(); err != nil {}   // breaker: *CircuitOpenError, nothing sent
//	gd.Count()                            // one call (an attempt, a page)
//	if err := gd.Wait(ctx); err != nil {} // a token from every bucket level
//	if err := gd.Acquire(ctx); err != nil {} // a bulkhead slot
//	... send; per attempt: gd.Throttled(err) / gd.Transient(err) ...
//	if err := gd.Retry(err); err != nil {} // before the SDK retries: budget
//	gd.Release()                          // the slot, when the SDK is done
//	gd.Succeeded() / gd.Failed(err)       // the outcome of the call
//
// When the provider is disabled every step is a no-op. A Guard is used by
// one goroutine at a time (an SDK's request pipeline); its methods may be
// called in any order, and Release and End any number of times.
type Guard struct {
	t        tracker
	ctx      context.Context
	enabled  bool
	lastErr  error // the last attempt's throttling or transient error
	lastKind Kind
}

// Begin starts a logical call to scope. It fails only for a scope without
// a provider.
func (g *Governor) Begin(ctx context.Context, scope Scope) (*Guard, error) {
	if scope.Provider == "" {
		return nil, ErrNoProvider
	}
	ps := g.provider(scope.Provider)
	gd := &Guard{ctx: ctx, enabled: ps.set.enabled}
	if gd.enabled {
		gd.t.init(g, ps, ctx, scope, g.now())
	} else {
		gd.t.g, gd.t.scope = g, scope
	}
	return gd, nil
}

// Enabled reports whether the call is governed; when it is not, every
// method is a no-op.
func (gd *Guard) Enabled() bool { return gd.enabled && gd.t.e != nil }

// Scope returns the call's scope.
func (gd *Guard) Scope() Scope { return gd.t.scope }

// Admit checks the scope's breaker. When it is open it returns a
// *CircuitOpenError. Before the first attempt, the call is counted as
// rejected and recorded in the ledger as skipped (nothing was sent); before
// a retry (after Throttled or Transient), the call was sent and failed: it
// is recorded as failed with its last error, which the *CircuitOpenError
// wraps. A call admitted as a half-open breaker's probe holds the probe's
// lease, and its own retries are admitted, until its outcome is reported.
func (gd *Guard) Admit() error {
	if !gd.Enabled() {
		return nil
	}
	now := gd.t.g.now()
	err := gd.t.admit(now, gd.lastErr)
	if err != nil && gd.lastErr != nil {
		gd.t.failed(now, gd.lastKind, gd.lastErr)
	}
	return err
}

// Count counts one call in the stats: an attempt, or a page of a listing.
func (gd *Guard) Count() {
	if gd.Enabled() {
		gd.t.count()
	}
}

// Wait takes a token from every bucket level (provider, account, leaf) and
// sleeps until it may be used. A wait that would pass ctx's deadline gives
// the token back and returns a *DeadlineExceededError; a context that ends
// during the wait returns its error.
func (gd *Guard) Wait(ctx context.Context) error {
	if !gd.Enabled() {
		return nil
	}
	now := gd.t.g.now()
	// No policy deadline: the SDK's own timeouts bound the call; only the
	// context's deadline limits the wait.
	b := bounds{g: gd.t.g, ctx: ctx, start: now, resolved: true, limit: now + 1<<62}
	if cl, ok := gd.t.g.ctxLimit(ctx, now); ok {
		b.limit, b.isCtx = cl, true
	}
	_, err := gd.t.wait(ctx, now, &b, nil)
	return err
}

// Allow takes a token from every bucket level only if all can be used now,
// without waiting: the non-blocking twin of Wait.
func (gd *Guard) Allow() bool {
	if !gd.Enabled() {
		return true
	}
	return gd.t.tryReserve(gd.t.g.now())
}

// Acquire takes a slot of the provider x account bulkhead, waiting in line
// while none is free; it returns ctx's error if the context ends first. A
// guard holds at most one slot: Acquire while holding one does nothing.
func (gd *Guard) Acquire(ctx context.Context) error {
	if !gd.Enabled() {
		return nil
	}
	return gd.t.acquire(ctx)
}

// TryAcquire takes a slot only if one is free now.
func (gd *Guard) TryAcquire() bool {
	if !gd.Enabled() {
		return true
	}
	return gd.t.tryAcquire()
}

// Release gives the slot back, if one is held. It is safe to call more
// than once; the slot is released exactly once.
func (gd *Guard) Release() {
	gd.t.release()
}

// Throttled records a throttled attempt: the scope's rate halves (once per
// congestion event) and pauses for the provider's hint read from err
// (RetryAfter), capped at MaxPause.
func (gd *Guard) Throttled(err error) {
	hint, ok := RetryAfter(err)
	gd.ThrottledFor(err, hint, ok)
}

// ThrottledFor is Throttled with the hint given: an integration that read
// the response's headers itself passes what it found.
func (gd *Guard) ThrottledFor(err error, hint time.Duration, hasHint bool) {
	if gd.Enabled() {
		gd.t.throttled(gd.t.g.now(), err, hint, hasHint)
		gd.lastErr, gd.lastKind = err, Throttled
	}
}

// Transient records an attempt that failed with a transient error.
func (gd *Guard) Transient(err error) {
	if gd.Enabled() {
		gd.t.transient(err)
		gd.lastErr, gd.lastKind = err, Transient
	}
}

// Pause holds every call of the scope's leaf for d (capped at MaxPause),
// without touching its rate: a proactive pause, such as Resource Graph's
// quota reaching zero.
func (gd *Guard) Pause(d time.Duration) {
	if gd.Enabled() {
		gd.t.live()
		gd.t.e.leaf.Pause(gd.t.g.now(), int64(capPause(d)))
	}
}

// PauseAccount holds every call of the scope's account for d (capped at
// MaxPause), whatever the service; without an account bucket it pauses the
// leaf. ARM's low remaining-reads header uses it.
func (gd *Guard) PauseAccount(d time.Duration) {
	if !gd.Enabled() {
		return
	}
	gd.t.live()
	b := gd.t.e.acct.bucket
	if b == nil {
		b = gd.t.e.leaf
	}
	b.Pause(gd.t.g.now(), int64(capPause(d)))
}

// Retry accounts for a retry the SDK is about to make after err: it is
// counted, and every retry after the first two of the call costs a token
// of the provider's retry budget. When the budget is empty it returns a
// *RetryBudgetExhaustedError wrapping err, which the integration returns to
// end the SDK's loop; the call is then recorded as given up, without a
// breaker failure.
func (gd *Guard) Retry(err error) error {
	if !gd.Enabled() {
		return nil
	}
	if gd.t.payRetry(true) {
		gd.t.countRetry()
		return nil
	}
	be := &RetryBudgetExhaustedError{Scope: gd.t.scope, Err: err}
	gd.t.gaveUp(be)
	return be
}

// Retries returns the retries accounted since Begin or ResetRetries.
func (gd *Guard) Retries() int { return gd.t.retries }

// ResetRetries starts a new count of retries, whose first two are free
// again: a listing calls it when a page arrives, so that each page has its
// own free retries.
func (gd *Guard) ResetRetries() { gd.t.retries = 0 }

// Succeeded records a successful call (or attempt, where each attempt is a
// call): the breaker resets, the leaf recovers additively, the budget gets
// its refund.
func (gd *Guard) Succeeded() {
	if gd.Enabled() {
		gd.t.succeeded()
		gd.lastErr = nil
	}
}

// Failed records the final error of a call, after the SDK's retries:
//   - throttling counts toward the breaker and is a give-up (stats, ledger);
//   - a transient error counts toward the breaker;
//   - a Fatal answer from the provider proves the service reachable and
//     resets the breaker like a success;
//   - a *RetryBudgetExhaustedError from Retry was already recorded; a
//     *CircuitOpenError from Admit too; local errors, the caller's own
//     cancelled context and cloudg's deadline errors change nothing.
func (gd *Guard) Failed(err error) {
	if !gd.Enabled() || err == nil {
		return
	}
	var coe *CircuitOpenError
	var rbe *RetryBudgetExhaustedError
	var dee *DeadlineExceededError
	if errors.As(err, &coe) || errors.As(err, &rbe) || errors.As(err, &dee) {
		return
	}
	if gd.ctx != nil && gd.ctx.Err() != nil {
		return
	}
	f := inspect(err)
	kind, known := f.decide()
	if !known && mentionsThrottling(err.Error()) {
		kind = Throttled
	}
	now := gd.t.g.now()
	switch kind {
	case Fatal:
		if f.answer && !f.hasOwn {
			gd.t.proved()
		}
	default:
		gd.t.failed(now, kind, err)
	}
}

// End releases the slot if it is still held and ends the guard. It is safe
// to call more than once; the guard must not be used after it.
func (gd *Guard) End() { gd.t.end() }
