//go:build go1.25

package resilience

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// Scopes lists the live scopes with their parts as fields (a GCP
// project's "/" inside its account) and where each stands: rate, ceiling,
// tokens, the end of a pause, the breaker, the bulkhead's calls in flight
// and waiting against its cap, the retry budget left.
func TestScopesIteration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{GCP: ProviderConfig{MaxConcurrency: 1, BreakerThreshold: 1}})
		start := g.Clock().Now()
		gcp := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
		n := 0
		busy := &apiErr{code: "ResourceExhausted", status: 429, header: http.Header{"Retry-After": {"30"}}}
		Do(context.Background(), gcp, always(&n, busy), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g))

		// One call holds the project's only slot; another waits for it.
		search := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "SearchAllResources"}
		holder, _ := g.Begin(context.Background(), search)
		if err := holder.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		go Do(context.Background(), search, always(new(int), nil), WithGovernor(g))
		synctest.Wait()

		seen := map[Scope]state.ScopeSnapshot{}
		for sc, snap := range g.Scopes() {
			seen[sc] = snap
		}
		if len(seen) != 3 {
			t.Fatalf("scopes %v", seen)
		}
		s := seen[gcp]
		if s.Leaf.Rate != 0.75 || s.Leaf.Ceiling != 1.5 || s.Leaf.Tokens > 0 || s.RetryBudget != 500 ||
			!s.PausedUntil.Equal(start.Add(30*time.Second)) || s.Breaker.State != state.Open ||
			s.InFlight != 1 || s.Waiting != 1 || s.MaxInFlight != 1 {
			t.Fatalf("gcp %+v", s)
		}
		if s := seen[Scope{Provider: "aws", Account: "123456789012", Service: "iam"}]; s.Leaf.Rate != 10 || !s.PausedUntil.IsZero() || s.InFlight != 0 {
			t.Fatalf("the IAM leaf %+v", s)
		}
		holder.End(nil)
		synctest.Wait()

		// The iteration stops when asked.
		k := 0
		for range g.Scopes() {
			k++
			break
		}
		if k != 1 {
			t.Fatalf("%d scopes after a break", k)
		}
	})
}

// Scopes lists each provider's scopes as the provider holds them when the
// iteration reaches it: a Configure that changes Azure's breakers while
// the iteration is at AWS's scopes moves Azure's scopes to a new table,
// where the iteration finds them, rather than reading the table the
// Configure retired, which holds none. Summary's slowed buckets and its
// count of live calls read them so too.
func TestScopesFollowAConfigureDuringTheIteration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		vnet := Scope{Provider: "azure", Account: "sub-1", Service: "network"}
		n := 0
		Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g))
		Do(context.Background(), vnet, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		seen := map[Scope]state.ScopeSnapshot{}
		for sc, snap := range g.Scopes() {
			if len(seen) == 0 {
				if sc.Provider != "aws" {
					t.Fatalf("setup: the iteration began with %v", sc)
				}
				if err := g.Configure(Config{Azure: ProviderConfig{BreakerThreshold: 4}}); err != nil {
					t.Fatal(err)
				}
			}
			seen[sc] = snap
		}
		if s, ok := seen[vnet]; len(seen) != 2 || !ok || s.Leaf.Rate >= s.Leaf.Ceiling {
			t.Fatalf("Scopes listed %v beside a Configure of Azure's breakers, want the IAM scope and the slowed %v", seen, vnet)
		}

		listed := 0
		testHookLive = func() {
			if listed++; listed == 1 { // at AWS's listing
				if err := g.Configure(Config{Azure: ProviderConfig{BreakerThreshold: 3}}); err != nil {
					t.Error(err)
				}
			}
		}
		defer func() { testHookLive = nil }()
		sum := g.Summary(nil)
		testHookLive = nil
		if _, ok := sum.SlowedBuckets[vnet]; !ok || sum.Totals.Calls != 2 {
			t.Fatalf("Summary(nil) beside a Configure of Azure's breakers: slowed %v, %d calls; want %v slowed, 2 calls", sum.SlowedBuckets, sum.Totals.Calls, vnet)
		}
	})
}
