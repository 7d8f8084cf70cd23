package test

import (
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cloudg/cloudg/cloudgotel"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// hookStore is the governor's memory store whose budgets run hook, once,
// as their tokens are next read: it puts a change of the governor between
// a read of a budget's tokens and what follows it.
type hookStore struct {
	state.Store
	hook atomic.Pointer[func()]
}

func (s *hookStore) Budget(provider string, size int) state.Budget {
	return hookBudget{s.Store.Budget(provider, size), s}
}

type hookBudget struct {
	state.Budget
	s *hookStore
}

func (b hookBudget) Remaining() float64 {
	left := b.Budget.Remaining()
	if f := b.s.hook.Swap(nil); f != nil {
		(*f)()
	}
	return left
}

// The gauges read a provider's retry budget and its size at once: a
// Configure that resizes AWS's budget as a collection reads it (its
// tokens read from the budget in force before, its size from the one
// after) does not report AWS's full budget of 500 as 500 tokens left of
// 1,000, spent, for one collection.
func TestACollectionReadsABudgetAndItsSizeAtOnce(t *testing.T) {
	m := newMeter()
	obs, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(m))
	if err != nil {
		t.Fatal(err)
	}
	store := &hookStore{Store: resilience.MemoryStore()}
	g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(obs), resilience.WithStateStore(store))
	if err != nil {
		t.Fatal(err)
	}
	resize := func() {
		size := 1000
		if err := g.Configure(resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: &size}}); err != nil {
			t.Error(err)
		}
	}
	store.hook.Store(&resize)
	if mt, ok := m.collect(t)["cloudg.retry_budget"]; ok {
		if pts := mt.Data.(metricdata.Gauge[float64]).DataPoints; len(pts) > 0 {
			t.Errorf("a collection, read as AWS's budget was resized from 500 to 1000 (full before and after), reports cloudg.retry_budget %v = %v; want no series", attrs(pts[0].Attributes), pts[0].Value)
		}
	}
	if store.hook.Load() != nil {
		t.Fatal("the collection read no budget's tokens")
	}
}
