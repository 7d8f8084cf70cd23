package resilience

import (
	"time"

	"github.com/cloudg/cloudg/state"
)

// A Survey reads where many scopes stand for one report over them (a
// scheduler's progress, say): for each scope what Delay and Inspect would
// report (Look), or Inspect alone (Survey.Inspect), from one read of each
// of its buckets, and each account's bucket and each provider's
// provider-wide bucket (global_max_rps) read once for all the scopes of
// the survey that share it, as Scopes reads them: with a shared store
// (fleet mode) each read is a round trip, and Delay and Inspect asked of
// each scope in turn read the account's and the provider's buckets twice
// per scope. A snapshot of an account's (a provider's) bucket stands for
// the survey's next scopes for 100 ms, with what is left of its pause. A
// Survey changes nothing, as Delay and Inspect do not; make one per
// report with Governor.Survey (the zero Survey is not usable: Look and
// Inspect panic). It is not safe for concurrent use: one goroutine makes
// a report.
type Survey struct {
	g     *Governor
	reads accountReads
}

// Survey returns a new Survey of the governor's scopes.
func (g *Governor) Survey() *Survey {
	g.init()
	sv := &Survey{g: g}
	if g.sharedBuckets {
		sv.reads = newAccountReads()
	}
	return sv
}

// A Standing is what a Survey reads of a scope: Delay's answer and
// Inspect's snapshot, read as a scheduler reads them, Delay first: the
// snapshot's breaker is read after Delay's answer, so that a breaker's
// verdict between the two shows the scope as its breaker is after it,
// and Delay's waits for tokens are those of the snapshot's buckets. It is
// a value that nothing updates, safe to read from several goroutines at
// once; its zero value is a scope without a provider's: it can go at
// once.
type Standing struct {
	Wait     time.Duration       // Delay's wait
	Why      error               // Delay's reason: nil, ErrCircuitOpen, ErrNoToken or ErrNoSlot
	Snapshot state.ScopeSnapshot // Inspect's snapshot
}

// Look returns where scope stands now: what Delay and Inspect would
// report of it, asked one after the other, from one read of each of its
// buckets, its account's and provider's read at most once per 100 ms of
// the survey (see Survey). Its breaker is read twice when Delay reads it
// (a breaker that is not pristine, or whose shared view is stale): for
// Delay's answer, then for the snapshot.
func (sv *Survey) Look(scope Scope) Standing {
	g := sv.made("Look")
	if scope.Provider == "" {
		return Standing{}
	}
	p := g.existing(scope.Provider)
	if p == nil || !p.set.enabled {
		return Standing{Snapshot: g.inspect(scope, sv.reads)}
	}
	e, acct := p.scopes.peek(scope)
	now := g.now()
	var breaker *state.BreakerSnapshot
	if e != nil && (!e.breaker.Pristine() || staleView(e.breaker, now)) {
		b := e.breaker.Snapshot(now)
		breaker = &b
	}
	st := Standing{Snapshot: g.inspectIn(p, e, acct, scope, now, sv.reads)}
	st.Wait, st.Why = delay(p, e, acct, now, breaker, &st.Snapshot)
	return st
}

// Inspect returns what Governor.Inspect reports of scope, its account's
// and provider's buckets read as Look reads them: for a report that needs
// no Delay's answer of a scope (no work waits for it), which Look's read
// of a breaker that is not pristine, or whose shared view is stale, would
// make a second read of the breaker.
func (sv *Survey) Inspect(scope Scope) state.ScopeSnapshot {
	return sv.made("Inspect").inspect(scope, sv.reads)
}

// made returns the survey's governor, and panics, saying so, for a zero
// Survey, which has none.
func (sv *Survey) made(method string) *Governor {
	if sv.g == nil {
		panic("resilience: " + method + " of a zero Survey; make one with Governor.Survey")
	}
	return sv.g
}
