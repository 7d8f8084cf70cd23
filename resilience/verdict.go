package resilience

import (
	"context"
	"time"

	"github.com/cloudg/cloudg/state"
)

// Waiting for the breaker's verdict (breaker_wait: true). By default an
// open breaker fails a call at once; a provider configured to wait has its
// calls wait instead, within their deadline, while the breaker still sends
// a single probe after its cooldown: a call that finds the breaker open
// waits for the cooldown's end (and may be the probe), one that finds the
// probe out waits for its verdict, and one whose retries ran out on a
// transient error (a scope that went down under it) counts its failure
// towards the breaker and waits for a verdict too before it tries again
// with its attempts renewed. The retry of a transient answer that the
// breaker held until its verdict goes on with the call's attempts renewed
// as well: the attempts spent before it were spent against a scope the
// breaker then found failing, and a call that spent most of them as the
// scope went down would otherwise be lost to the first throttle after it
// came back. (A throttled retry held by a breaker that opened on throttles
// renews nothing: a scope throttled for good still ends its calls.) A
// verdict is a success of the scope or the
// breaker opening or closing; a call that finds the breaker closed after
// its own failure and hears of no verdict tries again after one cooldown,
// as if it had opened, so that a scope with fewer callers than the
// breaker's threshold is not waited on forever.

// verdicts is the optional interface of breakers that tell a waiting call
// of their next verdict (the in-process breaker); others are polled at the
// ends of their cooldowns and leases.
type verdicts interface {
	Verdict() <-chan struct{}
}

// verdictChan returns the channel of the breaker's next verdict, or nil.
func (gd *Guard) verdictChan() <-chan struct{} {
	if v, ok := gd.e.breaker.(verdicts); ok {
		return v.Verdict()
	}
	return nil
}

// waitAdmitted waits, for a provider that waits for verdicts, until the
// breaker lets the call through, and returns the time it did; a Configure
// that disables the provider lets the call through at once, as it lets a
// call waiting for its tokens go: its breakers no longer hold its calls. It reports
// false when the call's deadline (or its max wait) does not allow the wait (the breaker
// would open after it, or a probe's verdict has not come by then): the
// call is then refused as without waiting, and wait is the breaker's last
// answer. A breaker that refuses the call with no wait (0 or less, as a
// Store of the user's may answer) is asked again every refusedNoWait
// within the deadline. A context that ends during the wait returns its error. A probe
// out in an enclosing call's running attempt lets the call through as
// borrowProbe has it; the wait ends, and the call looks again, as the
// next attempt of an enclosing call it found between its attempts begins
// (see lender).
func (gd *Guard) waitAdmitted(ctx context.Context, now time.Duration) (at, wait time.Duration, ok bool, err error) {
	limit := gd.waitLimit()
	for {
		changed := gd.followLive() // a Reset or Configure: the live breaker decides
		if !gd.p.set.enabled {
			return now, 0, true, nil
		}
		verdict := gd.verdictChan()
		w, ok := gd.ask(now)
		if ok {
			return now, 0, true, nil
		}
		// The probe out in an enclosing call whose attempt runs is this
		// call's to borrow (see borrowProbe); one between its attempts
		// may be so as its next attempt begins: the wait ends then.
		var opened []<-chan struct{}
		if gd.borrowProbe(ctx, now, &opened) {
			return now, 0, true, nil
		}
		open := gd.e.breaker.Snapshot(now).State == state.Open
		if now >= limit || open && w > limit-now { // not now+w: a Store's wait may be near a Duration's largest
			return now, w, false, nil
		}
		d := w
		if d <= 0 {
			d = refusedNoWait
		}
		if err := gd.sleepVerdict(ctx, min(d, limit-now), verdict, changed, opened); err != nil {
			return now, w, false, err
		}
		now = gd.g.now()
	}
}

// refusedNoWait is how long waitAdmitted waits before it asks again a
// breaker that refused the call with no wait (0 or less), which says
// neither when it will let the call through nor that it will not: the
// governor's own breaker never answers so, a Store of the user's may.
// Asked again at once, the call would spin until its deadline.
const refusedNoWait = 100 * time.Millisecond

// sleepVerdict is waitAdmitted's wait: d, or until verdict, changed or
// one of opened closes (an enclosing call's next attempt began: see
// lender), or ctx ends, whose error alone it returns. The goroutines that
// watch opened end with it, on every path (see endOnAny).
func (gd *Guard) sleepVerdict(ctx context.Context, d time.Duration, verdict, changed <-chan struct{}, opened []<-chan struct{}) error {
	wctx, stop := endOnAny(ctx, opened)
	defer stop()
	if _, err := gd.g.sleepOr(wctx, d, verdict, changed, nil, nil, nil); err != nil && ctx.Err() != nil {
		return err
	}
	return nil
}

// awaitRecovery is the wait of a call whose retries ran out on a transient
// error, which it recorded as a breaker failure: until a verdict (a
// success reset the failures, or the breaker opened: then as
// waitAdmitted), or one cooldown, within the deadline, or a Configure
// that disables the provider. It returns the time it ended and whether the
// call may try again.
func (gd *Guard) awaitRecovery(ctx context.Context, now time.Duration) (at time.Duration, ok bool, err error) {
	limit := gd.waitLimit()
	from := now
	for {
		changed := gd.followLive()
		if !gd.p.set.enabled {
			return now, true, nil
		}
		verdict := gd.verdictChan()
		s := gd.e.breaker.Snapshot(now)
		switch {
		case s.State != state.Closed:
			at, _, ok, err := gd.waitAdmitted(ctx, now)
			return at, ok, err
		case s.Failures == 0:
			return now, true, nil // a success since: the scope works
		case now >= from+s.Cooldown:
			return now, true, nil // no verdict for a cooldown: try again
		case now >= limit:
			return now, false, nil
		}
		if _, err := gd.g.sleepOr(ctx, min(from+s.Cooldown, limit)-now, verdict, changed, nil, nil, nil); err != nil {
			return now, false, err
		}
		now = gd.g.now()
	}
}

// waitLimit is the latest a wait for admission may end: just before the
// deadline (a call let through at its deadline would go with it spent:
// see Enter), or the call's max wait if sooner.
func (gd *Guard) waitLimit() time.Duration {
	last := gd.deadlineAt() - 1
	if gd.bounded {
		return min(last, gd.admitBy)
	}
	return last
}

// recovered is awaitRecovery without waiting, for TryEnter: whether the
// call awaiting a verdict may try again now (a breaker no longer closed
// answers for itself when asked next), and if not, how long until one
// cooldown has passed since Retry allowed the attempt.
func (gd *Guard) recovered(now time.Duration) (time.Duration, bool) {
	s := gd.e.breaker.Snapshot(now)
	if s.State != state.Closed || s.Failures == 0 || now >= gd.retryAt+s.Cooldown {
		return 0, true
	}
	return gd.retryAt + s.Cooldown - now, false
}
