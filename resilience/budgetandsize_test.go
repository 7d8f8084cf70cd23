package resilience

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/cloudg/cloudg/state"
)

// BudgetAndSize is Budget and BudgetSize in one read, and makes nothing:
// a provider no call has used reads as its first call would find it, a
// full budget of its size, and is not held after.
func TestBudgetAndSizeIsARead(t *testing.T) {
	size := 7
	g, err := NewGovernor(Config{Providers: map[string]ProviderConfig{"github": {RetryBudget: &size}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"aws", "github"} {
		left, n := g.BudgetAndSize(name)
		if left != g.Budget(name) || n != g.BudgetSize(name) || left != float64(n) {
			t.Errorf("BudgetAndSize(%q) = %v, %d; Budget %v, BudgetSize %d; want them equal, and full", name, left, n, g.Budget(name), g.BudgetSize(name))
		}
	}
	if _, n := g.BudgetAndSize("github"); n != 7 {
		t.Errorf("github's budget size %d, want its retry_budget, 7", n)
	}
	if slices.Contains(g.Providers(), "github") {
		t.Errorf("BudgetAndSize made github's state: providers %v", g.Providers())
	}
}

// spentStore is the governor's memory store whose budgets are made with
// one token spent, so that a budget's tokens say which size it was made
// for: size-1 of a budget of size.
type spentStore struct{ state.Store }

func (s spentStore) Budget(provider string, size int) state.Budget {
	b := s.Store.Budget(provider, size)
	b.Take()
	return b
}

// BudgetAndSize reads the tokens and the size of one budget while
// Configure resizes it and Reset replaces it: for a provider with state
// (aws and gcp, always held; github, made by a call) the tokens are those
// of the budget of the size read, one spent (spentStore), never another
// budget's, and the size is one configured; a provider no call has used
// (gitlab, configured, and nobody, on the defaults) reads full, of a size
// configured, and is not made by the reads.
func TestBudgetAndSizeReadsOneBudgetWhileItIsResized(t *testing.T) {
	cfgOf := func(size int) Config {
		return Config{
			AWS:       ProviderConfig{RetryBudget: &size},
			GCP:       ProviderConfig{RetryBudget: &size},
			Providers: map[string]ProviderConfig{"github": {RetryBudget: &size}, "gitlab": {RetryBudget: &size}},
		}
	}
	sizes := []int{500, 1000}
	g, err := NewGovernor(cfgOf(sizes[0]), WithStateStore(spentStore{MemoryStore()}))
	if err != nil {
		t.Fatal(err)
	}
	if err := Do(context.Background(), Scope{Provider: "github", Account: "octo", Service: "rest"}, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
		t.Fatal(err)
	}
	g.Reset() // new budgets, one token spent: not the tenth the call refunded
	const rounds = 300
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := range rounds {
			if i%10 == 9 {
				g.Reset()
				continue
			}
			if err := g.Configure(cfgOf(sizes[i%2])); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	check := func(name string, held bool) {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			left, size := g.BudgetAndSize(name)
			want := float64(size) // full: no state
			if held {
				want-- // the one token spentStore spent
			}
			if !slices.Contains(sizes, size) || left != want {
				t.Errorf("BudgetAndSize(%q) = %v tokens of %d, read as its budget was resized between %v; want %v of a size configured", name, left, size, sizes, want)
				return
			}
		}
	}
	for _, p := range []struct {
		name string
		held bool
	}{{"aws", true}, {"gcp", true}, {"github", true}, {"gitlab", false}} {
		wg.Add(1)
		go check(p.name, p.held)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if left, size := g.BudgetAndSize("nobody"); size != defaultRetryBudget || left != float64(size) {
				t.Errorf("BudgetAndSize(\"nobody\") = %v tokens of %d; want a full budget of the default size", left, size)
				return
			}
		}
	}()
	wg.Wait()
	if ps := g.Providers(); slices.Contains(ps, "gitlab") || slices.Contains(ps, "nobody") {
		t.Errorf("BudgetAndSize made a provider's state: providers %v", ps)
	}
}
