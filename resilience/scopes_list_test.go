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
