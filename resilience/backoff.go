package resilience

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/cloudg/cloudg/state"
)

// A retry's backoff is cut short when the scope's breaker opens meanwhile
// (a dead scope, found dead by the other calls' answers): the retry would
// be refused when its backoff ended, and it is refused now instead, so
// that a task blocked in a dead scope gives its worker back at once
// rather than after the longest backoff of its calls. Call and Do, and
// the integrations that sleep their SDK's pause themselves (cloudggcp,
// cloudghttp), sleep it with Backoff; an SDK that sleeps its own (the AWS
// SDK's and azcore's retry loops) asks AfterOpen to end its sleep, by the
// same rule: only when the breaker would still refuse the retry when the
// sleep ends.

// Backoff sleeps delay, the pause before the retry Retry allowed, on the
// governor's clock, and returns early, with cut true, when the scope's
// breaker would still refuse the retry at the end of the pause: it opened
// meanwhile (or was open already), and its cooldown lasts past that end.
// A half-open breaker whose probe is out in another call does not cut
// the pause: the probe's verdict decides, and a success lets the retry
// go.
// The next Enter (or Pace, for a retry sent without Enter) then refuses
// the retry and records it as after a whole pause. A breaker that lets a
// probe through before the pause ends leaves it whole, and so does a
// provider that waits for its breakers' verdicts (breaker_wait), whose
// retries wait for them at Enter, and a breaker that does not tell of its
// verdicts (fleet mode's shared breakers), which is asked when the pause
// ends. A context that ends returns its error. Backoff is a step of the
// call, as Enter is: call it from the call's goroutine, between Retry and
// the retry's Enter or Pace.
func (gd *Guard) Backoff(ctx context.Context, delay time.Duration) (cut bool, err error) {
	if gd.e == nil || gd.p.set.breakerWait || delay <= 0 {
		return false, gd.g.sleep(ctx, delay)
	}
	now := gd.g.now()
	until := later(now, delay)
	return gd.awaitRefusal(ctx, now, until, until, nil)
}

// awaitRefusal waits, from now, until the breaker would refuse the call's
// next attempt at until (refusedAt), and reports true then. It looks again
// at each of the breaker's verdicts, so that a breaker that opens later,
// or opens again after its probe failed, is seen, and at each Reset or
// Configure, which may retire the watched breaker, and each sweep that
// reclaims the watched entry: the live one is watched then. It reports false when the clock reaches end or quit is
// closed first, and ctx's error when ctx ends. A breaker that does not
// tell of its verdicts is asked only as the wait starts, and a provider
// that waits for its breakers' verdicts (breaker_wait) is not asked at
// all: its retries wait for them at Enter.
func (gd *Guard) awaitRefusal(ctx context.Context, now, until, end time.Duration, quit <-chan struct{}) (bool, error) {
	for {
		changed := gd.followLive() // a Reset, Configure or sweep retired the breaker: watch the live one
		if gd.p.set.breakerWait {
			_, err := gd.g.sleepOr(ctx, end-now, nil, quit, nil, nil, nil)
			return false, err
		}
		verdict := gd.verdictChan()
		if gd.refusedAt(now, max(now, until)) { // past until: refused now
			return true, nil
		}
		if verdict == nil {
			_, err := gd.g.sleepOr(ctx, end-now, nil, quit, nil, nil, nil)
			return false, err
		}
		woken, err := gd.g.sleepOr(ctx, end-now, verdict, quit, changed, nil, nil)
		if err != nil || !woken {
			return false, err
		}
		select {
		case <-quit:
			return false, nil
		default:
		}
		now = gd.g.now()
	}
}

// later is now+d, or the longest duration when that overflows.
func later(now, d time.Duration) time.Duration {
	if d > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + max(d, 0)
}

// refusedAt reports, asking the breaker for nothing, whether it is open
// at now and stays open past until, so that it refuses the call's next
// attempt then: a retry (retryNext), allowed or still to be asked for, or
// a request that does not go on the call's lease. A half-open breaker
// does not: its probe's verdict (this call's own, or another's) decides.
// A probe whose breaker opened again meanwhile (another call's failure)
// holds nothing, and is refused as any call.
func (gd *Guard) refusedAt(now, until time.Duration) bool {
	if (!gd.retryNext() && gd.lease.holds() && !gd.probeLapsed(now)) || gd.e.breaker.Pristine() {
		return false
	}
	s := gd.e.breaker.Snapshot(now)
	return s.State == state.Open && later(now, s.Wait) > until // a Store's wait may be near a Duration's largest
}

// AfterOpen arranges for f to be called, in its own goroutine, once the
// breaker of the call's scope would still refuse the call's next attempt
// when delay has passed: it is open (it opened meanwhile, or was open
// already), and its cooldown lasts past the end of delay. It is for an
// integration whose SDK sleeps its own backoff, delay, before a retry
// (the AWS SDK's and azcore's retry loops): one that Retry allowed, or
// one of an answer After recorded that the integration asks Retry for
// only as the SDK sends it (an SDK that may resend or give up the answer
// itself: Enter, Pace and Admit ask Retry first). f ends that sleep, and
// the retry's Pace or Enter, asking the breaker first, refuses it and
// records it as a refused retry would be, at once rather than when the
// backoff ends. An integration that knows only a bound of the SDK's
// backoff passes the longest it may be.
//
// A breaker whose cooldown ends before delay does not call f: the retry
// goes when the backoff ends, as the breaker's probe. Nor does a
// half-open breaker whose probe is out in another call: the probe's
// verdict decides, and a success lets the retry go. The breaker is
// watched until stop, so that one that opens again (its probe failed),
// with a cooldown that outlasts the rest of delay, calls f, and so does
// one that opens once delay has passed, before the retry asks it; a Reset
// or Configure that retires the breaker, or a sweep that reclaims its
// scope's idle state, moves the watch to the live one.
// f is called at once when the breaker refuses already.
//
// Calling the returned stop stops the arrangement: it reports whether it
// stopped f from being called (false: f was called, or has been started),
// and calling it again reports the same. stop waits for the watch to end, so that the Guard may be used again
// once it returns; call it, on the call's goroutine, before the next
// Pace, Enter or End, and do not use the Guard between AfterOpen and
// stop. A provider that waits for its breakers' verdicts (breaker_wait)
// holds its retries at Pace until a verdict instead, and a breaker that
// does not tell of its verdicts (fleet mode's shared breakers) is asked
// at Pace: for those, and for a Guard of a disabled provider, which the
// governor does not govern, f is never called. A Guard whose call has no
// attempt yet (just begun, or again after End) is watched as any: its
// next attempt is its first, which an open breaker refuses, so f is
// called.
func (gd *Guard) AfterOpen(delay time.Duration, f func()) (stop func() bool) {
	if gd.e != nil {
		gd.live() // a Reset or Configure since the last attempt: watch the live breaker
	}
	if gd.e == nil || gd.p.set.breakerWait || gd.verdictChan() == nil {
		return func() bool { return true }
	}
	now := gd.g.now()
	w := &openWatch{quit: make(chan struct{}), done: make(chan struct{})}
	go w.run(gd, now, later(now, delay), f)
	return w.stop
}

// openWatch is one AfterOpen's watch.
type openWatch struct {
	quit, done chan struct{}
	once       sync.Once
	called     bool // set before done is closed
}

func (w *openWatch) run(gd *Guard, now, until time.Duration, f func()) {
	defer close(w.done)
	if refused, _ := gd.awaitRefusal(context.Background(), now, until, math.MaxInt64, w.quit); !refused {
		return
	}
	w.called = true
	f() // outside every lock; a panic in f is the caller's, as in context.AfterFunc
}

func (w *openWatch) stop() bool {
	w.once.Do(func() { close(w.quit) })
	<-w.done
	return !w.called
}
