package resilience

import (
	"context"
	"log/slog"
	"time"

	"github.com/cloudg/cloudg/internal/hint"
	"github.com/cloudg/cloudg/state"
)

// The functions of this file are the only places where a Guard records an
// event. Each writes the scope's lifetime counters and, when the context
// carries a Stats, the run's counters, and touches the scope's state.

// close records the open outcome of a call ending with err.
func (gd *Guard) close(err error) {
	if gd.ctx.Err() != nil {
		return
	}
	if gd.phase == failed || gd.phase == retrying {
		if err == nil {
			gd.recordSuccess()
			return
		}
		gd.recordFailed(gd.g.now())
		return
	}
	if err == nil {
		gd.recordSuccess()
		return
	}
	f := inspect(err)
	if f.hasOwn {
		return
	}
	kind := f.kind(err)
	if kind == Fatal {
		if f.answer {
			gd.recordProof()
		}
		return
	}
	gd.last, gd.lastKind, gd.desc = err, kind, describe(kind, err)
	gd.recordFailed(gd.g.now())
}

// count adds one to the scope's tally t, for its lifetime and the run.
func (gd *Guard) count(t tally) {
	gd.e.lifeCounters(gd.g).n[t].Add(1)
	if gd.run != nil {
		gd.run.n[t].Add(1)
	}
}

// recordCall counts one call (an attempt, or a page of a listing).
func (gd *Guard) recordCall() {
	if gd.e.calls.Add(1) < 0 {
		gd.g.folded.Add(1) // the entry was dropped meanwhile: the totals count it
	}
	if gd.run != nil {
		gd.run.n[callsTally].Add(1)
	}
}

// recordWait counts a wait of w for a rate token.
func (gd *Guard) recordWait(w time.Duration) {
	gd.e.lifeCounters(gd.g).recordWait(w)
	if gd.run != nil {
		gd.run.recordWait(w)
	}
}

// recordRetry counts a retry, when it is sent.
func (gd *Guard) recordRetry() {
	gd.count(retriesTally)
}

// recordThrottle records a throttled attempt: the leaf halves (once per
// congestion event) and pauses for the provider's hint, capped at
// MaxPause.
func (gd *Guard) recordThrottle(now time.Duration) {
	gd.live()
	gd.count(throttledTally)
	var pause time.Duration
	if gd.hasHint {
		pause = hint.Cap(gd.hint)
	}
	if rate, decreased := gd.e.leaf.Throttle(now, pause); decreased {
		gd.recordRate(rate, true)
	}
	gd.recordError()
}

// recordTransient records an attempt that failed with a transient error.
func (gd *Guard) recordTransient() {
	gd.live()
	gd.count(transientTally)
	gd.recordError()
}

// recordRate records the leaf's new adaptive rate.
func (gd *Guard) recordRate(rate float64, decreased bool) {
	gd.e.lifeCounters(gd.g).recordRate(rate, decreased)
	if gd.run != nil {
		gd.run.recordRate(rate, decreased)
	}
}

// recordPause holds every caller of b for d, capped at MaxPause.
func (gd *Guard) recordPause(b state.Bucket, d time.Duration) {
	b.Pause(gd.g.now(), hint.Cap(d))
}

// recordError keeps the last attempt's description as the scope's last
// error.
func (gd *Guard) recordError() {
	desc := gd.desc
	gd.e.lifeCounters(gd.g).lastErr.Store(&desc)
	if gd.run != nil {
		gd.run.lastErr.Store(&desc)
	}
}

// recordSuccess records a success: the breaker resets, the budget gets its
// refund, the leaf recovers.
func (gd *Guard) recordSuccess() {
	if gd.e.breaker.Success() {
		gd.recordBreaker(state.Closed)
	}
	gd.p.budget.Succeed()
	if !gd.e.leaf.Recovering() {
		return
	}
	if rate, increased := gd.e.leaf.Success(gd.g.now()); increased {
		gd.recordRate(rate, false)
	}
}

// recordProof records a fatal answer from the provider: the service is
// reachable, so the breaker resets as on a success.
func (gd *Guard) recordProof() {
	gd.live()
	if gd.e.breaker.Success() {
		gd.recordBreaker(state.Closed)
	}
}

// recordFailed closes a call that failed after its retries with the last
// attempt's throttling or transient error: the breaker counts a failure,
// and throttling is a give-up.
func (gd *Guard) recordFailed(now time.Duration) {
	gd.phase = closed
	if gd.lastKind == Fatal {
		return // an SDK's retry of a final answer: the service is not to blame
	}
	gd.live()
	if gd.e.breaker.Failure(now) {
		gd.count(tripsTally)
		gd.recordBreaker(state.Open)
	}
	if gd.lastKind == Throttled {
		gd.recordGaveUp()
	}
}

// recordBudgetExhausted closes a call the empty retry budget stopped: no
// breaker failure, since the budget and not the service stopped it; a
// give-up when the last attempt was throttled.
func (gd *Guard) recordBudgetExhausted() {
	gd.phase = closed
	if gd.lastKind == Throttled {
		gd.recordGaveUp()
	}
}

// recordGaveUp records a call lost to throttling: stats and ledger.
func (gd *Guard) recordGaveUp() {
	gd.live()
	gd.count(gaveUpTally)
	gd.recordError()
	gd.ledger.recordGaveUp(gd.scope, gd.desc)
}

// recordRejected closes a call an open breaker refused before it was
// sent: counted as rejected, and skipped in the ledger.
func (gd *Guard) recordRejected(coe *CircuitOpenError) {
	gd.phase = closed
	gd.count(rejectedTally)
	gd.ledger.recordSkipped(coe.Error())
}

// recordBreaker logs a breaker opening or closing.
func (gd *Guard) recordBreaker(to state.BreakerState) {
	if gd.g.logger != nil {
		gd.g.logger.LogAttrs(context.Background(), slog.LevelInfo, "cloudg: circuit breaker "+to.String(),
			slog.String("scope", gd.e.key.String()))
	}
}
