package cloudgotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// RegisterGauges registers observable gauges over g's live scopes
// (resilience.Governor.Scopes), read at each collection: cloudg.rate,
// cloudg.rate.ceiling and cloudg.breaker.state per scope, cloudg.inflight
// per account and cloudg.retry_budget per provider. Unregister the
// returned registration to stop reading g. It fails when the meter
// provider refuses an instrument or the callback.
func RegisterGauges(g *resilience.Governor, opts ...Option) (metric.Registration, error) {
	c := newConfig(opts)
	m := c.meter()
	rate, err := m.Float64ObservableGauge("cloudg.rate", metric.WithUnit("{request}/s"),
		metric.WithDescription("A scope's adaptive rate."))
	if err != nil {
		return nil, err
	}
	ceiling, err := m.Float64ObservableGauge("cloudg.rate.ceiling", metric.WithUnit("{request}/s"),
		metric.WithDescription("A scope's configured rate, the ceiling of its adaptive rate."))
	if err != nil {
		return nil, err
	}
	breaker, err := m.Int64ObservableGauge("cloudg.breaker.state",
		metric.WithDescription("A scope's circuit breaker: 0 closed, 1 half-open, 2 open."))
	if err != nil {
		return nil, err
	}
	inflight, err := m.Int64ObservableGauge("cloudg.inflight", metric.WithUnit("{call}"),
		metric.WithDescription("Calls holding a slot of an account's bulkhead."))
	if err != nil {
		return nil, err
	}
	budget, err := m.Float64ObservableGauge("cloudg.retry_budget", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens left in a provider's retry budget."))
	if err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		r := c.read(g)
		for _, l := range r.leaves {
			opt := metric.WithAttributeSet(l.set)
			o.ObserveFloat64(rate, l.rate, opt)
			o.ObserveFloat64(ceiling, l.ceiling, opt)
			o.ObserveInt64(breaker, l.breaker, opt)
		}
		for _, a := range r.accounts {
			o.ObserveInt64(inflight, a.n, metric.WithAttributeSet(a.set))
		}
		for _, p := range r.providers {
			o.ObserveFloat64(budget, p.left, metric.WithAttributeSet(p.set))
		}
		return nil
	}, rate, ceiling, breaker, inflight, budget)
}

// breakerValue is the gauge's number for a breaker's position.
func breakerValue(s state.BreakerState) int64 {
	switch s {
	case state.Open:
		return 2
	case state.HalfOpen:
		return 1
	}
	return 0
}

// reading is one collection's gauges, each series once: scopes whose
// attributes are alike once the configuration drops some are added up, or
// give their worst breaker.
type reading struct {
	leaves    []*leafGauge
	accounts  []*accountGauge
	providers []*providerGauge
}

type leafGauge struct {
	set           attribute.Set
	rate, ceiling float64
	breaker       int64
}

type accountGauge struct {
	set attribute.Set
	n   int64
}

type providerGauge struct {
	set  attribute.Set
	left float64
}

// read takes g's live scopes into one reading.
func (c *config) read(g *resilience.Governor) reading {
	var r reading
	leaves := map[attribute.Distinct]*leafGauge{}
	accounts := map[attribute.Distinct]*accountGauge{}
	providers := map[string]*providerGauge{}
	seenAccount := map[resilience.Scope]bool{} // each bulkhead counted once
	for sc, snap := range g.Scopes() {
		set := attribute.NewSet(c.scopeAttrs(sc)...)
		l, ok := leaves[set.Equivalent()]
		if !ok {
			l = &leafGauge{set: set}
			leaves[set.Equivalent()] = l
			r.leaves = append(r.leaves, l)
		}
		l.rate += snap.Leaf.Rate
		l.ceiling += snap.Leaf.Ceiling
		l.breaker = max(l.breaker, breakerValue(snap.Breaker.State))

		acct := resilience.Scope{Provider: sc.Provider, Account: sc.Account}
		if !seenAccount[acct] {
			seenAccount[acct] = true
			set := attribute.NewSet(c.scopeAttrs(acct)...)
			a, ok := accounts[set.Equivalent()]
			if !ok {
				a = &accountGauge{set: set}
				accounts[set.Equivalent()] = a
				r.accounts = append(r.accounts, a)
			}
			a.n += int64(snap.InFlight)
		}
		if _, ok := providers[sc.Provider]; !ok {
			p := &providerGauge{set: attribute.NewSet(c.scopeAttrs(resilience.Scope{Provider: sc.Provider})...), left: snap.RetryBudget}
			providers[sc.Provider] = p
			r.providers = append(r.providers, p)
		}
	}
	return r
}
