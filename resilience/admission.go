package resilience

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/internal/bulkhead"
	"github.com/cloudg/cloudg/internal/ctxend"
	"github.com/cloudg/cloudg/state"
)

// The steps Enter and Pace take before an attempt goes: the call's limits
// and deadline, the breaker, the rate tokens and the bulkhead slot.

// limits returns the call's retry limits, resolving them and the deadline
// on first use: the common call neither waits nor fails.
func (gd *Guard) limits() *retryLimits {
	if gd.lim.attempts == 0 {
		gd.lim = gd.rp.resolve(gd.p.set.retry)
		gd.setDeadline()
	}
	return &gd.lim
}

// deadlineAt returns the current call's deadline.
func (gd *Guard) deadlineAt() time.Duration {
	gd.limits()
	return gd.dl
}

// setDeadline computes the current call's deadline: its start plus the
// policy's deadline, or the context's deadline if sooner. The context's
// is read on the governor's clock now, however long after the call's
// start its deadline is first needed (see limits).
func (gd *Guard) setDeadline() {
	gd.dl, gd.dlCtx = gd.start+gd.lim.deadline, false
	if cl, ok := gd.g.ctxLimit(gd.ctx, gd.g.now()); ok && cl < gd.dl {
		gd.dl, gd.dlCtx = cl, true
	}
}

// admit asks the breaker whether the attempt may go at now (see Enter): a
// retry always, a new request unless the call holds a lease. A call
// awaiting a verdict waits for one first; a call refused while an
// enclosing call of ctx holds the probe borrows it (borrowProbe); and a
// provider with breaker_wait has a refused call wait for the verdict. It
// returns the time the call was let through, at which it takes its token.
func (gd *Guard) admit(ctx context.Context, now time.Duration) (time.Duration, error) {
	gd.dropLapsed(now)
	retry := gd.retrying()
	if !retry && gd.lease.holds() {
		return now, nil
	}
	if retry {
		gd.live() // the call may have lasted past a sweep
	}
	if !gd.p.set.enabled {
		// Disabled since the call began: no longer governed, it asks no
		// breaker (nor waits for a verdict) and takes no token (see Enter).
		if gd.phase == phaseAwaiting {
			gd.renewed = gd.retries
			gd.to(phaseRetryable)
		}
		return now, nil
	}
	if gd.phase == phaseAwaiting {
		at, ok, err := gd.awaitRecovery(ctx, now)
		if err != nil {
			return at, gd.stopByContext(err)
		}
		if !ok {
			// No verdict within the deadline: the call failed after its
			// retries, a failure the breaker counted already.
			gd.recordSpent("deadline")
			gd.stop()
			return at, gd.last.err
		}
		now = at
		gd.renewed = gd.retries
		gd.to(phaseRetryable)
		if !gd.p.set.enabled {
			return now, nil // disabled during the wait: no longer governed
		}
	}
	// A scope found dead without a new answer: this call asks an open
	// breaker, and reports the change once it knows the breaker's answer
	// (a refusal recorded first).
	var dead string
	if h := gd.e.health.Load(); h != nil && h.failing.Load() && h.isDead(gd.p.set, now, gd.e.sharedSuccess()) {
		dead = gd.openDead(now, h.onlyThrottled())
	}
	// ask, in line: the common call pays no call for it.
	var wait time.Duration
	var ok bool
	if gd.lease.ofProbe() {
		if wait, ok = gd.e.breaker.AllowProbe(now); ok {
			gd.holdProbe() // a lent probe is this call's again: the call that borrowed it is over
		} else {
			// Its breaker opened again (its lease ran out and another
			// probe failed, or another call's failure reopened it): it
			// holds nothing, and asks as any call (see ask).
			gd.lease = leaseNone
			gd.loanSettled()
		}
	}
	if !ok && !gd.lease.ofProbe() {
		var probe bool
		if wait, ok, probe = gd.e.breaker.Allow(now); probe {
			gd.probing(now)
		} else if ok {
			gd.lease = leasePass
			gd.loanSettled()
		} else if gd.borrowProbe(ctx, now, nil) {
			ok = true // refused only: the common call pays nothing for the lookup
		}
	}
	if !ok && gd.p.set.breakerWait {
		gd.reportDead(dead) // before the wait for the verdict
		dead = ""
		var err error
		if now, wait, ok, err = gd.waitAdmitted(ctx, now); err != nil {
			return now, gd.stopByContext(err)
		}
		if !ok && gd.adm != nil {
			// A scheduler's first call that may not wait for the verdict:
			// the task runs again when the breaker may let it through.
			return now, gd.refuseWait(wait, ErrCircuitOpen)
		}
		if ok && retry && gd.last.kind == Transient {
			gd.renewed = gd.retries // held until the verdict: attempts renewed (see verdict)
		}
	}
	if ok {
		gd.reportDead(dead)
		return now, nil
	}
	return now, gd.refuseOpen(now, wait, dead)
}

// tryAdmit is admit without waiting, for TryEnter: the breaker's answer
// now, or the probe an enclosing call of Begin's context lends.
func (gd *Guard) tryAdmit(now time.Duration) (time.Duration, bool) {
	gd.dropLapsed(now)
	if !gd.retrying() && gd.lease.holds() {
		return 0, true
	}
	wait, ok := gd.ask(now)
	if !ok && gd.borrowProbe(gd.ctx, now, nil) {
		return 0, true
	}
	return wait, ok
}

// closedTo reports, without asking the breaker for anything, whether it
// would refuse the attempt at now, and for how long: it is open, or
// half-open with the probe out in a call other than an enclosing one of
// Begin's context (see borrowProbe), or closed on a scope found dead
// without a new answer, whose breaker Enter's admission would open (for
// its cooldown, as Delay says). A breaker that never counted a failure
// is not looked at further.
func (gd *Guard) closedTo(now time.Duration) (time.Duration, bool) {
	if ((!gd.retrying() && gd.lease.holds()) || gd.lease.ofProbe()) && !gd.probeLapsed(now) {
		return 0, false
	}
	if !gd.e.breaker.Pristine() {
		s := gd.e.breaker.Snapshot(now)
		if s.State == state.HalfOpen && s.Wait > 0 {
			if outer := gd.lender(gd.ctx, nil); outer != nil {
				outer.lookedIn()
				return 0, false // tryAdmit borrows the probe
			}
		}
		if s.State != state.Closed {
			return s.Wait, s.Wait > 0
		}
	}
	if gd.e.deadClosed(gd.p.set, now) {
		return gd.p.set.breaker.Cooldown, true
	}
	return 0, false
}

// ask asks the breaker whether the call may be sent at now, and keeps what
// it grants: a pass, or the probe's lease (reported as the breaker's move
// to half-open). A probe's own retries ask AllowProbe (as does the next
// attempt of a call whose probe was lent, which is the probe again); one
// that finds the breaker open again (its lease ran out and another probe
// failed) holds a lease of nothing and asks as any call, so that it may
// become the probe once the new cooldown is over (AllowProbe refuses an
// open breaker even then, with no wait: a breaker_wait call asking it
// again spun).
func (gd *Guard) ask(now time.Duration) (time.Duration, bool) {
	gd.dropLapsed(now)
	if gd.lease.ofProbe() {
		if wait, ok := gd.e.breaker.AllowProbe(now); ok {
			gd.holdProbe()
			return wait, ok
		}
		gd.lease = leaseNone
		gd.loanSettled()
	}
	wait, ok, probe := gd.e.breaker.Allow(now)
	if probe {
		gd.probing(now)
	} else if ok {
		gd.lease = leasePass
		gd.loanSettled()
	}
	return wait, ok
}

// probing keeps the probe's lease the breaker granted at now, with when
// it runs out as the breaker tells it (see probeEnd), and reports the
// breaker's move to half-open.
func (gd *Guard) probing(now time.Duration) {
	gd.holdProbe()
	gd.probeEnd = 0
	if left, ok := probeLease(gd.e.breaker, now); ok && left > 0 {
		gd.probeEnd = max(leaseMs(now+left), 1) // 0 is "not told"
	}
	gd.loanSettled()
	gd.recordProbe()
}

// leaseTeller is the optional interface of a breaker that tells the time
// left in its probe's lease without a whole snapshot: the in-process
// breaker's.
type leaseTeller interface {
	ProbeLease(now time.Duration) (time.Duration, bool)
}

// probeLease returns the time left at now in the lease of br's probe,
// which br just let through (Allow), and false when br does not tell it:
// ProbeLease, or else the snapshot (half-open, Wait the lease left). A
// probe is let through once a cooldown at most, so that the read costs
// the common call nothing.
func probeLease(br state.Breaker, now time.Duration) (time.Duration, bool) {
	if lt, ok := br.(leaseTeller); ok {
		return lt.ProbeLease(now)
	}
	if s := br.Snapshot(now); s.State == state.HalfOpen && s.Wait > 0 {
		return s.Wait, true
	}
	return 0, false
}

// probeLapsed reports whether the probe's lease the call holds or lent
// ran out at now (see probeEnd): the breaker lets the next call that asks
// through as the probe then, so that the call's next attempt, or its next
// request, would be a second probe beside that one if it went on the
// lease. It asks as any call does instead (dropLapsed).
func (gd *Guard) probeLapsed(now time.Duration) bool {
	return gd.lease.ofProbe() && lapsed(gd.probeEnd, now)
}

// dropLapsed gives up the probe's lease the call holds or lent, if it
// ran out at now (probeLapsed): the call asks the breaker as any call,
// which refuses it while another call's lease runs, or lets it through
// as the probe again (a lease of its own) if none took it.
func (gd *Guard) dropLapsed(now time.Duration) {
	if gd.probeLapsed(now) {
		gd.lease = leaseNone
		gd.loanSettled()
	}
}

// leaseMs is d, a reading of the governor's clock, in milliseconds
// rounded up, modulo 2^32: the end of a probe's lease as Guard.probeEnd
// holds it. Rounded up, a lease ends at most a millisecond after the
// breaker's.
func leaseMs(d time.Duration) uint32 {
	return uint32((d + time.Millisecond - 1) / time.Millisecond)
}

// lapsed reports whether a probe's lease that ends at end (leaseMs; 0:
// not told, never) ran out at now. The two are compared modulo 2^32
// milliseconds, which is right while they are less than 24 days apart, far
// longer than a lease or a call lasts.
func lapsed(end uint32, now time.Duration) bool {
	return end != 0 && int32(uint32(now/time.Millisecond)-end) >= 0
}

// probeTurns numbers the probe's leases the calls of the process take
// (Guard.holdProbe), for Guard.probeTurn: across the process, so that a
// turn tells apart the leases of the calls of a context's chain too (a
// give-back walks it: giveProbeBack).
var probeTurns atomic.Uint32

// holdProbe keeps the probe's lease, the breaker's or one borrowed, as a
// turn of its own (Guard.probeTurn): a call nested in this lease's attempt
// that borrows it notes the turn (Guard.loanTurn), and gives it back to
// this call only while the call holds the same turn (see giveProbeBack),
// not to a later attempt of the call, which asked the breaker again and
// may have lent its own lease to another nested call meanwhile.
func (gd *Guard) holdProbe() {
	gd.lease = leaseProbe
	gd.probeTurn = probeTurns.Add(1)
}

// borrowProbe lets a call that its half-open breaker refused through as
// the probe, when the probe is out in an enclosing call of ctx (see
// lender): that call made this one inside its attempt, whose answer this
// one's decides. This call takes the probe's lease: its outcome is the
// probe's verdict and its retries go as the probe's. The enclosing call's
// lease is lent: it holds no probe while this call does, a second nested
// call finds none to borrow until this one gives it back as it ends with
// no verdict (giveProbeBack), and its next attempt asks the breaker
// (AllowProbe: it is the probe again unless the verdict opened the
// breaker, so that a nested call that gave no verdict leaves no probe
// out). The breaker reports no change: its probe is still the one it let
// through. borrowProbe reports whether it let the call through. It is
// asked only once the breaker refused the call, as nested is asked only
// when no slot is free, so the common call pays nothing for it. With
// opened not nil, the lookup gathers there the channels a call that waits
// for the verdict looks again on (see lender), and, when another nested
// call borrowed the probe between the lookup and this call's turn, the
// one closed as that call gives it back.
func (gd *Guard) borrowProbe(ctx context.Context, now time.Duration, opened *[]<-chan struct{}) bool {
	outer := gd.lender(ctx, opened)
	if outer == nil {
		return false
	}
	defer outer.lookedIn()
	if lapsed(outer.probeEnd, now) {
		return false // the breaker may have let another call through as the probe
	}
	if _, ok := gd.e.breaker.AllowProbe(now); !ok {
		return false // open again: the probe's lease ran out and another probe failed
	}
	// One compare-and-swap, so that of two calls nested in the same
	// attempt one borrows the probe; the enclosing call reads its lease
	// once its attempt is over.
	for !atomic.CompareAndSwapUint32((*uint32)(&outer.lease), uint32(leaseProbe), uint32(leaseLent)) {
		// Another call nested in the attempt borrowed it since lender read
		// it: a call that waits for the verdict looks again as that one
		// gives it back, as lender has it (the channel taken before the
		// lease is read again), rather than wait out the probe's lease.
		if opened == nil {
			return false
		}
		back := outer.lends().backChan()
		switch lease(atomic.LoadUint32((*uint32)(&outer.lease))) {
		case leaseLent:
			*opened = append(*opened, back)
			return false
		case leaseProbe:
			// Given back meanwhile: borrow it.
		default:
			return false
		}
	}
	gd.loanSettled()
	gd.loanTurn = outer.probeTurn // read with the lease, while the attempt runs
	gd.holdProbe()
	gd.probeEnd = outer.probeEnd // the lease lent runs out when its lender's does
	gd.probeLoan = true
	if gd.orphan != nil {
		// A guard of Begin's: its End may come with a context that does
		// not lead to outer, or never (see probeNotes).
		probeNotes.Store(gd.orphan, &probeNote{lender: outer, breaker: gd.e.breaker, turn: gd.loanTurn})
	}
	return true
}

// lender returns the call of ctx's chain of enclosing calls (as borrowSlot
// walks it, past this call's own Guard) that holds the probe's lease of this call's breaker inside its
// attempt (sent, its answer not yet reported). The breaker, not the entry:
// a Configure that kept the breaker may have retired the enclosing call's
// entry during the attempt, and this call looked up the live one. It
// returns nil when there is none, and otherwise the call with lookIn's
// hold, which the caller ends with lookedIn. When opened is not nil, it
// appends to it, for each enclosing call the walk passed between its
// attempts (its gate closed), a channel closed as that call's next
// attempt begins, as borrowSlot has it: a call that waits for the
// probe's verdict (waitAdmitted) looks again then, since the probe's own
// retry may be that attempt, and the call, nested in it, may borrow its
// lease rather than wait for the verdict, or the lease's end, which that
// retry may wait for the call to reach. So, for an enclosing call whose
// attempt runs with the probe lent to another nested call, it appends a
// channel closed as that call gives the probe back (giveProbeBack) or
// the attempt ends (Guard.attemptOver).
func (gd *Guard) lender(ctx context.Context, opened *[]<-chan struct{}) *Guard {
	var w walk
	for {
		outer, ok := ctx.Value(gd.g).(*Guard)
		if !ok || w.loops(outer) {
			return nil
		}
		if outer == gd {
			// The call's own attempt context, as borrowSlot has it: on to
			// the call that made it.
			ctx = gd.ctx
			continue
		}
		if outer.lookIn() {
			if outer.e != nil && outer.e.breaker == gd.e.breaker && outer.phase == phaseSent {
				l := lease(atomic.LoadUint32((*uint32)(&outer.lease)))
				if l == leaseLent && opened != nil {
					// Lent to another nested call: the call looks again
					// as it gives the probe back (giveProbeBack wakes the
					// lend), the channel taken before the lease is read
					// again, so that a return between them is seen.
					back := outer.lends().backChan()
					if l = lease(atomic.LoadUint32((*uint32)(&outer.lease))); l == leaseLent {
						*opened = append(*opened, back)
					}
				}
				if l == leaseProbe {
					return outer
				}
			}
			outer.lookedIn()
		} else if opened != nil {
			*opened = append(*opened, outer.gate.Opened()) // lookIn is false with a gate only
		}
		ctx = outer.ctx
	}
}

// giveProbeBack gives the probe's lease the call borrowed from an
// enclosing call (borrowProbe), and still holds with no verdict given
// (its context ended, a local error, a refusal of the governor's), back
// to that call, as the call ends (stop, reset): the enclosing call's
// attempt, if it still runs with the lease it lent (in the turn the call
// noted, loanTurn: not a later attempt's, which asked the breaker again,
// nor another enclosing call's, lent to a call this one is nested in),
// holds the probe again, so that a call nested in it later borrows it as
// this one did, rather than wait for a verdict no call is out to give
// (breaker_wait) or be refused; and the calls waiting for the verdict in
// that attempt are woken (see lender) to borrow it. A guard of Begin's
// gives it to the lender it noted as it borrowed (probeNotes), since the
// context of its Enter, which found the lender, may not be Begin's; Do's
// and Call's, whose attempts are entered with Begin's context, walk
// gd.ctx's chain as lender does, to the call whose attempt runs on the
// same breaker with the probe lent in the turn noted. The common call
// pays a load for it.
func (gd *Guard) giveProbeBack() {
	if !gd.probeLoan {
		return
	}
	gd.probeLoan = false
	var n any
	if gd.orphan != nil {
		n, _ = probeNotes.LoadAndDelete(gd.orphan)
	}
	if gd.lease != leaseProbe || gd.e == nil {
		return
	}
	gd.lease = leaseNone // given back: a further Enter asks the breaker, as after a stop
	if n != nil {
		n.(*probeNote).giveBack() // a guard of Begin's: its lender noted
		return
	}
	var w walk
	ctx := gd.ctx
	for {
		outer, ok := ctx.Value(gd.g).(*Guard)
		if !ok || w.loops(outer) {
			return
		}
		if outer == gd {
			ctx = gd.ctx
			continue
		}
		if outer.takeProbeBack(gd.e.breaker, gd.loanTurn) {
			return
		}
		ctx = outer.ctx
	}
}

// takeProbeBack takes back the probe's lease of breaker br that outer
// lent in its turn turn (see holdProbe), when its attempt still runs
// with that lease lent, and wakes the calls waiting for it (see lender).
// It reports whether it did.
func (outer *Guard) takeProbeBack(br state.Breaker, turn uint32) bool {
	if !outer.lookIn() {
		return false
	}
	defer outer.lookedIn()
	if outer.e == nil || outer.e.breaker != br || outer.phase != phaseSent || outer.probeTurn != turn ||
		!atomic.CompareAndSwapUint32((*uint32)(&outer.lease), uint32(leaseLent), uint32(leaseProbe)) {
		return false
	}
	outer.lends().wake()
	return true
}

// loanSettled forgets the probe's lease the call borrowed (borrowProbe),
// if it did: given back, or ended by a verdict or the breaker's answer,
// it is not given back again, nor by the collector (see probeNotes). It
// is on the common call's path (every answer of the breaker), so that its
// check stays small enough to be inlined and the rest is settleLoan's.
func (gd *Guard) loanSettled() {
	if gd.probeLoan {
		gd.settleLoan()
	}
}

// settleLoan is loanSettled for a call that borrowed the probe.
func (gd *Guard) settleLoan() {
	gd.probeLoan = false
	if gd.orphan != nil {
		probeNotes.Delete(gd.orphan)
	}
}

// stop ends the current call's attempts: the Guard is done, and a further
// Enter asks the breaker again. A request that follows a success held
// with the slot (a listing's next page) and is stopped before it was sent
// leaves that success to be recorded at End.
func (gd *Guard) stop() {
	gd.giveProbeBack()
	gd.lease = leaseNone
	gd.ended()
	if gd.adm != nil {
		gd.decided(true) // ended before sending, and recorded
	}
}

// failAt ends a call that was sent and failed, whose retry reason (the
// deadline, the breaker) stopped at now: the failure is recorded, and err
// returned.
func (gd *Guard) failAt(now time.Duration, reason string, err error) error {
	gd.recordFailed(now, reason)
	gd.stop()
	return err
}

// stopByContext ends the call on the context's error: nothing is learned.
// Before the first attempt a passed deadline is a *DeadlineExceededError
// (that is also context.DeadlineExceeded); before a retry the error is
// the context's, joined to the last answer.
func (gd *Guard) stopByContext(err error) error {
	switch {
	case gd.retrying():
		err = ctxError(err, gd.last.err)
	case err == context.DeadlineExceeded:
		if gd.limits(); gd.dlCtx {
			err = &DeadlineExceededError{Scope: gd.scope, Err: context.DeadlineExceeded}
		}
	}
	gd.recordCancelled(err)
	gd.stop()
	return gd.endWith(err)
}

// takeToken takes a token from every bucket level and waits until it may
// be used, unless that would pass the deadline or the call's max wait:
// then it gives the token back and ends the call (see Enter). A leaf whose
// queue moves with its rate (a rise lets the callers already queued leave
// sooner) wakes the wait, which then goes at the reservation's new time;
// so do the account's and the provider's queues the call waits in, which
// move up when a call queued before this one gives its place up. A
// verdict of the scope's breaker wakes the wait too: a call that has not
// been sent yet, or a retry, asks the breaker again whenever it starts to
// listen for the next verdict (before the wait, and after each wake), and
// a breaker that opened meanwhile (a dead scope) ends it as it would have
// refused it; for
// a provider that waits for its breakers' verdicts (breaker_wait), the
// call gives its tokens back, waits for the verdict as admit has it wait,
// and then takes fresh ones. A Reset or Configure that retires the buckets
// the call waits on (not fleet mode's, whose waits are leases in the
// shared store) wakes the wait too, which then waits for tokens of the
// live buckets, taken afresh level by level (followRetired), held to the
// same deadline and max wait; so does a sweep that reclaims the call's
// entry, whose live entry's breaker is the one to ask.
func (gd *Guard) takeToken(ctx context.Context, now time.Duration) error {
	var w time.Duration          // the longest wait
	var pt, at, lt bucket.Ticket // the provider's, account's and leaf's reservations
	if gd.g.sharedBuckets {
		var ok bool
		var err error
		if w, pt, at, lt, ok, err = gd.reserveShared(ctx, now, gd.waitLimit()); err != nil {
			return gd.stopByContext(err)
		}
		if !ok {
			// Refused with no token taken (see reserveShared), past the
			// limit, which exceeds reads too; its wait counts from now.
			if now = gd.g.now(); gd.g.ctxErr(ctx, now) != nil {
				return gd.stopByContext(gd.g.ctxErr(ctx, now))
			}
			if err := gd.exceeds(now, later(now, w), gd.deadlineAt(), now, 0, nil); err != nil {
				return err
			}
			if w, pt, at, lt, _, err = gd.reserveShared(ctx, now, anyWait); err != nil {
				return gd.stopByContext(err)
			}
		}
		// The reservation may have waited for the store: the wait it gave
		// counts from its return, and the deadline is checked then too.
		if now = gd.g.now(); gd.g.ctxErr(ctx, now) != nil {
			r := justReserved(now, pt, at, lt)
			gd.cancel(now, &r)
			return gd.stopByContext(gd.g.ctxErr(ctx, now))
		}
	} else {
		var ok bool
		if w, pt, at, lt, ok = gd.reserve(now, now, false); !ok {
			// Refused with no token taken (gd.held is nil): past the
			// limit reserve read, which exceeds reads too.
			if err := gd.exceeds(now, later(now, w), gd.deadlineAt(), now, 0, nil); err != nil {
				return err
			}
			w, pt, at, lt, _ = gd.reserve(now, anyWait, true)
		}
	}
	if w <= 0 {
		return nil
	}
	limit := gd.deadlineAt()
	r := justReserved(now, pt, at, lt)
	if err := gd.exceeds(now, later(now, w), limit, now, 0, &r); err != nil {
		return err
	}
	// Each level's token is due at a fixed time but the leaf's, which
	// follows its queue and its pauses. The wait is recorded once it is
	// over, as long as it was, at the level of the bucket it ended on.
	start := now
	r.queue(gd.e.leaf)
	r.queueAt(1, gd.e.acct.bucket, now)
	r.queueAt(0, gd.e.acct.global, now)
	_, level := longest(r.due)
	recheck := gd.retrying() || gd.phase == phaseIdle
	for {
		var moved, amoved, pmoved, verdict, changed <-chan struct{}
		if !gd.g.sharedBuckets {
			// Before the entry is looked at, so that a Reset or Configure
			// that retires it after that wakes the wait.
			changed = gd.g.changes()
		}
		if changed != nil && gd.watch() {
			for moved := true; moved; moved = gd.watch() {
				if !gd.followRetired(now, &r) {
					gd.recordWait(now-start, levelNames[level])
					return nil // a disabled provider's call goes at once
				}
			}
			// The level the wait ends on, if it still waits; else the
			// one it waited for until now.
			if at, lv := longest(r.due); at > now {
				level = lv
			}
			// Tokens to be had at once still leave the breaker to be
			// asked again, below: the change may come in the instant a
			// verdict opened it.
		}
		if recheck {
			verdict = gd.verdictChan()
			// The breaker answered before this wait began, or before the
			// queue or a verdict woke it, and a verdict given since
			// (another call opening it at this very instant) wakes no one:
			// ask again, now that the next verdict will wake the wait, and
			// before the queue's new time is held to the deadline (a
			// breaker that waits for its verdicts gives the tokens back).
			if ended, err := gd.recheckBreaker(ctx, now, start, level, &r); ended {
				return err
			}
		}
		if r.q[1] != nil || r.q[0] != nil {
			// The account's and the provider's queues move as the leaf's
			// does (a call queued before this one gave up its place, a
			// pause): the call follows its places, and is woken when they
			// move, so that it goes at its time and not beside the call
			// given the time it left.
			amoved, pmoved = r.follow(1), r.follow(0)
			if at, lv := longest(r.due); at > now {
				level = lv
			}
		}
		if q := r.q[leafLevel]; q != nil {
			moved = r.follow(leafLevel)
			if p := q.Snapshot(now).Paused; p > 0 && r.due[leafLevel] < now+p {
				// The leaf was paused (a throttle's Retry-After) after
				// its token was due, while the call waited for another
				// level's: a paused scope sends nothing, so the call
				// queues for a token after the pause, at the leaf's
				// rate. The token it held counts as spent before the
				// pause: given back, it would be a stored token at the
				// pause's end, and the callers held this way would go
				// all at once.
				r.take(leafLevel, q, now)
			}
			if at, lv := longest(r.due); at > now {
				level = lv // the leaf's pause may hold the call longest now
			}
		}
		if moved, err := gd.heldByPause(ctx, now, start, level, &r); err != nil {
			return gd.stopHeld(err)
		} else if moved {
			_, level = longest(r.due)
		}
		until, _ := longest(r.due)
		if err := gd.exceeds(now, until, limit, start, level, &r); err != nil {
			return err
		}
		if until <= now {
			gd.recordWait(now-start, levelNames[level])
			return nil
		}
		woken, err := gd.g.sleepOr(ctx, until-now, moved, verdict, changed, amoved, pmoved)
		now = gd.g.now()
		if err != nil {
			gd.recordWait(now-start, levelNames[level])
			gd.cancel(now, &r)
			return gd.stopByContext(err)
		}
		if !woken {
			if moved, err := gd.heldByPause(ctx, now, start, level, &r); err != nil {
				return gd.stopHeld(err)
			} else if moved {
				_, level = longest(r.due)
				continue
			}
			gd.recordWait(now-start, levelNames[level])
			return nil
		}
		// Woken by the queue, a verdict or a change of the governor's
		// state: the loop follows the queue, the live buckets, and asks
		// the breaker again.
	}
}

// heldByPause moves r's tokens past a pause set while the call waited,
// which the tokens, due before it began, do not know of: the account's
// in process (accountPaused), the leaf's and the account's in fleet mode
// (sharedPaused); the leaf's in process follows its queue. It reports
// whether r moved. A call it ended (see sharedPaused; the call has waited
// since start for the token of level) is an endedError.
func (gd *Guard) heldByPause(ctx context.Context, now, start time.Duration, level uint8, r *reservation) (bool, error) {
	if gd.g.sharedBuckets {
		return gd.sharedPaused(ctx, now, start, level, r)
	}
	return gd.accountPaused(now, r), nil
}

// endedError is the error of a call heldByPause ended, recorded and
// stopped already.
type endedError struct{ err error }

func (e endedError) Error() string { return errorText(e.err) }

// stopHeld ends the call on heldByPause's error: the call's own when
// heldByPause ended it, or the context's.
func (gd *Guard) stopHeld(err error) error {
	if e, ok := err.(endedError); ok {
		return e.err
	}
	return gd.stopByContext(err)
}

// accountPaused reports whether a pause of the account's bucket
// (PauseAccount) set while the call waited holds the account token of r,
// which is due at now: a token the call queued for follows its
// reservation, which the pause moved; one due before the pause began
// does not know of it, and the call queues for an account token after
// the pause (the one it held counts as spent, as for the leaf). A call
// queued for its account token follows it in takeToken's loop, woken by
// the move. In process only: heldByPause asks sharedPaused
// in fleet mode.
func (gd *Guard) accountPaused(now time.Duration, r *reservation) bool {
	if gd.held == nil || r.due[1] > now {
		return false
	}
	if r.q[1] != nil {
		if r.follow(1); r.due[1] > now {
			return true
		}
	}
	b := gd.held.acct.bucket
	if b == nil || b.Snapshot(now).Paused <= 0 {
		return false
	}
	r.take(1, b, now)
	r.queueAt(1, b, now)
	return true
}

// pausedBucket is the optional interface of fleet mode's buckets: how long
// the bucket is still paused, by a pause its process set or one the shared
// store reported (read again, bounded by ctx, when the bucket last read it
// a while ago).
type pausedBucket interface {
	PausedFor(ctx context.Context) (time.Duration, error)
	// KnownPause is how long the bucket is still paused as far as its
	// process knows now, with no round trip.
	KnownPause() time.Duration
}

// sharedPaused is accountPaused for fleet mode's buckets, whose tokens do
// not follow a pause set after Redis gave their times: a leaf or account
// token of r due before the end of a pause set while the call waited (by
// its process, or by another, which the bucket reads) counts as spent,
// and the call takes another, which the shared bucket gives after the
// pause. A level whose token ctx ends the wait for takes nothing, and the
// other levels' tokens are given back; all of them when ctx ends while a
// bucket reads its pause. A level whose token after the pause would pass
// the call's deadline or max wait takes none either (the fleet bucket's
// ReserveBy, as takeToken's first reservation): the call ends as exceeds
// ends it, the token it held at that level spent, the other levels' given
// back; taken and given back, it would have cost a Redis operation and
// moved the fleet's queue after the pause earlier. It reports whether r
// moved.
func (gd *Guard) sharedPaused(ctx context.Context, now, start time.Duration, level uint8, r *reservation) (bool, error) {
	if gd.held == nil {
		return false, nil
	}
	e, moved := gd.held, false
	for i, b := range [levels]state.Bucket{nil, e.acct.bucket, e.leaf} {
		pb, ok := b.(pausedBucket)
		if !ok {
			continue
		}
		p, err := pb.PausedFor(ctx)
		if err != nil {
			gd.held = nil
			for _, o := range [levels]state.Bucket{e.acct.global, e.acct.bucket, e.leaf} {
				if o != nil {
					o.Cancel(now)
				}
			}
			return false, err
		}
		if p <= 0 || r.due[i] >= now+p {
			continue
		}
		var w time.Duration
		taken := true
		if lb, ok := b.(limitBucket); ok {
			w, taken, err = lb.ReserveBy(ctx, now, gd.waitLimit())
		} else if cb, ok := b.(contextBucket); ok {
			w, err = cb.ReserveContext(ctx, now)
		} else {
			w = b.Reserve(now)
		}
		if err == nil && !taken {
			// Nothing taken: the token it held, due before the pause,
			// counts as spent (kept: see giveBack), and its wait counts
			// from now.
			r.due[i] = now
			t := gd.g.now()
			if err := gd.exceeds(t, t+w, gd.deadlineAt(), start, level, r); err != nil {
				return false, endedError{err}
			}
			if cb, ok := b.(contextBucket); ok { // the clock ran on: within the limit after all
				w, err = cb.ReserveContext(ctx, t)
			} else {
				w = b.Reserve(t)
			}
			now = t
		}
		if err != nil {
			gd.held = nil
			for j, o := range [levels]state.Bucket{e.acct.global, e.acct.bucket, e.leaf} {
				if o != nil && j != i {
					o.Cancel(now)
				}
			}
			return false, err
		}
		r.due[i], r.tk[i], moved = now+w, bucket.TicketAt(now+w), true
	}
	return moved, nil
}

// exceeds ends the call when a wait from now until until would pass its
// deadline (limit) or its max wait, and returns the error it ends with;
// nil when the wait is within both. A call that has waited since start
// for the token of level (a pause that began meanwhile moved it past
// its deadline) has that wait recorded first, as a wait a context ends.
// The tokens given back are r's (see cancel).
func (gd *Guard) exceeds(now, until, limit, start time.Duration, level uint8, r *reservation) error {
	if until < limit && (!gd.bounded || until <= gd.admitBy) {
		return nil
	}
	if now > start {
		gd.recordWait(now-start, levelNames[level])
	}
	switch {
	case until >= limit: // at the deadline, the deadline is spent (see Enter)
		return gd.passDeadline(now, until-now, r)
	case gd.bounded && until > gd.admitBy:
		gd.cancel(now, r)
		return gd.refuseWait(until-now, ErrNoToken)
	}
	return nil
}

// reservation is what a call holds of the tokens it took: each level's
// reservation (tk: the provider's, the account's and the leaf's,
// levelNames) and when its token is due (due: at now or later). A level
// whose queue moves (the in-process buckets') and whose token the call
// waits for is followed (q, nil otherwise): the call's place in it moves
// when its rate or pause changes or a call queued before it gives its
// place up. Each tk[i] is a reservation of the bucket at level i of the
// entry the guard holds its tokens of (Guard.held), so that cancel gives
// it back to the bucket it was taken from.
type reservation struct {
	due [levels]time.Duration
	tk  [levels]bucket.Ticket
	q   [levels]queueBucket
}

// justReserved is the reservation reserve just made at now: the
// provider's, the account's and the leaf's tickets, none followed yet.
func justReserved(now time.Duration, provider, account, leaf bucket.Ticket) reservation {
	return reservation{
		due: [levels]time.Duration{max(now, provider.At()), max(now, account.At()), max(now, leaf.At())},
		tk:  [levels]bucket.Ticket{provider, account, leaf},
	}
}

// take reserves a token of b, the bucket of level i, at now: the level's
// token the call held before is left as it is (spent, or given back by the
// caller).
func (r *reservation) take(i int, b state.Bucket, now time.Duration) {
	r.tk[i] = reserveTicket(b, now)
	r.due[i] = max(now, r.tk[i].At())
}

// queue follows the call's place in leaf's queue, when its queue moves
// with its rate and pauses: even a token due at once, when the call waits
// for another level's, so that a pause of the leaf (a throttle's
// Retry-After) that begins during the wait holds the call until it ends.
func (r *reservation) queue(leaf state.Bucket) {
	r.q[leafLevel], _ = leaf.(queueBucket)
}

// queueAt follows the call's place in the queue of b, the bucket of level
// i above the leaf (the account's, 1, or the provider's, 0), when it
// queues the call (its token is not due at now): so that the call follows
// a pause of the account (see accountPaused), and a call queued before it
// that gives its place up moves it up (see cancel).
func (r *reservation) queueAt(i int, b state.Bucket, now time.Duration) {
	r.q[i] = nil
	if q, ok := b.(queueBucket); ok && r.due[i] > now {
		r.q[i] = q
	}
}

// follow brings the call's place in the queue of level i up to date in tk
// and due, and returns the channel closed when that queue next moves: nil
// when the call follows no place in it.
func (r *reservation) follow(i int) <-chan struct{} {
	q := r.q[i]
	if q == nil {
		return nil
	}
	var moved <-chan struct{}
	r.tk[i], moved = q.Follow(r.tk[i])
	r.due[i] = r.tk[i].At()
	return moved
}

// longest returns the latest of due and its level (levelNames): the most
// general one of those due last.
func longest(due [levels]time.Duration) (time.Duration, uint8) {
	at, level := due[0], uint8(0)
	for i := 1; i < levels; i++ {
		if due[i] > at {
			at, level = due[i], uint8(i)
		}
	}
	return at, level
}

// followRetired moves a call waiting for the tokens of its reservation r,
// whose entry a Reset, a Configure or a sweep marked dead, to the live
// entry of its scope, level by level: a level whose bucket the live entry
// kept (a Configure of other settings, an account bucket shared with the
// scopes a sweep kept) keeps its token, and the call its place in that
// bucket's queue; a level whose bucket was replaced (its settings changed,
// the state was reset, a sweep dropped it) gives its token back at now,
// and takes one of the live bucket. It reports false, all the tokens given
// back, when the provider is no longer governed. Its breaker lease is kept
// if the live entry kept the breaker, and dropped otherwise (relive).
func (gd *Guard) followRetired(now time.Duration, r *reservation) bool {
	gd.relive()
	if !gd.p.set.enabled {
		gd.cancel(now, r)
		return false
	}
	old, e := gd.held, gd.e
	if old == nil || old == e {
		return true
	}
	gd.held = e
	was := [levels]state.Bucket{old.acct.global, old.acct.bucket, old.leaf}
	for i, b := range [levels]state.Bucket{e.acct.global, e.acct.bucket, e.leaf} {
		if b == was[i] {
			continue
		}
		if was[i] != nil {
			was[i].Cancel(now)
		}
		r.due[i], r.tk[i] = now, bucket.TicketAt(now)
		if b != nil {
			r.take(i, b, now)
		}
		if i == leafLevel {
			r.queue(b)
		} else {
			r.queueAt(i, b, now)
		}
	}
	return true
}

// recheckBreaker asks the breaker again for a call waiting for its token
// since start, and reports whether the call's wait ended: a breaker that
// opened meanwhile refuses it as it would have at first (the tokens given
// back, the wait recorded); for a provider that waits for its breakers'
// verdicts, the call waits for one, within its deadline (and max wait),
// as admit has it wait, then takes a fresh token (none if the provider
// was disabled meanwhile: the call goes at once).
func (gd *Guard) recheckBreaker(ctx context.Context, now, start time.Duration, level uint8, r *reservation) (ended bool, err error) {
	wait, ok := gd.ask(now)
	if ok {
		return false, nil
	}
	gd.recordWait(now-start, levelNames[level])
	gd.cancel(now, r)
	if gd.p.set.breakerWait {
		at, w, admitted, err := gd.waitAdmitted(ctx, now)
		if err != nil {
			return true, gd.stopByContext(err)
		}
		if admitted && !gd.p.set.enabled {
			// Disabled during the wait: the call goes at once, as a call
			// waiting for its tokens does, its tokens given back.
			return true, nil
		}
		if admitted {
			return true, gd.takeToken(ctx, at)
		}
		now, wait = at, w
	}
	return true, gd.refuseOpen(now, wait, "")
}

// passDeadline ends a call whose token wait w would pass its deadline,
// giving back the tokens of r (see cancel and Enter).
func (gd *Guard) passDeadline(now, w time.Duration, r *reservation) error {
	gd.cancel(now, r)
	if gd.retrying() {
		return gd.failAt(now, "deadline", gd.last.err)
	}
	de := &DeadlineExceededError{Scope: gd.scope, Wait: w}
	if gd.dlCtx {
		de.Err = context.DeadlineExceeded
	}
	gd.recordRefused(de)
	gd.stop()
	return gd.endWith(de)
}

// refuseWait ends a call that would wait w for check (ErrNoToken,
// ErrNoSlot, or for a scheduler's first call ErrCircuitOpen), longer than
// its max wait allows (WithMaxWait, WithAdmission): a refusal,
// recorded as such (a scheduler's first call only once its task has
// returned: before, the scheduler is told Deferred and nothing is
// recorded), and nothing more sent. The caller gives back what the call
// took.
func (gd *Guard) refuseWait(w time.Duration, check error) error {
	ww := &WouldWaitError{Scope: gd.scope, Wait: w, Err: check}
	if gd.retrying() {
		ww.Last = gd.last.err
	}
	if a := gd.adm; a != nil && a.deferCall(gd, w, ww) {
		// A scheduler's first call: not lost, the task runs again.
		return gd.endWith(ww)
	}
	// Any other call, or a scheduler's first call whose task has returned
	// (EndAdmission): lost, and for the first call, decided (stop).
	gd.recordRefused(ww)
	gd.stop()
	return gd.endWith(ww)
}

// refuseOpen ends a call the breaker refused at now, wait before it lets a
// probe through: before the first attempt a rejection (nothing was sent,
// the ledger's skip), before a retry a failure of the call, whose last
// answer the error wraps. dead, when not "", is why the call's admission
// found the scope dead and opened the breaker (openDead), which the record
// of the refusal reports.
func (gd *Guard) refuseOpen(now, wait time.Duration, dead string) error {
	coe := gd.openError(wait)
	if gd.retrying() {
		coe.Err = gd.last.err
		gd.recordFailedDead(now, "breaker", dead)
	} else {
		gd.recordRejected(coe, dead)
	}
	gd.stop()
	return gd.endWith(coe)
}

// openError is the refusal of the scope's open breaker, wait before it
// lets a probe through, with why it opened.
func (gd *Guard) openError(wait time.Duration) *CircuitOpenError {
	return &CircuitOpenError{Scope: gd.scope, Wait: wait, Reason: gd.e.openReason()}
}

// reserve takes a token from every bucket level, most general first, and
// returns the longest wait, and each level's: the provider's, the
// account's and the leaf's (levelNames). Scalars, not an array, so that
// they are returned in registers.
//
// A level whose token the call could not have by its limit (waitLimit:
// its deadline, or its max wait) is not reserved: reserve gives back the
// levels before it and reports false, with the waits known then (the
// longest is at least the refused level's). The call is then refused with
// no token taken: a token taken and given back beside a queue stays spent
// (bucket.CancelAt), and calls refused one after the other would push the
// queue ever later (three goroutines calling with a 1 s deadline left a
// queue of 14,000 tokens, twelve minutes at the leaf's rate). The limit
// is read only once a level would make the call wait.
//
// latest and known say what the call may wait for: until latest when
// known (TryEnter: now; anyWait: whatever the wait), and otherwise
// for nothing until a level would make it wait, then until its limit.
func (gd *Guard) reserve(now, latest time.Duration, known bool) (w time.Duration, provider, account, leaf bucket.Ticket, ok bool) {
	e := gd.e
	if e.acct.global == nil && e.acct.bucket == nil { // the leaf alone (AWS's and GCP's defaults)
		if leaf, ok = reserveBy(e.leaf, now, latest); !ok && !known {
			leaf, ok = reserveBy(e.leaf, now, gd.waitLimit())
		}
		if ok {
			gd.held = e
		}
		none := bucket.TicketAt(now)
		return max(0, leaf.At()-now), none, none, leaf, ok
	}
	return gd.reserveLevels(now, latest, known)
}

// reserveLevels is reserve for a scope with a provider or an account
// bucket.
func (gd *Guard) reserveLevels(now, latest time.Duration, known bool) (w time.Duration, provider, account, leaf bucket.Ticket, ok bool) {
	e := gd.e
	provider, account = bucket.TicketAt(now), bucket.TicketAt(now)
	if b := e.acct.global; b != nil {
		if provider, ok = reserveBy(b, now, latest); !ok && !known {
			latest, known = gd.waitLimit(), true
			provider, ok = reserveBy(b, now, latest)
		}
		if !ok {
			return max(0, provider.At()-now), provider, account, bucket.TicketAt(now), false
		}
	}
	if b := e.acct.bucket; b != nil {
		if account, ok = reserveBy(b, now, latest); !ok && !known {
			latest, known = gd.waitLimit(), true
			account, ok = reserveBy(b, now, latest)
		}
		if !ok {
			giveBackTicket(e.acct.global, now, provider)
			return max(0, provider.At()-now, account.At()-now), provider, account, bucket.TicketAt(now), false
		}
	}
	if leaf, ok = reserveBy(e.leaf, now, latest); !ok && !known {
		leaf, ok = reserveBy(e.leaf, now, gd.waitLimit())
	}
	w = max(0, provider.At()-now, account.At()-now, leaf.At()-now)
	if !ok {
		giveBackTicket(e.acct.global, now, provider)
		giveBackTicket(e.acct.bucket, now, account)
		return w, provider, account, leaf, false
	}
	gd.held = e
	return w, provider, account, leaf, true
}

// giveBackTicket gives back to b, if any, the token of the reservation tk
// that will not be used: its place in b's queue, when b's queue moves (see
// cancel).
func giveBackTicket(b state.Bucket, now time.Duration, tk bucket.Ticket) {
	if q, ok := b.(queueBucket); ok {
		q.CancelTicket(now, tk)
		return
	}
	giveBack(b, now, max(now, tk.At()))
}

// anyWait is a limit no wait passes.
const anyWait = time.Duration(1<<63 - 1)

// reserveBy takes a token of b at now if it may be used by latest (see
// bucket.Bucket.ReserveBy). A bucket of another store than the in-process
// one takes a token whatever the wait.
func reserveBy(b state.Bucket, now, latest time.Duration) (bucket.Ticket, bool) {
	if mb, ok := b.(*bucket.Bucket); ok {
		return mb.ReserveBy(now, latest)
	}
	return bucket.TicketAt(later(now, b.Reserve(now))), true // a Store's wait may be near a Duration's largest
}

// reserveTicket takes a token of b at now, whatever the wait.
func reserveTicket(b state.Bucket, now time.Duration) bucket.Ticket {
	tk, _ := reserveBy(b, now, anyWait)
	return tk
}

// contextBucket is the optional interface of buckets whose Reserve may
// wait for a shared store (fleet mode's): ReserveContext stops waiting
// when ctx ends, taking nothing.
type contextBucket interface {
	ReserveContext(ctx context.Context, now time.Duration) (time.Duration, error)
}

// reserveShared is reserve for a store whose buckets may wait (fleet
// mode): each level's wait for the store is bounded by ctx, and a level
// that ctx ends gives back the levels already reserved. A level whose
// token would be usable past latest (a bucket that can tell, fleet's:
// limitBucket) takes none: the levels already reserved are given back,
// and reserveShared reports false with the waits known then, as reserve
// does; fleet's bucket refuses such a call with no Redis operation when
// its lease shows the wait, where a token taken and given back cost one.
func (gd *Guard) reserveShared(ctx context.Context, now, latest time.Duration) (w time.Duration, provider, account, leaf bucket.Ticket, ok bool, err error) {
	e := gd.e
	bs := [levels]state.Bucket{e.acct.global, e.acct.bucket, e.leaf}
	var waits [levels]time.Duration
	for i, b := range bs {
		if b == nil {
			continue
		}
		ok = true
		if lb, is := b.(limitBucket); is {
			waits[i], ok, err = lb.ReserveBy(ctx, now, latest)
		} else if cb, is := b.(contextBucket); is {
			waits[i], err = cb.ReserveContext(ctx, now)
		} else {
			waits[i] = b.Reserve(now)
		}
		if err != nil {
			for _, r := range bs[:i] {
				if r != nil {
					r.Cancel(now)
				}
			}
			return 0, bucket.Ticket{}, bucket.Ticket{}, bucket.Ticket{}, false, err
		}
		if !ok {
			for j, r := range bs[:i] {
				giveBack(r, now, later(now, waits[j]))
			}
			return max(waits[0], waits[1], waits[leafLevel]), bucket.TicketAt(later(now, waits[0])), bucket.TicketAt(later(now, waits[1])), bucket.TicketAt(later(now, waits[leafLevel])), false, nil
		}
	}
	gd.held = e
	// later: a Store's wait may be near a Duration's largest, and now
	// plus it would wrap around to a token due long ago.
	return max(waits[0], waits[1], waits[leafLevel]), bucket.TicketAt(later(now, waits[0])), bucket.TicketAt(later(now, waits[1])), bucket.TicketAt(later(now, waits[leafLevel])), true, nil
}

// limitBucket is the optional interface of fleet mode's buckets that take
// a token only if it is usable by a limit (latest, on the caller's clock),
// or at once: otherwise they take nothing and report the wait and false.
type limitBucket interface {
	ReserveBy(ctx context.Context, now, latest time.Duration) (time.Duration, bool, error)
}

// queueBucket is a leaf bucket whose queued reservations move with its
// rate and pauses (the in-process bucket): a caller that waits for its
// token takes the reservation's ticket and follows it.
type queueBucket interface {
	state.Bucket
	Follow(tk bucket.Ticket) (_ bucket.Ticket, moved <-chan struct{})
	CancelTicket(now time.Duration, tk bucket.Ticket)
}

// levelNames names the bucket levels of reserve, as Event.Level does.
var levelNames = [levels]string{"provider", "account", "leaf"}

// levels counts the bucket levels; the leaf is the last.
const (
	levels    = 3
	leafLevel = levels - 1
)

// cancel gives back the tokens of r, a reservation that will not be
// used (nil: one whose every token was due before now, its call gone on
// to wait for its slot), to the buckets it was made on: the guard may have
// moved to the live entry of its scope since (Guard.live), whose buckets
// gave it nothing. The call's place in the queue of an in-process bucket
// is given up: the reservations after it move a token earlier
// (bucket.Bucket.CancelTicket), and a token due already is taken back as
// far as the reservations made after it allow (bucket.Bucket.CancelAt). Of
// any other bucket, a token due by now at a bucket paused now was due
// before the pause began, which counted it as spent: given back, it would
// be a token stored at the pause's end, or the queue after it would move
// sooner, and more calls would go from the pause's end than the bucket's
// rate and burst allow. It is kept.
func (gd *Guard) cancel(now time.Duration, r *reservation) {
	e := gd.held
	if e == nil {
		return
	}
	gd.held = nil
	var due [levels]time.Duration
	if r != nil {
		due = r.times()
	}
	for i, b := range [levels]state.Bucket{e.acct.global, e.acct.bucket, e.leaf} {
		q, queued := b.(queueBucket)
		switch {
		case b == nil:
		case queued && r != nil:
			// A place in the bucket's queue: the queue after it moves up
			// (bucket.Bucket.CancelTicket).
			q.CancelTicket(now, r.tk[i])
		default:
			giveBack(b, now, due[i])
		}
	}
}

// giveBack gives back to b a token due at at that will not be used (see
// cancel).
func giveBack(b state.Bucket, now, at time.Duration) {
	switch {
	case b == nil:
	case isCancelAt(b):
		b.(cancelAtBucket).CancelAt(now, at)
	case at > now || !pausedAt(b, now):
		b.Cancel(now)
	}
}

// cancelAtBucket is the optional interface of the buckets that take a
// token back knowing when it was due, and keep a token due by now at a
// paused bucket themselves: the in-process one, as far as the
// reservations made after it allow; fleet mode's, which puts a token
// usable at once back into its process's lease, with no Redis operation.
type cancelAtBucket interface {
	CancelAt(now, at time.Duration)
}

func isCancelAt(b state.Bucket) bool {
	_, ok := b.(cancelAtBucket)
	return ok
}

// times returns when each level's token of r is due, its queued tickets
// followed to date.
func (r *reservation) times() [levels]time.Duration {
	due := r.due
	for i, q := range r.q {
		if q != nil {
			tk, _ := q.Follow(r.tk[i])
			due[i] = tk.At()
		}
	}
	return due
}

// pausedAt reports whether b is paused at now: a fleet mode bucket by a
// pause its process knows of (its own, or one the shared store reported),
// without a round trip to the store, any other by its snapshot.
func pausedAt(b state.Bucket, now time.Duration) bool {
	if pb, ok := b.(pausedBucket); ok {
		return pb.KnownPause() > 0
	}
	return b.Snapshot(now).Paused > 0
}

// pausedSince reports whether b was paused at some time from from until
// now: an in-process bucket whose last pause ends after from (a pause set
// before from, in force when the caller took its token, ended before the
// token was due); any other bucket if it is paused now.
func pausedSince(b state.Bucket, now, from time.Duration) bool {
	if pb, ok := b.(interface{ PausedUntil() time.Duration }); ok {
		return pb.PausedUntil() > from
	}
	return b.Snapshot(now).Paused > 0
}

// pausedNow reports whether the scope's leaf or account bucket is paused
// at now (see pausedAt): a pause holds a retry that would take no token
// (see Guard.Admit).
func (gd *Guard) pausedNow(now time.Duration) bool {
	if pausedAt(gd.e.leaf, now) {
		return true
	}
	b := gd.e.acct.bucket
	return b != nil && pausedAt(b, now)
}

// acquire takes a slot of the account's bulkhead, waiting with ctx, and
// counts the call on its entry (entryFlags). The entry is checked after
// the slot is taken: a sweep marks an entry dead before it looks at its
// account's slots, so either the sweep saw this slot and kept the
// account, or this call sees the entry dead and takes a slot of the live
// account instead.
// It reports whether the call waited for the slot, and since when.
func (gd *Guard) acquire(ctx context.Context) (from time.Duration, waited bool, err error) {
	for gd.slot == nil {
		b := gd.e.acct.bulkhead
		if !b.TryAcquire() {
			borrowed, back, opened := gd.borrowSlot(ctx, b)
			if borrowed {
				return from, waited, nil
			}
			if !waited {
				from, waited = gd.g.now(), true
			}
			if err := gd.waitSlot(ctx, b, back, opened); err == errSlotBack {
				continue // borrow it, unless a slot is free now
			} else if err != nil {
				return from, waited, err
			}
		}
		if gd.e.flags.busy() { // hold, in line
			gd.slot = b
			if gd.orphan != nil {
				gd.orphan.hold(b)
			}
			return from, waited, nil
		}
		b.Release()
		gd.live()
	}
	return from, waited, nil
}

// pausedDuringSlotWait reports whether the scope's leaf or account bucket
// was paused since from, for a call that took its tokens before it waited
// for its slot, from then until now: a pause set during that wait (a
// throttle's Retry-After), which the tokens, due before it, do not know
// of, whether it is still in force or ended as the slot came (see
// pausedSince). It then gives the slot back,
// and the provider's and account's tokens: the call waits for tokens
// again, which the pause holds. The leaf's token counts as spent before
// the pause: given back, it would be a stored token at the pause's end,
// and the calls held this way would go all at once; so does the account's
// when the account is paused (see cancel).
func (gd *Guard) pausedDuringSlotWait(now, from time.Duration) bool {
	e := gd.e
	paused := pausedSince(e.leaf, now, from)
	if b := e.acct.bucket; b != nil && !paused {
		paused = pausedSince(b, now, from)
	}
	if !paused {
		return false
	}
	gd.Release()
	if h := gd.held; h != nil {
		// The leaf's token is kept; the others go back, unless their
		// bucket is paused too (see cancel).
		gd.held = nil
		giveBack(h.acct.global, now, 0)
		giveBack(h.acct.bucket, now, 0)
	}
	return true
}

// errSlotWait is waitSlot's refusal: the slot did not come within the
// call's max wait.
var errSlotWait = errors.New("resilience: no slot within the max wait")

// errSlotDeadline is waitSlot's end at the call's deadline, the policy's
// (a context's deadline ends the wait with the context).
var errSlotDeadline = errors.New("resilience: no slot within the deadline")

// waitSlot waits for a slot of b, within the call's max wait
// (WithMaxWait): past it, errSlotWait; and within its deadline, which a
// wait that reaches spends: errSlotDeadline for the policy's (the
// context's ends the wait as ctx ends). When back is not nil (the slot of
// an enclosing call, lent to another nested call: see borrowSlot), it
// stops as back closes, with errSlotBack; so as one of opened closes (an
// enclosing call's next attempt began, whose slot the call may borrow).
func (gd *Guard) waitSlot(ctx context.Context, b *bulkhead.Bulkhead, back <-chan struct{}, opened []<-chan struct{}) error {
	if back != nil {
		opened = append(opened, back)
	}
	wctx, stop := endOnAny(ctx, opened)
	defer stop()
	// The wait ends at the sooner of the max wait and the policy's
	// deadline.
	by, refusal := gd.admitBy, errSlotWait
	if limit := gd.deadlineAt(); !gd.dlCtx && (!gd.bounded || limit <= by) {
		by, refusal = limit, errSlotDeadline
	}
	var err error
	if !gd.bounded && refusal != errSlotDeadline {
		err = b.Acquire(wctx)
		gd.gaveUpSlot(b, err)
	} else {
		left := by - gd.g.now()
		if left <= 0 {
			return refusal
		}
		tctx, cancel := gd.g.withTimeout(wctx, left)
		defer cancel()
		err = b.Acquire(tctx)
		gd.gaveUpSlot(b, err)
		if err != nil && wctx.Err() == nil {
			return refusal
		}
	}
	if err != nil && ctx.Err() == nil && len(opened) > 0 {
		return errSlotBack
	}
	return err
}

// gaveUpSlot tells the watches of the slots (WatchSlots) that a slot of b
// may be free after a wait for one ended with err: a slot handed over as
// the wait gave up goes back free (bulkhead.Acquire), and the call that
// ended and handed it over told nobody, its slot not free then.
// slotFreed tells them only if a slot is free now.
func (gd *Guard) gaveUpSlot(b *bulkhead.Bulkhead, err error) {
	if err != nil && gd.g.slotWatch.Load() != nil {
		gd.g.slotFreed(b, gd.scope)
	}
}

// endOnAny returns a context that ends with ctx, or as soon as one of
// chans closes (the channels borrowSlot and lender return: a lent slot
// come back, an enclosing call's next attempt begun), so that a wait made
// with it stops then, and its caller, finding ctx not done, looks again.
// With no channel it returns ctx. The caller calls stop once the wait is
// over, on every path: it ends the goroutines that watch chans, one for
// each, and returns once they are over, so that none outlives the wait.
func endOnAny(ctx context.Context, chans []<-chan struct{}) (wctx context.Context, stop func()) {
	if len(chans) == 0 {
		return ctx, func() {}
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(len(chans))
	for _, c := range chans {
		go func() {
			defer wg.Done()
			select {
			case <-c:
				cancel()
			case <-wctx.Done():
			}
		}()
	}
	return wctx, func() {
		cancel()
		wg.Wait()
	}
}

// tryAcquire is acquire without waiting, for TryEnter: it reports whether
// the call may go (with a slot, or nested in a call that holds one).
func (gd *Guard) tryAcquire() bool {
	for gd.slot == nil {
		b := gd.e.acct.bulkhead
		if !b.TryAcquire() {
			borrowed, _, _ := gd.borrowSlot(gd.ctx, b)
			return borrowed
		}
		if gd.hold(b) {
			return true
		}
	}
	return true
}

// hold keeps the slot just taken of b, unless the entry was reclaimed
// meanwhile: then the slot goes back, the Guard moves to the live entry,
// and hold reports false.
func (gd *Guard) hold(b *bulkhead.Bulkhead) bool {
	if !gd.e.flags.busy() {
		b.Release()
		gd.live()
		return false
	}
	gd.slot = b
	if gd.orphan != nil {
		gd.orphan.hold(b)
	}
	return true
}

// walk follows a walk up the enclosing calls, however deep, and finds
// where a chain of contexts loops back on itself (a context of the
// caller's own whose Value answers with a call begun under it), as
// Brent's algorithm does: it marks the call reached at each power of two
// steps, and a loop leads back to a mark within its own length.
type walk struct {
	mark  *Guard
	steps uint
}

// loops reports whether outer, the next call of the walk, is one it
// reached before.
func (w *walk) loops(outer *Guard) bool {
	if outer == w.mark {
		return true
	}
	if w.steps++; w.steps&(w.steps-1) == 0 {
		w.mark = outer
	}
	return false
}

// live moves the guard to the live entry of its scope if a sweep reclaimed
// the one it holds, or a reconfiguration or a Reset moved the scope's state
// to a new table, so that the call asks the live breaker, takes the live
// bucket's tokens and records into the live counters. The verbs call it
// as they start, and the steps that end a wait or record an outcome call
// it again.
func (gd *Guard) live() {
	if gd.e.flags.dead() { // in line: the common call pays an atomic load
		gd.relive()
	}
}

// followLive moves the guard to the live entry of its scope when a Reset,
// a Configure or a sweep retired its own, and returns a channel closed at
// the next such change, for a wait to wake on: taken before the entry is
// looked at, so that a change after the look wakes the wait.
func (gd *Guard) followLive() <-chan struct{} {
	changed := gd.g.changes()
	for gd.watch() {
		gd.relive()
	}
	return changed
}

// watch marks the entry the call waits on as watched, so that a sweep
// that reclaims it wakes the call, and then reports whether it is dead: a
// sweep marks an entry dead before it looks whether it is watched, so
// that either the sweep sees the mark and wakes the call, or the call
// sees the entry dead and follows the live one.
func (gd *Guard) watch() bool {
	if !gd.e.flags.watched() { // marked once: the entry's line is read by every call
		gd.e.flags.watch()
	}
	return gd.e.flags.dead()
}

// relive moves the guard to the live entry of its scope. The breaker's
// lease goes with it when the live entry has the same breaker (a Configure
// that kept the breaker settings): a probe waiting for its token is still
// the probe, and a half-open breaker asked again would refuse it as the
// probe it let through is out. A lease of a retired breaker is dropped:
// the live one is asked.
func (gd *Guard) relive() {
	old := gd.e.breaker
	gd.p, gd.e = gd.g.resolve(gd.scope) // a reconfiguration may have replaced the provider
	if gd.e.breaker != old {
		gd.lease = leaseNone
		gd.loanSettled()
	}
	if s := gd.bind.stats; s != nil {
		gd.run = gd.e.runCounters(s)
	}
}

// ctxError is the error of a call whose context ended during a wait: the
// context's error, with the last provider error alongside when there is one.
func ctxError(ctxErr, lastErr error) error {
	if lastErr == nil {
		return ctxErr
	}
	return &ctxend.Error{Ctx: ctxErr, Last: lastErr}
}
