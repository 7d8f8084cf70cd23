package resilience

import (
	"time"

	"github.com/cloudg/cloudg/internal/ctxend"
	"github.com/cloudg/cloudg/internal/hint"
	"github.com/cloudg/cloudg/internal/panicmark"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/state"
)

// The functions of this file are the only places where a Guard records an
// event. Each writes the scope's lifetime counters and, when the context
// carries a Stats, the run's counters, and touches the scope's state; none
// changes the Guard's phase, which the verbs decide, but those that record
// a call's outcome (a success, a loss), which mark it recorded (ended).
// Each updates all of that before it emits an event of it: the observer's
// panics are recovered, but a panic of the log handler goes on to the
// caller, as log/slog's does, and must leave nothing half recorded, nor an
// outcome open for EndPanicked to record again.

// count adds one to the scope's tally t, for its lifetime and the run.
func (gd *Guard) count(t tally) {
	gd.live() // into the counters in force, after a Reset too
	gd.e.lifeCounters(gd.g).n[t].Add(1)
	if gd.run != nil {
		gd.run.n[t].Add(1)
	}
}

// observed reports whether events go anywhere: an observer or a logger.
func (gd *Guard) observed() bool { return gd.g.observed }

// recordCall counts one call (an attempt, or a page of a listing).
func (gd *Guard) recordCall() {
	if gd.e.calls.Add(1) < 0 {
		gd.g.folded.Add(1) // the entry was dropped meanwhile: the totals count it
	}
	if gd.run != nil {
		gd.run.n[callsTally].Add(1)
	}
}

// recordCallEvent sends the observe.Call of the call recordCall counted. It
// is apart from recordCall so that the counting stays small enough to be
// inlined into Enter, which calls this only when events are observed.
func (gd *Guard) recordCallEvent() { gd.emit(&observe.Event{Kind: observe.Call}) }

// recordWait counts a wait of w for a rate token of the bucket level,
// which ends now: in the waits added up, and in the wall-clock time
// waited of the scope and of all scopes, for the lifetime and the run.
func (gd *Guard) recordWait(w time.Duration, level string) {
	gd.live()
	end := gd.g.now()
	gd.e.lifeCounters(gd.g).recordWaitAt(w, end)
	gd.g.waited.add(end-w, end)
	if gd.run != nil {
		gd.run.recordWaitAt(w, end)
		gd.bind.stats.waited.add(end-w, end)
	}
	if gd.observed() {
		gd.emit(&observe.Event{Kind: observe.Wait, Wait: w, Level: level})
	}
}

// recordBackoff counts the time from Retry allowing the retry about to be
// sent to now as the call's backoff: the sleep of Call and Do's loop, or
// of an SDK's own retry loop, before the token waits (counted as waits)
// and without a wait for the breaker (Enter gives now less it).
// It is called once per retry, as the retry leaves phaseRetryable or
// phaseAwaiting for phaseSent. That time is the retry's delay too, which
// its Retry event reports when longer than Retry's (see Guard.Retry).
func (gd *Guard) recordBackoff(now time.Duration) {
	if !gd.retrying() {
		return
	}
	d := now - gd.retryAt
	if d <= 0 {
		return
	}
	gd.slept = d
	gd.live()
	gd.e.lifeCounters(gd.g).backoffNS.Add(int64(d))
	if gd.run != nil {
		gd.run.backoffNS.Add(int64(d))
	}
}

// recordRetry counts a retry, when it is sent.
func (gd *Guard) recordRetry() {
	gd.count(retriesTally)
	if gd.observed() {
		gd.emit(&observe.Event{Kind: observe.Retry, Retry: int(gd.retries), Wait: max(gd.prevSleep, gd.slept)})
	}
}

// recordThrottle records a throttled attempt: the leaf halves (once per
// congestion event) and pauses for the provider's hint, capped at
// MaxPause.
func (gd *Guard) recordThrottle(now time.Duration) {
	gd.live()
	gd.count(throttledTally)
	var pause time.Duration
	if gd.last.hasHint {
		pause = hint.Cap(gd.last.hint)
	}
	observed := gd.observed()
	var before state.BucketSnapshot
	if observed {
		before = gd.e.leaf.Snapshot(now)
	}
	rate, decreased := gd.e.leaf.Throttle(now, pause)
	if decreased {
		gd.recordRate(rate, true)
	}
	gd.recordError()
	dead := gd.noteFailure(now, true)
	if pause > 0 {
		gd.countPause(now, pause)
	}
	if observed {
		gd.emit(&observe.Event{Kind: observe.Throttle, Err: gd.last.err, Hint: gd.last.hint, HasHint: gd.last.hasHint})
		gd.reportDead(dead)
		if decreased {
			gd.emit(&observe.Event{Kind: observe.RateChange, OldRate: before.Rate, Rate: rate, Ceiling: before.Ceiling})
		}
		if pause > 0 {
			gd.emit(&observe.Event{Kind: observe.Pause, Level: "leaf", Time: gd.g.epoch.Add(now), Until: gd.g.epoch.Add(now + pause)})
		}
	}
}

// countPause counts a pause of d set at now, for the lifetime and the run.
func (gd *Guard) countPause(now, d time.Duration) {
	gd.e.lifeCounters(gd.g).recordPause(now, d)
	if gd.run != nil {
		gd.run.recordPause(now, d)
	}
}

// recordTransient records an attempt that failed with a transient error.
func (gd *Guard) recordTransient() {
	gd.live()
	gd.count(transientTally)
	gd.recordError()
	gd.reportDead(gd.noteFailure(gd.g.now(), false))
}

// noteFailure notes a failed answer in the scope's health, and opens the
// breaker of a scope found dead (see health). It returns why it opened
// the breaker, "" when it did not; the caller reports the change.
func (gd *Guard) noteFailure(now time.Duration, throttled bool) (tripped string) {
	dead, forGood, streak := gd.e.noteFailure(gd.p.set, now, throttled, gd.noted)
	if gd.noted = streak; dead {
		return gd.openDead(now, forGood)
	}
	return ""
}

// reportDead reports the breaker opening that openDead made, for dead
// ("" when it made none).
func (gd *Guard) reportDead(dead string) {
	if dead != "" {
		gd.recordBreaker(state.Closed, state.Open, dead)
	}
}

// openDead opens the breaker of a scope found dead at now, and returns
// why ("down" or "throttled for good"); "" when it did not. A closed
// breaker only: an open one is open already, and a half-open one's probe
// has its own retries, whose outcome decides.
func (gd *Guard) openDead(now time.Duration, forGood bool) string {
	b := gd.e.breaker
	reason := "down"
	if forGood {
		reason = "throttled for good"
	}
	if b.Snapshot(now).State != state.Closed {
		return ""
	}
	if h := gd.e.health.Load(); h != nil && h.endClosed(gd.e.sharedSuccess()) {
		return "" // a success ended the streak: the probe's that closed the breaker it opened, or another process's
	}
	if !trip(b, now, gd.p.set.breaker.Threshold, reason) {
		return ""
	}
	if forGood {
		gd.count(forGoodTally)
	}
	gd.e.noteOpened(reason, true)
	gd.count(tripsTally)
	return reason
}

// recordRate records the leaf's new adaptive rate.
func (gd *Guard) recordRate(rate float64, decreased bool) {
	gd.e.lifeCounters(gd.g).recordRate(rate, decreased)
	if gd.run != nil {
		gd.run.recordRate(rate, decreased)
	}
}

// recordPause holds every caller of b, the bucket of level ("leaf" or
// "account"), for d, capped at MaxPause.
func (gd *Guard) recordPause(b state.Bucket, level string, d time.Duration) {
	now, pause := gd.g.now(), hint.Cap(d)
	b.Pause(now, pause)
	if pause > 0 {
		gd.countPause(now, pause)
	}
	if gd.observed() && pause > 0 {
		gd.emit(&observe.Event{Kind: observe.Pause, Level: level, Time: gd.g.epoch.Add(now), Until: gd.g.epoch.Add(now + pause)})
	}
}

// recordError keeps the last attempt's description as the scope's last
// error.
func (gd *Guard) recordError() { gd.recordErrorAs(gd.last.desc) }

// recordErrorAs keeps desc as the scope's last error.
func (gd *Guard) recordErrorAs(desc string) {
	gd.e.lifeCounters(gd.g).lastErr.Store(&desc)
	if gd.run != nil {
		gd.run.lastErr.Store(&desc)
	}
}

// recordSuccess records a success, which ends the call (phaseDone): the
// breaker resets, the budget gets its refund, the leaf recovers.
func (gd *Guard) recordSuccess() {
	gd.loanSettled() // the verdict, if the call borrowed the probe: none to give back
	gd.to(phaseDone)
	gd.live()
	gd.e.noteSuccess()
	closed := gd.e.breaker.Success()
	gd.p.budget.Succeed()
	if gd.e.leaf.Recovering() {
		gd.recordRecovery(closed)
	} else if closed {
		gd.recordBreaker(state.HalfOpen, state.Closed, "")
	}
}

// recordRecovery lets the recovering leaf take a success's step, and
// then reports the breaker closing when closed, and the leaf's new rate.
func (gd *Guard) recordRecovery(closed bool) {
	now := gd.g.now()
	observed := gd.observed()
	var before state.BucketSnapshot
	if observed {
		before = gd.e.leaf.Snapshot(now) // the controller's step is its own
	}
	rate, increased := gd.e.leaf.Success(now)
	if increased {
		gd.recordRate(rate, false)
	}
	if closed {
		gd.recordBreaker(state.HalfOpen, state.Closed, "")
	}
	if increased && observed {
		gd.emit(&observe.Event{Kind: observe.RateChange, OldRate: before.Rate, Rate: rate, Ceiling: before.Ceiling})
	}
}

// recordProof records a fatal answer from the provider: the service is
// reachable, so the breaker resets as on a success.
func (gd *Guard) recordProof() {
	gd.live()
	gd.e.noteSuccess()
	gd.loanSettled() // as recordSuccess
	if gd.e.breaker.Success() {
		gd.recordBreaker(state.HalfOpen, state.Closed, "")
	}
}

// recordFailed records a call that failed after its retries with the last
// attempt's throttling or transient error: the breaker counts a failure,
// and the call is lost (given up when throttled, failed when transient).
// reason says what stopped it: "retries", "deadline", "breaker" (it
// refused the retry) or "sdk" (the SDK's loop).
func (gd *Guard) recordFailed(now time.Duration, reason string) {
	gd.recordFailedDead(now, reason, "")
}

// recordFailedDead is recordFailed for a retry whose admission found the
// scope dead and opened its breaker, for dead (openDead; "" for none):
// the change is reported once the failure is recorded, before its event.
func (gd *Guard) recordFailedDead(now time.Duration, reason, dead string) {
	if gd.e == nil {
		return
	}
	if gd.last.kind == Fatal {
		// An SDK's retry of a final answer, which the deadline or the
		// breaker stopped: the service is not to blame. A local error
		// still ends the call lost.
		if gd.last.local {
			gd.lose(LossErrored, stoppedDesc(reason, gd.last.said()))
		}
		gd.reportDead(dead)
		if gd.last.local {
			gd.emitLost(LossErrored, reason, gd.last.err)
		}
		return
	}
	opened, from := gd.failBreaker(now)
	gd.spend(reason)
	gd.reportDead(dead)
	gd.reportOpened(opened, from)
	gd.emitSpent(reason)
}

// recordBreakerFailure counts a failure of the last attempt's throttling
// or transient error towards the breaker, and reports the breaker opening.
func (gd *Guard) recordBreakerFailure(now time.Duration) {
	gd.reportOpened(gd.failBreaker(now))
}

// reportOpened reports the breaker opening from from, when failBreaker
// opened it.
func (gd *Guard) reportOpened(opened bool, from state.BreakerState) {
	if opened {
		gd.recordBreaker(from, state.Open, gd.openedFor())
	}
}

// failBreaker counts a failure of the last attempt's throttling or
// transient error towards the breaker, and reports whether it opened it
// and from where, for the caller to report.
func (gd *Guard) failBreaker(now time.Duration) (opened bool, from state.BreakerState) {
	gd.live()
	if opened, from = gd.breakerFailure(now); opened {
		gd.e.noteOpened(gd.openedFor(), false)
		gd.count(tripsTally)
	}
	if gd.lease.ofProbe() {
		gd.lease = leaseNone // the probe's verdict is given: a further attempt asks again
		gd.loanSettled()
	}
	return opened, from
}

// openedFor is why the last attempt's failure opens a breaker.
func (gd *Guard) openedFor() string {
	if gd.last.kind == Throttled {
		return "throttling"
	}
	return "errors"
}

// recordSpent records the loss of a call that was sent and still failed
// when retrying stopped for reason: a give-up when the last answer was
// throttling, a failure when it was a transient error.
func (gd *Guard) recordSpent(reason string) {
	gd.spend(reason)
	gd.emitSpent(reason)
}

// spend counts and lists the loss recordSpent records, reporting nothing:
// the ledger lists, and the scope's last error keeps, what stopped the
// retries for reason with the last answer (stoppedDesc).
func (gd *Guard) spend(reason string) {
	desc := stoppedDesc(reason, gd.last.desc)
	switch gd.last.kind {
	case Throttled:
		gd.live()
		gd.recordErrorAs(desc)
		gd.lose(LossGaveUp, desc)
	case Transient:
		gd.live()
		gd.recordErrorAs(desc)
		gd.lose(LossFailed, desc)
	}
}

// emitSpent reports the loss spend recorded.
func (gd *Guard) emitSpent(reason string) {
	if !gd.observed() {
		return
	}
	switch gd.last.kind {
	case Throttled:
		gd.emit(&observe.Event{Kind: observe.GaveUp, Err: gd.last.err, Reason: reason})
	case Transient:
		gd.emitLost(LossFailed, reason, gd.last.err)
	}
}

// failureReporter is the optional interface of breakers that say where
// a failure found them (the in-process breaker).
type failureReporter interface {
	FailureFrom(now time.Duration) (opened bool, from state.BreakerState)
}

// breakerFailure counts a failure towards the breaker, and reports whether
// it opened it and from where: as the breaker says, or, for one that does
// not, as the call's lease suggests (a probe's, or one lent to a nested
// call that gave no verdict).
func (gd *Guard) breakerFailure(now time.Duration) (opened bool, from state.BreakerState) {
	if fr, ok := gd.e.breaker.(failureReporter); ok {
		return fr.FailureFrom(now)
	}
	if gd.lease.ofProbe() {
		from = state.HalfOpen
	}
	if rf, ok := gd.e.breaker.(reasonBreaker); ok {
		return rf.FailureFor(now, gd.openedFor()), from
	}
	return gd.e.breaker.Failure(now), from
}

// reasonBreaker is the optional interface of the breakers shared through
// a state store (fleet mode's), which keep why they opened with their
// state, so that every process that refuses a call says why, as the one
// that opened it: FailureFor is Failure from a call that says why a
// failure that opens the breaker opens it, and OpenReason returns why it
// last opened ("" when unknown).
type reasonBreaker interface {
	FailureFor(now time.Duration, why string) (opened bool)
	OpenReason() string
}

// recordBudgetExhausted records a call the empty retry budget stopped: no
// breaker failure, since the budget and not the service stopped it; the
// call is lost as recordSpent says, and the ledger says the budget ended
// it (stoppedDesc).
func (gd *Guard) recordBudgetExhausted() {
	gd.spend("budget")
	gd.recordBudgetEvent()
	gd.emitSpent("budget")
}

// stoppedDesc is what the ledger lists, and the scope's last error keeps,
// for a call lost when retrying stopped for reason, whose last answer
// desc describes: for the empty retry budget ("budget"), the deadline
// ("deadline") and an open breaker ("breaker"), what stopped the retries
// and "after" the answer, since the answer alone (which a call whose
// attempts ran out gives up on) did not end the call; for any other
// reason, desc.
func stoppedDesc(reason, desc string) string {
	switch reason {
	case "budget":
		return state.ErrBudgetExhausted.Error() + " after " + desc
	case "deadline":
		return "deadline exceeded after " + desc
	case "breaker":
		return state.ErrCircuitOpen.Error() + " after " + desc
	}
	return desc
}

// recordBudgetEvent reports the retry budget refusing a retry.
func (gd *Guard) recordBudgetEvent() {
	if gd.observed() {
		gd.emit(&observe.Event{Kind: observe.BudgetExhausted, Err: gd.last.err})
	}
}

// recordRejected records a call an open breaker refused before it was
// sent: counted as rejected, and skipped in the ledger. dead, when not
// "", is why the call's admission found the scope dead and opened the
// breaker (openDead): the change is reported once the call is recorded,
// before its rejection.
func (gd *Guard) recordRejected(coe *CircuitOpenError, dead string) {
	gd.count(rejectedTally)
	gd.bind.ledger.Record(LossSkipped, coe.Error())
	gd.ended()
	gd.reportDead(dead)
	if gd.observed() {
		gd.emit(&observe.Event{Kind: observe.Rejected, Err: coe})
	}
}

// recordLost records a call lost as kind (LossFailed, LossRefused,
// LossCancelled, LossErrored or LossPanicked; give-ups and skips have
// their own functions) for reason,
// what stopped it; desc is what the ledger lists for it, err the error the
// call ends with.
func (gd *Guard) recordLost(kind Loss, reason, desc string, err error) {
	gd.recordLine(kind, reason, oneLine(gd.scope)+": "+desc, err)
}

// recordLine is recordLost with line, the ledger's whole line for the
// call, naming its scope.
func (gd *Guard) recordLine(kind Loss, reason, line string, err error) {
	if gd.e == nil {
		return
	}
	gd.loseLine(kind, line)
	gd.emitLost(kind, reason, err)
}

// emitLost reports the loss lose recorded.
func (gd *Guard) emitLost(kind Loss, reason string, err error) {
	if gd.observed() {
		gd.emit(&observe.Event{Kind: observe.Lost, Loss: kind.String(), Err: err, Reason: reason})
	}
}

// lose counts a call lost as kind, lists it in the ledger with desc and
// marks its outcome recorded, reporting nothing.
func (gd *Guard) lose(kind Loss, desc string) {
	gd.loseLine(kind, oneLine(gd.scope)+": "+desc)
}

// loseLine is lose with line, the ledger's whole line for the call.
func (gd *Guard) loseLine(kind Loss, line string) {
	gd.live()
	gd.count(lossTally[kind])
	gd.bind.ledger.Record(kind, line)
	gd.ended()
}

// ended marks the call's outcome recorded (phaseDone), before any event
// of it goes out; a stop makes the same move (Guard.stop). A request that
// follows a success held with the slot (a listing's next page) keeps that
// success for End to record.
func (gd *Guard) ended() {
	if gd.phase != phaseSucceeded {
		gd.to(phaseDone)
	}
}

// recordRefused records a call not sent because its wait would have passed
// its deadline or its max wait: err is the refusal. A refused retry (a
// *WouldWaitError with the answer it would have retried) is listed with
// " after " and that answer, as a call stopped between its retries is, so
// that the ledger does not read as if nothing had been sent.
//
// The refusal's message names the scope it refused ("no rate token now
// for <scope>", "deadline exceeded for <scope>"), as an open breaker's
// does for a skip: the ledger lists it as it is, not after "<scope>: " as
// it lists the other losses, so that each line names the scope once.
func (gd *Guard) recordRefused(err error) {
	desc := errorText(err)
	if ww, ok := err.(*WouldWaitError); ok && ww.Last != nil && gd.last.err != nil {
		desc += " after " + gd.last.said()
	}
	if !refusalNames(err, gd.scope) {
		desc = oneLine(gd.scope) + ": " + desc
	}
	gd.recordLine(LossRefused, "wait", desc, err)
}

// refusalNames reports whether err, a refusal, names scope in its message:
// a *WouldWaitError or *DeadlineExceededError of scope.
func refusalNames(err error, scope Scope) bool {
	switch e := err.(type) {
	case *WouldWaitError:
		return e.Scope == scope
	case *DeadlineExceededError:
		return e.Scope == scope
	}
	return false
}

// recordDenied records a call the provider denied with err, its answer,
// for a limit the governor does not pace (Guard.EndDenied): lost as
// LossDenied, listed with err's message, for "quota". It slows, pauses
// and fails nothing.
func (gd *Guard) recordDenied(err error) {
	gd.recordLost(LossDenied, "quota", errorText(err), err)
}

// recordCancelled records a call its context ended: err is the context's
// error, with the last answer when there was one (which the ledger's
// reason says once, after the context's error).
func (gd *Guard) recordCancelled(err error) {
	desc := errorText(err)
	if gd.last.err != nil {
		if ae, ok := err.(*ctxend.Error); ok {
			desc = ae.Ctx.Error() // its last error is said below
		}
		desc += " after " + gd.last.said()
	}
	gd.recordLost(LossCancelled, "context", desc, err)
}

// recordErrored records a call that ended with the local error of its
// last attempt, which no provider answered, for reason: "local" (it was
// not retried) or "budget" (the empty retry budget refused its retry).
func (gd *Guard) recordErrored(reason string) {
	gd.recordLost(LossErrored, reason, gd.last.said(), gd.last.err)
}

// recordPanicked records a call whose function panicked (or otherwise did
// not return) during its attempt. It runs while the goroutine unwinds for
// that panic (or runtime.Goexit): EndPanicked is only for a call whose
// code did not return. So it drops a panic of the log handler on the
// call's line, which would replace the panic the caller recovers. A
// scheduler that recovers the panic (package pool) learns from the mark
// its task's context carries that the panic is in the task's ledger.
func (gd *Guard) recordPanicked() {
	if gd.g.logger != nil { // only the log handler's panics go on from a record
		defer dropPanic()
	}
	if gd.e != nil && gd.bind.ledger != nil {
		panicmark.Note(gd.ctx, gd.bind.ledger)
	}
	gd.recordLost(LossPanicked, "panic", "function panicked", nil)
}

// dropPanic, deferred, stops a panic of the function that deferred it.
func dropPanic() { _ = recover() }

// recordProbe reports the breaker letting this call through as its
// half-open probe.
func (gd *Guard) recordProbe() { gd.recordBreaker(state.Open, state.HalfOpen, "") }

// recordBreaker reports a breaker opening (for reason: throttling, errors,
// throttled for good or down), letting a probe through, or closing.
func (gd *Guard) recordBreaker(from, to state.BreakerState, reason string) {
	if gd.observed() {
		gd.emit(&observe.Event{Kind: observe.BreakerChange, From: from, To: to, Reason: reason})
	}
}
