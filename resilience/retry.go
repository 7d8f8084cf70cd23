package resilience

import (
	"time"

	"github.com/cloudg/cloudg/internal/hint"
)

// The decision Retry makes: attempts left, a delay within the deadline,
// and the retry budget.

// outOfAttempts reports whether the call's policy forbids retrying the
// failed attempt: no attempts left, or a transient error under a
// ThrottlingOnly policy.
func (gd *Guard) outOfAttempts() bool {
	l := gd.limits()
	return gd.last.kind == Transient && !l.transient || int(gd.retries-gd.renewed)+1 >= l.attempts
}

// exhausted records the failure of a call whose attempts ran out (the
// breaker counts it, throttling is a give-up) and ends it, returning the
// error it ends with; or, for a provider that waits for its breakers'
// verdicts (breaker_wait), after a transient answer within the deadline,
// moves it to wait for a verdict before one more attempt and returns nil.
func (gd *Guard) exhausted(now time.Duration) error {
	l := gd.limits()
	if gd.e == nil || !gd.p.set.breakerWait || gd.last.kind != Transient || !l.transient || now >= gd.dl {
		gd.recordFailed(now, "retries")
		gd.stop()
		return gd.last.err
	}
	gd.recordBreakerFailure(now) // the call goes on: not lost
	gd.to(phaseAwaiting)
	return nil
}

// allowRetry allows the retry of the failed attempt after wait, within
// the deadline and the retry budget (see Retry), and returns its delay: a
// call awaiting a verdict neither waits for the hint nor pays the budget.
func (gd *Guard) allowRetry(now, wait time.Duration) (time.Duration, error) {
	awaiting := gd.phase == phaseAwaiting
	delay := gd.retryDelay(wait, awaiting)
	if gd.e != nil {
		l := gd.limits()
		switch gd.retryLimit(now, delay, awaiting) {
		case pastDeadline:
			gd.recordFailed(now, "deadline")
			gd.stop()
			return 0, gd.endWith(&DeadlineExceededError{Scope: gd.scope, Wait: delay, Err: gd.last.err})
		case pastMaxWait:
			// The provider asks for a longer wait than the call may make
			// (WithMaxWait): refused now, before anyone sleeps.
			return 0, gd.refuseRetry(hint.Cap(gd.last.hint))
		}
		if l.useBudget && gd.retries >= freeRetries && !awaiting && !gd.p.budget.Take() {
			if !gd.p.set.breakerWait || gd.last.kind != Transient || !l.transient {
				gd.recordBudgetExhausted()
				gd.stop()
				return 0, gd.endWith(&RetryBudgetExhaustedError{Scope: gd.scope, Err: gd.last.err})
			}
			// A provider that waits for verdicts: the budget ran dry on a
			// scope that is failing (an outage spends it on every call in
			// flight). The call counts its failure towards the breaker and
			// sends nothing more until a verdict, as when its attempts run
			// out; the wait sends no load, so it needs no token.
			opened, from := gd.failBreaker(now)
			gd.to(phaseAwaiting)
			gd.recordBudgetEvent()
			gd.reportOpened(opened, from)
			awaiting = true
		}
	}
	gd.retries++
	gd.prevSleep, gd.retryAt, gd.notBefore, gd.slept = delay, now, 0, 0
	if !awaiting {
		gd.to(phaseRetryable)
		if gd.last.kind == Transient {
			// A throttled scope is paused for the hint already, and the
			// next token waits it out; a transient answer's hint holds
			// this call.
			gd.notBefore = now + delay
		}
	}
	return delay, nil
}

// retryDelay is how long the retry of the failed attempt waits when its
// caller asks for wait: at least the provider's hint (capped), unless the
// call is awaiting a verdict, which waits for that instead. wait is held
// within 0 and maxDuration, so that the time it is added to never wraps
// and a wait past every deadline stays past it.
func (gd *Guard) retryDelay(wait time.Duration, awaiting bool) time.Duration {
	wait = min(max(wait, 0), maxDuration)
	if gd.last.hasHint && !awaiting {
		return max(wait, hint.Cap(gd.last.hint))
	}
	return wait
}

// retryStop names the limit of a call that stops a retry before the
// retry budget is asked (retryLimit); withinLimits for none.
type retryStop uint8

const (
	withinLimits retryStop = iota
	pastDeadline           // the retry would go after the call's deadline
	pastMaxWait            // the provider's hint is longer than the call's max wait
)

// retryLimit reports, recording nothing, which of the call's limits stops
// a retry that goes delay after now: its deadline, or its max wait (for a
// retry that waits out the provider's hint, which one awaiting a verdict
// does not).
func (gd *Guard) retryLimit(now, delay time.Duration, awaiting bool) retryStop {
	switch {
	case now+delay >= gd.dl: // at the deadline, the deadline is spent (see Enter)
		return pastDeadline
	case gd.bind.bounded && gd.last.hasHint && !awaiting && hint.Cap(gd.last.hint) > gd.bind.maxWait:
		return pastMaxWait
	}
	return withinLimits
}

// resendable reports, recording nothing, whether allowRetry would let the
// failed attempt of a call that is not awaiting a verdict go again at
// now: within the deadline and the max wait (retryLimit), with a budget
// token left when the retry pays one. (Another call may still take that
// token first; allowRetry then refuses as it does.)
func (gd *Guard) resendable(now time.Duration) bool {
	if gd.retryLimit(now, gd.retryDelay(0, false), false) != withinLimits {
		return false
	}
	l := gd.limits()
	return !l.useBudget || gd.retries < freeRetries || gd.p.budget.Remaining() >= 1
}

// refuseRetry ends a call whose retry would wait h, the provider's hint,
// longer than its max wait allows: a refusal wrapping the answer, recorded
// as such, with no breaker failure (the caller, not the service, stopped
// it).
func (gd *Guard) refuseRetry(h time.Duration) error {
	ww := &WouldWaitError{Scope: gd.scope, Wait: h, Err: ErrNoToken, Last: gd.last.err}
	gd.recordRefused(ww)
	gd.stop()
	return gd.endWith(ww)
}

// endWith keeps err, the refusal that stopped the call (wrapping its last
// answer, if any), as the error the call ended with, and returns it:
// Retry answers it again, and a retry readied after the stop (Pace,
// Admit, readyResend) is refused with a *CallEndedError wrapping it, so
// that errors.Is finds the refusal's sentinel and its message says why
// the call ended. It is called once the stop is recorded.
func (gd *Guard) endWith(err error) error {
	gd.last.err = err
	return err
}

// retryWithJitter is Retry for the loop of Call and Do: the wait is the
// next decorrelated-jitter backoff of the call's policy, drawn only when
// the retry gets that far. An answer After did not leave open (a fatal
// one, a stop) is not retried: the error is the answer, and a local error
// is recorded as the call's loss.
func (gd *Guard) retryWithJitter() (time.Duration, error) {
	if gd.phase != phaseFailed {
		if gd.phase == phaseFinal {
			// The call ends with the answer: lost if no provider gave it.
			if gd.last.local {
				gd.recordErrored("local")
			}
			gd.to(phaseDone)
		}
		return 0, gd.last.err
	}
	now := gd.g.now()
	if gd.outOfAttempts() {
		if err := gd.exhausted(now); err != nil {
			return 0, err
		}
	}
	var wait time.Duration
	if gd.phase != phaseAwaiting {
		wait = gd.g.backoff(gd.prevSleep, gd.limits())
	}
	return gd.allowRetry(now, wait)
}

// retryFinal lets an SDK retry an answer the governor reads as final (a
// connection closed before any answer, which the SDK retries as a
// transport error): nothing is learned from it, but the retry is counted
// and paid from the budget like any other. A retry the empty budget
// refuses ends the call with the answer: a provider's fatal answer loses
// nothing, a local error loses the call (LossErrored).
func (gd *Guard) retryFinal() (time.Duration, error) {
	if gd.e != nil && gd.limits().useBudget && gd.retries >= freeRetries && !gd.p.budget.Take() {
		// Recorded, and the call stopped, before the events go out.
		if gd.last.local {
			gd.lose(LossErrored, stoppedDesc("budget", gd.last.said()))
		}
		gd.stop()
		gd.recordBudgetEvent()
		if gd.last.local {
			gd.emitLost(LossErrored, "budget", gd.last.err)
		}
		return 0, gd.endWith(&RetryBudgetExhaustedError{Scope: gd.scope, Err: gd.last.err})
	}
	gd.retries++
	gd.prevSleep, gd.notBefore, gd.retryAt, gd.slept = 0, 0, gd.g.now(), 0 // the delay it gives, which its Retry event reports
	gd.to(phaseRetryable)
	return 0, nil
}
