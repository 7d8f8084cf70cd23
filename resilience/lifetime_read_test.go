package resilience

import (
	"context"
	"fmt"
	"testing"
)

// Lifetime is a read that may run beside a Configure (or a Reset, or the
// reclaimer) that retires the live entries it goes over: the calls it
// reports are never more than the calls made, nor negative. Here a
// Configure that changes only the breakers, which moves each entry's
// calls to a new entry and leaves a mark in the old one's count, comes
// between Lifetime's listing of the entries and its reading of them.
func TestLifetimeBesideConfigureReadsNoRetiredCount(t *testing.T) {
	g := newGov(t, Config{})
	ok := func(context.Context) error { return nil }
	const n = 3
	for i := range n {
		Do(context.Background(), Scope{Provider: "aws", Account: "1", Region: fmt.Sprint("r", i), Service: "iam"}, ok, WithGovernor(g))
	}
	svc := Scope{Provider: "aws", Account: "1", Region: "r0", Service: "iam"}
	once := false
	testHookLive = func() {
		if !once {
			once = true
			if err := g.Configure(Config{AWS: ProviderConfig{BreakerThreshold: 4}}); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { testHookLive = nil }()
	totals, scopes := g.Lifetime(svc)
	testHookLive = nil
	if !once {
		t.Fatal("setup: Lifetime listed no entries")
	}
	if totals.Calls < 0 || totals.Calls > n || scopes[0].Calls < 0 || scopes[0].Calls > 1 {
		t.Fatalf("Lifetime read %d calls in all, %d of %v, beside a Configure; %d were made, 1 of them", totals.Calls, scopes[0].Calls, svc, n)
	}
	if totals, scopes := g.Lifetime(svc); totals.Calls != n || scopes[0].Calls != 1 {
		t.Fatalf("Lifetime read %d calls in all, %d of %v, after the Configure; want %d and 1", totals.Calls, scopes[0].Calls, svc, n)
	}
}

// Summary(nil) counts each call once when a Configure folds a scope's
// calls into the governor's totals while it reads: here the scope's
// calls are read from its entry, and then, before the summary reads the
// calls folded from retired entries, a Configure that changes the
// provider's buckets and breakers retires the entry and folds its calls
// there. Before, the summary counted them in both.
func TestSummaryBesideConfigureCountsEachCallOnce(t *testing.T) {
	g := newGov(t, Config{})
	ok := func(context.Context) error { return nil }
	for range 3 {
		Do(context.Background(), iamUsers, ok, WithGovernor(g))
	}
	listed := 0
	testHookLive = func() {
		// aws is listed first: at the next provider's listing its
		// entry's calls are read.
		if listed++; listed == 2 {
			if err := g.Configure(Config{AWS: ProviderConfig{MaxRPS: 3, BreakerThreshold: 4}}); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { testHookLive = nil }()
	s := g.Summary(nil)
	testHookLive = nil
	if listed < 2 {
		t.Fatal("setup: the summary listed one provider")
	}
	if s.Totals.Calls > 3 {
		t.Fatalf("Summary(nil) counted %d calls beside a Configure; 3 were made", s.Totals.Calls)
	}
	if s := g.Summary(nil); s.Totals.Calls != 3 {
		t.Fatalf("Summary(nil) counted %d calls after the Configure; want 3", s.Totals.Calls)
	}
}
