package resilience

import (
	"encoding/json"
	"iter"
	"strings"

	"github.com/cloudg/cloudg/internal/jsonsec"
	"github.com/cloudg/cloudg/internal/scopekey"
	"github.com/cloudg/cloudg/state"
)

// Summary is a report of a run (or of the governor's lifetime): totals (with
// the wall-clock time the run waited beside the waits added up), one
// line per eventful scope, the scopes given up on with their reason, every
// scope's counters, and the governor's slowed buckets and unhealthy
// breakers at the time of the report. Its maps are keyed by Scope: Scopes
// and Skipped by service scope (Scope.ServiceScope, where a run's counters
// are kept), SlowedBuckets and Breakers by the leaf scope of the state
// (with its operation where the service is paced per operation),
// SlowedAccounts by the account's scope (its provider and account, the
// other parts empty); SlowedProviders is keyed by provider name. In JSON
// a map's keys are the scopes' Key form, which no two scopes share, and
// each entry of Scopes carries its scope's parts. It marshals to JSON with
// snake_case names, times in seconds.
//
// The JSON's slowed_buckets lists the slowed buckets of every level, each
// under the key the governor keeps it by: a leaf's Key (four or five
// parts, aws/123456789012/us-east-1/ec2/DescribeVpcs), an account's
// provider/account (azure/sub-1) and a provider's name (azure), each part
// escaped as Key escapes it. No key of one level can be another's: an
// account's bucket is not the leaf of a call scoped to the account alone
// (azure/sub-1/*/*), which is why SlowedBuckets, keyed by Scope, holds the
// leaves only.
//
// The zero Summary reports nothing, its maps nil (Governor.Summary makes
// every one, empty or not). A Summary is a snapshot the governor does not
// change once it returned it: any goroutine may read it.
type Summary struct {
	Totals        Counters                        `json:"totals"`
	Messages      []string                        `json:"messages"`
	Skipped       map[Scope]string                `json:"skipped"`
	Scopes        map[Scope]Counters              `json:"scopes"`
	SlowedBuckets map[Scope]state.BucketSnapshot  `json:"slowed_buckets"` // leaf buckets below their ceiling or paused
	Breakers      map[Scope]state.BreakerSnapshot `json:"breakers"`       // breakers open, half-open, counting failures, or of a scope found dead (see Governor.Delay)
	// SlowedAccounts holds the account buckets below their ceiling or
	// paused (Guard.PauseAccount holds every call of the account), keyed
	// by Scope{Provider: ..., Account: ...}. In JSON they are in
	// slowed_buckets.
	SlowedAccounts map[Scope]state.BucketSnapshot `json:"-"`
	// SlowedProviders holds the provider-wide buckets below their ceiling
	// or paused, keyed by provider name. In JSON they are in
	// slowed_buckets.
	SlowedProviders map[string]state.BucketSnapshot `json:"-"`
}

// Summary reports on s, or on the governor's lifetime when s is nil. Totals,
// messages, skipped and scopes come from the stats; slowed buckets and
// breakers are the governor's, which outlast any run. A run's totals are
// the sum of its scopes' counters. The lifetime's may count more calls:
// a scope that only ever counted calls keeps no counters of its own once
// the reclaimer drops it (unless its service has some), so that a sweep
// over millions of scopes is not remembered scope by scope, and its calls
// stay in the totals alone.
//
// The lifetime's counts are each call once, even when a sweep of the
// reclaimer, a Configure or a Reset moves calls from one scope's counters
// to another's while the report is read: the report is read again when
// one did, up to four times in all, so that only a governor that never
// stops moving calls may give a report that misses some.
func (g *Governor) Summary(s *Stats) Summary {
	g.init() // before the clock's epoch is read: a zero Governor sets it there
	var table map[Scope]Counters
	var sum Summary
	if s != nil {
		table = s.table.snapshot()
		sum.Totals.WaitElapsed = s.waited.covered()
	} else {
		// The calls folded from retired entries are read first: an entry
		// retired after that is read with the calls it folded, or not at
		// all, never both (as in Lifetime); and read again when it was
		// not at all.
		g.moves.readConsistent(func() {
			sum.Totals.Calls = g.folded.Load()
			table = g.lifetime()
		})
		sum.Totals.WaitElapsed = g.waited.covered()
	}
	sum.Messages = messages(table)
	sum.Skipped = map[Scope]string{}
	sum.Scopes = make(map[Scope]Counters, len(table))
	sum.SlowedBuckets = map[Scope]state.BucketSnapshot{}
	sum.SlowedAccounts = map[Scope]state.BucketSnapshot{}
	sum.SlowedProviders = map[string]state.BucketSnapshot{}
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
	g.eachEntry(func(e *scopeEntry, p *provider) {
		if b := e.leaf.Snapshot(now); slowed(b) {
			sum.SlowedBuckets[e.key] = b
		}
		// A closed breaker of a scope found dead is one the next call
		// opens, as Delay says: listed as it stands.
		if br := e.breaker.Snapshot(now); br.State != state.Closed || br.Failures > 0 || e.deadClosed(p.set, now) {
			sum.Breakers[e.key] = br
		}
	})
	for _, p := range g.providers() {
		global, accounts := p.scopes.shared()
		if global != nil {
			if b := global.Snapshot(now); slowed(b) {
				sum.SlowedProviders[p.set.name] = b
			}
		}
		for _, a := range accounts {
			if b := a.bucket.Snapshot(now); slowed(b) {
				sum.SlowedAccounts[Scope{Provider: p.set.name, Account: a.name}] = b
			}
		}
	}
	return sum
}

// slowed reports whether a bucket is below its ceiling or paused.
func slowed(b state.BucketSnapshot) bool { return b.Rate < b.Ceiling || b.Paused > 0 }

// namedBucket is an account's bucket with the account's name.
type namedBucket struct {
	name   string
	bucket state.Bucket
}

// shared returns the table's provider bucket (nil when there is none) and
// its accounts' buckets, taken under its lock, for snapshots outside it.
func (t *scopeTable) shared() (state.Bucket, []namedBucket) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var accounts []namedBucket
	for name, a := range t.accounts {
		if a.bucket != nil {
			accounts = append(accounts, namedBucket{name, a.bucket})
		}
	}
	return t.global, accounts
}

// MarshalJSON writes the summary with its totals in the report's form:
// calls, throttled, transient_errors, retries, gave_up, rejected (and
// failed, refused, cancelled, errored, panicked and denied when there are any),
// breaker_trips and wait_seconds (the waits added up over the callers),
// then max_wait_seconds (the longest wait) and wait_elapsed_seconds (the
// wall-clock time during which a call of the run waited).
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	var slowedBuckets map[string]state.BucketSnapshot // null for a Summary without maps, as before
	if n := len(s.SlowedAccounts) + len(s.SlowedProviders); s.SlowedBuckets != nil || n > 0 {
		slowedBuckets = make(map[string]state.BucketSnapshot, len(s.SlowedBuckets)+n)
	}
	for sc, b := range s.SlowedBuckets {
		slowedBuckets[sc.Key()] = b
	}
	for sc, b := range s.SlowedAccounts {
		slowedBuckets[accountKey(sc)] = b
	}
	for name, b := range s.SlowedProviders {
		slowedBuckets[providerKey(name)] = b
	}
	return json.Marshal(struct {
		plain
		Totals        totalsJSON                      `json:"totals"`
		SlowedBuckets map[string]state.BucketSnapshot `json:"slowed_buckets"`
	}{plain(s), totalsJSON(s.Totals), slowedBuckets})
}

// UnmarshalJSON reads what MarshalJSON writes: a stored summary reads
// back as it was written, but for what the totals' form leaves out
// (waits, pauses, backoff, the last error: each scope's counters have
// them). The keys of slowed_buckets go back to the map of their level by
// their form: a leaf's scope key (state.ParseScope) to SlowedBuckets, an
// account's (provider/account) to SlowedAccounts, a provider's to
// SlowedProviders; a key of none of these forms is a
// *state.ScopeKeyError. A slowed_buckets that is not null makes all
// three maps, as Governor.Summary does, and a null one none. A null
// leaves s as it is, as encoding/json leaves any value it reads null
// into.
func (s *Summary) UnmarshalJSON(b []byte) error {
	type plain Summary
	v := struct {
		*plain
		SlowedBuckets map[string]state.BucketSnapshot `json:"slowed_buckets"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.SlowedBuckets == nil {
		return nil
	}
	s.SlowedBuckets = map[Scope]state.BucketSnapshot{}
	s.SlowedAccounts = map[Scope]state.BucketSnapshot{}
	s.SlowedProviders = map[string]state.BucketSnapshot{}
	for key, bucket := range v.SlowedBuckets {
		parts := strings.Split(key, "/")
		if len(parts) >= 4 {
			sc, err := state.ParseScope(key)
			if err != nil {
				return err
			}
			s.SlowedBuckets[sc] = bucket
			continue
		}
		var names [2]string
		for i, p := range parts {
			if p == "*" && i > 0 {
				continue
			}
			n, err := scopekey.Unescape(p)
			if err != nil || n == "" || len(parts) > 2 {
				return &state.ScopeKeyError{Key: key, Reason: "want provider, provider/account or provider/account/region/service[/operation]"}
			}
			names[i] = n
		}
		if len(parts) == 1 {
			s.SlowedProviders[names[0]] = bucket
		} else {
			s.SlowedAccounts[Scope{Provider: names[0], Account: names[1]}] = bucket
		}
	}
	return nil
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
		Denied          int64 `json:"denied,omitempty"`
		BreakerTrips    int64 `json:"breaker_trips"`
	}
	return jsonsec.Marshal(totals{t.Calls, t.Throttled, t.TransientErrors, t.Retries, t.GaveUp, t.Rejected, t.Failed, t.Refused, t.Cancelled, t.Errored, t.Panicked, t.Denied, t.BreakerTrips},
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

// Lifetime returns the governor's lifetime totals, as Summary(nil) has
// them in Totals, and the lifetime counters of each of services' service
// scopes (Scope.ServiceScope), in the order given, as Summary(nil) has
// them in Scopes: zero counters, with Scope set, for a service nothing
// was counted for. It is the cheap part of a summary, for a status page
// that shows a few scopes: it goes once over the lifetime counters and
// the live scopes' call counts, and reads no bucket or breaker (with a
// shared store, nothing from the store), lists nothing slowed and writes
// no message. Like Summary(nil), it reads again when calls were moved
// meanwhile.
func (g *Governor) Lifetime(services ...Scope) (totals Counters, scopes []Counters) {
	scopes = make([]Counters, len(services))
	want := make(map[Scope]int, len(services))
	for i, sc := range services {
		sc = serviceScope(sc)
		if _, ok := want[sc]; !ok {
			want[sc] = i
		}
		scopes[i].Scope = sc
	}
	g.moves.readConsistent(func() {
		totals = Counters{Calls: g.folded.Load()}
		for i := range scopes {
			scopes[i] = Counters{Scope: scopes[i].Scope}
		}
		g.life.m.Range(func(k, c any) bool {
			st := c.(*counters).snapshot()
			totals.add(st)
			if i, ok := want[k.(Scope)]; ok {
				st.Scope = scopes[i].Scope
				scopes[i] = st
			}
			return true
		})
		g.eachEntry(func(e *scopeEntry, _ *provider) {
			n := e.calls.Load()
			if n <= 0 {
				return // none, or folded since live listed it: no longer this entry's
			}
			totals.Calls += n
			if len(want) > 0 {
				if i, ok := want[serviceScope(e.key)]; ok {
					scopes[i].Calls += n
				}
			}
		})
	})
	totals.WaitElapsed = g.waited.covered()
	for i, sc := range services {
		if j := want[serviceScope(sc)]; j != i {
			scopes[i] = scopes[j]
		}
	}
	return totals, scopes
}

// Scopes returns the live scopes of every provider with where each stands,
// as Inspect would report it: an iteration for dashboards and status
// pages, with each scope's parts as fields. A scope is a leaf of the
// governor's state: its operation is set where the service is paced per
// operation. The scopes of each provider are those it holds when the
// iteration reaches it, in no particular order; the snapshots are taken
// as they are yielded, outside every lock. With a shared store (fleet
// mode), where each read of a bucket is a round trip, an account's bucket
// (and a provider's provider-wide bucket) is read once per 100 ms of the
// iteration and its snapshot given to the account's (the provider's)
// scopes of that time, with what is left of its pause.
func (g *Governor) Scopes() iter.Seq2[Scope, state.ScopeSnapshot] {
	return func(yield func(Scope, state.ScopeSnapshot) bool) {
		g.init() // before the store's kind is read: a zero Governor sets it there
		var reads accountReads
		if g.sharedBuckets {
			reads = newAccountReads()
		}
		for _, p := range g.providers() {
			if p = g.inForce(p); p == nil {
				continue
			}
			for _, e := range p.scopes.live() {
				if !yield(e.key, e.snapshot(g.epoch, g.now(), p, reads)) {
					return
				}
			}
		}
	}
}
