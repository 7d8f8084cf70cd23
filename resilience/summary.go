package resilience

import (
	"encoding/json"
	"iter"

	"github.com/cloudg/cloudg/internal/jsonsec"
	"github.com/cloudg/cloudg/state"
)

// Summary is a report of a run (or of the governor's lifetime): totals (with
// the wall-clock time the run waited beside the waits added up), one
// line per eventful scope, the scopes given up on with their reason, every
// scope's counters, and the governor's slowed buckets and unhealthy
// breakers at the time of the report. Its maps are keyed by Scope: Scopes
// and Skipped by service scope (Scope.ServiceScope, where a run's counters
// are kept), SlowedBuckets and Breakers by the leaf scope of the state
// (with its operation where the service is paced per operation). In JSON
// a map's keys are the scopes' Key form, which no two scopes share, and
// each entry of Scopes carries its scope's parts. It marshals to JSON with
// snake_case names, times in seconds.
type Summary struct {
	Totals        Counters                        `json:"totals"`
	Messages      []string                        `json:"messages"`
	Skipped       map[Scope]string                `json:"skipped"`
	Scopes        map[Scope]Counters              `json:"scopes"`
	SlowedBuckets map[Scope]state.BucketSnapshot  `json:"slowed_buckets"` // leaf buckets below their ceiling or paused
	Breakers      map[Scope]state.BreakerSnapshot `json:"breakers"`       // breakers open, half-open or counting failures
}

// Summary reports on s, or on the governor's lifetime when s is nil. Totals,
// messages, skipped and scopes come from the stats; slowed buckets and
// breakers are the governor's, which outlast any run.
func (g *Governor) Summary(s *Stats) Summary {
	var table map[Scope]Counters
	var sum Summary
	if s != nil {
		table = s.table.snapshot()
		sum.Totals.WaitElapsed = s.waited.covered()
	} else {
		table = g.lifetime()
		sum.Totals.Calls = g.folded.Load()
		sum.Totals.WaitElapsed = g.waited.covered()
	}
	sum.Messages = messages(table)
	sum.Skipped = map[Scope]string{}
	sum.Scopes = make(map[Scope]Counters, len(table))
	sum.SlowedBuckets = map[Scope]state.BucketSnapshot{}
	sum.Breakers = map[Scope]state.BreakerSnapshot{}
	if sum.Messages == nil {
		sum.Messages = []string{}
	}
	for sc, st := range table {
		st.Scope = sc
		sum.Scopes[sc] = st
		sum.Totals.add(st)
		switch {
		case st.Rejected > 0 && st.ThrottledForGood > 0:
			sum.Skipped[sc] = "throttled for good, circuit open: " + plural(st.Rejected, "call", "calls") + " not sent"
		case st.Rejected > 0:
			sum.Skipped[sc] = "circuit open: " + plural(st.Rejected, "call", "calls") + " not sent"
		case st.GaveUp > 0:
			sum.Skipped[sc] = "gave up after retries: " + st.LastError
		}
	}
	now := g.now()
	g.eachEntry(func(e *scopeEntry, _ *provider) {
		if b := e.leaf.Snapshot(now); b.Rate < b.Ceiling || b.Paused > 0 {
			sum.SlowedBuckets[e.key] = b
		}
		if br := e.breaker.Snapshot(now); br.State != state.Closed || br.Failures > 0 {
			sum.Breakers[e.key] = br
		}
	})
	return sum
}

// MarshalJSON writes the summary with its totals in the report's form:
// calls, throttled, transient_errors, retries, gave_up, rejected (and
// failed, refused, cancelled, errored and panicked when there are any),
// breaker_trips and wait_seconds (the waits added up over the callers),
// then max_wait_seconds (the longest wait) and wait_elapsed_seconds (the
// wall-clock time during which a call of the run waited).
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	return json.Marshal(struct {
		plain
		Totals totalsJSON `json:"totals"`
	}{plain(s), totalsJSON(s.Totals)})
}

// totalsJSON is Counters marshalled as a summary's totals.
type totalsJSON Counters

func (t totalsJSON) MarshalJSON() ([]byte, error) {
	type totals struct {
		Calls           int64 `json:"calls"`
		Throttled       int64 `json:"throttled"`
		TransientErrors int64 `json:"transient_errors"`
		Retries         int64 `json:"retries"`
		GaveUp          int64 `json:"gave_up"`
		Rejected        int64 `json:"rejected"`
		Failed          int64 `json:"failed,omitempty"`
		Refused         int64 `json:"refused,omitempty"`
		Cancelled       int64 `json:"cancelled,omitempty"`
		Errored         int64 `json:"errored,omitempty"`
		Panicked        int64 `json:"panicked,omitempty"`
		BreakerTrips    int64 `json:"breaker_trips"`
	}
	return jsonsec.Marshal(totals{t.Calls, t.Throttled, t.TransientErrors, t.Retries, t.GaveUp, t.Rejected, t.Failed, t.Refused, t.Cancelled, t.Errored, t.Panicked, t.BreakerTrips},
		"wait_seconds", t.Wait, "max_wait_seconds", t.MaxWait, "wait_elapsed_seconds", t.WaitElapsed)
}

// lifetime returns the lifetime counters of every service scope: those of
// the scopes that had an event beyond calls, and the calls the live
// entries counted.
func (g *Governor) lifetime() map[Scope]Counters {
	table := g.life.snapshot()
	g.eachEntry(func(e *scopeEntry, _ *provider) {
		if n := e.calls.Load(); n > 0 {
			svc := serviceScope(e.key)
			c := table[svc]
			c.Calls += n
			table[svc] = c
		}
	})
	return table
}

// Scopes returns the live scopes of every provider with where each stands,
// as Inspect would report it: an iteration for dashboards and status
// pages, with each scope's parts as fields. A scope is a leaf of the
// governor's state: its operation is set where the service is paced per
// operation. The scopes of each provider are those it holds when the
// iteration reaches it, in no particular order; the snapshots are taken
// as they are yielded, outside every lock.
func (g *Governor) Scopes() iter.Seq2[Scope, state.ScopeSnapshot] {
	return func(yield func(Scope, state.ScopeSnapshot) bool) {
		for _, p := range g.providers() {
			for _, e := range p.scopes.live() {
				if !yield(e.key, e.snapshot(g.epoch, g.now(), p)) {
					return
				}
			}
		}
	}
}
