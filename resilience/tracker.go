package resilience

import (
	"context"
	"log/slog"
	"time"

	"github.com/cloudg/cloudg/internal/bulkhead"
)

// tracker carries one logical call through the governor's steps. Call uses
// it on its stack; Guard wraps it for the SDK integrations. Each step
// records into the scope's lifetime counters and, when the context carries
// a Stats, into the run's counters too.
type tracker struct {
	g       *Governor
	ps      *providerState
	e       *entry
	scope   Scope
	stats   *Stats    // the run's stats, or nil
	run     *counters // the run's counters for the service scope, or nil
	ledger  *Ledger
	retries int                // retries made so far; the first freeRetries are free
	slot    *bulkhead.Bulkhead // the bulkhead a held slot belongs to, or nil
	probe   bool               // the call is a half-open breaker's probe
}

func (t *tracker) init(g *Governor, ps *providerState, ctx context.Context, scope Scope, now int64) {
	t.g, t.ps, t.scope = g, ps, scope
	t.e = ps.lim.lookup(scope, now)
	b := bindingOf(ctx)
	if b.stats != nil {
		t.stats = b.stats
		t.run = t.e.runCounters(b.stats)
	}
	t.ledger = b.ledger
}

// live moves the tracker to the live entry of its scope if a sweep
// reclaimed the one it holds, so that what the call learns is not lost.
// The steps that record an outcome call it; the others do not need to.
func (t *tracker) live() {
	if !t.e.dead.Load() {
		return
	}
	t.e = t.ps.lim.lookup(t.scope, t.g.now())
	if t.stats != nil {
		t.run = t.e.runCounters(t.stats)
	}
}

// end releases the slot if one is still held.
func (t *tracker) end() {
	t.release()
	t.e = nil
}

// admit checks the breaker. lastErr, if any, is the provider error of the
// attempt before this one: a retry the breaker refuses is the end of a
// call that was sent and failed, which the caller records (failed); a
// first attempt it refuses was never sent, and is counted as rejected and
// goes to the ledger as skipped.
func (t *tracker) admit(now int64, lastErr error) error {
	if lastErr != nil {
		t.live() // a retry: the call may have lasted past a sweep
	}
	var wait int64
	var ok bool
	if t.probe {
		// The probe's own retries go while the breaker waits for it.
		wait, ok = t.e.breaker.AllowProbe(now)
	} else {
		wait, ok, t.probe = t.e.breaker.Allow(now)
	}
	if ok {
		return nil
	}
	err := &CircuitOpenError{Scope: t.scope, Wait: time.Duration(wait), Err: lastErr}
	if lastErr == nil {
		t.e.life.rejected.Add(1)
		if t.run != nil {
			t.run.rejected.Add(1)
		}
		t.ledger.Skipped(t.scope, err)
	}
	return err
}

// count counts one call (an attempt, for Call; a page, for listings).
func (t *tracker) count() {
	t.e.life.calls.Add(1)
	if t.run != nil {
		t.run.calls.Add(1)
	}
}

// reserve takes a token from every bucket level, most general first, and
// returns the longest wait.
func (t *tracker) reserve(now int64) int64 {
	var w int64
	if t.e.global != nil {
		w = t.e.global.Reserve(now)
	}
	if b := t.e.acct.bucket; b != nil {
		w = max(w, b.Reserve(now))
	}
	return max(w, t.e.leaf.Reserve(now))
}

// tryReserve takes a token from every level only if all can be used now.
func (t *tracker) tryReserve(now int64) bool {
	if t.e.global != nil && !t.e.global.TryReserve(now) {
		return false
	}
	if b := t.e.acct.bucket; b != nil && !b.TryReserve(now) {
		if t.e.global != nil {
			t.e.global.Cancel(now)
		}
		return false
	}
	if !t.e.leaf.TryReserve(now) {
		if t.e.global != nil {
			t.e.global.Cancel(now)
		}
		if b := t.e.acct.bucket; b != nil {
			b.Cancel(now)
		}
		return false
	}
	return true
}

// cancel gives back the tokens of a reservation that will not be used.
func (t *tracker) cancel(now int64) {
	if t.e.global != nil {
		t.e.global.Cancel(now)
	}
	if b := t.e.acct.bucket; b != nil {
		b.Cancel(now)
	}
	t.e.leaf.Cancel(now)
}

func (t *tracker) recordWait(w int64) {
	t.e.life.recordWait(w)
	if t.run != nil {
		t.run.recordWait(w)
	}
}

// wait takes a token and sleeps until it may be used, unless that would
// pass the call's deadline: then it gives the token back, reports stopped,
// and returns lastErr, or a *DeadlineExceededError when there is none. A
// context that ends during the sleep returns its error (with lastErr).
func (t *tracker) wait(ctx context.Context, now int64, b *bounds, lastErr error) (stopped bool, err error) {
	w := t.reserve(now)
	if w <= 0 {
		return false, nil
	}
	if b = b.get(); now+w > b.limit {
		t.cancel(now)
		if lastErr != nil {
			return true, lastErr
		}
		de := &DeadlineExceededError{Scope: t.scope, Wait: time.Duration(w)}
		if b.isCtx {
			de.Err = context.DeadlineExceeded
		}
		return true, de
	}
	t.recordWait(w)
	if err := t.g.sleep(ctx, w); err != nil {
		t.cancel(t.g.now())
		return false, ctxError(err, lastErr)
	}
	return false, nil
}

// acquire takes a slot of the account's bulkhead. The entry is checked
// after the slot is taken: a sweep marks an entry dead before it looks at
// its account's slots, so either the sweep saw this slot and kept the
// account, or this call sees the entry dead and takes a slot of the live
// account instead.
func (t *tracker) acquire(ctx context.Context) error {
	for t.slot == nil {
		b := t.e.acct.bulkhead
		if err := b.Acquire(ctx); err != nil {
			return err
		}
		if !t.e.dead.Load() {
			t.slot = b
			return nil
		}
		b.Release()
		t.live()
	}
	return nil
}

func (t *tracker) tryAcquire() bool {
	for t.slot == nil {
		b := t.e.acct.bulkhead
		if !b.TryAcquire() {
			return false
		}
		if !t.e.dead.Load() {
			t.slot = b
			return true
		}
		b.Release()
		t.live()
	}
	return true
}

func (t *tracker) release() {
	if t.slot != nil {
		t.slot.Release()
		t.slot = nil
	}
}

// throttled records a throttled attempt: the leaf halves (once per
// congestion event) and pauses for the provider's hint, capped at MaxPause.
func (t *tracker) throttled(now int64, err error, hint time.Duration, hasHint bool) {
	t.live()
	t.e.life.throttled.Add(1)
	if t.run != nil {
		t.run.throttled.Add(1)
	}
	var pause int64
	if hasHint {
		pause = int64(capPause(hint))
	}
	rate, decreased := t.e.leaf.Throttle(now, pause)
	if decreased {
		t.e.life.recordRate(rate, true)
		if t.run != nil {
			t.run.recordRate(rate, true)
		}
	}
	t.recordErr(err)
}

func (t *tracker) transient(err error) {
	t.live()
	t.e.life.transient.Add(1)
	if t.run != nil {
		t.run.transient.Add(1)
	}
	t.recordErr(err)
}

func (t *tracker) recordErr(err error) {
	if err == nil {
		return
	}
	t.e.life.recordErr(err)
	if t.run != nil {
		t.run.recordErr(err)
	}
}

// payRetry decides a retry: every retry after the first freeRetries of
// the call costs a budget token. It reports false, spending nothing, when
// the budget cannot pay.
func (t *tracker) payRetry(useBudget bool) bool {
	if useBudget && t.retries >= freeRetries && !t.ps.budget.Take() {
		return false
	}
	t.retries++
	return true
}

// countRetry counts a retry in the stats, when it is sent (Call) or when
// the SDK is about to send it (Guard).
func (t *tracker) countRetry() {
	t.e.life.retries.Add(1)
	if t.run != nil {
		t.run.retries.Add(1)
	}
}

// succeeded records a success: the breaker resets, the leaf recovers, the
// budget gets its refund.
func (t *tracker) succeeded() {
	if t.e.breaker.Success() {
		t.logBreaker("closed")
	}
	t.ps.budget.Succeed()
	if !t.e.leaf.Recovering() {
		return
	}
	if rate, increased := t.e.leaf.Success(t.g.now()); increased {
		t.e.life.recordRate(rate, false)
		if t.run != nil {
			t.run.recordRate(rate, false)
		}
	}
}

// proved records a Fatal answer from the provider: the service is
// reachable, so the breaker resets as on a success.
func (t *tracker) proved() {
	t.live()
	if t.e.breaker.Success() {
		t.logBreaker("closed")
	}
}

// failed records a call that failed after its retries with a throttling or
// transient error: the breaker counts a failure, and throttling is a
// give-up (stats and ledger).
func (t *tracker) failed(now int64, kind Kind, err error) {
	t.live()
	if t.e.breaker.Failure(now) {
		t.e.life.trips.Add(1)
		if t.run != nil {
			t.run.trips.Add(1)
		}
		t.logBreaker("open")
	}
	if kind == Throttled {
		t.gaveUp(err)
	}
}

// gaveUp records a call lost to throttling, without touching the breaker
// (the retry budget, not the service, stopped it).
func (t *tracker) gaveUp(err error) {
	t.live()
	t.e.life.gaveUp.Add(1)
	if t.run != nil {
		t.run.gaveUp.Add(1)
	}
	t.recordErr(err)
	t.ledger.GaveUp(t.scope, err)
}

func (t *tracker) logBreaker(state string) {
	if t.g.logger != nil {
		t.g.logger.LogAttrs(context.Background(), slog.LevelInfo, "cloudg: circuit breaker "+state,
			slog.String("scope", t.e.key.String()))
	}
}

// ctxError is the error of a call whose context ended during a wait: the
// context's error, with the last provider error alongside when there is one.
func ctxError(ctxErr, lastErr error) error {
	if lastErr == nil {
		return ctxErr
	}
	return &abortedError{ctx: ctxErr, last: lastErr}
}

// abortedError is a context error with the provider error that was about to
// be retried; errors.Is finds the first, errors.As the second.
type abortedError struct{ ctx, last error }

func (e *abortedError) Error() string   { return e.ctx.Error() + " (last error: " + e.last.Error() + ")" }
func (e *abortedError) Unwrap() []error { return []error{e.ctx, e.last} }
