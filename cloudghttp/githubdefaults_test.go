//go:build go1.25

package cloudghttp_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// A governor with no configuration paces GitHub's searches at the limits
// GitHub documents for an authenticated client (REST API endpoints for
// search, "Rate limit"): 30 requests a minute for search, 10 a minute for
// code search; and GraphQL at no more queries than its 5,000 points an
// hour allow, a query costing one point at the least (Rate limits and
// query limits for the GraphQL API). rest stays at the generic defaults,
// as the specification pins Scope("github", ..., "rest") at them. The
// limits are defaults: a service key overrides them.
func TestGitHubIsPacedAtItsDocumentedLimitsWithoutConfig(t *testing.T) {
	// sent sends n requests to path back to back and returns how many
	// GitHub received within the first minute.
	sent := func(t *testing.T, gov *resilience.Governor, path string, n int) int {
		t.Helper()
		f := &fakeAPI{}
		c := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(gov))}
		start := time.Now()
		for range n {
			readAll(t, do(t, c, http.MethodGet, "https://api.github.com"+path, nil))
		}
		within := 0
		for _, h := range f.recorded() {
			if h.at.Sub(start) < time.Minute {
				within++
			}
		}
		return within
	}
	for _, c := range []struct {
		path     string
		n, limit int
	}{
		{"/search/issues?q=bug", 35, 30},
		{"/search/code?q=x", 12, 10},
	} {
		t.Run(c.path, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if got := sent(t, newGov(t, resilience.Config{}), c.path, c.n); got != c.limit {
					t.Errorf("%d requests within a minute, want GitHub's %d", got, c.limit)
				}
			})
		})
	}
	scope := func(svc string) resilience.Scope {
		return resilience.Scope{Provider: cloudghttp.ProviderGitHub, Account: "octo", Service: svc}
	}
	gov := newGov(t, resilience.Config{})
	if perHour := gov.Inspect(scope(cloudghttp.GitHubGraphQL)).Leaf.Ceiling * 3600; perHour > 5000 || perHour < 4990 {
		t.Errorf("graphql at %v queries an hour, want GitHub's 5,000 points an hour at one point a query", perHour)
	}
	if leaf := gov.Inspect(scope(cloudghttp.GitHubREST)).Leaf; leaf.Ceiling != 20 || leaf.Tokens != 40 {
		t.Errorf("rest %+v, want the generic 20 rps, burst 40", leaf)
	}
	// A service key overrides a default and leaves the others.
	cfg, err := resilience.ParseConfig([]byte("providers: {github: {max_rps: 1.4, services: {search: {max_rps: 0.25}}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tuned := newGov(t, cfg)
	for svc, want := range map[string]float64{
		cloudghttp.GitHubSearch:     0.25,
		cloudghttp.GitHubCodeSearch: gov.Inspect(scope(cloudghttp.GitHubCodeSearch)).Leaf.Ceiling,
		cloudghttp.GitHubREST:       1.4,
	} {
		if got := tuned.Inspect(scope(svc)).Leaf.Ceiling; got != want {
			t.Errorf("%s configured: %v rps, want %v", svc, got, want)
		}
	}
}
