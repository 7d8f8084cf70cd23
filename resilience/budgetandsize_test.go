package resilience

import (
	"slices"
	"testing"
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
