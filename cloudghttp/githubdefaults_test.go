//go:build go1.25

package cloudghttp_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// A governor with no configuration paces GitHub's searches at the limits
// GitHub documents for an authenticated client (REST API endpoints for
// search, "Rate limit"): 30 requests a minute for search, 10 a minute for
// code search. rest and graphql, whose quotas depend on the token, stay
// at the generic defaults, as the specification pins Scope("github", ...,
// "rest") at them, and GitHub's headers pace them. The limits are
// defaults: a service key overrides them.
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
	for _, svc := range []string{cloudghttp.GitHubREST, cloudghttp.GitHubGraphQL} {
		if leaf := gov.Inspect(scope(svc)).Leaf; leaf.Ceiling != 20 || leaf.Tokens != 40 {
			t.Errorf("%s %+v, want the generic 20 rps, burst 40", svc, leaf)
		}
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

// pointsAPI answers every GraphQL query with data, counting a point a
// query against a quota of limit points an hour that it reports in
// GitHub's x-ratelimit-* headers, as GitHub does; it refuses none.
type pointsAPI struct {
	limit, used int
	reset       time.Time
}

func (p *pointsAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	p.used++
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Ratelimit-Limit", strconv.Itoa(p.limit))
	h.Set("X-Ratelimit-Remaining", strconv.Itoa(max(p.limit-p.used, 0)))
	h.Set("X-Ratelimit-Used", strconv.Itoa(p.used))
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(p.reset.Unix(), 10))
	h.Set("X-Ratelimit-Resource", "graphql")
	return &http.Response{StatusCode: http.StatusOK, Header: h, Request: req,
		Body: io.NopCloser(strings.NewReader(`{"data":{"viewer":{"login":"octo"}}}`))}, nil
}

// GitHub's GraphQL quota depends on the token: 5,000 points an hour for
// a user, 10,000 for an app of an Enterprise Cloud organisation, up to
// 12,500 for another app's installation, 1,000 a repository for Actions'
// GITHUB_TOKEN ("Rate limits and query limits for the GraphQL API"), and
// a query costs one point or more. No rate in queries fits them all, as
// none fits REST's core (5,000 to 15,000): GitHub's headers, which tell
// each token's quota, pace graphql, and a governor without configuration
// lets a token of 10,000 points an hour spend them at its pace and no
// slower, not at a user's 5,000 (83 queries a minute).
func TestGitHubGraphQLIsPacedByItsHeadersNotAUsersQuota(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		api := &pointsAPI{limit: 10000, reset: start.Add(time.Hour)}
		c := &http.Client{Transport: cloudghttp.NewTransport(api, cloudghttp.GitHub("octo-app"), cloudghttp.WithGovernor(newGov(t, resilience.Config{})))}
		n := 0
		for time.Since(start) < time.Minute {
			readAll(t, do(t, c, http.MethodPost, "https://api.github.com/graphql", body(`{"query":"{viewer{login}}"}`)))
			n++
		}
		if n < 10000/60 {
			t.Errorf("%d queries in the first minute of a quota of 10,000 points an hour, want at least its pace (%d a minute)", n, 10000/60)
		}
	})
}
