package cloudgotel

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"weak"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// Instrument makes what records a governor in OpenTelemetry, on one meter
// provider (WithMeterProvider, or the global one): the Observer of its
// events (counters, the wait histogram, span events) and the observable
// gauges (and up-down counters) of its live scopes, read at each
// collection. Give the Observer
// to the governor with resilience.WithObserver; the governor attaches
// itself to it when it is made, so that the events and the gauges are
// wired together, by one option:
//
//	obs, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(mp))
//	gov, err := resilience.NewGovernor(cfg, resilience.WithObserver(obs))
//	defer obs.Unregister()
//
// The gauges read every governor made with the Observer (the scopes of
// two governors that share their attributes are added up as
// WithoutAccount's are), and, when other Observers of Instrument (or
// RegisterGauges) record to the same meter provider, those made with
// them (or given to it): one callback per
// meter reads them all, so that their series alike are added up too
// (each Observer's governors with its own options), where a collection
// of two callbacks' would keep one's. Observers record to the same meter
// provider when their providers give the same meter: one provider, a
// value wrapping it that gives its meters, or the global provider
// otel.GetMeterProvider returns before otel.SetMeterProvider, which
// forwards to the provider set then (an Observer made before the
// program sets it, another after). A collection whose
// context ends while they read the scopes (an exporter's timeout) stops
// reading there, observes none of them, and fails with the context's
// error. Instrument fails when the meter provider refuses an instrument
// or the gauges' callback.
func Instrument(opts ...Option) (*Observer, error) {
	c := newConfig(opts)
	o, err := newObserver(&c)
	if err != nil {
		return nil, err
	}
	gs := &gauges{c: &c}
	if err := join(gs); err != nil {
		return nil, err
	}
	o.gauges = gs
	return o, nil
}

// Attach makes the Observer's gauges read g's live scopes: NewGovernor
// calls it when g is made with the Observer (resilience.WithObserver). The
// gauges read g, and keep it, until Detach or Unregister: a program that
// makes a governor per job, or replaces one (resilience.SetDefault),
// detaches the one it is done with, whose scopes would otherwise be added
// up with those of the next. An Observer of NewObserver has no gauges,
// and ignores it.
func (o *Observer) Attach(g *resilience.Governor) {
	if o != nil && o.gauges != nil && g != nil {
		o.gauges.attach(g)
	}
}

// Detach stops the Observer's gauges reading g, and lets go of it: a
// governor its program is done with, or whose scopes should no longer be
// reported (Attach reads it again). The Observer still records g's
// events. Detaching a governor the gauges do not read does nothing.
func (o *Observer) Detach(g *resilience.Governor) {
	if o != nil && o.gauges != nil && g != nil {
		o.gauges.detach(g)
	}
}

// Unregister stops the gauges of an Observer from Instrument and lets go
// of the governors they read, and of any made with the Observer
// afterwards; the Observer still records events. The gauges of the other
// Observers of Instrument on its meter provider go on; the last one
// unregistered removes the callback they share. It returns the meter
// provider's error, if any.
func (o *Observer) Unregister() error {
	if o == nil || o.gauges == nil {
		return nil
	}
	return o.gauges.unregister()
}

// gauges are an Instrument's gauges, or RegisterGauges's: the governors
// they read, with the options of its Observer (or of RegisterGauges), on
// the callback of its meter provider.
type gauges struct {
	c       *config
	shared  *meterGauges // meters.mu guards it: a merge moves gs
	mu      sync.Mutex
	govs    []*resilience.Governor // replaced, never changed in place
	stopped bool                   // unregistered: a governor made afterwards is not kept
	process bool                   // RegisterGauges of nil: resilience.Default, at each collection
}

// meterGauges are the gauges registered on one meter: one callback reads
// the governors of every Instrument Observer and RegisterGauges whose
// meter provider gives that meter (its members), so that their series alike are added up as
// one Observer's governors' are. Two callbacks would each observe such a
// series, and a collection keep one of the two (an observable gauge keeps
// the last observation of a series). It is safe for concurrent use.
type meterGauges struct {
	provider metric.MeterProvider // the one its callback was registered through
	// The meter provider's meter when last asked (meters.mu guards it):
	// the meter, not the provider, says where the gauges record, for a
	// value wrapping a provider gives the provider's meters, and the
	// global provider of before otel.SetMeterProvider gives, after it,
	// the meters of the provider set.
	meter   metric.Meter
	reg     metric.Registration // nil once the last member left; meters.mu guards it
	mu      sync.Mutex
	members []*gauges // replaced, never changed in place
}

// meters are the meterGauges shared by the Instrument Observers whose
// meter provider gives them a meter that can key a map: at most one per
// meter. They are held weakly: the meter provider holds its callback,
// and the Observers their gauges, so that a provider the program lets go
// of, and the Observers on it, are let go of with their governors,
// unregistered or not, as gauges registered on the provider alone were.
var meters struct {
	mu  sync.Mutex
	all []weak.Pointer[meterGauges]
}

// sharedGauges returns the meterGauges in meters still reachable,
// forgetting the others. meters.mu is held.
func sharedGauges() []*meterGauges {
	var out []*meterGauges
	kept := meters.all[:0]
	for _, w := range meters.all {
		if mg := w.Value(); mg != nil {
			out = append(out, mg)
			kept = append(kept, w)
		}
	}
	clear(meters.all[len(kept):])
	meters.all = kept
	return out
}

// setSharedGauges makes all the meterGauges in meters. meters.mu is held.
func setSharedGauges(all []*meterGauges) {
	meters.all = meters.all[:0]
	for _, mg := range all {
		meters.all = append(meters.all, weak.Make(mg))
	}
}

// join adds gs to the gauges of its meter provider's meter, registering
// them on it when it has none. The meter providers are called outside
// meters' lock: the callback of gauges registered on one may run while
// the provider holds a lock of its own.
func join(gs *gauges) error {
	m := gs.c.meter()
	keyed := keyable(m) // else a callback of its own
	if keyed {
		rekey()
		if joined(m, gs, nil) {
			return nil
		}
	}
	mg := &meterGauges{provider: gs.c.provider}
	reg, err := registerGauges(m, mg.read)
	if err != nil {
		return err
	}
	mg.reg = reg
	if !keyed {
		meters.mu.Lock()
		mg.add(gs)
		meters.mu.Unlock()
		return nil
	}
	if !joined(m, gs, mg) {
		// Another Instrument registered the meter's gauges meanwhile: gs
		// joins those, and these, which read no member, go. When the
		// provider refuses, Instrument fails: gs leaves those it joined,
		// whose last member would otherwise be one no Observer holds.
		if err := reg.Unregister(); err != nil {
			return errors.Join(err, gs.leave())
		}
	}
	return nil
}

// joined adds gs to the gauges of meter m, if it has some; when it has
// none and fresh is set, fresh becomes its gauges, with gs. With fresh
// nil it reports whether gs joined; with fresh set, whether fresh is in
// use (gs joins either way).
func joined(m metric.Meter, gs *gauges, fresh *meterGauges) bool {
	meters.mu.Lock()
	defer meters.mu.Unlock()
	for _, mg := range sharedGauges() {
		if mg.meter == m {
			mg.add(gs)
			return fresh == nil
		}
	}
	if fresh == nil {
		return false
	}
	fresh.meter = m
	meters.all = append(meters.all, weak.Make(fresh))
	fresh.add(gs)
	return true
}

// rekey asks the meter provider of each shared meterGauges for its meter
// again (a provider's meter changes when the global provider of before
// otel.SetMeterProvider starts forwarding to the one set), outside
// meters' lock, and merges the gauges whose providers now give one meter:
// the first made takes the members of the others, whose callbacks it
// unregisters. A provider's error unregistering one is not the caller's
// (whose Instrument is not the one that made it), and leaves a callback
// that reads no member: it observes nothing.
func rekey() {
	meters.mu.Lock()
	all := sharedGauges()
	meters.mu.Unlock()
	if len(all) == 0 {
		return
	}
	now := make([]metric.Meter, len(all))
	for i, mg := range all {
		if m := mg.provider.Meter(meterName); keyable(m) {
			now[i] = m
		}
	}
	var gone []metric.Registration
	meters.mu.Lock()
	live := sharedGauges()
	for i, mg := range all {
		if now[i] != nil && slices.Contains(live, mg) {
			mg.meter = now[i]
		}
	}
	var kept []*meterGauges
	for _, mg := range live {
		i := slices.IndexFunc(kept, func(k *meterGauges) bool { return k.meter == mg.meter })
		if i < 0 {
			kept = append(kept, mg)
			continue
		}
		mg.mu.Lock()
		moved := mg.members
		mg.members = nil
		mg.mu.Unlock()
		for _, gs := range moved {
			kept[i].add(gs)
		}
		gone = append(gone, mg.reg)
		mg.reg = nil
	}
	setSharedGauges(kept)
	meters.mu.Unlock()
	for _, reg := range gone {
		_ = reg.Unregister()
	}
}

// add makes gs a member. meters.mu is held.
func (mg *meterGauges) add(gs *gauges) {
	mg.mu.Lock()
	mg.members = append(slices.Clip(mg.members), gs)
	mg.mu.Unlock()
	gs.shared = mg
}

// keyable reports whether m can key a map: a value whose dynamic type is
// not comparable (or holds one that is not) panics as one.
func keyable(m metric.Meter) (ok bool) {
	if t := reflect.TypeOf(m); t == nil || !t.Comparable() {
		return false
	}
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_ = map[metric.Meter]bool{m: true}
	return true
}

// leave removes gs from its meter's gauges, and unregisters them when it
// was the last member, outside meters' lock.
func (gs *gauges) leave() error {
	meters.mu.Lock()
	mg := gs.shared
	mg.mu.Lock()
	mg.members = slices.DeleteFunc(slices.Clone(mg.members), func(x *gauges) bool { return x == gs })
	last := len(mg.members) == 0
	mg.mu.Unlock()
	reg := mg.reg
	if last {
		setSharedGauges(slices.DeleteFunc(sharedGauges(), func(x *meterGauges) bool { return x == mg }))
		mg.reg = nil
	}
	meters.mu.Unlock()
	if !last || reg == nil {
		return nil
	}
	return reg.Unregister()
}

// read is the reading of every member's governors, each with its
// options.
func (mg *meterGauges) read(ctx context.Context) (reading, error) {
	mg.mu.Lock()
	members := mg.members
	mg.mu.Unlock()
	rd := newReader()
	for _, gs := range members {
		if err := rd.add(ctx, gs.c, gs.governors()); err != nil {
			return reading{}, err
		}
	}
	return rd.r, nil
}

func (gs *gauges) attach(g *resilience.Governor) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.stopped || slices.Contains(gs.govs, g) {
		return
	}
	gs.govs = append(gs.govs[:len(gs.govs):len(gs.govs)], g)
}

func (gs *gauges) detach(g *resilience.Governor) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	gs.govs = slices.DeleteFunc(slices.Clone(gs.govs), func(x *resilience.Governor) bool { return x == g })
}

func (gs *gauges) governors() []*resilience.Governor {
	gs.mu.Lock()
	govs, process := gs.govs, gs.process && !gs.stopped
	gs.mu.Unlock()
	if process {
		return []*resilience.Governor{resilience.Default()}
	}
	return govs
}

func (gs *gauges) unregister() error {
	gs.mu.Lock()
	gs.govs, gs.stopped = nil, true
	gs.mu.Unlock()
	return gs.leave()
}

// RegisterGauges registers the observable gauges (and up-down counters)
// over g's live scopes
// (resilience.Governor.Scopes), read at each collection: those Instrument
// registers (see the package's documentation), read by the callback of
// the Instrument Observers and other RegisterGauges on the same meter
// provider, so that their series alike add up. Unregister the returned
// registration to stop reading g. A nil g is the process governor
// (resilience.Default, looked up at each collection). It fails when the
// meter provider refuses an instrument or the callback.
//
// Deprecated: Instrument makes the gauges with the Observer, in one call
// on one meter provider, and reads the governor made with it.
func RegisterGauges(g *resilience.Governor, opts ...Option) (metric.Registration, error) {
	c := newConfig(opts)
	gs := &gauges{c: &c, process: g == nil}
	if g != nil {
		gs.govs = []*resilience.Governor{g}
	}
	if err := join(gs); err != nil {
		return nil, err
	}
	return registration{gs: gs}, nil
}

// registration is RegisterGauges's: its Unregister stops its gauges.
type registration struct {
	embedded.Registration
	gs *gauges
}

func (r registration) Unregister() error { return r.gs.unregister() }

// registerGauges registers the gauges on m, observing at each collection
// the reading read returns (none when it fails): cloudg.rate,
// cloudg.rate.ceiling, cloudg.breaker.state, cloudg.queued and
// cloudg.pause.remaining per scope, cloudg.inflight and cloudg.waiting
// per account, cloudg.retry_budget per provider, and
// cloudg.provider.rate, cloudg.provider.rate.ceiling and
// cloudg.provider.queued per provider with a provider-wide bucket.
func registerGauges(m metric.Meter, read func(context.Context) (reading, error)) (metric.Registration, error) {
	rate, err := m.Float64ObservableUpDownCounter("cloudg.rate", metric.WithUnit("{request}/s"),
		metric.WithDescription("A scope's adaptive rate."))
	if err != nil {
		return nil, err
	}
	ceiling, err := m.Float64ObservableUpDownCounter("cloudg.rate.ceiling", metric.WithUnit("{request}/s"),
		metric.WithDescription("A scope's configured rate, the ceiling of its adaptive rate."))
	if err != nil {
		return nil, err
	}
	breaker, err := m.Int64ObservableGauge("cloudg.breaker.state",
		metric.WithDescription("A scope's circuit breaker: 0 closed, 1 half-open, 2 open."))
	if err != nil {
		return nil, err
	}
	queued, err := m.Int64ObservableGauge("cloudg.queued", metric.WithUnit("{call}"),
		metric.WithDescription("Calls waiting for a rate token of a scope's bucket, its account's or its provider's, a pause holding them."))
	if err != nil {
		return nil, err
	}
	paused, err := m.Float64ObservableGauge("cloudg.pause.remaining", metric.WithUnit("s"),
		metric.WithDescription("The time left of the pause holding a scope (its own, its account's or its provider's); 0 when none."))
	if err != nil {
		return nil, err
	}
	inflight, err := m.Int64ObservableUpDownCounter("cloudg.inflight", metric.WithUnit("{call}"),
		metric.WithDescription("Calls holding a slot of an account's bulkhead."))
	if err != nil {
		return nil, err
	}
	waiting, err := m.Int64ObservableUpDownCounter("cloudg.waiting", metric.WithUnit("{call}"),
		metric.WithDescription("Calls waiting for a slot of an account's bulkhead."))
	if err != nil {
		return nil, err
	}
	budget, err := m.Float64ObservableUpDownCounter("cloudg.retry_budget", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens left in a provider's retry budget."))
	if err != nil {
		return nil, err
	}
	provRate, err := m.Float64ObservableUpDownCounter("cloudg.provider.rate", metric.WithUnit("{request}/s"),
		metric.WithDescription("The rate of a provider's provider-wide bucket (global_max_rps)."))
	if err != nil {
		return nil, err
	}
	provCeiling, err := m.Float64ObservableUpDownCounter("cloudg.provider.rate.ceiling", metric.WithUnit("{request}/s"),
		metric.WithDescription("The configured rate of a provider's provider-wide bucket (global_max_rps)."))
	if err != nil {
		return nil, err
	}
	provQueued, err := m.Int64ObservableUpDownCounter("cloudg.provider.queued", metric.WithUnit("{call}"),
		metric.WithDescription("Calls waiting for a rate token of a provider's provider-wide bucket (global_max_rps), a pause holding them."))
	if err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		r, err := read(ctx)
		if err != nil {
			return err // the collection was given up on: nothing observed
		}
		for _, l := range r.leaves {
			opt := metric.WithAttributeSet(l.set)
			o.ObserveFloat64(rate, l.rate, opt)
			o.ObserveFloat64(ceiling, l.ceiling, opt)
			o.ObserveInt64(breaker, l.breaker, opt)
			o.ObserveInt64(queued, l.queued(), opt)
			o.ObserveFloat64(paused, l.paused, opt)
		}
		for _, a := range r.accounts {
			opt := metric.WithAttributeSet(a.set)
			o.ObserveInt64(inflight, a.inflight, opt)
			o.ObserveInt64(waiting, a.waiting, opt)
		}
		for _, p := range r.providers {
			opt := metric.WithAttributeSet(p.set)
			o.ObserveFloat64(budget, p.left, opt)
			if p.bucket {
				o.ObserveFloat64(provRate, p.rate, opt)
				o.ObserveFloat64(provCeiling, p.ceiling, opt)
				o.ObserveInt64(provQueued, p.queued, opt)
			}
		}
		return nil
	}, rate, ceiling, breaker, queued, paused, inflight, waiting, budget, provRate, provCeiling, provQueued)
}

// breakerValue is the gauge's number for a breaker's state: the
// position's (0 closed, 1 half-open, 2 open), and a state that is none
// of them (a Store's, decoded from a corrupt record) as it is, not as a
// position it is not, as its String names it state.BreakerState(n).
func breakerValue(s state.BreakerState) int64 { return int64(s) }

// reading is one collection's gauges, each series once: scopes whose
// attributes are alike once the configuration drops some are added up
// (callers queued once per bucket), or give their worst breaker and their
// longest pause.
type reading struct {
	leaves    []*leafGauge
	accounts  []*accountGauge
	providers []*providerGauge
}

type leafGauge struct {
	set                   attribute.Set
	rate, ceiling, paused float64
	breaker               int64
	// The callers queued in the leaves' own buckets, in their accounts'
	// (each account's once) and in their providers' (each provider's
	// once): the series shows the largest, as a scope's reading
	// (state.ScopeSnapshot.Queued) does.
	leafQueued, acctQueued, provQueued int64
}

// accountIn is an account bucket (one per governor) in a leaf series, or,
// with provider set, the bucket of acct's provider.
type accountIn struct {
	series   attribute.Distinct
	g        *resilience.Governor
	acct     resilience.Scope
	provider bool
}

// queued is the callers the series shows queued.
func (l *leafGauge) queued() int64 { return max(l.leafQueued, l.acctQueued, l.provQueued) }

type accountGauge struct {
	set               attribute.Set
	inflight, waiting int64
}

type providerGauge struct {
	set  attribute.Set
	left float64
	// The provider-wide bucket, when a governor's provider has one:
	// rates and callers added up over the governors.
	bucket        bool
	rate, ceiling float64
	queued        int64
}

// reader takes the live scopes of governors into one reading, each
// series once: the governors of one Observer, or of every Observer of
// Instrument on a meter provider (meterGauges), each with its options.
type reader struct {
	r         reading
	leaves    map[attribute.Distinct]*leafGauge
	seenIn    map[accountIn]bool // each account's (provider's) queue counted once per leaf series
	accounts  map[attribute.Distinct]*accountGauge
	providers map[attribute.Distinct]*providerGauge
	// A governor's provider gauges (its budget, its provider-wide
	// bucket) are counted once, whatever the options it is read with,
	// and a governor read twice with the same options (attached to two
	// Observers alike) once.
	seenProvider map[governorProvider]bool
	seenGov      map[governorRead]bool
}

type governorProvider struct {
	g    *resilience.Governor
	name string
}

type governorRead struct {
	g                      *resilience.Governor
	noAccount, noOperation bool
}

func newReader() *reader {
	return &reader{
		leaves:       map[attribute.Distinct]*leafGauge{},
		seenIn:       map[accountIn]bool{},
		accounts:     map[attribute.Distinct]*accountGauge{},
		providers:    map[attribute.Distinct]*providerGauge{},
		seenProvider: map[governorProvider]bool{},
		seenGov:      map[governorRead]bool{},
	}
}

// provider returns the gauges of the provider name.
func (rd *reader) provider(c *config, name string) *providerGauge {
	set := attribute.NewSet(c.scopeAttrs(resilience.Scope{Provider: name})...)
	p, ok := rd.providers[set.Equivalent()]
	if !ok {
		p = &providerGauge{set: set}
		rd.providers[set.Equivalent()] = p
		rd.r.providers = append(rd.r.providers, p)
	}
	return p
}

// providerOf adds the provider gauges of snap, a live scope of provider
// name: its budget, and its provider-wide bucket when it has one.
func (rd *reader) providerOf(c *config, name string, snap state.ScopeSnapshot) {
	p := rd.provider(c, name)
	p.left += snap.RetryBudget
	if b := snap.Provider; b.Ceiling > 0 {
		p.bucket = true
		p.rate += b.Rate
		p.ceiling += b.Ceiling
		p.queued += int64(b.Queued())
	}
}

// add takes the live scopes of govs, read with c's options, into the
// reading, and the retry budgets of their providers: those with live
// scopes, and those the governor holds spent (Governor.Providers, their
// tokens below their size, both read at once by Governor.BudgetAndSize),
// whose scopes are gone (only successes refund a budget). It stops, with
// ctx's error, when ctx ends before it has read every scope (a collection given up on, whose reading of a shared store
// goes on a round trip per scope). A provider a governor has disabled
// (Governor.Enabled) is left out: its calls go through ungoverned, and
// the state its scopes learned, which the governor keeps for when it is
// enabled again, is not in force.
func (rd *reader) add(ctx context.Context, c *config, govs []*resilience.Governor) error {
	done := ctx.Done()
	for _, g := range govs {
		read := governorRead{g, c.noAccount, c.noOperation}
		if rd.seenGov[read] {
			continue
		}
		rd.seenGov[read] = true
		seenAccount := map[resilience.Scope]bool{} // each bulkhead counted once
		enabled := map[string]bool{}               // Governor.Enabled, read once per provider
		isEnabled := func(name string) bool {
			en, ok := enabled[name]
			if !ok {
				en = g.Enabled(name)
				enabled[name] = en
			}
			return en
		}
		for sc, snap := range g.Scopes() {
			select {
			case <-done:
				return ctx.Err()
			default:
			}
			if !isEnabled(sc.Provider) {
				continue // ungoverned: what its scopes learned is not in force
			}
			set := attribute.NewSet(c.scopeAttrs(sc)...)
			l, ok := rd.leaves[set.Equivalent()]
			if !ok {
				// The series' breaker is its scopes' greatest: the first's,
				// whatever it is, to begin with.
				l = &leafGauge{set: set, breaker: breakerValue(snap.Breaker.State)}
				rd.leaves[set.Equivalent()] = l
				rd.r.leaves = append(rd.r.leaves, l)
			}
			l.rate += snap.Leaf.Rate
			l.ceiling += snap.Leaf.Ceiling
			l.breaker = max(l.breaker, breakerValue(snap.Breaker.State))
			l.leafQueued += int64(snap.Leaf.Queued())
			acct := resilience.Scope{Provider: sc.Provider, Account: sc.Account}
			if in := (accountIn{set.Equivalent(), g, acct, false}); !rd.seenIn[in] {
				rd.seenIn[in] = true
				l.acctQueued += int64(snap.Account.Queued())
			}
			if in := (accountIn{set.Equivalent(), g, resilience.Scope{Provider: sc.Provider}, true}); !rd.seenIn[in] {
				rd.seenIn[in] = true
				l.provQueued += int64(snap.Provider.Queued())
			}
			l.paused = max(l.paused, max(snap.Leaf.Paused, snap.Account.Paused, snap.Provider.Paused).Seconds())

			if !seenAccount[acct] {
				seenAccount[acct] = true
				set := attribute.NewSet(c.scopeAttrs(acct)...)
				a, ok := rd.accounts[set.Equivalent()]
				if !ok {
					a = &accountGauge{set: set}
					rd.accounts[set.Equivalent()] = a
					rd.r.accounts = append(rd.r.accounts, a)
				}
				a.inflight += int64(snap.InFlight)
				a.waiting += int64(snap.Waiting)
			}
			if k := (governorProvider{g, sc.Provider}); !rd.seenProvider[k] {
				rd.seenProvider[k] = true
				rd.providerOf(c, sc.Provider, snap)
			}
		}
		for _, name := range g.Providers() {
			k := governorProvider{g, name}
			if rd.seenProvider[k] || !isEnabled(name) {
				continue
			}
			if left, size := g.BudgetAndSize(name); left < float64(size) {
				rd.seenProvider[k] = true
				rd.provider(c, name).left += left // spent, after the scopes that spent it
			}
		}
	}
	return nil
}
