package test

import (
	"testing"

	"github.com/cloudg/cloudg/cloudgotel"
	"github.com/cloudg/cloudg/internal/storetest"
	"github.com/cloudg/cloudg/resilience"
)

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
	store := storetest.HookBudgetReads(resilience.MemoryStore())
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
	store.OnNextRead(resize)
	if mt, ok := m.collect(t)["cloudg.retry_budget"]; ok {
		if pts := gauge[float64](t, mt); len(pts) > 0 {
			t.Errorf("a collection, read as AWS's budget was resized from 500 to 1000 (full before and after), reports cloudg.retry_budget %v; want no series", pts)
		}
	}
	if !store.Ran() {
		t.Fatal("the collection read no budget's tokens")
	}
}
