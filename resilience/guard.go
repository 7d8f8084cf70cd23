package resilience

import (
	"context"
	"time"

	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/internal/bulkhead"
	"github.com/cloudg/cloudg/internal/errread"
	"github.com/cloudg/cloudg/internal/nestgate"
)

// Guard is the state machine of one logical call to one scope. Call and Do
// run their retry loop on one; the SDK integrations, whose SDK runs its own
// retry loop, drive one from the SDK's hooks. Its verbs follow the moments
// every SDK exposes:
//
//	gd, err := gov.Begin(ctx, scope)  // resolve the scope
//	for {
//		if err = gd.Enter(ctx); err != nil { break } // breaker, deadline, count, tokens, slot
//		err = send(ctx)
//		gd.After(err)                  // classify once: halve and pause, count
//		gd.Release()                   // where a slot is held per attempt: after After,
//		                               // so that a caller waiting for it sees the pause
//		if err == nil { break }
//		delay, rerr := gd.Retry(backoff) // retries, deadline, budget
//		if rerr != nil { err = rerr; break } // the attempt's error, or what stopped it
//		sleep(delay)
//	}
//	gd.End(err)                        // release, and the outcome if still open
//	return err
//
// (a Begin that fails, for a scope without a provider, returns
// ErrNoProvider and no Guard; every way out of the loop goes through End,
// which gives back a slot an integration holds across its attempts.)
//
// Code of the caller's that panics during the call (the SDK's transport,
// a middleware) leaves the call to EndPanicked, from a deferred function,
// which records it as lost to the panic and lets the panic go on.
//
// Enter counts one call; an SDK whose retries are not calls of their own
// (the AWS SDK's) sends them without Enter, pacing a throttled one with
// Pace; one whose retries take no token of their own (Google's paged
// calls) readies them with Admit, which asks the breaker and waits out a
// pause of the scope only. A slot is held until Release or End: an
// integration chooses whether it covers an attempt, a call with its
// retries, or a whole listing.
//
// A call made inside a Guard's attempt, with a context that answers
// Value(governor) with that Guard, shares what the Guard holds: it never
// waits for the Guard's bulkhead slot, and on the same scope it takes over
// the Guard's half-open probe rather than be refused by it (see Enter).
// Such a call reads the Guard as it finds it: the context is for the
// attempt's own work, done by the time the attempt's answer is reported.
// The integrations of this module, whose attempt contexts may outlive the
// attempt (a dial net/http goes on with), read their Guards through a
// gate, as a call made WithNestedCalls is read: only while its attempt
// runs.
//
// Every event (a call counted, a wait, a throttle and the rate it leaves, a
// pause, a retry, a breaker change, a give-up, a rejection, an empty
// budget) is recorded in the governor's lifetime stats, in the Stats and
// the Ledger bound to the context given to Begin, exactly once.
//
// When the provider is disabled nothing is paced, counted or recorded;
// After still classifies and Retry still applies the policy's attempts and
// the provider's hint, so an SDK loop keeps its bounds. A Guard is used by
// one goroutine at a time (an SDK's request pipeline). The zero Guard is
// not usable; make one with Governor.Begin.
type Guard struct {
	g      *Governor
	p      *provider
	e      *scopeEntry // nil when the provider is disabled
	scope  Scope
	ctx    context.Context    // Begin's: its deadline bounds the call, its end ends learning
	bind   *binding           // what ctx carries: the run's stats, the task's ledger, the most a call may wait
	run    *counters          // the run's counters for the service scope, or nil
	slot   *bulkhead.Bulkhead // the bulkhead a held slot belongs to, or nil
	orphan *orphanSlot        // gives the slot back if a guard from Begin is dropped; nil on Do's stack
	lent   slotLend           // the first slot this call holds (or borrowed), as lent to a call nested in it
	lend   *slotLend          // the lend of the slot it holds now, when not lent: the first's is kept for a loan still out (see lends); nil: lent
	loan   *slotLend          // the enclosing call's lend of the slot this one borrowed (see borrowSlot), or nil
	slotIn *bulkhead.Bulkhead // the bulkhead of the slot this one borrowed, while loan is not nil
	gate   *nestgate.Gate     // orders the lookups of the calls nested in this one's attempts, whose context other goroutines may hold (WithNestedCalls, an integration's attempt context); nil: none

	rp      *RetryPolicy // the call's policy option
	lim     retryLimits  // rp resolved against the provider's, on first need (attempts 0 until then)
	start   time.Duration
	dl      time.Duration // the current call's deadline, resolved with lim
	admitBy time.Duration // the attempt being admitted waits no later, when its context bounds the wait (WithMaxWait)

	phase   phase
	dlCtx   bool // the context's deadline, sooner than the policy's, is the one that binds (dl)
	bounded bool // admitBy bounds the attempt being admitted
	// probeLoan: lease is the probe's, borrowed from an enclosing call
	// (borrowProbe), and given back to it if the call ends with no
	// verdict (giveProbeBack). A byte of the padding before lease, so
	// that a nesting call's allocation stays in its size class.
	probeLoan bool
	lease     lease
	noted     uint32 // the scope's streak of failures this call counted in (health)
	// probeTurn numbers the probe's lease the call holds (holdProbe),
	// and loanTurn the lease of an enclosing call's it borrowed (while
	// probeLoan): a give-back finds its lender's attempt by it. Turns
	// are taken across the process, one per probe's lease: 32 bits, so
	// that a loan's matches another lease only after 2^32 leases while
	// the loan is out (16 bits came back after 65536, which a run whose
	// thousands of scopes go half-open at once takes within a retry's
	// backoff: TestAProbeGivenBackFindsOnlyTheAttemptThatLentIt).
	probeTurn uint32
	loanTurn  uint32
	// renewed counts the retries made before the call's attempts were
	// renewed (breaker_wait), sdkLoop those made before the SDK's
	// current loop began (Enter: 0, then each Resend): 32 bits each, so
	// that a nesting call's allocation stays in its size class.
	renewed int32
	sdkLoop int32
	// closed: the call was ended (End, EndDenied, EndPanicked: reset)
	// and no step of a new call has come since (one that moves the Guard
	// on: to, and TryEnter, whose refusal does not), so that an ending
	// verb called again records nothing.
	closed bool
	// again: the call's next request is its last sent again, not as a
	// retry, after the provider's fatal answer (resendChallenged): it
	// keeps the call's retries and deadline, until the Guard's next move
	// (to), a TryEnter's refusal not being one. Beside closed, in its
	// padding.
	again bool
	// retries counts the retries of the current call; the first
	// freeRetries are free. 32 bits, beside probeEnd, so that a nesting
	// call's allocation stays in its size class.
	retries int32
	// probeEnd is when the lease of the probe the call holds or lent
	// (lease.ofProbe) runs out, as the breaker told it when it granted
	// the lease (a borrowed lease's: its lender's), in the milliseconds
	// of the governor's clock, rounded up, modulo 2^32 (see msOf); 0 when
	// the breaker did not tell. Past it the breaker lets the next call
	// through as the probe, and this call asks as any call does (see
	// probeLapsed).
	probeEnd uint32
	adm      *admission // the scheduler's hold this attempt claimed (WithAdmission), until decided

	held      *scopeEntry   // the entry whose buckets gave the tokens not yet used, for cancel
	last      answer        // the last failed attempt's
	prevSleep time.Duration // the last delay Retry gave, for the jitter and the Retry event
	slept     time.Duration // the time from Retry allowing the retry to its Enter, TryEnter, Pace or Admit, for the Retry event
	notBefore time.Duration // a retry of a transient answer waits until then
	retryAt   time.Duration // when Retry allowed the retry that is still to be sent
}

// answer is what the Guard keeps of the last attempt that failed.
type answer struct {
	err     error
	desc    string // err as DescribeError words it; set for a throttle, a transient error and an unreadable error (see said)
	hint    time.Duration
	kind    Kind // after hint, with the flags, so that the answer is 48 bytes, not 56
	hasHint bool
	local   bool // a fatal error no provider answered: the call is lost if it ends with it
}

// Begin starts a logical call to scope. WithPolicy among opts sets the
// bounds Retry applies (the SDK integrations pass their SDK's); other
// options are ignored. ctx carries the run's Stats and Ledger, its
// deadline bounds the call, and once it is done nothing more is learned
// from the call's answers. Begin fails only for a scope without a provider.
func (g *Governor) Begin(ctx context.Context, scope Scope, opts ...CallOption) (*Guard, error) {
	if scope.Provider == "" {
		return nil, ErrNoProvider
	}
	var rp *RetryPolicy
	for _, o := range opts {
		if po, ok := o.(policyOption); ok {
			rp = po.p
		}
	}
	gd := new(Guard)
	if gd.begin(ctx, g, scope, rp) {
		// Here, not when a slot is taken: Do's Guard, on its stack, must
		// not escape to the heap by being watched.
		gd.orphan = watchOrphan(gd)
	}
	return gd, nil
}

// begin sets a Guard up in place (Do keeps one on its stack). It reports
// whether the call is governed.
func (gd *Guard) begin(ctx context.Context, g *Governor, scope Scope, rp *RetryPolicy) bool {
	p := g.provider(scope.Provider)
	if !p.set.enabled {
		gd.g, gd.p, gd.scope, gd.ctx, gd.rp = g, p, scope, ctx, rp
		g.admitUngoverned(ctx, scope)
		return false
	}
	if e := p.scopes.lookup(scope); g.provider(scope.Provider) == p {
		gd.beginAt(ctx, g, scope, p, e, rp)
		return true
	}
	// A Configure or Reset came between: the entry may be the new
	// table's (see Governor.resolve), and the provider may be disabled.
	return gd.begin(ctx, g, scope, rp)
}

// beginAt sets a Guard up on a scope already resolved to its provider and
// entry (a Bound's).
func (gd *Guard) beginAt(ctx context.Context, g *Governor, scope Scope, p *provider, e *scopeEntry, rp *RetryPolicy) {
	gd.g, gd.p, gd.e, gd.scope, gd.ctx, gd.rp = g, p, e, scope, ctx, rp
	gd.bind = bindingOf(ctx)
	if s := gd.bind.stats; s != nil {
		gd.run = gd.e.runCounters(s)
	}
}

// Enter readies an attempt and blocks until it may be sent:
//
//  1. before a retry that Retry was not asked for (an integration that
//     goes on after After reported a failure), Retry(0) decides it;
//  2. the breaker: open (or half-open with its probe out in another call),
//     and a *CircuitOpenError. Before the first attempt the call is counted
//     as rejected and goes to the ledger as skipped (nothing was sent);
//     before a retry the call was sent and failed, and is recorded as
//     failed with its last error, which the error wraps. A request that
//     follows a success (a listing's next page) is not checked again. A
//     half-open breaker's probe has its own retries let through. A
//     provider with breaker_wait has the call wait for the breaker's
//     verdict instead, when its deadline allows;
//  3. the deadline (the policy's, or the context's if sooner): spent, and
//     the call ends with its last error (or a *DeadlineExceededError before
//     the first attempt);
//  4. a retry of a transient answer waits out the delay Retry gave;
//  5. a token from the provider, account and leaf buckets, waiting for the
//     slowest; a wait that would reach or pass the deadline is not made (the call
//     would arrive at its deadline spent);
//  6. a slot of the provider x account bulkhead, unless one is held, or
//     borrowed from an enclosing call (see below) for an attempt before
//     (and not lent to a call nested in an attempt before, which goes
//     on); a wait for it ends at the deadline, as a wait for tokens would
//     (the policy's: the call ends as in 3, unsent, recorded as refused
//     before the first attempt; the context's: as its context ends); a
//     scope paused while the call waited for its slot (another call's
//     throttle with a Retry-After) has it give the slot back and wait for
//     tokens again, which the pause holds;
//  7. one call, and the retry it is, counted.
//
// A context that ends during a wait returns its error, joined to the last
// error; the slot wait is made with ctx. A context whose deadline has come
// is done, though the timer due then has not run yet: a call at its
// deadline, or whose slot comes back then, is not sent, and ends as one
// whose context is done does (recorded as cancelled; before the first
// attempt, a *DeadlineExceededError). A call made inside another's
// attempt, whose context answers Value(gov) with that call's *Guard
// holding a slot of the same bulkhead (or one it borrowed so), takes a
// slot only if one is free and otherwise borrows its caller's: it never
// waits for a slot its own caller holds. One nested call at a time
// borrows it; another, nested in the same attempt at once (a function
// that fans out with its context), waits for a free slot or for the
// borrowed one to come back, so that the calls stay within the cap. A
// nested call that goes on once the attempt is over (a goroutine's) keeps
// the slot it borrowed: the enclosing call's Release leaves it taken
// until the nested call gives it back. The call lends each slot it holds
// so, one loan at a time: the slot a later attempt takes while the one of
// an earlier attempt is kept for its loan (a goroutine's call going on)
// is lent to a call nested in the later attempt at once, so that the
// later nested call does not wait for the earlier one, which may wait
// for it (a paginator's goroutine inside a retried call). The kept slot
// stays taken until its loan comes back, and the later slot is the
// attempt's own, so that the calls stay within the cap. A call waiting
// for the earlier slot to come back looks again for a slot as the
// attempt ends and the slot is kept: it goes on one it may borrow then
// (an enclosing call's, free while the call waits to retry), or waits for
// a free one, rather than for that loan, which gives it none. So as the
// attempt ends when the call holds the slot across its attempts (an SDK's
// retries, a listing's pages), its loan still out: nested in no attempt
// of the call until its next one, it goes on the slot of an enclosing
// call whose attempt runs, lent to no call, as a call made then does,
// rather than wait for the loan meanwhile. A call made
// with an attempt's context while no attempt of that call runs (a
// goroutine's, between the attempts) is nested in none, and waits for a
// free slot; it looks again as the next attempt of any call its context
// leads to begins, and goes on that attempt's slot if no call borrowed
// it, rather than wait that attempt out.
//
// Nor is such a call refused by the probe its own caller holds. When the
// breaker of its scope is half-open and its probe is out in a call that
// ctx leads back to (its caller, or its caller's caller), inside that
// call's attempt, the call is let through as the probe in its caller's
// stead: its outcome is the probe's verdict (a success closes the breaker
// at once, a failure reopens it), and its retries go as the probe's. The
// caller's lease is lent: it is no longer the probe, a second call nested
// in the same attempt finds no probe to take while the first holds it,
// and the caller's next attempt asks the breaker as a probe's retry does
// (it goes on as the probe if the nested call gave no verdict, and is
// refused if the verdict opened the breaker). A nested call that ends
// with no verdict (its context ended, a local error, a refusal of the
// governor's) gives the probe back to the caller's attempt it borrowed
// it from, if that attempt still runs (a later attempt, which asked the
// breaker again, gets nothing of it): a call nested in it then borrows the probe as the first did, and
// one waiting for the verdict there (breaker_wait) goes as it comes
// back, rather than wait for a verdict no call is out to give, or be
// refused. One waiting for the verdict while the borrower goes on past
// the attempt (a goroutine's) looks again as the attempt ends (After,
// for a caller whose attempts are gated), and as the caller's next
// attempt begins, which is the probe again, borrows it then, as a call
// made between the attempts does (below). The breaker reports no second
// move to half-open.
// A call made with the caller's attempt context between the caller's
// attempts (a goroutine's) is nested in none, and is refused as any
// call; for a provider with breaker_wait it waits for the verdict, and
// looks again as the next attempt of any call its context leads to
// begins: it goes as the probe if that call holds it then (the probe's
// retry, which may wait for what the call fetches), rather than wait for
// the probe's lease to run out.
// What the caller records of the attempt afterwards is recorded as well:
// the attempt is a counted call of the caller's, and its success (which
// reports no second change of a breaker the nested call closed) refunds
// the retry budget as any call's does; an integration whose nested call
// recorded the attempt's outcome does not end the caller's Guard with it.
// A call on a borrowed slot records each success as it comes (see After),
// as a call that gives its slot back after each attempt does, though it
// holds the loan across its attempts: one success for each of its
// counted calls (a listing of three pages refunds the budget three times,
// 0.30), never more, where a call holding a slot of its own across its
// attempts records one, at End, so that a probe holds its lease until
// the call is over; as the probe, the borrower's success is the verdict
// at once. The context is looked up only when no slot is free, or when
// the breaker refused the call: the common call pays nothing for it.
//
// A call whose provider a Configure disabled after the call began is no
// longer governed from then on: its attempts ask no breaker, wait for no
// verdict and take no token, and a wait for a verdict or a token ends at
// the Configure. It still waits out the delay its retry policy gave,
// takes a slot of the bulkhead it began under (so that the calls that
// began governed stay within the cap they began under), and is counted
// and recorded as the governed call it began as.
//
// A panic of the governor's Store (state.Store: user code) goes on to
// the caller; one raised once the call holds its slot (as it reads
// whether a pause came during its wait for the slot, or in the step of
// the reclaimer the call takes last) ends the call as EndPanicked does,
// its slot given back.
func (gd *Guard) Enter(ctx context.Context) error {
	if gd.e == nil {
		return nil
	}
	gd.live()
	now := gd.g.now()
	if gd.bounded = false; gd.bind.held {
		gd.bound(now)
	}
	if gd.phase == phaseIdle {
		gd.start = now // the common call: its first attempt
	} else if err := gd.request(now); err != nil {
		return err
	}
	var admitting time.Duration // the wait for the breaker: its verdict (breaker_wait), its cooldown
	if !gd.lease.holds() || gd.retrying() || gd.probeLapsed(now) {
		from := now
		var err error
		if now, err = gd.admit(ctx, now); err != nil {
			return err
		}
		admitting = now - from
	}
	if err := gd.g.ctxErr(ctx, now); err != nil {
		return gd.stopByContext(err)
	}
	if gd.retrying() {
		if now >= gd.deadlineAt() {
			return gd.failAt(now, "deadline", gd.last.err)
		}
		if d := gd.notBefore - now; d > 0 {
			if gd.bounded && now+d > gd.admitBy {
				return gd.refuseWait(d, ErrNoToken)
			}
			if err := gd.g.sleep(ctx, d); err != nil {
				return gd.stopByContext(err)
			}
			now = gd.g.now()
		}
		// The wait for the breaker is not the retry's backoff, as Pace,
		// which asks the breaker after it records the backoff, has it.
		gd.recordBackoff(now - admitting)
	}
	for {
		if gd.p.set.enabled { // a provider disabled since the call began: no token
			if err := gd.takeToken(ctx, now); err != nil {
				return err
			}
		}
		if gd.slot != nil || gd.loan != nil { // held, or borrowed, across attempts
			if !gd.lends().lentOut() {
				break
			}
			// Lent to a call nested in an attempt before, which
			// goes on: kept for it, and this attempt takes another.
			gd.Release()
		}
		from, waited, err := gd.acquire(ctx)
		if err != nil {
			gd.cancel(gd.g.now(), nil) // its tokens were due: see cancel
			switch err {
			case errSlotWait:
				return gd.refuseWait(0, ErrNoSlot)
			case errSlotDeadline:
				return gd.passDeadline(gd.g.now(), 0, nil)
			}
			return gd.stopByContext(err)
		}
		if waited {
			// A slot that came back at the deadline, before the
			// context's timer due then ran: the deadline is spent.
			if err := gd.g.ctxErr(ctx, gd.g.now()); err != nil {
				gd.Release()
				gd.cancel(gd.g.now(), nil)
				return gd.stopByContext(err)
			}
		}
		// A scope paused while the call waited for its slot sends
		// nothing until the pause ends, and then at its rate: the call
		// waits for tokens again.
		if !waited || !gd.p.set.enabled {
			break
		}
		if now = gd.g.now(); !gd.pausedAfterSlotWait(now, from) {
			break
		}
	}
	gd.live()     // a Reset or Configure during the waits: count it where they start
	gd.held = nil // the tokens are used
	// send, in line: the common call pays no call for it.
	if gd.retrying() {
		gd.recordRetry()
	}
	gd.recordCall()
	if gd.observed() {
		gd.recordCallEvent()
	}
	gd.to(phaseSent)
	if gd.adm != nil {
		gd.decided(false)
	}
	gd.reclaim(now) // last, so that the step never reclaims this call's own scope
	return nil
}

// pausedAfterSlotWait is pausedDuringSlotWait for Enter, whose call
// holds the slot it waited for: a panic of the Store's bucket it reads
// (Snapshot) goes on to the caller, and ends the call as EndPanicked
// does, its slot given back (see reclaim).
func (gd *Guard) pausedAfterSlotWait(now, from time.Duration) bool {
	returned := false
	defer func() {
		if !returned {
			gd.EndPanicked()
		}
	}()
	paused := gd.pausedDuringSlotWait(now, from)
	returned = true
	return paused
}

// reclaim takes the reclaimer's step due at now (Governor.maybeReclaim)
// for the call Enter or TryEnter just let through, which holds its slot.
// The step asks the Store's buckets and breakers (Idle, Pristine), user
// code that may panic: the panic goes on to the caller, as a panic of
// the governor's log handler does, and ends the call as EndPanicked
// does, so that its slot goes back and the call is lost as panicked
// (the slot stayed taken for good, and the account's cap one smaller).
func (gd *Guard) reclaim(now time.Duration) {
	if now >= time.Duration(gd.g.reclaim.due.Load()) { // the common call: one atomic load, inlined
		gd.reclaimStep(now)
	}
}

// reclaimStep is reclaim's step, once it is due.
func (gd *Guard) reclaimStep(now time.Duration) {
	returned := false
	defer func() {
		if !returned {
			gd.EndPanicked()
		}
	}()
	gd.g.reclaimStep(now)
	returned = true
}

// bound bounds the admission of the attempt starting at now by what the
// context says: the most a call may wait (WithMaxWait), and for a task's
// first call, a scheduler's admission (WithAdmission), which this attempt
// claims.
func (gd *Guard) bound(now time.Duration) {
	if gd.bind.bounded {
		gd.bounded, gd.admitBy = true, now+gd.bind.maxWait
	}
	if a := gd.bind.adm; a != nil && gd.phase == phaseIdle && a.claim() {
		gd.adm = a
		if by := now + a.maxWait; !gd.bounded || by < gd.admitBy {
			gd.bounded, gd.admitBy = true, by
		}
	}
}

// decided tells the scheduler whose admission this attempt claimed that it
// was decided: sent, or, unsent, ended and recorded (holding no slot of
// its own then, the scheduler may give on a slot it meant for it). The
// call may hold its slot by then: a panic of the scheduler's is
// recovered, so that the slot is never left held.
func (gd *Guard) decided(unsent bool) {
	a := gd.adm
	gd.adm = nil
	gd.g.admissionDecided(a.a, gd.scope, unsent && gd.slot == nil)
}

// TryEnter is Enter without waiting: the attempt goes now, with what Enter
// would take, or nothing is taken and TryEnter says which check refused
// it. Tokens and the slot are taken before the breaker is asked, so that a
// refusal gives back what it took and never holds a half-open breaker's
// probe; a refusal is not recorded (a call that was never attempted is no
// rejection and no skip), and the Guard stays as it was, ready for Enter
// or End. A call nested in another's attempt goes without a slot, and
// as the probe, as Enter has it, with Begin's context. Its errors:
//   - *CircuitOpenError: the breaker is open, or half-open with its probe
//     out in a call Begin's context does not lead back to, or the scope is
//     found dead, whose breaker Enter would open (wrapping the last answer
//     on a retry);
//   - *WouldWaitError matching ErrNoToken: no token is usable now (the
//     scope's rate, its pause, or a retry's Retry-After), with the wait;
//   - *WouldWaitError matching ErrNoSlot: the account's bulkhead is full.
//
// A *WouldWaitError of a retry wraps the last answer too (Last).
//
// A deadline already spent on a retry, or a done context (one at its
// deadline too, its timer run or not: see Enter), ends the call as
// Enter would. A call whose provider a Configure disabled after the call
// began asks no breaker and takes no token, as Enter has it.
func (gd *Guard) TryEnter() error {
	if gd.e == nil {
		return nil
	}
	gd.closed = false // a step of the call, refused or not: End records its refusal
	gd.live()
	governed := gd.p.set.enabled // a provider disabled since the call began: see Enter
	now := gd.g.now()
	if err := gd.request(now); err != nil {
		return err
	}
	if err := gd.g.ctxErr(gd.ctx, now); err != nil {
		return gd.stopByContext(err)
	}
	if gd.retrying() {
		if now >= gd.deadlineAt() {
			return gd.failAt(now, "deadline", gd.last.err)
		}
		if d := gd.notBefore - now; d > 0 {
			return gd.wouldWait(d, ErrNoToken)
		}
		if gd.phase == phaseAwaiting {
			if governed {
				if wait, ok := gd.recovered(now); !ok {
					coe := gd.openError(wait)
					coe.Err = gd.last.err
					return coe
				}
			}
			gd.renewed = gd.retries
			gd.to(phaseRetryable)
		}
	}
	var r *reservation // the tokens taken
	if governed {
		if wait, open := gd.closedTo(now); open {
			// The breaker binds first: its wait is the one to report.
			return gd.refusedOpen(wait)
		}
		var w time.Duration
		var pt, at, lt bucket.Ticket
		if gd.g.sharedBuckets {
			var ok bool
			var err error
			if w, pt, at, lt, ok, err = gd.reserveShared(gd.ctx, now, now); err != nil {
				return gd.stopByContext(err)
			}
			if !ok {
				// Nothing taken (see reserveShared).
				return gd.wouldWait(w, ErrNoToken)
			}
		} else {
			var ok bool
			if w, pt, at, lt, ok = gd.reserve(now, now, true); !ok {
				// Nothing taken: a token taken and given back beside a
				// queue stays spent (see reserve).
				return gd.wouldWait(w, ErrNoToken)
			}
		}
		res := justReserved(now, pt, at, lt)
		r = &res
		if w > 0 {
			gd.cancel(now, r)
			return gd.wouldWait(w, ErrNoToken)
		}
	}
	held := gd.slot != nil || gd.loan != nil // or borrowed, across attempts
	if held && gd.lends().lentOut() {
		gd.Release() // kept for the call it is lent to, as Enter has it
		held = false
	}
	if !held && !gd.tryAcquire() {
		gd.cancel(now, r)
		return gd.wouldWait(0, ErrNoSlot)
	}
	if governed {
		if wait, ok := gd.tryAdmit(now); !ok {
			if !held {
				gd.Release()
			}
			gd.cancel(now, r)
			return gd.refusedOpen(wait)
		}
	}
	if gd.retrying() {
		gd.recordBackoff(now)
	}
	gd.send(now)
	return nil
}

// wouldWait is TryEnter's refusal for a wait w for check (ErrNoToken,
// ErrNoSlot), which records nothing: a *WouldWaitError, wrapping the last
// answer on a retry.
func (gd *Guard) wouldWait(w time.Duration, check error) *WouldWaitError {
	ww := &WouldWaitError{Scope: gd.scope, Wait: w, Err: check}
	if gd.retrying() {
		ww.Last = gd.last.err
	}
	return ww
}

// refusedOpen is TryEnter's refusal by the breaker, which records
// nothing: a *CircuitOpenError, wrapping the last answer on a retry.
func (gd *Guard) refusedOpen(wait time.Duration) error {
	coe := gd.openError(wait)
	if gd.retrying() {
		coe.Err = gd.last.err
	}
	return coe
}

// request readies the Guard for Enter or TryEnter: a retry Retry was not
// asked for is asked now; any phase but a retry's starts the next request
// of the call (a listing's next page: its own deadline and free retries,
// the breaker's lease kept), but for the same request sent again after
// the provider's fatal answer (resendChallenged), which keeps the call's
// retries and deadline.
func (gd *Guard) request(now time.Duration) error {
	switch gd.phase {
	case phaseRetryable, phaseAwaiting:
		return nil
	case phaseFailed, phaseFinal:
		_, err := gd.Retry(0)
		return err
	}
	if gd.again {
		// The same request again: its retries and deadline go on. The
		// flag lasts until the Guard moves (see to), so that a TryEnter
		// refused before the resend leaves it for the next try.
		if gd.last.err != nil {
			gd.last = answer{}
		}
		return nil
	}
	gd.start, gd.retries, gd.renewed, gd.sdkLoop = now, 0, 0, 0
	if gd.last.err != nil {
		gd.last = answer{}
	}
	if gd.lim.attempts != 0 {
		gd.setDeadline()
	}
	return nil
}

// send counts the attempt Enter or TryEnter let through, and the retry it
// is, and marks it sent.
func (gd *Guard) send(now time.Duration) {
	gd.held = nil // the tokens are used
	if gd.retrying() {
		gd.recordRetry()
	}
	gd.recordCall()
	if gd.observed() {
		gd.recordCallEvent()
	}
	gd.to(phaseSent)
	// Last, so that the step never reclaims this call's own scope.
	gd.reclaim(now)
}

// After records the answer to the attempt sent last, classified once:
//   - nil is a success: the breaker resets, the leaf recovers additively,
//     the budget gets its refund, and the next request of the same
//     operation (a listing's next page) gets its own free retries. A call
//     that still holds its slot (an SDK call with its retries, a listing)
//     has its success recorded by End, once, so that a probe holds its
//     lease until the call is over. A call that goes on a slot borrowed
//     from an enclosing call (see Enter), held across its attempts or
//     not, records each success at once, as a call that holds no slot
//     does: as the probe it took over from that call, its success is the
//     verdict, which closes the breaker at once;
//   - a throttling answer halves the leaf's rate (once per congestion
//     event) and pauses it for the provider's hint, capped at MaxPause;
//   - a transient error is counted;
//   - a fatal answer from the provider proves the service reachable: the
//     breaker resets as on a success, and the call ends;
//   - a local fatal error (one no provider answered: the request could
//     not be built, signed or sent) says nothing about the scope, and the
//     call ends: if it ends with that error (End, or Call and Do's loop,
//     which does not retry it), it is lost as LossErrored;
//   - cloudg's own error from another call made inside the attempt says
//     nothing about the scope: nothing is recorded (that call recorded its
//     own loss), and the call ends;
//   - any error once Begin's context is done ends the call, lost as
//     LossCancelled unless it is the provider's fatal answer.
//
// A retry Retry allowed that the SDK sent without Enter or Pace is counted
// here. The outcome of a throttled or transient attempt stays open until
// Retry or End closes it. After returns err's kind (Fatal for nil, as
// Classify does), so that an integration need not classify the answer
// again. The calls nested in the attempt that wait for its slot, lent to
// another nested call that goes on, look again for a slot as After is
// called, though the Guard holds the slot across its attempts (see
// Enter); so do those waiting for the verdict while the attempt's probe
// is lent so, which may borrow it in the Guard's next attempt.
func (gd *Guard) After(err error) Kind {
	gd.attemptOver()
	if gd.e != nil && gd.retrying() {
		gd.recordRetry() // sent without Enter or Pace
	}
	if err == nil {
		gd.retries = 0
		if gd.last.err != nil {
			gd.last = answer{}
		}
		switch {
		case gd.e == nil:
			gd.to(phaseDone)
		case gd.slot != nil:
			gd.to(phaseSucceeded) // the call goes on: recorded at End
		default:
			gd.recordSuccess() // and the call is done
		}
		return Fatal
	}
	gd.last = answer{err: err}
	f, kind := gd.read(err)
	if gd.ctx.Err() != nil {
		// Nothing is learned from an answer once the call's context is
		// done, and the call ends with it.
		gd.last.kind = kind
		if gd.e != nil && (kind != Fatal || !f.answer || f.hasOwn) {
			gd.recordLost(LossCancelled, "context", gd.ctx.Err().Error()+" with "+describeRead(&f, kind, err), err)
		}
		gd.to(phaseDone)
		return kind
	}
	gd.last.kind = kind
	if f.hasOwn {
		gd.to(phaseDone) // another call's stop: never retried
		return kind
	}
	if kind == Fatal {
		if gd.e != nil && f.answer {
			gd.recordProof()
		}
		gd.last.local = !f.answer
		if f.why != "" {
			gd.last.desc = describeUnreadable(kind, err, f.why)
		}
		gd.to(phaseFinal)
		return kind
	}
	gd.last.hint, gd.last.hasHint = f.hint(gd.g.Clock().Now())
	gd.last.desc = describeRead(&f, kind, err)
	gd.to(phaseFailed)
	if gd.e == nil {
		return kind
	}
	if kind == Throttled {
		gd.recordThrottle(gd.g.now())
	} else {
		gd.recordTransient()
	}
	return kind
}

// Retry decides whether the attempt After recorded as throttled or
// transient may be retried, after wait (the SDK's own backoff; 0 when the
// SDK sleeps on its own). A negative wait is none, and one longer than
// any configured time (about 36 years) is held to that, past any
// deadline. The delay it returns is wait, or the provider's hint (capped
// at MaxPause) when longer; the caller sleeps it, or the next Enter waits
// out what the SDK's own sleep left of it. Retrying stops, and the call's
// outcome is recorded, at the first of:
//   - a transient error under a ThrottlingOnly policy, or no attempts left:
//     the breaker counts a failure, throttling is a give-up; err is the
//     attempt's error;
//   - a delay that would reach or pass the deadline: recorded the same way; err is
//     a *DeadlineExceededError wrapping the attempt's error;
//   - a provider's hint longer than the call may wait (WithMaxWait): no
//     breaker failure, the call is lost as refused; err is a
//     *WouldWaitError matching ErrNoToken and wrapping the attempt's error;
//   - an empty retry budget (every retry after the first two of a call
//     costs a token, unless the policy skips the budget): no breaker
//     failure, since the budget and not the service stopped the call; a
//     give-up when throttled; err is a *RetryBudgetExhaustedError wrapping
//     the attempt's error.
//
// For a provider that waits for its breakers' verdicts (breaker_wait), a
// transient error whose attempts or budget ran out does not stop the call:
// its failure counts towards the breaker (the service, not the budget,
// failed it) and Retry allows one more attempt, which the next Enter or
// Pace holds until a verdict; that attempt costs no budget.
//
// The retry is counted when it is sent. An SDK may retry an answer the
// governor reads as final (a connection closed before any answer): Retry
// lets it, counted and paid from the budget like any retry, learning
// nothing from it. A retry already allowed and not yet sent is allowed
// again with no delay. After a success or a stop Retry returns the error
// the call ended with: nil after a success; after a stop the refusal that
// stopped it (Retry's, Enter's or Pace's, the same value again), or the
// last answer when the stop returned that (no attempts left, a deadline
// Enter found spent).
//
// The retry's delay, which its Retry event reports (observe.Event's
// Wait), is the longer of the delay Retry returns and the time from
// Retry to the retry's Enter, TryEnter, Pace or Admit: the backoff an SDK
// sleeps after Retry allowed the retry, whose length it decides itself
// (the AWS SDK's retryer, azcore's jitter), before the waits for tokens,
// which their Wait events report. A wait Enter makes for the breaker (its
// verdict, with breaker_wait) is not part of it. A retry sent without any of them (told
// at After or End) reports Retry's delay.
func (gd *Guard) Retry(wait time.Duration) (delay time.Duration, err error) {
	switch gd.phase {
	case phaseFailed:
	case phaseFinal:
		return gd.retryFinal()
	case phaseRetryable, phaseAwaiting:
		return 0, nil
	default:
		return 0, gd.last.err
	}
	now := gd.g.now()
	if gd.outOfAttempts() {
		if err := gd.exhausted(now); err != nil {
			return 0, err
		}
	}
	return gd.allowRetry(now, wait)
}

// Resend reports whether a call whose SDK gave up after its own attempts
// may be sent again with them renewed: only for a provider that waits for
// its breakers' verdicts (breaker_wait), within the deadline, in two
// cases. After a transient answer, the call's failure counts towards the
// breaker and the next Pace waits for a verdict, as a call of Call whose
// attempts run out does; that resend costs no budget, since it waits for
// the verdict rather than adding load. After any other answer the SDK
// retries (a throttle), when the breaker held one of the retries of the
// SDK's loop until its verdict: the guard renewed the call's attempts
// then, and the SDK's count still holds those spent before it, so the
// call is sent again as Retry allows any retry (the retry budget, the
// deadline) and the next Pace takes a fresh token; a throttled call that
// could not go again (past the deadline or the max wait, or no budget
// left) is not resent, and ends as any call the SDK gave up on. Either
// resend is counted as a retry when sent. When Resend reports false
// nothing is recorded, unless a transient call's deadline passed (then
// the failure is), and End closes the call.
func (gd *Guard) Resend() bool {
	if gd.phase != phaseFailed || gd.e == nil || !gd.p.set.breakerWait {
		return false
	}
	now := gd.g.now()
	switch {
	case gd.last.kind == Transient:
		if gd.exhausted(now) != nil {
			return false
		}
	case gd.renewed <= gd.sdkLoop || !gd.resendable(now):
		return false // no verdict since the SDK's attempts began, or no retry left
	}
	if _, err := gd.allowRetry(now, 0); err != nil {
		return false
	}
	gd.sdkLoop = gd.retries
	return true
}

// Pace readies the retry of an attempt that an SDK sends without Enter
// (the AWS SDK's retries, which are not calls of their own), once Retry
// allowed it, and counts it as sent. A retry after a throttled answer
// takes a fresh token: it waits for the scope's rate and pause on top of
// the SDK's backoff, and a wait that would pass the deadline ends the
// call with the throttled answer, recorded as failed. A retry after a
// transient answer takes none, unless its scope is paused, as Admit has
// it. The time the SDK slept since Retry allowed the retry is counted as
// the call's backoff.
// For a provider that waits for its breakers' verdicts (breaker_wait),
// every retry first asks the breaker as Enter does: an open breaker or a
// probe out holds it until the verdict, within the deadline, and a retry
// that waited takes a fresh token; a refused one ends the call with a
// *CircuitOpenError wrapping the last answer. A retry Retry was not asked
// for is asked now, as Enter does. A request that ended has no retry to
// ready, and nothing of it may go unpaced: once the call's outcome is
// recorded (a stop of the governor's, whether Retry, Enter or Pace made
// it, a refusal, a give-up, a context's end, another call's stop, a
// success) or its success is held for End (a call that holds its slot
// across the SDK's retries), Pace refuses the retry with a
// *CallEndedError matching ErrCallEnded, which wraps the error the call
// ended with (the refusal that stopped it, or the last answer):
// it waits for nothing, takes nothing and records nothing (the call's
// end was recorded, once), and the SDK sends nothing, though it retried
// what ended the call (a retryer that retries the governor's refusal by
// its error code). A Guard with no attempt of its call yet (as Begin
// gives it, and End leaves it for the next call) or with an attempt out
// (its answer not reported yet: a transport's own resend of it) has
// nothing to ready either: Pace leaves it as it is and returns nil.
// A retry readied with its context done, or at its deadline (its timer
// run or not, as Enter has it), is not sent: Pace ends the call with the
// context's error joined to the last answer, recorded as cancelled. Nor
// is one readied at or past the call's deadline when the policy's binds
// (the SDK's backoff slept past it): Pace ends the call with the last
// answer, recorded as failed after its retries (a give-up when
// throttled), as Enter's retry past its deadline is.
// A retry whose provider a Configure disabled after the call began asks
// no breaker and takes no token, as Enter has it. A slot the Guard holds
// across the SDK's retries that is lent to a call nested in an attempt
// before, which goes on, is kept for that call, and the retry waits for
// another, as Enter has it: a retry that gets none (within the call's
// max wait, ErrNoSlot; or its context ends) is not sent, and the token
// it took goes back; nor is one whose slot comes back at its deadline,
// the timer due then not run yet, as Enter has it. A retry that took a
// token and waited for its slot while the scope was paused (another
// call's throttle with a Retry-After, PauseAccount) gives the slot back
// and waits for tokens again, which the pause holds, as Enter's attempt
// does; one that took none and finds the scope still paused as its slot
// comes gives the slot back and takes a token, which the pause holds.
func (gd *Guard) Pace(ctx context.Context) error { return gd.pace(ctx, true) }

// Admit readies, as Pace does, the retry of an attempt that an SDK sends
// without Enter, for an integration whose retries take no token of their
// own (a request paced once, whose retries the provider's answers slow
// down: Google's paged calls). The retry asks the breaker, as Enter does:
// a breaker that opened while the SDK slept, and still refuses, ends the
// call with a *CircuitOpenError wrapping the last answer, recorded as
// failed after its retries (a give-up when throttled); a half-open
// breaker lets the retry through as its probe. For a provider that waits
// for its breakers' verdicts (breaker_wait), the retry waits for the
// verdict instead, within the deadline, and only a retry that waited
// takes a fresh token, as the calls the verdict lets through do. Unlike
// Pace, a retry after a throttled answer takes no token, unless its
// scope is paused: a paused scope sends nothing until its pause ends, a
// retry that takes no token of its own included. A retry readied while
// another call's Retry-After or a PauseAccount holds the scope's leaf or
// account bucket (or that finds it so as its slot comes, below) takes a
// token, which the pause holds, and goes at the scope's rate once the
// pause ends, as the calls the pause held do; one whose wait would reach
// its deadline ends the call at once with the last answer, recorded as
// failed after its retries (a give-up when throttled), as Enter's retry
// that would wait past it does, and one that would wait longer than the
// call's max wait is refused with a *WouldWaitError matching ErrNoToken.
// A context that
// ends during a wait ends the call with its error, joined to the last
// answer, recorded as cancelled, and so does one done, or at its
// deadline, when Admit is called; a retry readied at or past the
// policy's deadline ends the call with the last answer, as Pace's does. The time the SDK slept since Retry
// allowed the retry is counted as the call's backoff, and the retry as
// sent. A retry Retry was not asked for is asked now. A retry of a
// request that ended (its outcome recorded, or its success held for End)
// is refused with a *CallEndedError matching ErrCallEnded, sending,
// taking and recording nothing, and a Guard with no attempt of its call
// yet or with one out is left as it is, with nil, as Pace has it. A
// retry whose provider a Configure disabled after
// the call began asks no breaker and takes no token, as Enter has it.
// A held slot lent to a call that goes on is left to it, as Pace has it.
func (gd *Guard) Admit(ctx context.Context) error { return gd.pace(ctx, false) }

// pace readies a retry sent without Enter: Pace when throttleToken (a
// retry after a throttled answer takes a fresh token), Admit otherwise.
func (gd *Guard) pace(ctx context.Context, throttleToken bool) error {
	if gd.e == nil {
		return nil
	}
	switch gd.phase {
	case phaseSucceeded, phaseDone:
		// The request ended: nothing to ready, and nothing may go
		// unpaced. Refused, recording nothing (its end was recorded).
		return &CallEndedError{Scope: gd.scope, Err: gd.last.err}
	case phaseIdle, phaseSent:
		return nil // no attempt yet, or one out: nothing to ready
	}
	gd.live()
	if gd.phase == phaseFailed || gd.phase == phaseFinal {
		if _, err := gd.Retry(0); err != nil {
			return err
		}
	}
	now := gd.g.now()
	if gd.bounded = false; gd.bind.held {
		gd.bound(now)
	}
	gd.recordBackoff(now)
	// The retry asks the breaker first, so that a breaker that opened
	// while the SDK slept stops its loop (with breaker_wait it waits for
	// the verdict instead, and a retry that waited goes at the scope's
	// rate, like a new call).
	at, err := gd.admit(ctx, now)
	if err != nil {
		return err
	}
	// A retry that would take no token takes one when its scope is
	// paused (another call's Retry-After, PauseAccount): a paused scope
	// sends nothing until its pause ends, and then at its rate.
	token := gd.p.set.enabled && (at != now || (throttleToken && gd.last.kind == Throttled) || gd.pausedNow(at))
	now = at
	// A retry readied at its deadline, or with its context done, is not
	// sent, whether it takes a token or not, as Enter has it; nor one
	// readied at or past the policy's (the SDK slept past it).
	if err := gd.g.ctxErr(ctx, now); err != nil {
		return gd.stopByContext(err)
	}
	if now >= gd.deadlineAt() {
		return gd.failAt(now, "deadline", gd.last.err)
	}
	// The slot held (or borrowed) across the SDK's retries, lent to a
	// call nested in an attempt before, which goes on: kept for it, and
	// this retry takes another, as Enter has it.
	slot := (gd.slot != nil || gd.loan != nil) && gd.lends().lentOut()
	if err := gd.readySend(ctx, now, token, slot); err != nil {
		return err
	}
	gd.held = nil // the tokens are used
	gd.recordRetry()
	gd.to(phaseSent)
	return nil
}

// readySend takes what a request sent on the call's admission without
// Enter (an SDK's retry readied by Pace or Admit, an integration's resend
// of an attempt that was never sent: readyResend) takes before it goes,
// from now: a token when token says so (its wait held to the deadline and
// the max wait, and by the scope's pauses: see takeToken), and a slot of
// its own when slot says so (the one the Guard holds, if any, is given
// back, or kept for the call nested in an attempt it is lent to: see
// Release), waiting for it within the max wait and the deadline (see
// Enter). A slot that comes back at
// the deadline, the context's timer due then not run yet, is given back
// and ends the call, as Enter has it. A scope paused while the request
// waited for its slot holds it: one that took a token gives the slot
// back and waits for tokens again, which the pause holds, as Enter's
// attempt does; one that took none and finds the scope still paused
// gives the slot back and takes a token, which the pause holds. A
// request that gets no token or slot gives back what it took and ends
// the call, recorded: a wait past the deadline or the max wait as
// takeToken and refuseWait have it, a context's end as stopByContext
// has it. The tokens of a request that may go are still held (Guard.held)
// when readySend returns: the caller uses them, or gives them back.
func (gd *Guard) readySend(ctx context.Context, now time.Duration, token, slot bool) error {
	for {
		if token {
			if err := gd.takeToken(ctx, now); err != nil {
				return err
			}
		}
		if !slot {
			break
		}
		gd.Release()
		from, waited, err := gd.acquire(ctx)
		if err != nil {
			// A request that gets no slot gives its tokens back, as
			// Enter's attempt does.
			gd.cancel(gd.g.now(), nil) // its tokens were due: see cancel
			switch err {
			case errSlotWait:
				return gd.refuseWait(0, ErrNoSlot)
			case errSlotDeadline:
				return gd.passDeadline(gd.g.now(), 0, nil)
			}
			return gd.stopByContext(err)
		}
		if !waited {
			break
		}
		// A slot that came back at the deadline, before the context's
		// timer due then ran: the deadline is spent, as Enter has it.
		if err := gd.g.ctxErr(ctx, gd.g.now()); err != nil {
			gd.Release()
			gd.cancel(gd.g.now(), nil)
			return gd.stopByContext(err)
		}
		// A scope paused while the request waited for its slot holds a
		// request that takes a token, as it holds Enter's attempt: it
		// waits for tokens again, which the pause holds. One that takes
		// none is held by a pause still in force: it gives the slot
		// back and takes a token, which the pause holds.
		if now = gd.g.now(); token {
			if !gd.pausedDuringSlotWait(now, from) {
				break
			}
		} else if gd.p.set.enabled && gd.pausedNow(now) {
			gd.Release()
			token = true
		} else {
			break
		}
	}
	return nil
}

// Release gives the slot back, if one is held. It is safe to call more
// than once; the slot is released exactly once. A slot lent to a call
// nested in the Guard's attempt that is still going on (made by a
// goroutine the attempt started and did not wait for) stays taken until
// that call gives it back, so that the account stays within its cap: the
// Guard's own, and one the Guard borrowed from an enclosing call and lent
// on, whose loan the Guard gives back then. A slot the Guard holds after
// it is lent on its own, the kept one's loan still out (see Enter).
func (gd *Guard) Release() {
	if l := gd.loan; l != nil {
		// A slot it borrowed that it lent on in turn is kept, as its own
		// would be.
		if (gd.orphan == nil || gd.orphan.repay()) && !gd.keepLent(nil, l) {
			l.giveBack()
		}
		gd.loan, gd.slotIn = nil, nil
	}
	if gd.slot != nil {
		if gd.orphan == nil || gd.orphan.drop() {
			// Uncounted first: a slot given back is a call no longer
			// counted in flight by its scope.
			if !gd.e.flags.unbusy() {
				gd.g.unbusyLive(gd.scope)
			}
			if !gd.keepLent(gd.slot, nil) {
				gd.slot.Release()
				if gd.g.slotWatch.Load() != nil {
					gd.g.slotFreed(gd.slot, gd.scope)
				}
			}
		}
		gd.slot = nil
	}
}

// unbusyLive uncounts a call of scope that held a slot on the live entry
// of scope: a Reset or a Configure that retired the entry the call
// counted itself on carried its count there (entryFlags).
func (g *Governor) unbusyLive(scope Scope) {
	for {
		if _, e := g.resolve(scope); e.flags.unbusy() {
			return
		}
		// Retired meanwhile, with the count: on to the next live entry.
	}
}

// End releases the slot if one is still held and closes the call with err,
// the SDK's final answer, when its outcome is still open: a throttled or
// transient last attempt the SDK gave up on counts as a breaker failure
// (and throttling as a give-up); with no attempt recorded, err is
// classified and recorded as After and a stop would record it. A nil err
// after an attempt no After reported is a success, and so is a call whose
// last request succeeded while it held its slot. A retry Retry allowed and
// After never saw is counted. A call that ends with a local error (After
// saw it last, or End's err is one with no attempt After reported) is
// lost as LossErrored. A call ended with the refusal TryEnter gave it
// (of its first attempt, or of a retry, which was not sent) is recorded
// as Enter records its refusal. cloudg's own errors record nothing else;
// once Begin's context is done, a call whose outcome is still open is
// recorded as cancelled (LossCancelled), unless err is the provider's
// fatal answer to an attempt After did not see, which loses nothing, as
// After has it. The Guard may then carry a new call of the same scope.
// A call is ended once: End, EndDenied or EndPanicked called again before
// a step of a new call (Enter, TryEnter, After) records nothing, as
// Release called again gives nothing back; so a new call of the Guard's
// is recorded from such a step, and End's err alone, with no attempt,
// is recorded only for the Guard's first call. A guard that is never
// ended records nothing more: a per-attempt hook that cannot know whether its SDK will retry leaves the
// outcome to whoever can. Its slot, if it holds one, stays held until the
// garbage collector finds the guard unreachable; then the slot is given
// back (one lent to a call nested in its attempt that goes on, once that
// call gives it back), and the governor's first such leak is logged. So does a slot it
// borrowed from an enclosing call (see Enter), which that call, its
// attempt over, keeps for the loan until it comes back, and a half-open
// breaker's probe it borrowed from an enclosing call whose attempts are
// gated (made WithNestedCalls, an integration's request) and gave no
// verdict for, which goes back to that call's attempt if it still runs.
func (gd *Guard) End(err error) {
	gd.Release()
	switch {
	case gd.e == nil:
	case gd.phase == phaseSucceeded: // the common SDK call, in line
		gd.recordSuccess()
	case gd.closed: // ended already: nothing more to record
	default:
		gd.settle(err)
	}
	gd.reset()
}

// EndPanicked ends the call, as End does, when code run for it did not
// return: a function the integration calls during an attempt or between
// the Guard's verbs (a transport, a middleware, a request body) panicked,
// or called runtime.Goexit. The slot, if one is held, is given back. A
// call whose outcome is still open (an attempt was entered and its
// outcome not recorded, whatever After saw of it) is lost as
// LossPanicked, as a call of Call or Do whose function panics is, and
// the breaker learns nothing from it; a call no attempt was entered for,
// or whose outcome is recorded, records nothing more. EndPanicked
// recovers nothing of the code's: call it from a deferred function that
// knows the code did not return, and the panic goes on as it was (a panic
// the governor's log handler raises on the line that says the call was
// lost is dropped, so that the caller recovers the code's):
//
//	returned := false
//	defer func() {
//		if !returned {
//			gd.EndPanicked()
//		}
//	}()
//	resp, err := send(req)
//	returned = true
//
// The Guard may then carry a new call of the same scope. As End, it ends
// a call once: called after End, EndDenied or EndPanicked ended it, it
// records nothing.
func (gd *Guard) EndPanicked() {
	gd.Release()
	if gd.phase != phaseIdle && gd.phase != phaseDone {
		gd.recordPanicked()
	}
	gd.reset()
}

// EndDenied ends the call, as End does, with err, the provider's answer
// that denied it for a limit the governor does not pace, as the
// integration reads that answer (another quota than the scope's, spent:
// GitHub's copilot_usage_records answered to a REST call). The call is
// lost as LossDenied: counted in the scope's lifetime counters and the
// run's Stats (Counters.Denied), listed in the task's Ledger with err's
// message, and reported as a Lost event (Loss "denied", Reason "quota").
// Nothing else is learned from it: the scope is neither slowed nor
// paused, and its breaker counts no failure; as any answer of the
// provider's that After reads as fatal, it proves the service reachable,
// and the breaker resets as on a success. The slot, if one is held, is
// given back.
//
// EndDenied takes the place of End for such an answer, reported to After
// or not (an attempt After did not see, or a retry sent without Enter or
// Pace, is counted as After and End count it). An integration has After
// read the answer as fatal: one After recorded as a throttle has slowed
// and paused the scope already. Once Begin's context is done, nothing is
// learned from the answer (the breaker is left as it is), but the call is
// still lost as denied, After having seen the answer or not: the caller
// may hold the answer with no error, and the Ledger is what tells the
// task that the call was lost. A call whose outcome is recorded already
// (a success, a stop of the governor's, a loss) or held for End (a
// success while the call holds its slot), and an err that is no
// provider's answer (nil, a local error, cloudg's own error: see
// IsProviderAnswer), end as End ends them, with nothing recorded as
// denied, and so does a call already ended (End, EndDenied or
// EndPanicked, with no step of a new call since: see End). EndDenied is
// a step of the call, as End is: call it from the call's goroutine. The
// Guard may then carry a new call of the same scope.
func (gd *Guard) EndDenied(err error) {
	switch {
	case gd.e == nil, gd.closed, gd.phase == phaseSucceeded, !gd.isAnswer(err),
		gd.phase == phaseDone && !gd.answeredLate():
		gd.End(err)
		return
	}
	gd.Release()
	if gd.retrying() {
		gd.recordRetry() // the SDK sent it without telling After
	}
	if (gd.phase != phaseFinal || gd.last.local) && gd.ctx.Err() == nil {
		gd.recordProof() // After did not record the answer as the provider's fatal one
	}
	gd.recordDenied(err)
	gd.reset()
}

// answeredLate reports whether the call, done, ended with the provider's
// fatal answer, from which nothing was recorded: one After saw once
// Begin's context was done, or one whose retry the SDK asked for and a
// stop refused (a deadline or the breaker, which blame no one).
func (gd *Guard) answeredLate() bool {
	return gd.last.err != nil && gd.last.kind == Fatal && !gd.last.local && IsProviderAnswer(gd.last.err)
}

// reset readies the Guard for a new call of its scope, once End or
// EndPanicked closed the last.
func (gd *Guard) reset() {
	gd.giveProbeBack()
	gd.to(phaseIdle)
	gd.lease, gd.retries, gd.renewed, gd.sdkLoop, gd.last = leaseNone, 0, 0, 0, answer{}
	gd.lim.attempts = 0 // resolved again for the next call
	gd.closed = true
}

// settle records the outcome End closes, if it is still open, unless
// Begin's context is done: an attempt's answer, or a failure the SDK gave
// up on. (A success seen while the call held its slot End records itself.)
func (gd *Guard) settle(err error) {
	switch gd.phase {
	case phaseSucceeded, phaseDone:
		return
	case phaseFinal:
		if err != nil && gd.last.local {
			gd.recordErrored("local") // the SDK ended with the local error After saw
		}
		return
	case phaseIdle:
		if err == nil {
			return
		}
	}
	if cerr := gd.ctx.Err(); cerr != nil {
		switch {
		case err == nil && gd.phase == phaseSent:
			gd.recordSuccess()
		case err != nil && gd.phase == phaseSent && gd.isFatalAnswer(err):
			// The provider's fatal answer, which After did not see: no
			// lost call, as After has it, and nothing learned.
		default:
			gd.recordCancelled(cerr) // ended by its context, after an answer or while waiting for one
		}
		return
	}
	switch gd.phase {
	case phaseRetryable, phaseAwaiting:
		if gd.settleRetryRefusal(err) {
			return // not sent
		}
		gd.recordRetry() // the SDK sent it without telling After
		fallthrough
	case phaseFailed:
		switch {
		case err == nil:
			gd.recordSuccess()
		case gd.last.kind == Fatal:
			// The SDK's retry of a final answer (retryFinal), which After
			// did not see: its own answer decides.
			gd.settleAnswer(err)
		default:
			gd.recordFailed(gd.g.now(), "sdk")
		}
	default: // phaseSent, or phaseIdle with an error: an attempt After did not see
		gd.settleAnswer(err)
	}
}

// settleAnswer records err, the final answer of a call whose last attempt
// After did not see, as After and a stop would: a throttle or a transient
// error is counted as After counts it (a throttle lowers the rate and
// pauses the scope for its hint), then ends the call as a stop does.
func (gd *Guard) settleAnswer(err error) {
	if err == nil {
		gd.recordSuccess()
		return
	}
	f, kind := gd.read(err)
	if f.hasOwn {
		if gd.phase == phaseIdle {
			gd.settleRefusal(err) // a call TryEnter refused, which the caller gave up on
		}
		return
	}
	gd.last = answer{err: err, kind: kind, desc: describeRead(&f, kind, err), local: kind == Fatal && !f.answer}
	switch {
	case kind != Fatal:
		// The answer first, as After records it (a throttle lowers the
		// rate and pauses the scope for its hint), then the stop.
		now := gd.g.now()
		gd.last.hint, gd.last.hasHint = f.hint(gd.g.Clock().Now())
		if kind == Throttled {
			gd.recordThrottle(now)
		} else {
			gd.recordTransient()
		}
		gd.recordFailed(now, "sdk")
	case f.answer:
		gd.recordProof()
	default:
		gd.recordErrored("local")
	}
}

// settleRetryRefusal records a call ended with the refusal TryEnter gave
// its retry, which was not sent, as Enter records its refusal: a wait's
// as refused (no breaker failure: the caller, not the service, stopped
// it), an open breaker's as failed after its retries. It reports whether
// err is such a refusal: of the call's scope, wrapping an answer.
func (gd *Guard) settleRetryRefusal(err error) bool {
	var ww *WouldWaitError
	var coe *CircuitOpenError
	switch {
	case readAs(err, &ww) && ww.Scope == gd.scope && ww.Last != nil:
		gd.recordRefused(ww)
	case readAs(err, &coe) && coe.Scope == gd.scope && coe.Err != nil:
		if gd.phase == phaseAwaiting {
			gd.recordSpent("breaker") // its failure counted when its attempts ran out
		} else {
			gd.recordFailed(gd.g.now(), "breaker")
		}
	default:
		return false
	}
	return true
}

// settleRefusal records a call ended with the refusal TryEnter gave it
// (TryEnter records none, so that a caller may try again): an open
// breaker's is a skip, a wait's a refusal.
func (gd *Guard) settleRefusal(err error) {
	var coe *CircuitOpenError
	var ww *WouldWaitError
	var de *DeadlineExceededError
	switch {
	case readAs(err, &coe):
		gd.recordRejected(coe, "")
	case readAs(err, &ww):
		gd.recordRefused(ww)
	case readAs(err, &de):
		gd.recordRefused(de)
	}
}

// readAs is errread.As(err, target)'s match, for err, an error a caller
// ended a call with: a panic of a method of an error of its chain (an
// Unwrap that reads a nil pointer) is the error's, and ends the read of
// that error's causes only, so that a match beside it (the refusal a
// caller joined after it, errors.Join(callerErr, refusal)) is found all
// the same. A match that is a nil pointer is none.
func readAs(err error, target any) bool {
	found, _ := errread.As(err, target)
	return found
}
