package resilience

import (
	"encoding/json"
	"strconv"
	"time"
)

// Summary is a report of a run (or of the governor's lifetime): totals, one
// line per eventful scope, the scopes given up on with their reason, every
// scope's counters, and the governor's slowed buckets and unhealthy
// breakers at the time of the report. It marshals to the spec's JSON form.
type Summary struct {
	Totals        Totals                  `json:"totals"`
	Messages      []string                `json:"messages"`
	Skipped       map[string]string       `json:"skipped"`
	Scopes        map[string]ScopeStats   `json:"scopes"`
	SlowedBuckets map[string]BucketState  `json:"slowed_buckets"`
	Breakers      map[string]BreakerState `json:"breakers"`
}

// BucketState is a leaf bucket below its ceiling or paused.
type BucketState struct {
	RateRPS    float64       `json:"rate_rps"`
	CeilingRPS float64       `json:"ceiling_rps"`
	PausedFor  time.Duration `json:"-"` // paused_seconds
}

// MarshalJSON writes paused_seconds in seconds.
func (b BucketState) MarshalJSON() ([]byte, error) {
	type plain BucketState
	return marshalWithSeconds(plain(b), "paused_seconds", b.PausedFor)
}

// BreakerState is a breaker that is open, half-open, or counting failures.
type BreakerState struct {
	State    string        `json:"state"` // closed, open, half_open
	Failures int           `json:"failures"`
	Cooldown time.Duration `json:"-"` // cooldown_seconds
	RetryIn  time.Duration `json:"-"` // retry_in_seconds: until a probe may go (open) or the probe's lease ends (half-open)
}

// MarshalJSON writes cooldown_seconds and retry_in_seconds in seconds.
func (b BreakerState) MarshalJSON() ([]byte, error) {
	type plain BreakerState
	return marshalWithSeconds(plain(b), "cooldown_seconds", b.Cooldown, "retry_in_seconds", b.RetryIn)
}

// Summary reports on s, or on the governor's lifetime when s is nil. Totals,
// messages, skipped and scopes come from the stats; slowed buckets and
// breakers are the governor's, which outlast any run.
func (g *Governor) Summary(s *Stats) Summary {
	var table map[Scope]*counters
	var base Totals
	if s != nil {
		table = s.table.snapshot()
	} else {
		table = g.life.snapshot()
		base = g.foldedTotals()
	}
	sum := Summary{
		Totals:        base,
		Messages:      messages(table),
		Skipped:       map[string]string{},
		Scopes:        make(map[string]ScopeStats, len(table)),
		SlowedBuckets: map[string]BucketState{},
		Breakers:      map[string]BreakerState{},
	}
	if sum.Messages == nil {
		sum.Messages = []string{}
	}
	for sc, c := range table {
		st := c.stats()
		key := sc.String()
		sum.Scopes[key] = st
		sum.Totals.add(st)
		switch {
		case st.Rejected > 0:
			sum.Skipped[key] = "circuit open: " + plural(st.Rejected, "call", "calls") + " not sent"
		case st.GaveUp > 0:
			sum.Skipped[key] = "gave up after retries: " + st.LastError
		}
	}
	now := g.now()
	g.eachEntry(func(e *entry) {
		key := e.key.String()
		b := e.leaf.Snapshot(now)
		if b.Rate < b.Ceiling || b.Paused > 0 {
			sum.SlowedBuckets[key] = BucketState{RateRPS: b.Rate, CeilingRPS: b.Ceiling, PausedFor: b.Paused}
		}
		if br := e.breaker.Snapshot(now); br.State != "closed" || br.Failures > 0 {
			sum.Breakers[key] = BreakerState{State: br.State, Failures: br.Failures, Cooldown: br.Cooldown, RetryIn: br.Wait}
		}
	})
	return sum
}

// marshalWithSeconds marshals v (a struct) and appends key/duration pairs as
// seconds.
func marshalWithSeconds(v any, kv ...any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1] // drop }
	for i := 0; i+1 < len(kv); i += 2 {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, kv[i].(string))
		b = append(b, ':')
		b = strconv.AppendFloat(b, kv[i+1].(time.Duration).Seconds(), 'f', -1, 64)
	}
	return append(b, '}'), nil
}
