package resilience

import (
	"context"
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
// SDK's and azcore's retry loops) asks AfterOpen to end its sleep.

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
	until := now + delay
	for {
		gd.live() // a Reset or Configure retired the breaker: watch the live one
		verdict := gd.verdictChan()
		if gd.refusedAt(now, until) {
			return true, nil
		}
		if verdict == nil {
			return false, gd.g.sleep(ctx, until-now)
		}
		d := min(until-now, backoffRecheck)
		woken, err := gd.g.sleepOr(ctx, d, verdict, nil)
		if err != nil || (!woken && d == until-now) {
			return false, err
		}
		now = gd.g.now()
	}
}

// backoffRecheck bounds how long Backoff watches a breaker before it
// looks again whether a Reset or Configure retired it: the retired one
// gives no more verdicts, and the live one's opening would be missed.
const backoffRecheck = time.Second

// refusedAt reports, asking the breaker for nothing, whether it is open
// at now and stays open past until, so that it refuses the call's next
// attempt then. A half-open breaker does not: its probe's verdict (this
// call's own, or another's) decides. A probe whose breaker opened again
// meanwhile (another call's failure) holds nothing, and is refused as
// any call.
func (gd *Guard) refusedAt(now, until time.Duration) bool {
	if (!gd.retrying() && gd.lease.holds()) || gd.e.breaker.Pristine() {
		return false
	}
	s := gd.e.breaker.Snapshot(now)
	return s.State == state.Open && now+s.Wait > until
}

// AfterOpen arranges for f to be called, in its own goroutine, once the
// breaker of the call's scope is open, and so refuses the call's next
// attempt: it opened (a dead scope, found dead by the other calls'
// answers). A half-open breaker whose probe is out in another call does
// not call f: the probe's verdict decides, and a success lets the retry
// go. It is for an integration whose SDK sleeps its own
// backoff before a retry that Retry allowed (the AWS SDK's retry loop):
// f ends that sleep, and the retry's Pace, asking the breaker first,
// refuses it and records it as a refused retry would be, at once rather
// than when the backoff ends. f is called at once when the breaker
// refuses already.
//
// Calling the returned stop stops the arrangement: it reports whether it
// stopped f from being called (false: f was called, or has been started).
// stop waits for the watch to end, so that the Guard may be used again
// once it returns; call it, on the call's goroutine, before the next Pace
// or End, and do not use the Guard between AfterOpen and stop. A
// provider that waits for its breakers' verdicts (breaker_wait) holds its
// retries at Pace until a verdict instead, and a breaker that does not
// tell of its verdicts (fleet mode's shared breakers) is asked at Pace:
// for those, and for a Guard with no call, f is never called.
func (gd *Guard) AfterOpen(f func()) (stop func() bool) {
	if gd.e != nil {
		gd.live() // a Reset or Configure since the last attempt: watch the live breaker
	}
	if gd.e == nil || gd.p.set.breakerWait || gd.verdictChan() == nil {
		return func() bool { return true }
	}
	w := &openWatch{quit: make(chan struct{}), done: make(chan struct{})}
	go w.run(gd, f)
	return w.stop
}

// openWatch is one AfterOpen's watch.
type openWatch struct {
	quit, done chan struct{}
	once       sync.Once
	called     bool // set before done is closed
}

func (w *openWatch) run(gd *Guard, f func()) {
	defer close(w.done)
	for {
		verdict := gd.verdictChan()
		if now := gd.g.now(); gd.refusedAt(now, now) {
			w.called = true
			break
		}
		select {
		case <-verdict:
		case <-w.quit:
			return
		}
	}
	f() // outside every lock; a panic in f is the caller's, as in context.AfterFunc
}

func (w *openWatch) stop() bool {
	w.once.Do(func() { close(w.quit) })
	<-w.done
	return !w.called
}
