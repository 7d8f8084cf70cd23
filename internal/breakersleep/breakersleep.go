// Package breakersleep sleeps the backoff before a retry for an
// integration whose SDK would otherwise sleep it on its own (gax's retry
// loop, cloudghttp's Transport), and ends it when the scope's breaker
// opens meanwhile and would still refuse the retry when the backoff ended
// (a dead scope, found dead by the other calls' answers), as the core's
// Call and Do end theirs: the retry is then refused at once rather than
// after the rest of the backoff.
package breakersleep

import (
	"context"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// Sleep sleeps d, the backoff before the retry gd's Retry allowed, on the
// governor's clock, and reports cut when it ended it early: the breaker of
// scope (gd's) refuses the call's next attempt (resilience.Guard.AfterOpen)
// and its cooldown, or the probe's lease that holds it, lasts past the end
// of the backoff. A breaker that lets a probe through before the backoff
// ends leaves it whole (the sleep goes on, unwatched, to the end of that
// cooldown or lease, and then watches the breaker again), and so does a
// breaker
// AfterOpen does not watch (breaker_wait, fleet mode's shared breakers, a
// disabled provider). The caller then asks the guard for the retry
// (Enter, or Pace for a retry sent without Enter), which refuses it and
// records it as after a full sleep. A context that ends returns its error,
// and cut false. Sleep uses the guard only through AfterOpen, and leaves
// nothing running when it returns.
func Sleep(ctx context.Context, gov *resilience.Governor, gd *resilience.Guard, scope resilience.Scope, d time.Duration) (cut bool, err error) {
	if d <= 0 {
		return false, ctx.Err() // nothing to sleep, nor to cut short
	}
	clock := gov.Clock()
	until := clock.Now().Add(d)
	for {
		wctx, cancel := context.WithCancel(ctx)
		stop := gd.AfterOpen(cancel)
		serr := clock.Sleep(wctx, until.Sub(clock.Now()))
		opened := !stop()
		cancel()
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if serr == nil || !opened {
			return false, nil // slept it out
		}
		now := clock.Now()
		b := gov.Inspect(scope).Breaker
		wait := b.Wait
		if b.State == state.Closed || wait <= 0 {
			// The breaker lets the retry through by now after all (its
			// cooldown just ended): the rest of the backoff is slept out,
			// unwatched, rather than asking again at once.
			wait = until.Sub(now)
		} else if now.Add(wait).After(until) {
			return true, nil
		}
		if err := clock.Sleep(ctx, min(wait, until.Sub(now))); err != nil {
			return false, err
		}
		if !clock.Now().Before(until) {
			return false, nil
		}
	}
}
