package resilience

import (
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/internal/bulkhead"
	"github.com/cloudg/cloudg/internal/readmap"
	"github.com/cloudg/cloudg/state"
)

// scopeTable holds one provider's scopes: leaf buckets and breakers per
// leaf scope, bulkheads and account buckets per account, the provider
// bucket.
type scopeTable struct {
	g      *Governor
	set    *providerSettings
	global state.Bucket

	// entries maps both leaf scopes and the full scopes of calls (with an
	// operation that shares its service's leaf) to their entry, so that a
	// call finds its entry with one lookup. Its lock also guards accounts
	// and the sweep's schedule.
	entries   readmap.Map[Scope, *scopeEntry]
	accounts  map[string]*accountEntry
	sweepAt   int           // sweep when the table reaches this size...
	lastSweep time.Duration // ...or when it is large and this is a while ago
	retired   bool          // a newer table adopted this one's state
}

// accountEntry is the state shared by an account's scopes.
type accountEntry struct {
	bulkhead *bulkhead.Bulkhead
	bucket   state.Bucket // nil when the provider has no account bucket
	refs     int          // live entries using it; guarded by the entries lock
}

// scopeEntry is one leaf scope's state, resolved once per call.
//
// A sweep that reclaims an entry marks it dead before it drops it from the
// table. A call that still holds a dead entry needs no reference count to
// stay correct: it was idle and pristine, so what the call took from it
// (one token of a full bucket) is immaterial; what the call learns (a
// throttle, a failure) goes to the live entry (Guard.live); and a slot
// taken from a reclaimed account is given back and taken again
// (Guard.acquire), so that the account's cap holds.
type scopeEntry struct {
	dead    atomic.Bool
	key     Scope // the leaf scope
	svc     Scope // its service scope, the telemetry key
	leaf    state.Bucket
	breaker state.Breaker
	acct    *accountEntry
	global  state.Bucket
	life    *counters

	// run caches the counters of the Stats last bound to a call of this
	// entry, so that a run's calls find theirs without a lookup.
	run atomic.Pointer[runCounters]
}

type runCounters struct {
	stats *Stats
	c     *counters
}

// runCounters returns s's counters for the entry's service scope.
func (e *scopeEntry) runCounters(s *Stats) *counters {
	if rc := e.run.Load(); rc != nil && rc.stats == s {
		return rc.c
	}
	c := s.table.get(e.svc)
	e.run.Store(&runCounters{stats: s, c: c})
	return c
}

// snapshot returns where the entry stands at now.
func (e *scopeEntry) snapshot(now time.Duration, budget state.Budget) state.ScopeSnapshot {
	s := state.ScopeSnapshot{
		Leaf:        e.leaf.Snapshot(now),
		Breaker:     e.breaker.Snapshot(now),
		MaxInFlight: e.acct.bulkhead.Limit(),
		RetryBudget: budget.Remaining(),
	}
	if e.acct.bucket != nil {
		s.Account = e.acct.bucket.Snapshot(now)
	}
	s.InFlight, s.Waiting = e.acct.bulkhead.InUse()
	return s
}

// minSweep is the table size under which no sweep runs.
const minSweep = 4096

func (g *Governor) newScopeTable(set *providerSettings) *scopeTable {
	t := &scopeTable{g: g, set: set, accounts: map[string]*accountEntry{}, sweepAt: minSweep}
	if set.global != nil {
		t.global = g.store.Bucket(Scope{Provider: set.name}.Key(), *set.global, g.now())
	}
	return t
}

// lookup returns the live entry of sc's leaf. It reads the clock only
// when it creates one.
func (t *scopeTable) lookup(sc Scope) *scopeEntry {
	if e, ok := t.entries.Load(sc); ok && !e.dead.Load() {
		return e
	}
	return t.create(sc, t.g.now())
}

// create finds or makes the entry of sc's leaf and maps sc to it. A call
// that still holds a retired table is sent to the table in force, once the
// reconfiguration that retired it is published.
func (t *scopeTable) create(sc Scope, now time.Duration) *scopeEntry {
	t.entries.Lock()
	if t.retired {
		t.entries.Unlock()
		t.g.mu.Lock() // Configure or Reset holds it until the new table is in force
		t.g.mu.Unlock()
		return t.g.provider(t.set.name).scopes.lookup(sc)
	}
	defer t.entries.Unlock()
	if e, ok := t.entries.LoadLocked(sc); ok && !e.dead.Load() {
		return e
	}
	key := t.set.leafKey(sc)
	if e, ok := t.entries.LoadLocked(key); ok && !e.dead.Load() {
		t.entries.StoreLocked(sc, e)
		return e
	}
	if n := t.entries.LenLocked(); n >= t.sweepAt || (n >= minSweep && now-t.lastSweep >= t.g.idle) {
		t.sweep(now)
	}
	g := t.g
	acct := t.accounts[key.Account]
	if acct == nil {
		acct = &accountEntry{bulkhead: bulkhead.New(t.set.bulkhead)}
		if t.set.account != nil {
			acct.bucket = g.store.Bucket(key.accountScope().Key(), *t.set.account, now)
		}
		t.accounts[key.Account] = acct
	}
	acct.refs++
	sk := key.Key()
	e := &scopeEntry{
		key:     key,
		svc:     key.serviceScope(),
		leaf:    g.store.Bucket(sk, t.set.leafSpec(key), now),
		breaker: g.store.Breaker(sk, t.set.breaker),
		acct:    acct,
		global:  t.global,
	}
	e.life = g.lifeCounters(e.svc)
	t.entries.StoreLocked(key, e)
	t.entries.StoreLocked(sc, e)
	return e
}

// adopt takes over the state of old, the table of the provider's previous
// settings, and retires it: the accounts' bulkheads always (with this
// table's cap, so that the slots calls hold still count), the buckets when
// keepBuckets is set and the breakers when keepBreakers is. Every entry of
// old is marked dead, so that calls holding one move here when they next
// record something. t must not be published yet.
func (t *scopeTable) adopt(old *scopeTable, keepBuckets, keepBreakers bool) {
	old.entries.Lock()
	defer old.entries.Unlock()
	t.entries.Lock()
	defer t.entries.Unlock()
	old.retired = true
	if keepBuckets {
		t.global = old.global
	}
	for name, a := range old.accounts {
		a.bulkhead.SetLimit(t.set.bulkhead)
		na := &accountEntry{bulkhead: a.bulkhead}
		switch {
		case t.set.account == nil:
		case keepBuckets && a.bucket != nil:
			na.bucket = a.bucket
		default:
			na.bucket = t.g.store.Bucket(Scope{Provider: t.set.name, Account: name}.Key(), *t.set.account, t.g.now())
		}
		t.accounts[name] = na
	}
	old.entries.RangeLocked(func(k Scope, e *scopeEntry) {
		if k != e.key || e.dead.Load() {
			return
		}
		e.dead.Store(true)
		if !keepBuckets && !keepBreakers || t.set.leafKey(e.key) != e.key {
			e.life.refs.Add(-1) // made afresh on its next call
			return
		}
		ne := &scopeEntry{key: e.key, svc: e.svc, leaf: e.leaf, breaker: e.breaker, acct: t.accounts[e.key.Account], global: t.global, life: e.life}
		if !keepBuckets {
			ne.leaf = t.g.store.Bucket(e.key.Key(), t.set.leafSpec(e.key), t.g.now())
		}
		if !keepBreakers {
			ne.breaker = t.g.store.Breaker(e.key.Key(), t.set.breaker)
		}
		ne.acct.refs++
		t.entries.StoreLocked(e.key, ne)
	})
}

// sweep drops the entries that hold nothing learned and have been idle,
// then the accounts no entry uses. The entries lock must be held.
func (t *scopeTable) sweep(now time.Duration) {
	t.entries.RangeLocked(func(k Scope, e *scopeEntry) {
		if k == e.key && e.breaker.Pristine() && e.leaf.Idle(now, t.g.idle) {
			e.dead.Store(true)
			e.acct.refs--
			e.life.refs.Add(-1)
		}
	})
	t.entries.RangeLocked(func(k Scope, e *scopeEntry) {
		if e.dead.Load() {
			t.entries.DeleteLocked(k)
		}
	})
	for name, a := range t.accounts {
		if a.refs > 0 {
			continue
		}
		if used, waiting := a.bulkhead.InUse(); used > 0 || waiting > 0 {
			continue
		}
		if a.bucket != nil && !a.bucket.Idle(now, t.g.idle) {
			continue
		}
		delete(t.accounts, name)
	}
	t.sweepAt = max(minSweep, 2*t.entries.LenLocked())
	t.lastSweep = now
	t.g.foldLifetime()
}

// eachEntry calls f for every live leaf entry of every provider, with the
// provider's state.
func (g *Governor) eachEntry(f func(*scopeEntry, *provider)) {
	c := g.configured()
	ps := []*provider{c.aws, c.azure, c.gcp}
	for _, p := range g.others.Snapshot() {
		ps = append(ps, p)
	}
	for _, p := range ps {
		var es []*scopeEntry
		p.scopes.entries.Lock()
		p.scopes.entries.RangeLocked(func(k Scope, e *scopeEntry) {
			if k == e.key && !e.dead.Load() {
				es = append(es, e)
			}
		})
		p.scopes.entries.Unlock()
		for _, e := range es {
			f(e, p)
		}
	}
}

// liveScopes returns the number of leaf entries held, for tests and the
// memory benchmark.
func (g *Governor) liveScopes() int {
	n := 0
	g.eachEntry(func(*scopeEntry, *provider) { n++ })
	return n
}
