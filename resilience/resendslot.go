package resilience

import (
	"context"
	"time"

	"github.com/cloudg/cloudg/internal/resendslot"
)

func init() {
	// The integrations' resends of an attempt that was never sent
	// (package attemptctx) are readied as readyResend has it.
	resendslot.Ready = func(ctx context.Context, guard any) error {
		return guard.(*Guard).readyResend(ctx)
	}
}

// readyResend readies the resend of the attempt in progress (Enter or
// Pace let it through, and its answer is not reported), whose request
// failed before it left the process (a credential that could not be had)
// and that an integration sends again on the attempt's admission: nothing
// was sent to the scope, so the resend takes no token of its own (but
// while its scope is paused, or once it waited for the breaker's
// verdict, below) and is not counted, nor recorded when it goes. What the wait before the resend may have changed is
// looked at again, as Enter looks at it before an attempt:
//   - a context done, or at its deadline (its timer run or not), ends the
//     call with its error, recorded as cancelled (see stopByContext);
//   - the breaker, before the resend waits and again once it waited
//     (for a pause's end, or a slot), as a retry waiting for its token
//     asks it: a call that holds the probe's lease resends as the probe,
//     and a call nested in an enclosing call's probe attempt borrows it
//     (see Enter); otherwise a breaker that would refuse a call now
//     (open, or half-open with its probe out in another call) refuses
//     the resend with a *CircuitOpenError, recording nothing (a token
//     the resend took goes back): the integration ends the call with the
//     attempt's failure. For a provider that waits for its breakers'
//     verdicts (breaker_wait), the resend waits for the verdict instead,
//     as Pace's and Admit's retry does (see admitResend), holding no
//     token, and no slot it took (one held across the wait before it is
//     kept); a resend that waited goes at the scope's rate, like a new
//     call: it takes a token, and a slot, as below. It is refused as
//     above, recording nothing, only when the verdict does not let it
//     through by the call's deadline (or within its max wait), and a
//     context that ends during that wait ends the call, recorded as
//     cancelled;
//   - a pause: a scope whose leaf or account bucket is paused (another
//     call's Retry-After, PauseAccount) sends nothing until its pause
//     ends, so the resend takes a token, which the pause holds, and goes
//     at the scope's rate once it ends, as Admit's retry does; a wait
//     that would reach the call's deadline ends the call at once with a
//     *DeadlineExceededError, and one longer than its max wait
//     (WithMaxWait, from now) with a *WouldWaitError matching ErrNoToken,
//     both recorded as refused, as Enter records a call it does not send;
//   - the slot: one held (or borrowed) across the wait and not lent to a
//     call nested in the attempt that goes on is the resend's; one lent
//     so is left to that call (Release keeps it for it), and the resend
//     takes another, as does a Guard that gave its slot back for the
//     wait, waiting for it with ctx, within the call's max wait: past
//     it, a *WouldWaitError matching ErrNoSlot, recorded as refused. A
//     slot that comes back at the context's deadline is given back, and
//     the call ends as the context's end does; one that comes back while
//     the scope is paused is held by the pause, as Admit has it (see
//     readySend).
//
// A call ended here is recorded and over: End records nothing more for
// it, and the integration reports no answer (After) before End. A
// resend on a Guard whose call's request already ended (its outcome
// recorded, or its success held for End) is refused, as Pace refuses a
// retry then: a *CallEndedError, nothing sent, taken or recorded. A
// Guard not governed (its provider disabled since Begin, or from the
// start), or with no attempt of its call yet or in progress, is ready
// as it is.
func (gd *Guard) readyResend(ctx context.Context) error {
	if gd.e == nil || gd.phase != phaseSent {
		if gd.e != nil && (gd.phase == phaseDone || gd.phase == phaseSucceeded) {
			return &CallEndedError{Scope: gd.scope, Err: gd.last.err}
		}
		return nil
	}
	gd.live()
	now := gd.g.now()
	if gd.bounded = false; gd.bind.held {
		gd.bound(now) // the max wait, from now: no scheduler's claim once sent
	}
	if err := gd.g.ctxErr(ctx, now); err != nil {
		return gd.stopByContext(err)
	}
	// A slot held and not lent out is the resend's; otherwise it takes
	// one.
	slot := (gd.slot == nil && gd.loan == nil) || gd.lends().lentOut()
	for {
		waited := false
		if gd.p.set.enabled {
			at, err := gd.admitResend(ctx, now)
			if err != nil {
				return err
			}
			if waited = at != now; waited {
				// Held until the breaker's verdict: at its deadline, or
				// with its context done, the resend is not sent.
				now = at
				if err := gd.g.ctxErr(ctx, now); err != nil {
					return gd.stopByContext(err)
				}
			}
		}
		// A resend that waited for the verdict goes at the scope's rate,
		// like a new call, and a paused scope holds it as it holds a
		// retry that takes no token of its own (see pace): it takes a
		// token.
		token := gd.p.set.enabled && (waited || gd.pausedNow(now))
		if err := gd.readySend(ctx, now, token, slot); err != nil {
			return err
		}
		// A breaker that opened while the resend waited (for a pause's
		// end, a slot) refuses it, as it refuses a retry waiting for its
		// token: the token goes back. With breaker_wait, the resend gives
		// back the slot it took too, and waits for the verdict, as above.
		at := gd.g.now()
		if at == now || !gd.p.set.enabled {
			break
		}
		wait, ok := gd.ask(at)
		if ok || gd.borrowProbe(ctx, at, nil) {
			break
		}
		gd.cancel(at, nil)
		if !gd.p.set.breakerWait {
			return gd.openError(wait)
		}
		if slot {
			gd.Release() // the slot it took: taken again after the wait
		}
		now = at
	}
	gd.held = nil // the token is used
	return nil
}

// admitResend asks the breaker whether the resend readyResend readies
// may go at now, and returns the time it may: a call that holds the
// probe's lease resends as the probe, and one nested in an enclosing
// call's probe attempt borrows it (see borrowProbe). A breaker that
// refuses it refuses it at once with a *CircuitOpenError, recording
// nothing; for a provider that waits for its breakers' verdicts
// (breaker_wait), the resend waits for the verdict first, as admit has
// a retry wait (waitAdmitted: within the call's deadline and max wait),
// and is refused so only when the verdict does not let it through by
// then. A context that ends during that wait ends the call, recorded as
// cancelled (see stopByContext).
func (gd *Guard) admitResend(ctx context.Context, now time.Duration) (time.Duration, error) {
	wait, ok := gd.ask(now)
	if ok || gd.borrowProbe(ctx, now, nil) {
		return now, nil
	}
	if !gd.p.set.breakerWait {
		return now, gd.openError(wait)
	}
	at, wait, ok, err := gd.waitAdmitted(ctx, now)
	switch {
	case err != nil:
		return at, gd.stopByContext(err)
	case !ok:
		return at, gd.openError(wait)
	}
	return at, nil
}
