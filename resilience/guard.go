package resilience

import (
	"context"
	"time"

	"github.com/cloudg/cloudg/internal/bulkhead"
)

// Guard is the state machine of one logical call to one scope. Call and Do
// run their retry loop on one; the SDK integrations, whose SDK runs its own
// retry loop, drive one from the SDK's hooks. Its verbs follow the moments
// every SDK exposes:
//
//	gd, err := gov.Begin(ctx, scope)  // resolve the scope
//	for {
//		if err := gd.Enter(ctx); err != nil { return err } // breaker, deadline, count, tokens, slot
//		err := send(ctx)
//		gd.Release()                   // where a slot is held per attempt
//		gd.After(err)                  // classify once: halve and pause, count
//		if err == nil { break }
//		delay, rerr := gd.Retry(backoff) // retries, deadline, budget
//		if rerr != nil { break }
//		sleep(delay)
//	}
//	gd.End(err)                        // release, and the outcome if still open
//
// Enter counts one call; an SDK whose retries are not calls of their own
// (the AWS SDK's) sends them without Enter, pacing a throttled one with
// Pace. A slot is held until Release or End: an integration chooses whether
// it covers an attempt, a call with its retries, or a whole listing.
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
	ctx    context.Context // Begin's: its deadline bounds the call, its end ends learning
	stats  *Stats          // the run's stats, or nil
	run    *counters       // the run's counters for the service scope, or nil
	ledger *Ledger
	slot   *bulkhead.Bulkhead // the bulkhead a held slot belongs to, or nil
	orphan *orphanSlot        // gives the slot back if a guard from Begin is dropped; nil on Do's stack

	rp       *RetryPolicy // the call's policy option, resolved on first need
	lim      retryLimits
	resolved bool
	start    time.Duration // when the current call started
	limit    time.Duration // its deadline (resolved with lim)
	ctxBound bool          // the context's deadline is the binding one

	phase    phase
	admitted bool // the breaker let the operation through; further requests are not checked again
	probe    bool // the call is a half-open breaker's probe
	pending  bool // a retry Retry allowed is counted when it is sent
	// succeeded: a request of a call that holds its slot across requests
	// (an SDK call with its retries, a listing) succeeded; the call's
	// success is recorded when it ends, so that a probe holds its lease
	// until then and a listing is one success.
	succeeded bool
	awaiting  bool // the call's retries ran out; it waits for a verdict before the next attempt (verdict.go)
	lastKind  Kind // of last
	retries   int  // retries of the current call; the first freeRetries are free
	renewed   int  // retries made before the call's attempts were renewed (verdict.go)

	last      error  // the last failed attempt's error
	desc      string // last as DescribeError words it
	hint      time.Duration
	hasHint   bool
	prevSleep time.Duration // the last delay Retry gave, for the jitter
	notBefore time.Duration // a retry of a transient answer waits until then
	retryAt   time.Duration // when Retry allowed the retry whose backoff is open
	backoff   bool          // a backoff since retryAt is still to be counted
}

// Begin starts a logical call to scope. WithPolicy among opts sets the
// bounds Retry applies (the SDK integrations pass their SDK's); other
// options are ignored. ctx carries the run's Stats and Ledger, its
// deadline bounds the call, and once it is done nothing more is learned
// from the call's answers. Begin fails only for a scope without a provider.
func (g *Governor) Begin(ctx context.Context, scope Scope, opts ...Option) (*Guard, error) {
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
		return false
	}
	gd.beginAt(ctx, g, scope, p, p.scopes.lookup(scope), rp)
	return true
}

// beginAt sets a Guard up on a scope already resolved to its provider and
// entry (a Bound's).
func (gd *Guard) beginAt(ctx context.Context, g *Governor, scope Scope, p *provider, e *scopeEntry, rp *RetryPolicy) {
	gd.g, gd.p, gd.e, gd.scope, gd.ctx, gd.rp = g, p, e, scope, ctx, rp
	b := bindingOf(ctx)
	if b.stats != nil {
		gd.stats = b.stats
		gd.run = gd.e.runCounters(b.stats)
	}
	gd.ledger = b.ledger
}

// Enter readies an attempt and blocks until it may be sent:
//
//  1. the breaker: open, and a *CircuitOpenError. Before the first attempt
//     the call is counted as rejected and goes to the ledger as skipped
//     (nothing was sent); before a retry the call was sent and failed, and
//     is recorded as failed with its last error, which the error wraps. A
//     request that follows a success (a listing's next page) is not checked
//     again. A half-open breaker's probe has its own retries let through.
//     A provider with breaker_wait has the call wait for the breaker's
//     verdict instead, when its deadline allows (verdict.go);
//  2. the deadline (the policy's, or the context's if sooner): spent, and
//     the call ends with its last error (or a *DeadlineExceededError before
//     the first attempt);
//  3. a retry of a transient answer waits out the delay Retry gave;
//  4. a token from the provider, account and leaf buckets, waiting for the
//     slowest; a wait that would pass the deadline is not made;
//  5. a slot of the provider x account bulkhead, unless one is held;
//  6. one call, and the retry it is, counted.
//
// A context that ends during a wait returns its error, joined to the last
// error; the slot wait is made with ctx. A call made inside another's
// attempt, whose context answers Value(gov) with that call's *Guard
// holding a slot of the same bulkhead, takes a slot only if one is free and
// otherwise goes ahead without one: it never waits for a slot its own
// caller holds.
func (gd *Guard) Enter(ctx context.Context) error { return gd.enter(ctx, true) }

// TryEnter is Enter without waiting: when a token cannot be used at once
// or no slot is free it takes nothing and returns a *DeadlineExceededError
// whose Wait is the time a token would have taken.
func (gd *Guard) TryEnter() error { return gd.enter(gd.ctx, false) }

func (gd *Guard) enter(ctx context.Context, block bool) error {
	if gd.e == nil {
		return nil
	}
	now := gd.g.now()
	retry := gd.phase == failed || gd.phase == retrying || gd.phase == final
	switch {
	case gd.phase == closed:
		gd.newCall(now)
	case gd.phase == fresh:
		gd.start = now // the call starts with its first attempt
	}
	if retry || !gd.admitted {
		if err := gd.admit(ctx, &now, retry, block); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return gd.stopByContext(err, retry)
	}
	if retry {
		gd.limits()
		if now >= gd.limit {
			gd.recordFailed(now, "deadline")
			return gd.last
		}
		if d := gd.notBefore - now; d > 0 {
			if !block {
				return &DeadlineExceededError{Scope: gd.scope, Wait: d}
			}
			if err := gd.g.sleep(ctx, d); err != nil {
				return gd.stopByContext(err, retry)
			}
			now = gd.g.now()
		}
		gd.recordBackoff(now)
	}
	if err := gd.takeToken(ctx, now, retry, block); err != nil {
		return err
	}
	if gd.slot == nil {
		if err := gd.acquire(ctx, block); err != nil {
			if !block {
				gd.cancel(gd.g.now())
				return &DeadlineExceededError{Scope: gd.scope}
			}
			return gd.stopByContext(err, retry)
		}
	}
	gd.sendingRetry()
	gd.recordCall()
	if gd.observed() {
		gd.recordCallEvent()
	}
	gd.phase = sent
	gd.admitted = true
	// Last, so that the step never reclaims this call's own scope.
	gd.g.maybeReclaim(now)
	return nil
}

// After records the answer to the attempt sent last, classified once:
//   - nil is a success: the breaker resets, the leaf recovers additively,
//     the budget gets its refund, and the next request of the same
//     operation (a listing's next page) gets its own free retries. A call
//     that still holds its slot (an SDK call with its retries, a listing)
//     has its success recorded by End, once, so that a probe holds its
//     lease until the call is over;
//   - a throttling answer halves the leaf's rate (once per congestion
//     event) and pauses it for the provider's hint, capped at MaxPause;
//   - a transient error is counted;
//   - a fatal answer from the provider proves the service reachable: the
//     breaker resets as on a success, and the call ends;
//   - a local fatal error, cloudg's own error from another call made inside
//     the attempt, or any error once Begin's context is done, says nothing
//     about the scope: nothing is recorded, and the call ends.
//
// The outcome of a throttled or transient attempt stays open until Retry
// or End closes it. After returns err's kind (Fatal for nil, as Classify
// does), so that an integration need not classify the answer again.
func (gd *Guard) After(err error) Kind {
	if gd.e != nil {
		gd.sendingRetry() // sent without Enter or Pace
	}
	gd.pending = false
	if err == nil {
		if gd.e != nil {
			if gd.slot != nil {
				gd.succeeded = true // the call goes on: recorded at End
			} else {
				gd.recordSuccess()
			}
		}
		gd.phase, gd.last, gd.retries = closed, nil, 0
		return Fatal
	}
	gd.succeeded, gd.last = false, err
	if gd.ctx.Err() != nil {
		gd.phase = closed
		return Classify(err)
	}
	f := inspect(err)
	kind := f.kind(err)
	gd.lastKind = kind
	if f.hasOwn {
		gd.phase = closed // another call's stop: never retried
		return kind
	}
	if kind == Fatal {
		if gd.e != nil && f.answer {
			gd.recordProof()
		}
		gd.phase = final
		return kind
	}
	gd.hint, gd.hasHint = f.hint(gd.g.Clock().Now())
	gd.desc = describe(kind, err)
	gd.phase = failed
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
// SDK sleeps on its own). The delay it returns is wait, or the provider's
// hint (capped at MaxPause) when longer; the caller sleeps it, or the next
// Enter waits out what the SDK's own sleep left of it. Retrying stops, and
// the call's outcome is recorded, at the first of:
//   - a transient error under a ThrottlingOnly policy, or no attempts left:
//     the breaker counts a failure, throttling is a give-up; err is the
//     attempt's error;
//   - a delay that would pass the deadline: recorded the same way; err is
//     a *DeadlineExceededError wrapping the attempt's error;
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
// Pace holds until a verdict (verdict.go); that attempt costs no budget.
//
// The retry is counted when it is sent. An SDK may retry an answer the
// governor reads as final (a connection closed before any answer): Retry
// lets it, counted and paid from the budget like any retry, learning
// nothing from it. After a success or a stop Retry returns the error the
// call ended with.
func (gd *Guard) Retry(wait time.Duration) (delay time.Duration, err error) {
	if gd.phase == final {
		return gd.retryFinal()
	}
	return gd.retry(wait, false, false)
}

// Release gives the slot back, if one is held. It is safe to call more
// than once; the slot is released exactly once.
func (gd *Guard) Release() {
	if gd.slot != nil {
		if gd.orphan == nil || gd.orphan.drop() {
			gd.slot.Release()
		}
		gd.slot = nil
	}
}

// End releases the slot if one is still held and closes the call with err,
// the SDK's final answer, when its outcome is still open: a throttled or
// transient last attempt the SDK gave up on counts as a breaker failure
// (and throttling as a give-up); with no attempt recorded, err is
// classified and recorded as After and a stop would record it. A nil err
// after an attempt no After reported is a success, and so is a call whose
// last request succeeded while it held its slot. A retry Retry allowed and
// After never saw is counted. cloudg's own errors and errors once Begin's
// context is done record nothing. The Guard may then carry a new call of
// the same scope. A guard that is never ended releases nothing and
// records nothing more: a per-attempt hook that cannot know whether its
// SDK will retry leaves the outcome to whoever can.
func (gd *Guard) End(err error) {
	gd.Release()
	if gd.e != nil {
		if gd.phase == retrying && gd.ctx.Err() == nil {
			gd.sendingRetry() // the SDK sent it without telling After
		}
		switch {
		case gd.phase == sent || gd.phase == failed || gd.phase == retrying || gd.phase == fresh && err != nil:
			gd.close(err) // an attempt after the last success is open
		case gd.succeeded:
			gd.recordSuccess()
		}
	}
	gd.phase, gd.admitted, gd.probe, gd.pending, gd.succeeded, gd.retries = fresh, false, false, false, false, 0
	gd.renewed, gd.awaiting = 0, false
	gd.last, gd.resolved = nil, false
}
