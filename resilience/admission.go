package resilience

import (
	"context"
	"time"

	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/internal/bulkhead"
)

// The steps Enter and Pace take before an attempt goes: the call's limits
// and deadline, the breaker, the rate tokens and the bulkhead slot.

// phase is where a Guard's current call stands.
type phase uint8

const (
	fresh    phase = iota // no attempt of the current call yet
	sent                  // an attempt is out: Enter passed
	failed                // the last attempt was throttled or transient; the outcome is open
	retrying              // Retry allowed a retry
	final                 // the last answer ends the call by the governor's reading (fatal, local, another call's stop); an SDK may still retry it
	closed                // the outcome is recorded (a success, a stop) or nothing is to be
)

// newCall starts the next request of the same operation after a success:
// its own deadline and free retries; the breaker already let it through.
func (gd *Guard) newCall(now time.Duration) {
	gd.phase, gd.retries, gd.renewed, gd.last = fresh, 0, 0, nil
	gd.start = now
	if gd.resolved {
		gd.setDeadline()
	}
}

// limits returns the call's retry limits, resolving them and the deadline
// on first use: the common call neither waits nor fails.
func (gd *Guard) limits() *retryLimits {
	if !gd.resolved {
		gd.resolved = true
		gd.lim = gd.rp.resolve(gd.p.set.retry)
		gd.setDeadline()
	}
	return &gd.lim
}

// setDeadline computes the current call's deadline: its start plus the
// policy's deadline, or the context's deadline if sooner.
func (gd *Guard) setDeadline() {
	gd.limit, gd.ctxBound = gd.start+gd.lim.deadline, false
	if cl, ok := gd.g.ctxLimit(gd.ctx, gd.start); ok && cl < gd.limit {
		gd.limit, gd.ctxBound = cl, true
	}
}

// admit checks the breaker at *at; see Enter. A provider that waits for
// verdicts (verdict.go) has a refused call wait, when block is set; *at is
// then the time the call was let through, at which it takes its token.
func (gd *Guard) admit(ctx context.Context, at *time.Duration, retry, block bool) error {
	now := *at
	if retry {
		gd.live() // a retry: the call may have lasted past a sweep
	}
	if gd.awaiting {
		gd.awaiting = false
		ok, err := gd.awaitRecovery(ctx, &now)
		if err != nil {
			return gd.stopByContext(err, retry)
		}
		if !ok {
			gd.phase = closed // its failure is counted already
			return gd.last
		}
		gd.renewed = gd.retries
	}
	var wait time.Duration
	var ok bool
	if gd.probe { // as allow does, in line: the common call takes this path
		wait, ok = gd.e.breaker.AllowProbe(now)
	} else {
		wait, ok, gd.probe = gd.e.breaker.Allow(now)
		if gd.probe {
			gd.recordProbe()
		}
	}
	if !ok && block && gd.p.set.breakerWait {
		var err error
		if ok, err = gd.waitAdmitted(ctx, &now, &wait); err != nil {
			return gd.stopByContext(err, retry)
		}
	}
	if ok {
		*at = now
		return nil
	}
	coe := &CircuitOpenError{Scope: gd.scope, Wait: wait}
	if retry {
		coe.Err = gd.last
		gd.recordFailed(now, "breaker")
	} else {
		gd.recordRejected(coe)
	}
	return coe
}

// stopByContext ends the call on the context's error: nothing is learned.
// Before the first attempt a passed deadline is a *DeadlineExceededError
// (that is also context.DeadlineExceeded); before a retry the error is
// the context's, joined to the last answer.
func (gd *Guard) stopByContext(err error, retry bool) error {
	gd.phase = closed
	if retry {
		return ctxError(err, gd.last)
	}
	if err != context.DeadlineExceeded {
		return err
	}
	gd.limits()
	if !gd.ctxBound {
		return err
	}
	return &DeadlineExceededError{Scope: gd.scope, Err: context.DeadlineExceeded}
}

// takeToken takes a token from every bucket level and waits until it may
// be used, unless that would pass the deadline: then it gives the token
// back and ends the call (see Enter). A leaf whose queue moves with its
// rate (a rise lets the callers already queued leave sooner) wakes the
// wait, which then goes at the reservation's new time.
func (gd *Guard) takeToken(ctx context.Context, now time.Duration, retry, block bool) error {
	w, other, leaf, level := gd.reserve(now)
	if w <= 0 {
		return nil
	}
	if !block {
		gd.cancel(now)
		return &DeadlineExceededError{Scope: gd.scope, Wait: w}
	}
	gd.limits()
	if now+w > gd.limit {
		return gd.passDeadline(now, w, retry)
	}
	q, ok := gd.e.leaf.(queueBucket)
	if !ok || leaf <= 0 {
		gd.recordWait(w, levelNames[level])
		if err := gd.g.sleep(ctx, w); err != nil {
			gd.cancel(gd.g.now())
			return gd.stopByContext(err, retry)
		}
		return nil
	}
	// The provider's and account's waits are fixed; the leaf's follows its
	// queue. The wait is recorded once it is over, as long as it was.
	start, fixed := now, now+other
	tk := q.Ticket(now + leaf)
	for {
		var moved <-chan struct{}
		tk, moved = q.Follow(tk)
		until := max(fixed, tk.At())
		if until > gd.limit {
			return gd.passDeadline(now, until-now, retry)
		}
		woken, err := gd.g.sleepOr(ctx, until-now, moved)
		now = gd.g.now()
		if err != nil {
			gd.recordWait(now-start, levelNames[level])
			gd.cancel(now)
			return gd.stopByContext(err, retry)
		}
		if !woken {
			gd.recordWait(now-start, levelNames[level])
			return nil
		}
	}
}

// passDeadline ends a call whose token wait w would pass its deadline,
// giving the tokens back (see Enter).
func (gd *Guard) passDeadline(now, w time.Duration, retry bool) error {
	gd.cancel(now)
	if retry {
		gd.recordFailed(now, "deadline")
		return gd.last
	}
	gd.phase = closed
	de := &DeadlineExceededError{Scope: gd.scope, Wait: w}
	if gd.ctxBound {
		de.Err = context.DeadlineExceeded
	}
	return de
}

// sendingRetry counts the retry Retry allowed, now that it is sent.
func (gd *Guard) sendingRetry() {
	if gd.pending {
		gd.pending = false
		gd.recordRetry()
	}
}

// reserve takes a token from every bucket level, most general first, and
// returns the longest wait, the longest of the provider's and account's,
// the leaf's, and the level that imposes the longest (levelNames).
func (gd *Guard) reserve(now time.Duration) (w, other, leaf time.Duration, level uint8) {
	e := gd.e
	if b := e.acct.global; b != nil {
		other = b.Reserve(now)
	}
	if b := e.acct.bucket; b != nil {
		if aw := b.Reserve(now); aw > other {
			other, level = aw, 1
		}
	}
	leaf = e.leaf.Reserve(now)
	if w = other; leaf > w {
		w, level = leaf, 2
	}
	return w, other, leaf, level
}

// queueBucket is a leaf bucket whose queued reservations move with its
// rate and pauses (the in-process bucket): a caller that waits for its
// token takes the reservation's ticket and follows it.
type queueBucket interface {
	Ticket(at time.Duration) bucket.Ticket
	Follow(tk bucket.Ticket) (_ bucket.Ticket, moved <-chan struct{})
}

// levelNames names the bucket levels of reserve, as Event.Level does.
var levelNames = [...]string{"provider", "account", "leaf"}

// cancel gives back the tokens of a reservation that will not be used.
func (gd *Guard) cancel(now time.Duration) {
	e := gd.e
	if b := e.acct.global; b != nil {
		b.Cancel(now)
	}
	if b := e.acct.bucket; b != nil {
		b.Cancel(now)
	}
	e.leaf.Cancel(now)
}

// acquire takes a slot of the account's bulkhead. The entry is checked
// after the slot is taken: a sweep marks an entry dead before it looks at
// its account's slots, so either the sweep saw this slot and kept the
// account, or this call sees the entry dead and takes a slot of the live
// account instead.
func (gd *Guard) acquire(ctx context.Context, block bool) error {
	for gd.slot == nil {
		b := gd.e.acct.bulkhead
		if !b.TryAcquire() {
			if !block {
				return context.DeadlineExceeded
			}
			if gd.nested(ctx, b) {
				return nil
			}
			if err := b.Acquire(ctx); err != nil {
				return err
			}
		}
		if !gd.e.dead.Load() {
			gd.slot = b
			if gd.orphan != nil {
				gd.orphan.hold(b)
			}
			return nil
		}
		b.Release()
		gd.live()
	}
	return nil
}

// nested reports whether ctx belongs to an attempt of an enclosing call
// that holds a slot of b (see Enter): the call that made this one, or the
// call that made it, and so on (credentials fetched through a chain of
// roles). It is looked up only when no slot is free, so the common call
// pays nothing for it.
func (gd *Guard) nested(ctx context.Context, b *bulkhead.Bulkhead) bool {
	for range maxNesting {
		outer, ok := ctx.Value(gd.g).(*Guard)
		if !ok || outer == gd {
			return false
		}
		if outer.slot == b {
			return true
		}
		ctx = outer.ctx
	}
	return false
}

// maxNesting bounds the walk up the enclosing calls.
const maxNesting = 16

// live moves the guard to the live entry of its scope if a sweep reclaimed
// the one it holds, or a reconfiguration moved the scope's state to a new
// table, so that what the call learns is not lost. The steps
// that record an outcome call it; the others do not need to.
func (gd *Guard) live() {
	if !gd.e.dead.Load() {
		return
	}
	gd.p = gd.g.provider(gd.scope.Provider) // a reconfiguration may have replaced it
	gd.e = gd.p.scopes.lookup(gd.scope)
	if gd.stats != nil {
		gd.run = gd.e.runCounters(gd.stats)
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

// Pace takes a fresh token before the retry of a throttled attempt that an
// SDK sends without Enter (the AWS SDK's retries, which are not calls of
// their own): the retry waits for the scope's rate and pause on top of the
// SDK's backoff. A wait that would pass the deadline ends the call with the
// throttled answer, recorded as failed. After any other attempt Pace only
// counts the SDK's backoff: an SDK that calls Pace before each of its
// retries (cloudgaws does) has the time it slept since Retry counted as
// the call's backoff. For a provider that waits for its breakers' verdicts
// (breaker_wait), every retry first asks the breaker as Enter does: an
// open breaker or a probe out holds it until the verdict, within the
// deadline, and a retry that waited takes a fresh token; a refused one
// ends the call with a *CircuitOpenError wrapping the last answer.
func (gd *Guard) Pace(ctx context.Context) error {
	if gd.e == nil {
		return nil
	}
	now := gd.g.now()
	gd.recordBackoff(now)
	if gd.phase != failed && gd.phase != retrying {
		return nil
	}
	if gd.p.set.breakerWait {
		// The retry asks the breaker first, and waits for its verdict.
		at := now
		if err := gd.admit(ctx, &at, true, true); err != nil {
			return err
		}
		if gd.lastKind != Throttled && at == now {
			return nil
		}
		// A retry that waited goes at the scope's rate, like a new call.
		now = at
	} else if gd.lastKind != Throttled {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return gd.stopByContext(err, true)
	}
	if err := gd.takeToken(ctx, now, true, true); err != nil {
		return err
	}
	gd.sendingRetry()
	return nil
}
