package resilience

import (
	"time"

	"github.com/cloudg/cloudg/internal/hint"
)

// The decision Retry makes: attempts left, a delay within the deadline,
// and the retry budget.

// retry is Retry; with jitter set the wait is the next decorrelated-jitter
// backoff of the call's policy, drawn only when the retry gets that far.
// With spent set the caller's attempts ran out (Resend).
func (gd *Guard) retry(wait time.Duration, jitter, spent bool) (time.Duration, error) {
	switch gd.phase {
	case failed:
	case retrying:
		return 0, nil
	default:
		return 0, gd.last
	}
	l := gd.limits()
	now := gd.g.now()
	if spent || (gd.lastKind == Transient && !l.transient) || gd.retries-gd.renewed+1 >= l.attempts {
		gd.recordFailed(now, "retries")
		if gd.e == nil || !gd.p.set.breakerWait || gd.lastKind != Transient || !l.transient || now >= gd.limit {
			return 0, gd.last
		}
		// A scope that went down under the call: its failure counts
		// towards the breaker, and the next Enter waits for a verdict
		// (verdict.go).
		gd.awaiting = true
	}
	delay := wait
	if jitter && !gd.awaiting {
		delay = gd.g.backoff(gd.prevSleep, l)
	}
	if gd.hasHint && !gd.awaiting {
		delay = max(delay, hint.Cap(gd.hint))
	}
	if gd.e != nil {
		if now+delay > gd.limit {
			gd.recordFailed(now, "deadline")
			return 0, &DeadlineExceededError{Scope: gd.scope, Wait: delay, Err: gd.last}
		}
		if l.useBudget && gd.retries >= freeRetries && !gd.awaiting && !gd.p.budget.Take() {
			gd.recordBudgetExhausted()
			if !gd.p.set.breakerWait || gd.lastKind != Transient || !l.transient {
				return 0, &RetryBudgetExhaustedError{Scope: gd.scope, Err: gd.last}
			}
			// A provider that waits for verdicts: the budget ran dry on a
			// scope that is failing (an outage spends it on every call in
			// flight). The call counts its failure towards the breaker and
			// sends nothing more until a verdict, as when its attempts run
			// out; the wait sends no load, so it needs no token.
			gd.recordFailed(now, "budget")
			gd.awaiting = true
		}
	}
	gd.retries++
	gd.prevSleep = delay
	gd.retryAt, gd.backoff = now, true
	gd.phase, gd.pending = retrying, true
	gd.notBefore = 0
	if gd.lastKind == Transient && !gd.awaiting {
		// A throttled scope is paused for the hint already, and the next
		// token waits it out; a transient answer's hint holds this call.
		gd.notBefore = now + delay
	}
	return delay, nil
}

// retryFinal lets an SDK retry an answer the governor reads as final (a
// connection closed before any answer, which the SDK retries as a
// transport error): nothing is learned from it, but the retry is counted
// and paid from the budget like any other.
func (gd *Guard) retryFinal() (time.Duration, error) {
	if gd.e != nil && gd.limits().useBudget && gd.retries >= freeRetries && !gd.p.budget.Take() {
		gd.recordBudgetExhausted() // the answer was final: no give-up
		return 0, &RetryBudgetExhaustedError{Scope: gd.scope, Err: gd.last}
	}
	gd.retries++
	gd.phase, gd.pending, gd.notBefore = retrying, true, 0
	return 0, nil
}

// Resend reports whether a call whose SDK gave up after its own attempts
// may be sent again with them renewed: only for a provider that waits for
// its breakers' verdicts (breaker_wait), after a transient answer, within
// the deadline. The call's failure then counts towards the breaker, and
// the next Pace waits for a verdict, as a call of Call whose attempts run
// out does; the resend is counted as a retry when sent, and costs no
// budget, since it waits for the verdict rather than adding load. When
// Resend reports false nothing is recorded, unless the deadline passed
// (then the failure is), and End closes the call.
func (gd *Guard) Resend() bool {
	if gd.phase != failed || gd.e == nil || !gd.p.set.breakerWait || gd.lastKind != Transient {
		return false
	}
	_, err := gd.retry(0, false, true)
	return err == nil
}
