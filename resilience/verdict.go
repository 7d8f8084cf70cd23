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
// with its attempts renewed. A verdict is a success of the scope or the
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

// allow asks the breaker whether the call may be sent now; see admit.
func (gd *Guard) allow(now time.Duration) (time.Duration, bool) {
	if gd.probe {
		// The probe's own retries go while the breaker waits for it.
		return gd.e.breaker.AllowProbe(now)
	}
	var wait time.Duration
	var ok bool
	wait, ok, gd.probe = gd.e.breaker.Allow(now)
	if gd.probe {
		gd.recordProbe() // as admit does: the breaker let this waiting call through as its probe
	}
	return wait, ok
}

// verdictChan returns the channel of the breaker's next verdict, or nil.
func (gd *Guard) verdictChan() <-chan struct{} {
	if v, ok := gd.e.breaker.(verdicts); ok {
		return v.Verdict()
	}
	return nil
}

// waitAdmitted waits, for a provider that waits for verdicts, until the
// breaker lets the call through. It returns false when the call's
// deadline does not allow the wait (the breaker would open after it, or a
// probe's verdict has not come by then): the call is then refused as
// without waiting, and *wait is the breaker's last answer. A context that
// ends during the wait returns its error.
func (gd *Guard) waitAdmitted(ctx context.Context, now, wait *time.Duration) (bool, error) {
	gd.limits()
	for {
		verdict := gd.verdictChan()
		w, ok := gd.allow(*now)
		if ok {
			return true, nil
		}
		*wait = w
		open := gd.e.breaker.Snapshot(*now).State == state.Open
		if *now >= gd.limit || open && *now+w > gd.limit {
			return false, nil
		}
		if _, err := gd.g.sleepOr(ctx, min(w, gd.limit-*now), verdict); err != nil {
			return false, err
		}
		*now = gd.g.now()
	}
}

// awaitRecovery is the wait of a call whose retries ran out on a transient
// error, which it recorded as a breaker failure: until a verdict (a
// success reset the failures, or the breaker opened: then as
// waitAdmitted), or one cooldown, within the deadline. It reports whether
// the call may try again.
func (gd *Guard) awaitRecovery(ctx context.Context, now *time.Duration) (bool, error) {
	gd.limits()
	from := *now
	for {
		verdict := gd.verdictChan()
		s := gd.e.breaker.Snapshot(*now)
		switch {
		case s.State != state.Closed:
			wait := s.Wait
			return gd.waitAdmitted(ctx, now, &wait)
		case s.Failures == 0:
			return true, nil // a success since: the scope works
		case *now >= from+s.Cooldown:
			return true, nil // no verdict for a cooldown: try again
		case *now >= gd.limit:
			return false, nil
		}
		if _, err := gd.g.sleepOr(ctx, min(from+s.Cooldown, gd.limit)-*now, verdict); err != nil {
			return false, err
		}
		*now = gd.g.now()
	}
}
