package resilience

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/internal/pace"
	"github.com/cloudg/cloudg/internal/sleep"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/state"
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
	logEvery time.Duration // the log repeats a scope's throttles and losses at most this often
	logs     logWindows
	idle     time.Duration // reclaim scopes unused this long
	store    state.Store
	epoch    time.Time

	mu         sync.Mutex // serialises Configure, Reset, and the making and dropping of providers
	cur        atomic.Pointer[configured]
	others     sync.Map      // provider name -> *provider: those other than aws, azure and gcp; written under mu
	leakLogged atomic.Bool   // a dropped guard's slot was released and logged
	unreadable unreadableLog // the types of the unreadable answers logged
	life       statsTable
	waited     span         // the wall-clock time during which a call waited, for the lifetime's totals
	folded     atomic.Int64 // calls of dropped scopes that had no lifetime counters
	moves      moves        // sweeps, Configures and Resets that move calls, for the lifetime's readers
	reclaim    reclaimer
	gen        atomic.Uint64 // counts the changes of providers' state, for Bound
	// changed is closed, and cleared, at each change gen counts (replaced),
	// and when a sweep reclaims an entry a call waits on (wake): a call
	// waiting for tokens, for a breaker's verdict or through a backoff
	// wakes to see whether the change retired the buckets or the breaker
	// it waits on. Made by the first waiter that asks for it.
	changed          atomic.Pointer[chan struct{}]
	sharedBuckets    bool // the store's buckets may wait for it (fleet mode)
	observer         observe.Observer
	observed         bool        // an observer or a logger takes events
	observerPanicked atomic.Bool // logged once
	// admissionPanicked: a scheduler's Admission panicked, logged once.
	admissionPanicked atomic.Bool
	// The functions WatchSlots registered (nil: none), written under mu;
	// watcherPanicked: one of them panicked, logged once.
	slotWatch       atomic.Pointer[[]*slotWatcher]
	watcherPanicked atomic.Bool
}

// configured is the configuration in force, immutable once published.
type configured struct {
	cfg             Config
	enabled         bool
	aws, azure, gcp *provider
}

// provider is one provider's settings and live state.
type provider struct {
	set    *providerSettings
	scopes *scopeTable
	budget state.Budget
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

// NewGovernor returns a governor with cfg applied and the governor options
// among opts (WithClock, WithRandom, WithLogger, WithLogInterval,
// WithReclaimAfter, WithStateStore, WithObserver). It returns an error,
// and no governor, when cfg is invalid.
func NewGovernor(cfg Config, opts ...GovernorOption) (*Governor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := new(Governor)
	for _, o := range opts {
		switch o := o.(type) {
		case clockOption:
			if _, ok := o.c.(systemClock); !ok {
				g.clock = o.c
			}
		case randomOption:
			if o.src != nil {
				g.src = &lockedSource{r: rand.New(o.src)}
			}
		case loggerOption:
			g.logger = o.l
		case logIntervalOption:
			if o.d > 0 {
				g.logEvery = min(o.d, maxDuration) // an endless interval, not one that wraps past now
			}
		case reclaimOption:
			if o.d > 0 {
				g.idle = o.d
			}
		case observerOption:
			g.observer = o.o
		case storeOption:
			if o.s != nil {
				g.store = o.s
			}
		}
	}
	g.observed = g.observer != nil || g.logger != nil
	if u, ok := g.store.(loggerUser); ok && g.logger != nil {
		u.UseLogger(g.logger)
	}
	g.init()
	if err := g.Configure(cfg); err != nil {
		return nil, err
	}
	// The configuration the governor is made with replaced no state anyone
	// read: Generation starts at 0, as the zero Governor's does.
	g.gen.Store(0)
	if a, ok := g.observer.(attacher); ok {
		a.Attach(g)
	}
	return g, nil
}

func (g *Governor) init() {
	g.initOnce.Do(func() {
		if g.store == nil {
			g.store = memoryStore{}
		}
		_, inProcess := g.store.(memoryStore)
		g.sharedBuckets = !inProcess
		if _, checked := g.store.(checkedStore); !inProcess && !checked {
			g.store = checkedStore{g.store} // a nil state refused where it is made
		}
		if g.idle == 0 {
			g.idle = time.Minute
		}
		if g.logEvery == 0 {
			g.logEvery = defaultLogEvery
		}
		if g.clock != nil {
			g.epoch = g.clock.Now()
		} else {
			g.epoch = time.Now()
		}
		g.cur.Store(g.build(Config{}, nil, false, nil))
	})
}

// configured returns the configuration in force.
func (g *Governor) configured() *configured {
	if c := g.cur.Load(); c != nil {
		return c
	}
	g.init()
	return g.cur.Load()
}

// now returns the governor's time: the time since its epoch.
func (g *Governor) now() time.Duration {
	if g.clock == nil {
		return time.Since(g.epoch)
	}
	return g.clock.Now().Sub(g.epoch)
}

// Clock returns the governor's clock, so that an integration can sleep on
// it (an SDK's own backoff, in a simulation running on a faster clock).
func (g *Governor) Clock() Clock {
	g.init()
	if g.clock == nil {
		return systemClock{}
	}
	return g.clock
}

func (g *Governor) sleep(ctx context.Context, d time.Duration) error {
	if g.clock == nil {
		return sleep.For(ctx, d)
	}
	return g.clock.Sleep(ctx, d)
}

// sleepOr waits d, until ctx is done, or until wake, also, third, fourth or
// fifth is closed (a nil channel never is), and reports whether a wake channel
// ended it. A custom clock sleeps on a context that the wake channels also
// end.
func (g *Governor) sleepOr(ctx context.Context, d time.Duration, wake, also, third, fourth, fifth <-chan struct{}) (woken bool, err error) {
	if g.clock == nil {
		return sleep.Or(ctx, d, wake, also, third, fourth, fifth)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-wake:
			cancel()
		case <-also:
			cancel()
		case <-third:
			cancel()
		case <-fourth:
			cancel()
		case <-fifth:
			cancel()
		case <-wctx.Done():
		}
	}()
	err = g.clock.Sleep(wctx, d)
	cancel()
	<-done
	if err != nil && ctx.Err() == nil {
		return true, nil // a wake channel ended it
	}
	return false, err
}

// withTimeout returns ctx, cancelled after d on the governor's clock.
func (g *Governor) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if g.clock == nil {
		return context.WithTimeout(ctx, d)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if g.clock.Sleep(wctx, d) == nil {
			cancel()
		}
	}()
	return wctx, func() {
		cancel()
		<-done
	}
}

// ctxLimit returns the context's deadline in governor time, now being
// the governor's clock as the caller reads it now: the time the context
// has left is counted from it. A deadline
// further away than maxDuration is maxDuration away: the time left is
// scaled in floating point and clamped before it is converted, so that a
// far deadline on a fast clock does not wrap to one already past.
func (g *Governor) ctxLimit(ctx context.Context, now time.Duration) (time.Duration, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	left := pace.ToClock(g.clock, time.Until(dl))
	return now + min(left, maxDuration), true
}

// ctxErr returns ctx's error, or context.DeadlineExceeded when ctx's
// deadline has come by now and the timer due then has not run yet: a
// call sent then would arrive with its deadline spent, as one whose wait
// ends at its deadline would (see Guard.Enter), and how it ended would
// hang on which of the two ran first. A context that can never be done
// (its Done is nil: context.Background, and a deadline makes Done
// non-nil) costs one call.
func (g *Governor) ctxErr(ctx context.Context, now time.Duration) error {
	if ctx.Done() == nil {
		return nil
	}
	return g.doneErr(ctx, now)
}

// doneErr is ctxErr for a context that can be done.
func (g *Governor) doneErr(ctx context.Context, now time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if cl, ok := g.ctxLimit(ctx, now); ok && cl <= now {
		return context.DeadlineExceeded
	}
	return nil
}

func (g *Governor) random() float64 {
	if g.src != nil {
		return g.src.float64()
	}
	return rand.Float64()
}

// provider returns the state of a provider, creating one for a name other
// than aws, azure and gcp at its first use, from its settings under
// Config.Providers (its built-in defaults where it has none: github's, or
// the generic ones).
func (g *Governor) provider(name string) *provider {
	c := g.configured()
	switch name {
	case "aws":
		return c.aws
	case "azure":
		return c.azure
	case "gcp":
		return c.gcp
	}
	if p, ok := g.others.Load(name); ok {
		return p.(*provider)
	}
	// A new name: made under mu, so that a concurrent Configure or Reset
	// either sees it or makes it with its own settings.
	g.mu.Lock()
	defer g.mu.Unlock()
	if p, ok := g.others.Load(name); ok {
		return p.(*provider)
	}
	c = g.cur.Load()
	p := g.reconcile(nil, resolveProvider(name, c.cfg.Provider(name), c.enabled), false, nil)
	g.others.Store(name, p)
	return p
}

// existing returns the state of a provider, or nil for a name no call
// has used (it is made by the first call, not by a read).
func (g *Governor) existing(name string) *provider {
	c := g.configured()
	switch name {
	case "aws":
		return c.aws
	case "azure":
		return c.azure
	case "gcp":
		return c.gcp
	}
	if p, ok := g.others.Load(name); ok {
		return p.(*provider)
	}
	return nil
}

// build makes the configuration for cfg, keeping what it can of old (the
// slots calls hold, and with reset unset what the settings did not change).
// The buckets it replaces that are state.Droppers are added to drops, for
// the caller to tell once it holds no lock.
func (g *Governor) build(cfg Config, old *configured, reset bool, drops *[]state.Dropper) *configured {
	enabled := cfg.Enabled == nil || *cfg.Enabled
	nc := &configured{cfg: cfg, enabled: enabled}
	var prev configured
	if old != nil {
		prev = *old
	}
	nc.aws = g.reconcile(prev.aws, resolveProvider("aws", cfg.AWS, enabled), reset, drops)
	nc.azure = g.reconcile(prev.azure, resolveProvider("azure", cfg.Azure, enabled), reset, drops)
	nc.gcp = g.reconcile(prev.gcp, resolveProvider("gcp", cfg.GCP, enabled), reset, drops)
	// The other providers change in place, one by one: mu is held, so
	// that a call holding a table this retires waits for the change to be
	// in force (scopeTable.create), and finds the new provider after it.
	g.others.Range(func(k, v any) bool {
		name := k.(string)
		g.others.Store(name, g.reconcile(v.(*provider), resolveProvider(name, cfg.Provider(name), enabled), reset, drops))
		return true
	})
	return nc
}

// reconcile makes a provider's state for set from the old one. What the
// settings did not change is kept: the buckets unless the bucket settings
// changed, the breakers unless the breaker settings did, the budget unless
// the retry settings did. The bulkheads are always kept, with the new cap,
// so that the slots calls hold still count and the cap holds across any
// change. reset forgets every learned thing but the slots held. The
// buckets it replaces that are state.Droppers are added to drops
// (scopeTable.adopt).
func (g *Governor) reconcile(old *provider, set *providerSettings, reset bool, drops *[]state.Dropper) *provider {
	if old == nil {
		return &provider{set: set, scopes: g.newScopeTable(set), budget: g.store.Budget(set.name, set.budget)}
	}
	sameRetry := !reset && old.set.retry == set.retry && old.set.budget == set.budget
	if !reset && sameRetry && old.set.limitsEqual(set) && old.set.breakerWait == set.breakerWait && old.set.dead == set.dead {
		return old
	}
	p := &provider{set: set, scopes: old.scopes, budget: old.budget}
	if !sameRetry {
		p.budget = g.store.Budget(set.name, set.budget)
	}
	if reset || !old.set.limitsEqual(set) {
		p.scopes = g.newScopeTable(set)
		p.scopes.adopt(old.scopes, !reset && old.set.bucketsEqual(set), !reset && old.set.breaker == set.breaker, drops)
	}
	return p
}

// Configure applies cfg. It is idempotent per provider, and keeps what a
// change does not touch: a provider's buckets (with their learned rates
// and pauses) unless its bucket settings changed, its breakers unless its
// breaker settings did, its budget unless its retry settings did. Its
// bulkheads are always kept, with the new cap: the slots calls hold still
// count, so the calls in flight never exceed the cap in force, whatever
// is reconfigured, reset, disabled or enabled meanwhile. An invalid cfg
// changes nothing. The governor keeps a copy of cfg: changing cfg's maps
// or pointers afterwards changes nothing in force. A built-in service's
// or operation's rate that cfg leaves too slow for its provider's
// deadline_seconds, or faster than a max_rps cfg writes at a wider level
// (its provider's, or its service's for an operation), and the
// configuration in force did not, is logged at Warn (WithLogger), after
// the change is in force and the governor's locks are released.
//
// The buckets a change of bucket settings replaces that are
// state.Droppers (a shared store's) are told so once each, after the
// change is in force and the governor's locks are released; a call that
// took a token of one before may still take it.
func (g *Governor) Configure(cfg Config) error {
	cfg = cfg.clone() // the caller's maps stay the caller's
	if err := cfg.Validate(); err != nil {
		return err
	}
	g.init()
	var drops []state.Dropper
	defer g.dropAll(&drops) // after mu is released: callbacks never run under a lock
	var freed []freedSlots
	defer g.slotsChanged(&freed) // after mu is released, the change in force
	var warns []builtInWarning
	defer g.warnBuiltIns(&warns) // after mu is released: a handler is the caller's code
	g.mu.Lock()
	defer g.mu.Unlock()
	g.moves.begin()
	defer g.moves.end() // after replaced: once the retired table is out of force
	warns = newBuiltInWarnings(cfg, g.cur.Load().cfg)
	before := g.capsInForce()
	g.cur.Store(g.build(cfg, g.cur.Load(), false, &drops))
	freed = g.capsChanged(before)
	g.replaced()
	return nil
}

// Config returns a copy of the configuration in force: changing it
// changes nothing until it is given to Configure.
func (g *Governor) Config() Config { return g.configured().cfg.clone() }

// Reset forgets everything learned (rates, pauses, breakers, budgets,
// lifetime stats) and keeps the configuration. Calls in flight keep their
// concurrency slots, and the cap holds across it. The buckets it replaces
// that are state.Droppers are told so, as Configure tells them.
func (g *Governor) Reset() {
	g.init()
	var drops []state.Dropper
	defer g.dropAll(&drops) // after mu is released
	g.mu.Lock()
	defer g.mu.Unlock()
	g.moves.begin()
	defer g.moves.end()
	c := g.cur.Load()
	g.cur.Store(g.build(c.cfg, c, true, &drops))
	g.life.clear()
	g.waited.reset()
	g.folded.Store(0)
	// Last: a call it wakes records what it does next in the lifetime
	// stats this Reset starts.
	g.replaced()
}

// newBuiltInWarnings returns the warnings of cfg's built-in entries
// (builtInWarnings) that prev, the configuration it replaces, did not
// bring: a Configure warns of each once.
func newBuiltInWarnings(cfg, prev Config) []builtInWarning {
	was := builtInWarnings(prev)
	var out []builtInWarning
	for _, w := range builtInWarnings(cfg) {
		if !slices.Contains(was, w) {
			out = append(out, w)
		}
	}
	return out
}

// warnBuiltIns logs each of warns at Warn, to the governor's logger or,
// without one, to slog.Default: a configuration's built-in entry whose
// rate no call that waits for a token can be served at, or that runs
// faster than a max_rps the user writes wider. No lock of the governor's
// is held.
func (g *Governor) warnBuiltIns(warns *[]builtInWarning) {
	l := g.logger
	if l == nil && len(*warns) > 0 {
		l = slog.Default()
	}
	for _, w := range *warns {
		w.warn(l)
	}
}

// dropAll tells each of drops, the buckets a Configure or Reset replaced,
// that it was dropped. No lock of the governor's is held.
func (g *Governor) dropAll(drops *[]state.Dropper) {
	if len(*drops) == 0 {
		return
	}
	now := g.now()
	for _, d := range *drops {
		d.Drop(now)
	}
}

// replaced counts a change of the providers' state (Generation) and wakes
// the calls waiting on it (changed), once the change is complete:
// the entries it retired marked dead, and the lifetime stats a Reset
// clears cleared. g.mu is held.
func (g *Governor) replaced() {
	g.gen.Add(1)
	g.wake()
}

// wake wakes the calls waiting on a change (changed), without counting
// one: for a sweep that reclaimed an entry a call waits on, whose live
// entry the call is to follow (a breaker that opens there is the one that
// refuses it), while the providers' state is the same.
func (g *Governor) wake() {
	if ch := g.changed.Swap(nil); ch != nil {
		close(*ch)
	}
}

// changes returns a channel closed at the next change of the providers'
// state (replaced), or the next sweep of an entry a call waits on (wake).
// A waiter asks for it before it looks at its entry, so that a change
// after that look wakes it.
func (g *Governor) changes() <-chan struct{} {
	for {
		if ch := g.changed.Load(); ch != nil {
			return *ch
		}
		ch := make(chan struct{})
		if g.changed.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

// Generation returns a number that changes each time the governor's state
// is replaced as a whole: by Configure, by Reset, and when the state of an
// idle provider outside aws, azure and gcp is forgotten. A scheduler that
// keeps a decision taken from the governor's state (a wait Delay gave, a
// call's refusal) keeps it while the generation is unchanged, and asks
// again once it moves: the wait may have been forgotten with the state it
// came from. It is a read with no side effects, safe for concurrent use;
// it starts at 0, for the zero Governor and NewGovernor's alike (the
// configuration a governor is made with is not a change).
func (g *Governor) Generation() uint64 { return g.gen.Load() }

// settings returns a provider's settings: those in force for a provider
// a call has used, and for any other those its first call would find. It
// makes nothing.
func (g *Governor) settings(name string) *providerSettings {
	if p := g.existing(name); p != nil {
		return p.set
	}
	c := g.configured()
	return resolveProvider(name, c.cfg.Provider(name), c.enabled)
}

// Enabled reports whether calls to provider are governed. It is a read
// that makes nothing: for a provider no call has used, it reports what the
// configuration in force says of it. It is false for "", which names no
// provider.
func (g *Governor) Enabled(provider string) bool {
	if provider == "" {
		return false
	}
	return g.settings(provider).enabled
}

// Providers returns the names of the providers whose state the governor
// holds, sorted: aws, azure and gcp always, and any other provider from
// the first call that uses it until the governor forgets it, once its
// scopes are all reclaimed and its retry budget is full (a program that
// calls many provider names does not keep each one). A provider disabled
// is among them while the governor holds it, by the same rule: its
// calls go through ungoverned and make no scope, so that the governor
// keeps what its scopes learned for when it is enabled again (Enabled
// says whether its calls are governed), but forgets one with no such
// scope and a full budget (one disabled before any call learned
// anything), and makes it again at its next call. A status page or a
// gauge that keeps showing a provider's retry budget after its scopes
// are reclaimed shows it while the provider is among them and its budget
// is spent (its tokens below its size, both read at once by
// BudgetAndSize, not apart by Budget and BudgetSize, between which a
// Configure may replace the budget): aws, azure and gcp, always among
// them, with a full budget, are where a first call would find them. It
// is a read that makes nothing, safe for concurrent use.
func (g *Governor) Providers() []string {
	ps := g.providers()
	names := make([]string, 0, len(ps))
	for _, p := range ps {
		names = append(names, p.set.name)
	}
	slices.Sort(names)
	return names
}

// Policy returns provider's retry policy with every field filled in: the
// configuration's max_retries (as MaxAttempts, one more), base delay, max
// backoff and deadline. The SDK integrations configure their SDK's own
// retry loop from it. It is a read that makes nothing, as Enabled is.
func (g *Governor) Policy(provider string) RetryPolicy {
	return g.settings(provider).retry.policy()
}

// Budget returns what is left of provider's retry budget, in tokens: a
// read that makes nothing (a provider no call has used has its full
// budget, BudgetSize).
func (g *Governor) Budget(provider string) float64 {
	if p := g.existing(provider); p != nil {
		return p.budget.Remaining()
	}
	return float64(g.settings(provider).budget)
}

// BudgetSize returns the size of provider's retry budget, in tokens (its
// retry_budget, 500 by default): what Budget reports of it full. A budget
// below its size is spent: the governor holds it (Providers) until
// successes refund it, after the scopes that spent it are reclaimed, so
// that a status page or a gauge shows the budgets of the providers with
// live scopes and those Budget reports below BudgetSize (BudgetAndSize
// reads both at once). It is a read that makes nothing, as Budget is,
// safe for concurrent use.
func (g *Governor) BudgetSize(provider string) int {
	return g.settings(provider).budget
}

// BudgetAndSize returns Budget and BudgetSize of provider in one read, of
// one budget: read apart, a Configure between them that changes the
// provider's retry settings (and so replaces its budget) pairs the
// tokens of one budget with the size of another, and a full budget reads
// as spent. It is a read that makes nothing, as Budget is, safe for
// concurrent use.
func (g *Governor) BudgetAndSize(provider string) (left float64, size int) {
	if p := g.existing(provider); p != nil {
		return p.budget.Remaining(), p.set.budget
	}
	c := g.configured()
	set := resolveProvider(provider, c.cfg.Provider(provider), c.enabled)
	return float64(set.budget), set.budget
}

// Inspect returns where scope stands now: its leaf bucket's rate,
// ceiling, pause and tokens, its account bucket's, its provider bucket's
// (global_max_rps), its breaker, the calls
// in flight and waiting in its account's bulkhead, and its provider's
// retry budget. It is a read: a scope (or provider) no call has used
// makes no state, and shows what its first call would find: a full bucket
// at its ceiling and a closed breaker, or, with a shared store (fleet
// mode), the state the store holds for it, which other processes may
// have taught. A scope without a provider has the zero snapshot.
func (g *Governor) Inspect(scope Scope) state.ScopeSnapshot {
	return g.inspect(scope, accountReads{})
}

// inspect is Inspect, its account buckets and provider buckets read
// through reads (the zero accountReads reads every time).
func (g *Governor) inspect(scope Scope, reads accountReads) state.ScopeSnapshot {
	if scope.Provider == "" {
		return state.ScopeSnapshot{}
	}
	g.init() // before the clock's epoch is read: a zero Governor sets it there
	now := g.now()
	p := g.existing(scope.Provider)
	if p == nil {
		c := g.configured()
		set := resolveProvider(scope.Provider, c.cfg.Provider(scope.Provider), c.enabled)
		s := fresh(set, scope, nil, float64(set.budget))
		if g.sharedBuckets && set.global != nil {
			s.Provider = g.storedBucket(reads.stored, providerKey(set.name), *set.global, now)
		}
		return g.stored(s, set, nil, now, reads)
	}
	e, acct := p.scopes.peek(scope)
	return g.inspectIn(p, e, acct, scope, now, reads)
}

// inspectIn is inspect of scope, of provider p, whose entry is e and
// account acct (either nil: none yet), at now.
func (g *Governor) inspectIn(p *provider, e *scopeEntry, acct *accountEntry, scope Scope, now time.Duration, reads accountReads) state.ScopeSnapshot {
	if e != nil {
		return e.snapshot(g.epoch, now, p, reads)
	}
	s := fresh(p.set, scope, acct, p.budget.Remaining())
	if acct != nil && acct.bucket != nil {
		s.Account = reuse(reads.accounts, acct, acct.bucket, now)
	}
	if b := p.scopes.global; b != nil {
		s.Provider = reuse(reads.providers, p, b, now)
	}
	return g.stored(s, p.set, acct, now, reads)
}

// stored completes the fresh snapshot s of a scope this process has not
// used. With a shared store (fleet mode) other processes may have taught
// the scope's state: its leaf bucket, breaker and account bucket are read
// from the store, through handles made for the read and dropped (the
// governor keeps nothing), the account bucket through reads. In-process,
// s stands as it is. Either way the calls queued in its buckets (its
// account's, for a new scope of an account in use, and its provider's)
// and the pause holding it are counted in.
func (g *Governor) stored(s state.ScopeSnapshot, set *providerSettings, acct *accountEntry, now time.Duration, reads accountReads) state.ScopeSnapshot {
	if g.sharedBuckets {
		key := s.Scope
		s.Leaf = g.store.Bucket(key.Key(), set.leafSpec(key), now).Snapshot(now)
		s.Breaker = g.store.Breaker(key.Key(), set.breaker).Snapshot(now)
		if set.account != nil && (acct == nil || acct.bucket == nil) {
			s.Account = g.storedBucket(reads.stored, accountKey(key), *set.account, now)
		}
	}
	s.Queued = max(s.Leaf.Queued(), s.Account.Queued(), s.Provider.Queued())
	if p := max(s.Leaf.Paused, s.Account.Paused, s.Provider.Paused); p > 0 {
		s.PausedUntil = g.epoch.Add(now).Add(p) // apart: now + p may pass a Duration's range
	}
	return s
}

// storedBucket is the snapshot at now of the store's bucket of key and
// spec (an account's or a provider's, which the governor holds no handle
// of), read through a handle made for the read, or the one m holds (see
// reuse), the handle then not made.
func (g *Governor) storedBucket(m map[string]accountRead, key string, spec state.BucketSpec, now time.Duration) state.BucketSnapshot {
	if s, ok := cached(m, key, now); ok {
		return s
	}
	s := g.store.Bucket(key, spec, now).Snapshot(now)
	if m != nil {
		m[key] = accountRead{now, s}
	}
	return s
}

// fresh is the snapshot of scope when no call has used it, of a provider
// with settings set, in account acct (nil: none yet), with budget left:
// its leaf full at the ceiling its service or operation has.
func fresh(set *providerSettings, scope Scope, acct *accountEntry, budget float64) state.ScopeSnapshot {
	key := set.leafKey(scope)
	s := state.ScopeSnapshot{
		Scope:       key,
		Leaf:        bucket.Full(set.leafSpec(key)),
		Breaker:     state.BreakerSnapshot{State: state.Closed, Cooldown: set.breaker.Cooldown},
		MaxInFlight: set.bulkhead,
		RetryBudget: budget,
	}
	// As the buckets the first call makes read (bucket.Full), not as
	// their specs' Capacity: a rate past a token per nanosecond, or a
	// burst past what a bucket keeps, reads as the bucket holds it.
	if set.account != nil {
		s.Account = bucket.Full(*set.account)
	}
	if set.global != nil {
		s.Provider = bucket.Full(*set.global)
	}
	if acct != nil {
		s.InFlight, s.Waiting = acct.bulkhead.InUse()
		s.MaxInFlight = acct.bulkhead.Limit()
	}
	return s
}
