package test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// The same signals over real sockets: the fake GitHub API on a loopback
// httptest server, go-github on net/http's own transport, the wall clock.
// Sockets cannot be inside a synctest bubble, so every delay here is 0:
// a reset that is now, a retry-after of 0.

// loopbackClient serves f on 127.0.0.1 and returns a go-github client for
// it, as for a GitHub Enterprise Server when enterprise is set (base URL
// /api/v3/). opts come after quick, whose policy they may replace.
func loopbackClient(t *testing.T, f *fakeGitHub, gov *resilience.Governor, enterprise bool, opts ...cloudghttp.Option) *github.Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := ghClient(t, tr, srv.URL+"/", gov, append([]cloudghttp.Option{quick}, opts...)...)
	if enterprise {
		ec, err := c.WithEnterpriseURLs(srv.URL, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		c = ec
	}
	return c
}

func TestSignalsOverLoopback(t *testing.T) {
	f := newFake()
	gov := newGov(t)
	c := loopbackClient(t, f, gov, false)
	ctx, stats := resilience.WithStats(context.Background())

	// The primary limit, reset now: throttled, retried at once.
	f.script(svcREST, primaryLimit(http.StatusForbidden, 0))
	if _, _, err := c.Repositories.Get(ctx, account, "app"); err != nil {
		t.Fatal(err)
	}
	// A secondary limit with retry-after 0: throttled, retried.
	f.script(svcREST, secondaryLimit(http.StatusForbidden, "0"))
	if _, _, err := c.Repositories.Get(ctx, account, "app"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.hitsOf(svcREST)); n != 4 {
		t.Fatalf("%d requests, want 4 (two throttled, two retries)", n)
	}
	// A plain 403: fatal, once, go-github's own error.
	f.script(svcREST, forbidden())
	_, resp, err := c.Repositories.Get(ctx, account, "app")
	var ger *github.ErrorResponse
	if !errors.As(err, &ger) || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("err %v, want go-github's *ErrorResponse for the 403", err)
	}
	if n := len(f.hitsOf(svcREST)); n != 5 {
		t.Fatalf("%d requests, want 5 (the 403 sent once)", n)
	}
	tot := gov.Summary(stats).Totals
	if tot.Throttled != 2 || tot.Retries != 2 || tot.GaveUp != 0 || tot.Calls != 5 {
		t.Fatalf("totals %v, want 5 calls, 2 throttles, 2 retries", tot)
	}
	if leaf := gov.Inspect(scopeOf(svcREST)).Leaf; leaf.Rate >= leaf.Ceiling {
		t.Fatalf("rest leaf %+v, want slowed by the throttles", leaf)
	}
}

// A GitHub Enterprise Server's /api/v3/search/ is the search scope of
// the server's own provider and account (github-enterprise, its host and
// port, 127.0.0.1:<port>, and the login); a success with nothing left pauses it until the reset, and
// no scope of github.com's.
func TestEnterpriseSearchScopeOverLoopback(t *testing.T) {
	f := newFake()
	f.quotaOnSuccess(svcSearch, quota(30, 0, 30*time.Second))
	gov := newGov(t)
	c := loopbackClient(t, f, gov, true)
	if _, _, err := c.Search.Repositories(context.Background(), "app", nil); err != nil {
		t.Fatal(err)
	}
	if n := len(f.hitsOf(svcSearch)); n != 1 {
		t.Fatalf("%d searches, want 1", n)
	}
	ghes := func(service string) resilience.Scope {
		return resilience.Scope{Provider: cloudghttp.ProviderGitHubEnterprise, Account: c.BaseURL.Host + "/" + account, Service: service}
	}
	// The reset is whole seconds away: 29 to 30 s of the pause are left.
	if p := gov.Inspect(ghes(svcSearch)).Leaf.Paused; p < 28*time.Second || p > 30*time.Second {
		t.Fatalf("search paused %v, want until the reset, about 30s", p)
	}
	if p := gov.Inspect(ghes(svcREST)).Leaf.Paused; p != 0 {
		t.Fatalf("rest paused %v, want untouched", p)
	}
	if p := gov.Inspect(scopeOf(svcSearch)).Leaf.Paused; p != 0 {
		t.Fatalf("github.com's search paused %v, want untouched", p)
	}
}

// The pauses GitHub's headers ask for, over 127.0.0.1, read without
// waiting them out: a primary limit whose reset is an hour away pauses the
// scope for MaxPause and reaches go-github as its *RateLimitError; a
// success with under a tenth of the quota left spreads what is left until
// the reset.
func TestPausesOverLoopback(t *testing.T) {
	f := newFake()
	gov := newGov(t)
	c := loopbackClient(t, f, gov, false, once)
	f.script(svcREST, primaryLimit(http.StatusForbidden, time.Hour))
	_, _, err := c.Repositories.Get(context.Background(), account, "app")
	var rle *github.RateLimitError
	if !errors.As(err, &rle) || rle.Rate.Remaining != 0 {
		t.Fatalf("err %v, want go-github's *RateLimitError", err)
	}
	if n := len(f.hitsOf(svcREST)); n != 1 {
		t.Fatalf("%d requests, want 1 (no retry into a pause past the reset)", n)
	}
	// The wall clock runs: a second of the pause may have passed.
	if p := gov.Inspect(scopeOf(svcREST)).Leaf.Paused; p > resilience.MaxPause || p < resilience.MaxPause-time.Second {
		t.Fatalf("rest paused %v, want MaxPause", p)
	}

	// 99 of 5,000 left, the reset 100 s away in whole seconds: a pause of
	// 0.99 to 1 s on the search scope, whose own quota it is.
	f.quotaOnSuccess(svcSearch, quota(5000, 99, 100*time.Second))
	if _, _, err := c.Search.Repositories(context.Background(), "app", nil); err != nil {
		t.Fatal(err)
	}
	if p := gov.Inspect(scopeOf(svcSearch)).Leaf.Paused; p > time.Second || p < 900*time.Millisecond {
		t.Fatalf("search paused %v, want about 1s (100s / 100 requests)", p)
	}
}

// A secondary limit that says so only in its body, over 127.0.0.1: a
// throttle, the scope paused a minute, go-github's *AbuseRateLimitError
// for the caller when nothing retries; not a permission error.
func TestSecondaryLimitWithoutRetryAfterOverLoopback(t *testing.T) {
	f := newFake()
	gov := newGov(t)
	c := loopbackClient(t, f, gov, false, once)
	ctx, stats := resilience.WithStats(context.Background())
	f.script(svcREST, secondaryLimitAlone(http.StatusForbidden))
	_, _, err := c.Repositories.Get(ctx, account, "app")
	var are *github.AbuseRateLimitError
	if !errors.As(err, &are) || are.Message != "You have exceeded a secondary rate limit." {
		t.Fatalf("err %v, want go-github's *AbuseRateLimitError with GitHub's message", err)
	}
	tot := gov.Summary(stats).Totals
	if tot.Throttled != 1 || tot.GaveUp != 1 {
		t.Fatalf("totals %v, want the secondary limit throttled and given up", tot)
	}
	if p := gov.Inspect(scopeOf(svcREST)).Leaf.Paused; p < 50*time.Second || p > time.Minute {
		t.Fatalf("rest paused %v, want a minute", p)
	}
}
