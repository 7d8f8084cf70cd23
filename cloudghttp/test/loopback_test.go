package test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/cloudg/cloudg/resilience"
)

// The same signals over real sockets: the fake GitHub API on a loopback
// httptest server, go-github on net/http's own transport, the wall clock.
// Sockets cannot be inside a synctest bubble, so every delay here is 0:
// a reset that is now, a retry-after of 0.

// loopbackClient serves f on 127.0.0.1 and returns a go-github client for
// it, as for a GitHub Enterprise Server when enterprise is set (base URL
// /api/v3/).
func loopbackClient(t *testing.T, f *fakeGitHub, gov *resilience.Governor, enterprise bool) *github.Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := ghClient(t, tr, srv.URL+"/", gov, quick)
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
	f.script(svcREST, secondaryLimit(http.StatusTooManyRequests, "0"))
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

// A GitHub Enterprise Server's /api/v3/search/ is the search scope; a
// success with nothing left pauses it until the reset.
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
	// The reset is whole seconds away: 29 to 30 s of the pause are left.
	if p := gov.Inspect(scopeOf(svcSearch)).Leaf.Paused; p < 28*time.Second || p > 30*time.Second {
		t.Fatalf("search paused %v, want until the reset, about 30s", p)
	}
	if p := gov.Inspect(scopeOf(svcREST)).Leaf.Paused; p != 0 {
		t.Fatalf("rest paused %v, want untouched", p)
	}
}
