package resilience

import (
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/internal/bulkhead"
)

// Governor owns the rate limiters, circuit breakers, bulkheads, retry
// budgets and lifetime stats of a set of providers. One per process, from
// Default, is the point: rates learned while one run was throttled keep
// protecting the next, and every integration in the process queues behind
// the same buckets.
//
// A Governor is safe for concurrent use. The zero value is a governor with
// every built-in default, the system clock and the global random source.
type Governor struct {
	initOnce sync.Once
	clock    Clock // nil: the time package
	src      *lockedSource
	logger   *slog.Logger
	idle     int64 // reclaim scopes unused this long
	store    StateStore
	epoch    time.Time

	mu     sync.Mutex // serialises Configure, Reset and provider creation
	st     atomic.Pointer[govState]
	life   statsTable
	folded atomic.Int64 // calls of lifetime scopes folded into the totals
}

// govState is an immutable snapshot of the configuration in force.
type govState struct {
	cfg             Config
	enabled         bool
	aws, azure, gcp *providerState
	others          map[string]*providerState
}

// providerState is one provider's settings and live state.
type providerState struct {
	set    *providerSettings
	lim    *limits
	budget Budget
}

// An Option configures a governor made by NewGovernor.
type Option interface{ apply(*Governor) }

type optionFunc func(*Governor)

func (f optionFunc) apply(g *Governor) { f(g) }

// WithClock makes the governor read time from c and sleep on it.
func WithClock(c Clock) Option {
	return optionFunc(func(g *Governor) {
		if _, ok := c.(SystemClock); !ok {
			g.clock = c
		}
	})
}

// WithRandom makes the governor draw its backoff jitter from src, so that
// retries are reproducible in tests. src need not be safe for concurrent
// use; the governor serialises it.
func WithRandom(src rand.Source) Option {
	return optionFunc(func(g *Governor) {
		if src != nil {
			g.src = &lockedSource{r: rand.New(src)}
		}
	})
}

// WithLogger makes the governor log circuit breakers opening and closing.
// By default it logs nothing.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(g *Governor) { g.logger = l })
}

// WithReclaimAfter sets how long a scope must go unused, with nothing
// learned (rate at its ceiling, bucket full, breaker closed), before its
// state is dropped (default one minute). Dropping such a scope changes no
// behaviour; it keeps a sweep over millions of scopes from keeping millions
// of buckets.
func WithReclaimAfter(d time.Duration) Option {
	return optionFunc(func(g *Governor) {
		if d > 0 {
			g.idle = int64(d)
		}
	})
}

type lockedSource struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (s *lockedSource) float64() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Float64()
}

// NewGovernor returns a governor with cfg applied. It returns an error, and
// no governor, when cfg is invalid.
func NewGovernor(cfg Config, opts ...Option) (*Governor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := new(Governor)
	for _, o := range opts {
		o.apply(g)
	}
	g.init()
	if err := g.Configure(cfg); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *Governor) init() {
	g.initOnce.Do(func() {
		if g.store == nil {
			g.store = memoryStore{}
		}
		if g.idle == 0 {
			g.idle = int64(time.Minute)
		}
		if g.clock != nil {
			g.epoch = g.clock.Now()
		} else {
			g.epoch = time.Now()
		}
		g.st.Store(g.build(Config{}, nil))
	})
}

// state returns the configuration in force.
func (g *Governor) state() *govState {
	if s := g.st.Load(); s != nil {
		return s
	}
	g.init()
	return g.st.Load()
}

// now returns the governor's time: nanoseconds since its epoch.
func (g *Governor) now() int64 {
	if g.clock == nil {
		return int64(time.Since(g.epoch))
	}
	return int64(g.clock.Now().Sub(g.epoch))
}

// Clock returns the governor's clock, so that an integration can sleep on
// it (an SDK's own backoff, in a simulation running on a scaled clock).
func (g *Governor) Clock() Clock {
	g.init()
	if g.clock == nil {
		return SystemClock{}
	}
	return g.clock
}

func (g *Governor) sleep(ctx context.Context, d int64) error {
	if g.clock == nil {
		return sleep(ctx, time.Duration(d))
	}
	return g.clock.Sleep(ctx, time.Duration(d))
}

// ctxLimit returns the context's deadline in governor time.
func (g *Governor) ctxLimit(ctx context.Context, now int64) (int64, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	left := time.Until(dl)
	if rd, ok := g.clock.(realDurationer); ok && g.clock != nil {
		if scale := float64(rd.RealDuration(time.Second)); scale > 0 {
			left = time.Duration(float64(left) * float64(time.Second) / scale)
		}
	}
	return now + int64(min(left, maxDuration)), true
}

func (g *Governor) random() float64 {
	if g.src != nil {
		return g.src.float64()
	}
	return rand.Float64()
}

// provider returns the state of a provider, creating a generic one for a
// name the configuration does not know.
func (g *Governor) provider(name string) *providerState {
	s := g.state()
	switch name {
	case "aws":
		return s.aws
	case "azure":
		return s.azure
	case "gcp":
		return s.gcp
	}
	if ps, ok := s.others[name]; ok {
		return ps
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s = g.st.Load()
	if ps, ok := s.others[name]; ok {
		return ps
	}
	ns := *s
	ns.others = make(map[string]*providerState, len(s.others)+1)
	for k, v := range s.others {
		ns.others[k] = v
	}
	ps := g.reconcile(nil, resolveProvider(name, ProviderConfig{}, s.enabled))
	ns.others[name] = ps
	g.st.Store(&ns)
	return ps
}

// build makes the state for cfg, keeping what it can of old.
func (g *Governor) build(cfg Config, old *govState) *govState {
	enabled := cfg.Enabled == nil || *cfg.Enabled
	ns := &govState{cfg: cfg, enabled: enabled, others: map[string]*providerState{}}
	var prev govState
	if old != nil {
		prev = *old
	}
	ns.aws = g.reconcile(prev.aws, resolveProvider("aws", cfg.AWS, enabled))
	ns.azure = g.reconcile(prev.azure, resolveProvider("azure", cfg.Azure, enabled))
	ns.gcp = g.reconcile(prev.gcp, resolveProvider("gcp", cfg.GCP, enabled))
	for name, ps := range prev.others {
		ns.others[name] = g.reconcile(ps, resolveProvider(name, ProviderConfig{}, enabled))
	}
	return ns
}

// reconcile keeps a provider's live state where its settings did not
// change: its buckets, breakers and bulkheads (with the slots their calls
// hold) unless the limits changed, its budget unless the retry settings
// changed.
func (g *Governor) reconcile(old *providerState, set *providerSettings) *providerState {
	sameLimits := old != nil && old.set.limitsEqual(set)
	sameRetry := old != nil && old.set.retry == set.retry
	if sameLimits && sameRetry {
		return old
	}
	ps := &providerState{set: set}
	if sameLimits {
		ps.lim = old.lim
	} else {
		ps.lim = g.newLimits(set)
	}
	if sameRetry {
		ps.budget = old.budget
	} else {
		ps.budget = g.store.Budget(set.name, set.retry.budget)
	}
	return ps
}

// Configure applies cfg. It is idempotent per provider: a provider whose
// settings did not change keeps its learned rates, breakers, budget and the
// concurrency slots its calls hold. An invalid cfg changes nothing.
func (g *Governor) Configure(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	g.init()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.st.Store(g.build(cfg, g.st.Load()))
	return nil
}

// Config returns the configuration in force.
func (g *Governor) Config() Config { return g.state().cfg }

// Reset forgets everything learned (rates, pauses, breakers, budgets,
// lifetime stats) and keeps the configuration.
func (g *Governor) Reset() {
	g.init()
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.st.Load()
	fresh := g.build(s.cfg, nil)
	for name := range s.others {
		fresh.others[name] = g.reconcile(nil, resolveProvider(name, ProviderConfig{}, fresh.enabled))
	}
	g.st.Store(fresh)
	g.life.m.reset()
	g.folded.Store(0)
}

// Enabled reports whether calls to provider are governed.
func (g *Governor) Enabled(provider string) bool {
	if provider == "" {
		return false
	}
	return g.provider(provider).set.enabled
}

// RetrySettings are a provider's resolved retry bounds: the configuration
// with the built-in defaults filled in. The SDK integrations configure their
// SDK's own retry loop from them.
type RetrySettings struct {
	MaxRetries int           // retries after the first attempt
	BaseDelay  time.Duration // the shortest backoff
	MaxBackoff time.Duration // the longest backoff (a Retry-After may exceed it)
	Deadline   time.Duration // the bound of a whole call
	Budget     int           // the provider's retry budget, in tokens
}

// RetrySettings returns provider's resolved retry bounds.
func (g *Governor) RetrySettings(provider string) RetrySettings {
	r := g.provider(provider).set.retry
	return RetrySettings{MaxRetries: r.maxRetries, BaseDelay: r.baseDelay, MaxBackoff: r.maxBackoff, Deadline: r.deadline, Budget: r.budget}
}

// BucketState returns the state of scope's leaf bucket now: its rate, its
// ceiling and the time left in a pause.
func (g *Governor) BucketState(scope Scope) BucketState {
	if scope.Provider == "" {
		return BucketState{}
	}
	now := g.now()
	b := g.provider(scope.Provider).lim.lookup(scope, now).leaf.Snapshot(now)
	return BucketState{RateRPS: b.Rate, CeilingRPS: b.Ceiling, PausedFor: b.Paused}
}

// AccountState returns the state of scope's account bucket (Azure's
// subscription bucket, by default), or the zero BucketState when the
// provider has none.
func (g *Governor) AccountState(scope Scope) BucketState {
	if scope.Provider == "" {
		return BucketState{}
	}
	now := g.now()
	b := g.provider(scope.Provider).lim.lookup(scope, now).acct.bucket
	if b == nil {
		return BucketState{}
	}
	s := b.Snapshot(now)
	return BucketState{RateRPS: s.Rate, CeilingRPS: s.Ceiling, PausedFor: s.Paused}
}

// InFlight returns the calls holding a slot of scope's provider x account
// bulkhead, and the calls waiting for one.
func (g *Governor) InFlight(scope Scope) (held, waiting int) {
	if scope.Provider == "" {
		return 0, 0
	}
	return g.provider(scope.Provider).lim.lookup(scope, g.now()).acct.bulkhead.InUse()
}

// RetryBudget returns the tokens left in provider's retry budget.
func (g *Governor) RetryBudget(provider string) float64 {
	return g.provider(provider).budget.Remaining()
}

var defaultGovernor atomic.Pointer[Governor]

// Default returns the process governor, which Call, Do and the SDK
// integrations use unless told otherwise.
func Default() *Governor {
	if g := defaultGovernor.Load(); g != nil {
		return g
	}
	g := new(Governor)
	g.init()
	if defaultGovernor.CompareAndSwap(nil, g) {
		return g
	}
	return defaultGovernor.Load()
}

// SetDefault makes g the process governor, for a program that wants its own
// options (a logger, a clock, a random source) on every call. A nil g is
// ignored.
func SetDefault(g *Governor) {
	if g != nil {
		g.init()
		defaultGovernor.Store(g)
	}
}

// Configure applies cfg to the process governor (see Governor.Configure).
func Configure(cfg Config) error { return Default().Configure(cfg) }

// ResetDefault replaces the process governor with a fresh one at the
// built-in defaults, forgetting everything learned. It exists for tests.
func ResetDefault() {
	g := new(Governor)
	g.init()
	defaultGovernor.Store(g)
}

// limits holds one provider's scopes: leaf buckets and breakers per leaf
// scope, bulkheads and account buckets per account, the provider bucket.
type limits struct {
	g      *Governor
	set    *providerSettings
	global Bucket

	// entries maps both leaf scopes and the full scopes of calls (with an
	// operation that shares its service's leaf) to their entry, so that a
	// call finds its entry with one lookup. Its lock also guards accounts
	// and sweepAt.
	entries   readMap[Scope, *entry]
	accounts  map[string]*account
	sweepAt   int   // sweep when the table reaches this size...
	lastSweep int64 // ...or when it is large and this is a while ago
}

// account is the state shared by an account's scopes.
type account struct {
	bulkhead *bulkhead.Bulkhead
	bucket   Bucket // nil when the provider has no account bucket
	refs     int    // live entries using it; guarded by the entries lock
}

// entry is one leaf scope's state, resolved once per call.
//
// A sweep that reclaims an entry marks it dead before it drops it from the
// table. A call that still holds a dead entry needs no reference count to
// stay correct: it was idle and pristine, so what the call took from it
// (one token of a full bucket) is immaterial; what the call learns (a
// throttle, a failure) goes to the live entry (tracker.live); and a slot
// taken from a reclaimed account is given back and taken again
// (tracker.acquire), so that the account's cap holds.
type entry struct {
	dead    atomic.Bool
	key     Scope // the leaf scope
	svc     Scope // its service scope, the telemetry key
	leaf    Bucket
	breaker Breaker
	acct    *account
	global  Bucket
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
func (e *entry) runCounters(s *Stats) *counters {
	if rc := e.run.Load(); rc != nil && rc.stats == s {
		return rc.c
	}
	c := s.table.get(e.svc)
	e.run.Store(&runCounters{stats: s, c: c})
	return c
}

// folded marks lifetime counters folded into the totals: adding a
// reference to them leaves the count negative.
const folded = math.MinInt64 / 2

// minSweep is the table size under which no sweep runs.
const minSweep = 4096

func (g *Governor) newLimits(set *providerSettings) *limits {
	l := &limits{g: g, set: set, accounts: map[string]*account{}, sweepAt: minSweep}
	if set.global != nil {
		l.global = g.store.Bucket(Scope{Provider: set.name}, BucketSpec(*set.global), g.now())
	}
	return l
}

// lookup returns the live entry of sc's leaf.
func (l *limits) lookup(sc Scope, now int64) *entry {
	if e, ok := l.entries.load(sc); ok && !e.dead.Load() {
		return e
	}
	return l.create(sc, now)
}

// create finds or makes the entry of sc's leaf and maps sc to it.
func (l *limits) create(sc Scope, now int64) *entry {
	l.entries.lock()
	defer l.entries.unlock()
	if e, ok := l.entries.loadLocked(sc); ok && !e.dead.Load() {
		return e
	}
	key := l.set.leafKey(sc)
	if e, ok := l.entries.loadLocked(key); ok && !e.dead.Load() {
		l.entries.storeLocked(sc, e)
		return e
	}
	if n := l.entries.lenLocked(); n >= l.sweepAt || (n >= minSweep && now-l.lastSweep >= l.g.idle) {
		l.sweep(now)
	}
	g := l.g
	acct := l.accounts[key.Account]
	if acct == nil {
		acct = &account{bulkhead: bulkhead.New(l.set.bulkhead)}
		if l.set.account != nil {
			acct.bucket = g.store.Bucket(key.AccountScope(), BucketSpec(*l.set.account), now)
		}
		l.accounts[key.Account] = acct
	}
	acct.refs++
	e := &entry{
		key:     key,
		svc:     key.ServiceScope(),
		leaf:    g.store.Bucket(key, BucketSpec(l.set.leafSpec(key)), now),
		breaker: g.store.Breaker(key, BreakerSpec{Threshold: l.set.breaker.Threshold, Cooldown: time.Duration(l.set.breaker.Cooldown), MaxCooldown: time.Duration(l.set.breaker.MaxCooldown)}),
		acct:    acct,
		global:  l.global,
	}
	e.life = g.lifeCounters(e.svc)
	l.entries.storeLocked(key, e)
	l.entries.storeLocked(sc, e)
	return e
}

// sweep drops the entries that hold nothing learned and have been idle,
// then the accounts no entry uses. The entries lock must be held.
func (l *limits) sweep(now int64) {
	l.entries.rangeLocked(func(k Scope, e *entry) {
		if k == e.key && e.breaker.Pristine() && e.leaf.Idle(now, l.g.idle) {
			e.dead.Store(true)
			e.acct.refs--
			e.life.refs.Add(-1)
		}
	})
	l.entries.rangeLocked(func(k Scope, e *entry) {
		if e.dead.Load() {
			l.entries.deleteLocked(k)
		}
	})
	for name, a := range l.accounts {
		if a.refs > 0 {
			continue
		}
		if used, waiting := a.bulkhead.InUse(); used > 0 || waiting > 0 {
			continue
		}
		if a.bucket != nil && !a.bucket.Idle(now, l.g.idle) {
			continue
		}
		delete(l.accounts, name)
	}
	l.sweepAt = max(minSweep, 2*l.entries.lenLocked())
	l.lastSweep = now
	l.g.foldLifetime()
}

// maxLifetimeScopes is the number of lifetime scopes kept before the idle,
// uneventful ones are folded into the totals.
const maxLifetimeScopes = 1 << 16

// lifeCounters returns the lifetime counters of a service scope with a
// reference held by a leaf entry.
func (g *Governor) lifeCounters(svc Scope) *counters {
	for {
		c := g.life.get(svc)
		if c.refs.Add(1) > 0 {
			return c
		}
		g.life.m.lock()
		if cur, ok := g.life.m.loadLocked(svc); ok && cur == c {
			g.life.m.deleteLocked(svc)
		}
		g.life.m.unlock()
	}
}

// foldLifetime folds the lifetime scopes that only counted calls and that
// no live entry uses into the totals, once there are many of them.
func (g *Governor) foldLifetime() {
	g.life.m.lock()
	defer g.life.m.unlock()
	if g.life.m.lenLocked() < maxLifetimeScopes {
		return
	}
	g.life.m.rangeLocked(func(k Scope, c *counters) {
		if !c.eventful() && c.refs.CompareAndSwap(0, folded) {
			g.folded.Add(c.calls.Load())
			g.life.m.deleteLocked(k)
		}
	})
}

func (g *Governor) foldedTotals() Totals { return Totals{Calls: g.folded.Load()} }

// eachEntry calls f for every live leaf entry of every provider.
func (g *Governor) eachEntry(f func(*entry)) {
	s := g.state()
	pss := []*providerState{s.aws, s.azure, s.gcp}
	for _, ps := range s.others {
		pss = append(pss, ps)
	}
	for _, ps := range pss {
		var es []*entry
		ps.lim.entries.lock()
		ps.lim.entries.rangeLocked(func(k Scope, e *entry) {
			if k == e.key && !e.dead.Load() {
				es = append(es, e)
			}
		})
		ps.lim.entries.unlock()
		for _, e := range es {
			f(e)
		}
	}
}

// liveScopes returns the number of leaf entries held, for tests and the
// memory benchmark.
func (g *Governor) liveScopes() int {
	n := 0
	g.eachEntry(func(*entry) { n++ })
	return n
}
