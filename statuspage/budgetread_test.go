//go:build go1.25

package statuspage

import (
	"net/http"
	"sync/atomic"
	"testing"

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

// The page reads a provider's retry budget and its size at once: a
// Configure that resizes AWS's budget as the page reads it (its tokens
// read from the budget in force before, its size from the one after)
// does not show AWS's full budget of 500 as 500 tokens left of 1,000,
// spent, for one scrape.
func TestAPageReadsABudgetAndItsSizeAtOnce(t *testing.T) {
	store := &hookStore{Store: resilience.MemoryStore()}
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
	store.hook.Store(&resize)
	s := decode(t, get(t, New(WithGovernor(g)), http.MethodGet, "/?format=json"))
	if len(s.Providers) != 0 {
		t.Errorf("the page, read as AWS's budget was resized from 500 to 1000 (full before and after), shows the budgets %+v; want none spent", s.Providers)
	}
	if store.hook.Load() != nil {
		t.Fatal("the page read no budget's tokens")
	}
}
