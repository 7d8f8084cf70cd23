package resilience

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/internal/breaker"
	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/internal/bulkhead"
	"github.com/cloudg/cloudg/state"
)

// scopeTable holds one provider's scopes: leaf buckets and breakers per
// leaf scope, bulkheads and account buckets per account, the provider
// bucket.
type scopeTable struct {
	g *Governor
	// set is the settings the table was made with: its buckets',
	// breakers' and bulkheads', which hold while it is in force. A
	// Configure that changes none of them keeps the table with new
	// settings, which the provider has (Governor.settingsOf).
	set *providerSettings

	// index finds a leaf scope's entry without a lock; mu guards its
	// writes, accounts, and retired.
	index        scopeIndex
	mu           sync.Mutex
	accounts     map[string]*accountEntry
	global       state.Bucket  // the provider bucket, or nil
	retired      bool          // a newer table adopted this one's state
	unused       []string      // accounts no entry uses that the reclaimer could not drop yet
	accountsPeak int           // the most accounts since the map was last rebuilt
	kept         []*scopeEntry // the entries the reclaimer's pass keeps, while keeping
	keeping      bool
	pass         uint32 // counts the reclaimer's passes over the table
}

// accountEntry is the state shared by an account's scopes.
type accountEntry struct {
	bulkhead *bulkhead.Bulkhead
	bucket   state.Bucket // nil when the provider has no account bucket
	global   state.Bucket // the provider bucket, or nil
	refs     int          // live entries using it; guarded by the table's mu
}

// scopeEntry is one leaf scope's state, resolved once per call.
//
// The reclaimer that drops an idle entry marks it dead before it removes
// it from the index. A call that still holds a dead entry needs no
// reference count to stay correct: it was idle and pristine, so what the
// call took from it (one token of a full bucket) is immaterial; what the
// call learns (a throttle, a failure) goes to the live entry (Guard.live);
// and a slot taken from a reclaimed account is given back and taken again
// (Guard.acquire), so that the account's cap holds. The entry counts its
// calls in flight (entryFlags) only so that it stays listed while they
// are.
type scopeEntry struct {
	flags   entryFlags
	born    uint32 // the table's reclaimer pass when it was made
	hash    uint64 // of key
	key     Scope  // the leaf scope
	leaf    state.Bucket
	breaker state.Breaker
	acct    *accountEntry

	// calls counts the entry's calls until it is reclaimed, when they are
	// folded into its service's lifetime counters (or the totals); a scope
	// that only counted calls needs no lifetime counters of its own.
	calls atomic.Int64
	// life is its service scope's lifetime counters, made on the first
	// event other than a call.
	life atomic.Pointer[counters]
	// run caches the counters of the Stats last bound to a call of this
	// entry, so that a run's calls find theirs without a lookup.
	run atomic.Pointer[runCounters]
	// health is what this process saw of the scope's answers since its
	// last success, made at its first failed answer.
	health atomic.Pointer[health]
}

// foldedCalls marks an entry whose calls were folded: a call counted after
// that leaves the count negative, and goes to the totals instead.
const foldedCalls = -1 << 62

type runCounters struct {
	stats *Stats
	c     *counters
}

// runCounters returns s's counters for the entry's service scope.
func (e *scopeEntry) runCounters(s *Stats) *counters {
	if rc := e.run.Load(); rc != nil && rc.stats == s {
		return rc.c
	}
	c := s.table.get(serviceScope(e.key))
	e.run.Store(&runCounters{stats: s, c: c})
	return c
}

// lifeCounters returns the lifetime counters of the entry's service scope,
// making them on first use.
func (e *scopeEntry) lifeCounters(g *Governor) *counters {
	if c := e.life.Load(); c != nil {
		return c
	}
	c := g.life.get(serviceScope(e.key))
	e.life.Store(c)
	return c
}

// snapshot returns where the entry stands at now, epoch being the
// governor's. Its account's bucket and its provider's are read through
// reads.
func (e *scopeEntry) snapshot(epoch time.Time, now time.Duration, p *provider, reads accountReads) state.ScopeSnapshot {
	s := state.ScopeSnapshot{
		Scope:       e.key,
		Leaf:        e.leaf.Snapshot(now),
		Breaker:     e.breaker.Snapshot(now),
		MaxInFlight: e.acct.bulkhead.Limit(),
		RetryBudget: p.budget.Remaining(),
	}
	if e.acct.bucket != nil {
		s.Account = reuse(reads.accounts, e.acct, e.acct.bucket, now)
	}
	if e.acct.global != nil {
		s.Provider = reuse(reads.providers, p, e.acct.global, now)
	}
	if p := max(s.Leaf.Paused, s.Account.Paused, s.Provider.Paused); p > 0 {
		s.PausedUntil = epoch.Add(now).Add(p) // apart: now + p may pass a Duration's range
	}
	s.InFlight, s.Waiting = e.acct.bulkhead.InUse()
	s.Queued = max(s.Leaf.Queued(), s.Account.Queued(), s.Provider.Queued())
	if h := e.health.Load(); h != nil {
		ok := e.sharedSuccess()
		// Dead and Failing of one moment: a scope read dead shows its
		// streak.
		s.Dead, s.OpenReason, s.Failing = h.read(p.set, epoch, now, s.Breaker.State == state.Closed, ok)
		if testHookHealthRead != nil {
			testHookHealthRead()
		}
	}
	if rb, ok := e.breaker.(reasonBreaker); ok {
		// A shared breaker says why it opened as the process that opened
		// it did; while it is not closed, a scope it says is dead is dead
		// for this process too.
		if why := rb.OpenReason(); why != "" {
			s.OpenReason = why
			if s.Dead == "" && s.Breaker.State != state.Closed && (why == "down" || why == "throttled for good") {
				s.Dead = why
			}
		}
	}
	return s
}

// accountReads keeps, during one iteration over many scopes, the last
// snapshot of each account's bucket and of each provider's provider
// bucket, for accountReuse: with a shared store (fleet mode) each
// snapshot is a round trip, and the scopes of an account (of a provider)
// would read its one bucket once each. stored keeps, by their keys, those
// read from the store through handles made for the read (of accounts and
// providers the governor holds none of: see Governor.stored). Its zero
// value, with nil maps, reads every time. It is not safe for concurrent
// use.
type accountReads struct {
	accounts  map[*accountEntry]accountRead
	providers map[*provider]accountRead
	stored    map[string]accountRead
}

// newAccountReads returns an accountReads that keeps its snapshots.
func newAccountReads() accountReads {
	return accountReads{accounts: map[*accountEntry]accountRead{}, providers: map[*provider]accountRead{}, stored: map[string]accountRead{}}
}

// accountRead is a snapshot of an account's bucket (or a provider's) and
// when it was taken.
type accountRead struct {
	at   time.Duration
	snap state.BucketSnapshot
}

// accountReuse is how long an account's snapshot stands for the next
// scopes of the account in one iteration: a status page's read of
// thousands of scopes reads each account's bucket about ten times a
// second, not once per scope. A provider's bucket is read as often.
const accountReuse = 100 * time.Millisecond

// reuse returns the snapshot at now of b, the bucket of owner (an
// account's or a provider's), which is not nil: the one m holds, taken
// within accountReuse before, with what is left of its pause, or a new
// one, kept in m. A nil m reads every time.
func reuse[K comparable](m map[K]accountRead, owner K, b state.Bucket, now time.Duration) state.BucketSnapshot {
	if m == nil {
		return b.Snapshot(now)
	}
	if s, ok := cached(m, owner, now); ok {
		return s
	}
	s := b.Snapshot(now)
	m[owner] = accountRead{now, s}
	return s
}

// cached returns the snapshot m holds of owner's bucket, when it was
// taken within accountReuse before now, with what is left of its pause
// (a pause a Store answered negative, which holds nothing, as it was: the
// time since taken from the most negative Duration would wrap around to
// a pause of 292 years).
func cached[K comparable](m map[K]accountRead, owner K, now time.Duration) (state.BucketSnapshot, bool) {
	if c, ok := m[owner]; ok && now >= c.at && now-c.at < accountReuse {
		s := c.snap
		if s.Paused > 0 {
			s.Paused = max(0, s.Paused-(now-c.at))
		}
		return s, true
	}
	return state.BucketSnapshot{}, false
}

func (g *Governor) newScopeTable(set *providerSettings) *scopeTable {
	t := &scopeTable{g: g, set: set, accounts: map[string]*accountEntry{}}
	if set.global != nil {
		t.global = g.store.Bucket(providerKey(set.name), *set.global, g.now())
	}
	return t
}

// lookup returns the live entry of sc's leaf. It reads the clock only
// when it creates one.
func (t *scopeTable) lookup(sc Scope) *scopeEntry {
	key := t.set.leafKey(sc)
	h := hashScope(key)
	if e := t.index.load(key, h); e != nil && !e.flags.dead() {
		return e
	}
	return t.create(key, h)
}

// resolve returns the provider in force for sc and the live entry of sc's
// leaf in that provider's table. A lookup that races a Configure or Reset
// is sent to the table in force (scopeTable.create), which the provider
// read before it may not own: the provider is read again until the two
// belong together, so that a call never pairs a new entry with an old
// provider's settings (a provider disabled since, whose calls take no
// token). testHookResolve, when set, runs between the two reads.
func (g *Governor) resolve(sc Scope) (*provider, *scopeEntry) {
	p := g.provider(sc.Provider)
	for {
		if testHookResolve != nil {
			testHookResolve()
		}
		e := p.scopes.lookup(sc)
		np := g.provider(sc.Provider)
		if np == p {
			return p, e
		}
		p = np
	}
}

// testHookResolve is set by tests only.
var testHookResolve func()

// peek returns the live entry of sc's leaf, or nil when there is none, and
// the account's state, or nil: a read that makes nothing.
func (t *scopeTable) peek(sc Scope) (*scopeEntry, *accountEntry) {
	key := t.set.leafKey(sc)
	if e := t.index.load(key, hashScope(key)); e != nil && !e.flags.dead() {
		return e, e.acct
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return nil, t.accounts[key.Account]
}

// create finds or makes the entry of the leaf scope key, whose hash is h.
// A call that still holds a retired table is sent to the table in force,
// once the reconfiguration that retired it is published.
func (t *scopeTable) create(key Scope, h uint64) *scopeEntry {
	t.mu.Lock()
	if t.retired {
		t.mu.Unlock()
		t.g.mu.Lock() // Configure or Reset holds it until the new table is in force
		t.g.mu.Unlock()
		nt := t.g.provider(t.set.name).scopes
		if nt == t {
			// Sending the call back here would recurse until the stack
			// overflows, which no recover catches.
			panic("resilience: the provider in force holds a retired scope table")
		}
		return nt.lookup(key)
	}
	defer t.mu.Unlock()
	if e := t.index.load(key, h); e != nil && !e.flags.dead() {
		return e
	}
	e := t.newEntry(key, h)
	if t.keeping {
		if t.index.grows() {
			t.kept, t.keeping = nil, false // the pass's slots move: nothing to rebuild from
		} else {
			t.keep(e, len(t.index.tab.Load().slots))
		}
	}
	t.index.store(e)
	return e
}

// newEntry makes the entry of the leaf scope key, and its account's if it
// is the account's first. In-process state is made in one allocation with
// the entry (and the account), so that a call to a scope touches one piece
// of memory, not five. The table's mu is held.
func (t *scopeTable) newEntry(key Scope, h uint64) *scopeEntry {
	g := t.g
	now := g.now()
	acct := t.accounts[key.Account]
	_, inProcess := g.store.(memoryStore)
	var e *scopeEntry
	switch {
	case inProcess && acct == nil:
		blk := &entryWithAccount{}
		blk.bulk.Init(t.set.bulkhead)
		blk.acct.bulkhead = &blk.bulk
		acct = &blk.acct
		e = blk.entryBlock.init(t.set, key, now)
	case inProcess:
		e = (&entryBlock{}).init(t.set, key, now)
	default:
		if acct == nil {
			acct = &accountEntry{bulkhead: bulkhead.New(t.set.bulkhead)}
		}
		sk := key.Key()
		e = &scopeEntry{leaf: g.store.Bucket(sk, t.set.leafSpec(key), now), breaker: g.store.Breaker(sk, t.set.breaker)}
	}
	if t.accounts[key.Account] == nil {
		acct.global = t.global
		if t.set.account != nil {
			acct.bucket = g.store.Bucket(accountKey(key), *t.set.account, now)
		}
		t.accounts[key.Account] = acct
		t.accountsPeak = max(t.accountsPeak, len(t.accounts))
	}
	acct.refs++
	e.born, e.hash, e.key, e.acct = t.pass, h, key, acct
	return e
}

// entryFlags is a scope entry's two flags and its count of calls in
// flight, in one word so that the entry (with its bucket and breaker, an
// entryBlock) stays in its size class: a second word made every live
// scope 32 bytes larger.
//
// dead: a Reset, a Configure or a sweep retired the entry, and calls
// look the scope up again. watched: a call waits on the entry (for
// tokens, a breaker's verdict, or through a backoff), marked before it
// looks at dead, so that a sweep that reclaims the entry wakes the
// waiters (Governor.wake) and they follow the live entry.
//
// The count (the bits above the flags) is the calls of the scope that
// hold a slot of its account's bulkhead: a call in flight longer than the
// reclaim interval keeps its scope, whose bucket is full again long
// before it answers, listed (Governor.Scopes, a status page, in-flight
// gauges). A call counts itself on the live entry when it takes its slot
// (busy, which also says whether the entry is dead, in the same atomic
// step), and uncounts itself on the live entry when it gives the slot
// back (unbusy): a Reset or a Configure that retires the entry carries
// the count, read as it marks the entry dead, to the entry that takes
// its place (scopeTable.adopt), and a sweep reclaims only an entry whose
// count is 0 when it marks it dead (reclaim). The count keeps entries;
// nothing else reads it, so where it cannot be carried (a Configure that
// changes which leaf a scope maps to) it is dropped, and unbusy stops at
// 0: a scope may then be reclaimed with a call in flight, as before the
// count, never kept for good.
type entryFlags struct{ v atomic.Uint32 }

const (
	entryDead uint32 = 1 << iota
	entryWatched
	entryBusy // the count's unit

	minusBusy = ^(entryBusy - 1) // added, takes one from the count
)

func (f *entryFlags) dead() bool    { return f.v.Load()&entryDead != 0 }
func (f *entryFlags) watched() bool { return f.v.Load()&entryWatched != 0 }
func (f *entryFlags) watch()        { f.v.Or(entryWatched) }

// kill marks the entry dead, and returns the calls it counted then.
func (f *entryFlags) kill() uint32 { return busyOf(f.v.Or(entryDead)) }

// busyOf returns the calls v counts: 0 for a count unbusy has just taken
// below 0, and is about to put back.
func busyOf(v uint32) uint32 {
	if n := v / entryBusy; n < busyUnder {
		return n
	}
	return 0
}

// busyUnder is the count of an entry unbusy took below 0 (all the count's
// bits set, the flags' untouched).
const busyUnder = math.MaxUint32 / entryBusy

// reclaim marks the entry dead if it counts no call: it reports whether
// it did.
func (f *entryFlags) reclaim() bool {
	v := f.v.Load()
	return v < entryBusy && f.v.CompareAndSwap(v, v|entryDead)
}

// busy counts a call on the entry, unless it is dead: it reports whether
// it did.
func (f *entryFlags) busy() bool {
	if f.v.Add(entryBusy)&entryDead == 0 {
		return true
	}
	f.v.Add(minusBusy) // a dead entry's count was read once, as it died
	return false
}

// unbusy uncounts a call, down to 0, unless the entry is dead: it reports
// whether it did (the call is then uncounted on the live entry, which the
// count went to).
func (f *entryFlags) unbusy() bool {
	v := f.v.Add(minusBusy)
	if v/entryBusy == busyUnder {
		f.v.Add(entryBusy) // below 0: a count that could not be carried
	}
	return v&entryDead == 0
}

// carry adds n calls to the count of an entry not yet published.
func (f *entryFlags) carry(n uint32) { f.v.Add(n * entryBusy) }

// busyCalls returns the calls the entry counts.
func (f *entryFlags) busyCalls() uint32 { return busyOf(f.v.Load()) }

// entryBlock is an entry with its in-process bucket and breaker, made in
// one allocation; entryWithAccount adds the account and its bulkhead.
type entryBlock struct {
	entry   scopeEntry
	bucket  bucket.Bucket
	breaker breaker.Breaker
}

type entryWithAccount struct {
	entryBlock
	acct accountEntry
	bulk bulkhead.Bulkhead
}

func (b *entryBlock) init(set *providerSettings, key Scope, now time.Duration) *scopeEntry {
	b.bucket.Init(set.leafSpec(key), now)
	b.breaker.Init(set.breaker)
	b.entry.leaf, b.entry.breaker = &b.bucket, &b.breaker
	return &b.entry
}

// adopt takes over the state of old, the table of the provider's previous
// settings, and retires it: the accounts' bulkheads always (with this
// table's cap, so that the slots calls hold still count), the buckets when
// keepBuckets is set and the breakers when keepBreakers is. Every entry of
// old is marked dead, so that calls holding one move here when they next
// record something. The buckets of old it does not take over (its live
// entries' leaves, its accounts' buckets, its provider bucket) are added
// to drops when they are state.Droppers, for the caller to tell once it
// holds no lock; a call that still holds one may take a token of it. t
// must not be published yet.
func (t *scopeTable) adopt(old *scopeTable, keepBuckets, keepBreakers bool, drops *[]state.Dropper) {
	old.mu.Lock()
	defer old.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	old.retired = true
	if keepBuckets {
		t.global = old.global
	} else {
		addDropper(drops, old.global)
	}
	for name, a := range old.accounts {
		a.bulkhead.SetLimit(t.set.bulkhead)
		na := &accountEntry{bulkhead: a.bulkhead, global: t.global}
		switch {
		case t.set.account == nil:
		case keepBuckets && a.bucket != nil:
			na.bucket = a.bucket
		default:
			na.bucket = t.g.store.Bucket(accountKey(Scope{Provider: t.set.name, Account: name}), *t.set.account, t.g.now())
		}
		if na.bucket != a.bucket {
			addDropper(drops, a.bucket)
		}
		t.accounts[name] = na
	}
	old.index.rangeLocked(func(e *scopeEntry) {
		if e.flags.dead() {
			return
		}
		busy := e.flags.kill()
		calls := e.calls.Swap(foldedCalls)
		if !keepBuckets || t.set.leafKey(e.key) != e.key {
			addDropper(drops, e.leaf) // not taken over: a new one is made
		}
		if t.set.leafKey(e.key) != e.key {
			t.g.foldCalls(e, calls) // made afresh on its next call
			return
		}
		if !keepBuckets && !keepBreakers {
			t.g.foldCalls(e, calls)
			if busy > 0 {
				// Made afresh now, so that the calls in flight keep it.
				ne := t.newEntry(e.key, e.hash)
				ne.flags.carry(busy)
				t.index.store(ne)
			}
			return
		}
		ne := &scopeEntry{hash: e.hash, key: e.key, leaf: e.leaf, breaker: e.breaker, acct: t.accounts[e.key.Account]}
		ne.calls.Store(calls)
		ne.life.Store(e.life.Load())
		ne.flags.carry(busy)
		if !keepBuckets {
			ne.leaf = t.g.store.Bucket(e.key.Key(), t.set.leafSpec(e.key), t.g.now())
		}
		if !keepBreakers {
			ne.breaker = t.g.store.Breaker(e.key.Key(), t.set.breaker)
		} else {
			ne.health.Store(e.health.Load()) // why the kept breaker opened, and the streak that found the scope dead
		}
		ne.acct.refs++
		t.index.store(ne)
	})
}

// eachEntry calls f for every live leaf entry of every provider, with the
// provider's state, outside the table's lock: an entry may be retired
// (and its calls folded or moved) by the time f reads it.
// testHookLive, when set, runs between the listing of a provider's
// entries and f.
func (g *Governor) eachEntry(f func(*scopeEntry, *provider)) {
	for _, p := range g.providers() {
		if p = g.inForce(p); p == nil {
			continue
		}
		es := p.scopes.live()
		if testHookLive != nil {
			testHookLive()
		}
		for _, e := range es {
			f(e, p)
		}
	}
}

// testHookLive is set by tests only.
var testHookLive func()

// testHookHealthRead, set by tests only, runs once a snapshot has read
// the scope's health.
var testHookHealthRead func()

// live returns the table's live leaf entries.
func (t *scopeTable) live() []*scopeEntry {
	var es []*scopeEntry
	t.mu.Lock()
	defer t.mu.Unlock()
	t.index.rangeLocked(func(e *scopeEntry) {
		if !e.flags.dead() {
			es = append(es, e)
		}
	})
	return es
}

// inForce returns the state in force of p's provider, or nil when the
// provider was forgotten: a reader that lists the providers and goes over
// them in turn reads each one's scopes where they are when it reaches it,
// not in the table a Configure or Reset since retired, which holds none.
func (g *Governor) inForce(p *provider) *provider { return g.existing(p.set.name) }

// providers returns every provider's state.
func (g *Governor) providers() []*provider {
	c := g.configured()
	ps := []*provider{c.aws, c.azure, c.gcp}
	g.others.Range(func(_, p any) bool {
		ps = append(ps, p.(*provider))
		return true
	})
	return ps
}

// liveScopes returns the number of leaf entries held, for tests and the
// memory benchmark.
func (g *Governor) liveScopes() int {
	n := 0
	g.eachEntry(func(*scopeEntry, *provider) { n++ })
	return n
}
