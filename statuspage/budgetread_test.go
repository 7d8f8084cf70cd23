//go:build go1.25

package statuspage

import (
	"net/http"
	"testing"

	"github.com/cloudg/cloudg/internal/storetest"
	"github.com/cloudg/cloudg/resilience"
)

// The page reads a provider's retry budget and its size at once: a
// Configure that resizes AWS's budget as the page reads it (its tokens
// read from the budget in force before, its size from the one after)
// does not show AWS's full budget of 500 as 500 tokens left of 1,000,
// spent, for one scrape.
func TestAPageReadsABudgetAndItsSizeAtOnce(t *testing.T) {
	store := storetest.HookBudgetReads(resilience.MemoryStore())
	g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(store))
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
	s := decode(t, get(t, New(WithGovernor(g)), http.MethodGet, "/?format=json"))
	if len(s.Providers) != 0 {
		t.Errorf("the page, read as AWS's budget was resized from 500 to 1000 (full before and after), shows the budgets %+v; want none spent", s.Providers)
	}
	if !store.Ran() {
		t.Fatal("the page read no budget's tokens")
	}
}
