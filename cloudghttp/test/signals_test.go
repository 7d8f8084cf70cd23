package test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// GitHub's rate-limit signals through the real go-github client, in
// memory and in virtual time.

// A 403 or 429 with x-ratelimit-remaining: 0 is a throttle: the scope is
// paused until x-ratelimit-reset, and the Transport's retry goes then.
func TestPrimaryLimitWaitsForTheReset(t *testing.T) {
	for _, status := range []int{http.StatusForbidden, http.StatusTooManyRequests} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.script(svcREST, primaryLimit(status, 60*time.Second))
				gov := newGov(t)
				ctx, stats := resilience.WithStats(context.Background())
				repo, _, err := memClient(t, f, gov, quick).Repositories.Get(ctx, account, "app")
				if err != nil {
					t.Fatal(err)
				}
				if repo.GetFullName() != account+"/app" {
					t.Fatalf("repo %q", repo.GetFullName())
				}
				hits := f.hitsOf(svcREST)
				if len(hits) != 2 {
					t.Fatalf("%d requests, want 2", len(hits))
				}
				if gap := hits[1].at.Sub(hits[0].at); gap < 60*time.Second || gap > 61*time.Second {
					t.Fatalf("retry after %v, want at the reset, 60s", gap)
				}
				if tot := gov.Summary(stats).Totals; tot.Throttled != 1 || tot.Retries != 1 || tot.GaveUp != 0 {
					t.Fatalf("totals %v, want one throttle, one retry", tot)
				}
			})
		})
	}
}

// A reset further away than MaxPause pauses the scope for MaxPause; the
// client gets its own *github.RateLimitError when nothing retries.
func TestPrimaryLimitPauseIsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.script(svcREST, primaryLimit(http.StatusForbidden, time.Hour))
		gov := newGov(t)
		ctx, stats := resilience.WithStats(context.Background())
		_, _, err := memClient(t, f, gov, once).Repositories.Get(ctx, account, "app")
		var rle *github.RateLimitError
		if !errors.As(err, &rle) {
			t.Fatalf("err %v, want go-github's *RateLimitError", err)
		}
		leaf := gov.Inspect(scopeOf(svcREST)).Leaf
		if leaf.Paused != resilience.MaxPause || leaf.Rate >= leaf.Ceiling {
			t.Fatalf("rest leaf %+v, want paused for MaxPause and slowed", leaf)
		}
		if p := gov.Inspect(scopeOf(svcSearch)).Leaf.Paused; p != 0 {
			t.Fatalf("search paused %v by the REST limit, want its own limit", p)
		}
		if tot := gov.Summary(stats).Totals; tot.Throttled != 1 || tot.GaveUp != 1 {
			t.Fatalf("totals %v, want one throttle given up", tot)
		}
	})
}

// A 403 or 429 with retry-after (a secondary limit) is a throttle with
// that delay.
func TestSecondaryLimitWaitsForRetryAfter(t *testing.T) {
	for _, status := range []int{http.StatusForbidden, http.StatusTooManyRequests} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.script(svcREST, secondaryLimit(status, "30"))
				gov := newGov(t)
				if _, _, err := memClient(t, f, gov, quick).Repositories.Get(context.Background(), account, "app"); err != nil {
					t.Fatal(err)
				}
				hits := f.hitsOf(svcREST)
				if len(hits) != 2 {
					t.Fatalf("%d requests, want 2", len(hits))
				}
				if gap := hits[1].at.Sub(hits[0].at); gap < 30*time.Second || gap > 31*time.Second {
					t.Fatalf("retry after %v, want the retry-after, 30s", gap)
				}
			})
		})
	}
}

// Without retries the client gets its *github.AbuseRateLimitError, and
// the scope stays paused for the retry-after.
func TestSecondaryLimitPausesTheScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.script(svcREST, secondaryLimit(http.StatusForbidden, "45"))
		gov := newGov(t)
		_, _, err := memClient(t, f, gov, once).Repositories.Get(context.Background(), account, "app")
		var are *github.AbuseRateLimitError
		if !errors.As(err, &are) {
			t.Fatalf("err %v, want go-github's *AbuseRateLimitError", err)
		}
		if p := gov.Inspect(scopeOf(svcREST)).Leaf.Paused; p != 45*time.Second {
			t.Fatalf("rest paused %v, want 45s", p)
		}
	})
}

// A plain 403 is a permission error: fatal, sent once, the client's own
// *github.ErrorResponse; nothing slows down.
func TestPlainForbiddenIsFatal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.script(svcREST, forbidden())
		gov := newGov(t)
		ctx, stats := resilience.WithStats(context.Background())
		_, resp, err := memClient(t, f, gov, quick).Repositories.Get(ctx, account, "app")
		var ger *github.ErrorResponse
		if !errors.As(err, &ger) || resp.StatusCode != http.StatusForbidden || ger.Message != "Resource not accessible by integration" {
			t.Fatalf("err %v, want go-github's *ErrorResponse for the 403", err)
		}
		if n := len(f.hitsOf(svcREST)); n != 1 {
			t.Fatalf("%d requests, want 1", n)
		}
		tot := gov.Summary(stats).Totals
		if tot.Throttled != 0 || tot.GaveUp != 0 || tot.Retries != 0 {
			t.Fatalf("totals %v, want no throttle, no retry", tot)
		}
		snap := gov.Inspect(scopeOf(svcREST))
		if snap.Leaf.Rate != snap.Leaf.Ceiling || snap.Leaf.Paused != 0 || snap.Breaker.Failures != 0 {
			t.Fatalf("scope %+v, want untouched", snap)
		}
	})
}

// A success with little quota left slows the scope before the limit is
// hit: what is left is spread until the reset.
func TestLowRemainingSlowsTheScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		// 99 left of 5000, the reset in 100 s: one request a second.
		f.quotaOnSuccess(svcREST, quota(5000, 99, 100*time.Second))
		gov := newGov(t)
		c := memClient(t, f, gov)
		ctx := context.Background()
		for range 3 {
			if _, _, err := c.Repositories.Get(ctx, account, "app"); err != nil {
				t.Fatal(err)
			}
		}
		hits := f.hitsOf(svcREST)
		for i := 1; i < len(hits); i++ {
			if gap := hits[i].at.Sub(hits[i-1].at); gap < time.Second || gap > 1100*time.Millisecond {
				t.Fatalf("request %d went %v after the one before, want 1s (100s / 100 requests)", i+1, gap)
			}
		}
	})
}

// Plenty of quota left, or a success without the headers, holds nothing
// back.
func TestAmpleRemainingHoldsNothingBack(t *testing.T) {
	for name, h := range map[string]map[string]func() string{
		"ample":        quota(5000, 4000, time.Hour),
		"a tenth left": quota(5000, 500, time.Hour),
		"no headers":   nil,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.quotaOnSuccess(svcREST, h)
				gov := newGov(t)
				c := memClient(t, f, gov)
				start := time.Now()
				for range 5 {
					if _, _, err := c.Repositories.Get(context.Background(), account, "app"); err != nil {
						t.Fatal(err)
					}
				}
				if took := time.Since(start); took != 0 {
					t.Fatalf("5 requests took %v, want no wait", took)
				}
			})
		})
	}
}

// Just under a tenth of the quota left is low: the scope is paused for
// the time to the reset spread over what is left.
func TestJustUnderATenthLeftSlowsTheScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.quotaOnSuccess(svcREST, quota(5000, 499, 500*time.Second))
		gov := newGov(t)
		if _, _, err := memClient(t, f, gov).Repositories.Get(context.Background(), account, "app"); err != nil {
			t.Fatal(err)
		}
		if p := gov.Inspect(scopeOf(svcREST)).Leaf.Paused; p != time.Second {
			t.Fatalf("rest paused %v, want 1s (500s / 500 requests)", p)
		}
	})
}

// A primary limit's answer that also has retry-after is paused for the
// retry-after, which GitHub asks to be honoured first.
func TestRetryAfterWinsOverTheReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		r := primaryLimit(http.StatusForbidden, 200*time.Second)
		r.header["Retry-After"] = func() string { return "10" }
		f.script(svcREST, r)
		gov := newGov(t)
		_, _, err := memClient(t, f, gov, once).Repositories.Get(context.Background(), account, "app")
		if err == nil {
			t.Fatal("the throttled request succeeded")
		}
		if p := gov.Inspect(scopeOf(svcREST)).Leaf.Paused; p != 10*time.Second {
			t.Fatalf("rest paused %v, want 10s, the retry-after", p)
		}
	})
}

// The last request of the quota succeeds with remaining 0: the scope is
// paused until the reset (go-github itself then refuses to send).
func TestSuccessWithNothingLeftPausesUntilTheReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.quotaOnSuccess(svcSearch, quota(30, 0, 40*time.Second))
		gov := newGov(t)
		_, _, err := memClient(t, f, gov).Search.Repositories(context.Background(), "app", nil)
		if err != nil {
			t.Fatal(err)
		}
		if p := gov.Inspect(scopeOf(svcSearch)).Leaf.Paused; p != 40*time.Second {
			t.Fatalf("search paused %v, want 40s, until the reset", p)
		}
		if p := gov.Inspect(scopeOf(svcREST)).Leaf.Paused; p != 0 {
			t.Fatalf("rest paused %v, want untouched", p)
		}
	})
}

// Search has its own scope: a throttled search holds searches only.
func TestSearchIsPausedApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.script(svcSearch, primaryLimit(http.StatusForbidden, 50*time.Second))
		gov := newGov(t)
		c := memClient(t, f, gov, once)
		ctx := context.Background()
		if _, _, err := c.Search.Repositories(ctx, "app", nil); err == nil {
			t.Fatal("the throttled search succeeded")
		}
		start := time.Now()
		if _, _, err := c.Repositories.Get(ctx, account, "app"); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("a REST request waited %v behind the search limit", waited)
		}
		if p := gov.Inspect(scopeOf(svcSearch)).Leaf.Paused; p != 50*time.Second {
			t.Fatalf("search paused %v, want 50s", p)
		}
	})
}

// GraphQL is a POST: a throttle is safe to send again (GitHub did not run
// the query), and the query goes again as it was.
func TestGraphQLThrottleIsRetriedWithItsQuery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.script(svcGraphQL, primaryLimit(http.StatusForbidden, 20*time.Second))
		gov := newGov(t)
		c := memClient(t, f, gov, quick)
		ctx, stats := resilience.WithStats(context.Background())
		req, err := c.NewRequest(http.MethodPost, "graphql", map[string]string{"query": "{ viewer { login } }"})
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Data struct {
				Viewer struct{ Login string }
			}
		}
		if _, err := c.Do(ctx, req, &out); err != nil {
			t.Fatal(err)
		}
		hits := f.hitsOf(svcGraphQL)
		if out.Data.Viewer.Login != "octocat" || len(hits) != 2 || hits[0].body != hits[1].body || hits[1].body == "" {
			t.Fatalf("login %q after %+v, want octocat after the same query twice", out.Data.Viewer.Login, hits)
		}
		if gap := hits[1].at.Sub(hits[0].at); gap < 20*time.Second || gap > 21*time.Second {
			t.Fatalf("retry after %v, want at the reset, 20s", gap)
		}
		if m := stats.Messages(); len(m) != 1 || m[0][:len("github/my-org/*/graphql: throttled 1x")] != "github/my-org/*/graphql: throttled 1x" {
			t.Fatalf("messages %q, want the graphql scope throttled once", m)
		}
	})
}

// GitHub's scopes run at the generic defaults of a provider the
// configuration does not name (20 rps with a burst of 40, 64 in flight,
// the budget of 500), but for the services whose limits GitHub documents
// as the same for every authenticated token, built in: search 30 a
// minute, code search 10 a minute; what slows them further (core and
// GraphQL, whose quotas depend on the token) is what GitHub's answers say.
func TestGitHubRunsAtTheGenericDefaultsButForItsDocumentedLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t)
		for svc, want := range map[string]struct{ rate, tokens float64 }{
			svcREST: {20, 40}, svcSearch: {0.5, 1}, cloudghttp.GitHubCodeSearch: {0.166, 1}, svcGraphQL: {20, 40},
		} {
			s := gov.Inspect(scopeOf(svc))
			if s.Leaf.Ceiling != want.rate || s.Leaf.Tokens != want.tokens || s.MaxInFlight != 64 || s.RetryBudget != 500 {
				t.Errorf("%s: %+v, want %v rps, %v tokens, 64 in flight, a budget of 500", svc, s, want.rate, want.tokens)
			}
		}
	})
}

// secondaryLimitAlone is GitHub's answer to a secondary rate limit that
// says so only in its body: no retry-after, and the primary quota's
// headers, which every answer carries, far from spent.
func secondaryLimitAlone(status int) reply {
	r := secondaryLimit(status, "")
	r.header = quota(5000, 4990, time.Hour)
	return r
}

// A secondary limit without retry-after is a throttle all the same, whose
// retry waits a minute, as GitHub asks ("otherwise, wait for at least
// one minute before retrying"); neither the primary quota's reset, an
// hour away, nor a plain 403's verdict (a permission: fatal) is its.
func TestSecondaryLimitWithoutRetryAfterWaitsAMinute(t *testing.T) {
	for _, status := range []int{http.StatusForbidden, http.StatusTooManyRequests} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.script(svcREST, secondaryLimitAlone(status))
				gov := newGov(t)
				ctx, stats := resilience.WithStats(context.Background())
				if _, _, err := memClient(t, f, gov, quick).Repositories.Get(ctx, account, "app"); err != nil {
					t.Fatalf("err %v, want the retry's success", err)
				}
				hits := f.hitsOf(svcREST)
				if len(hits) != 2 {
					t.Fatalf("%d requests, want 2: the secondary limit retried", len(hits))
				}
				if gap := hits[1].at.Sub(hits[0].at); gap < time.Minute || gap > time.Minute+time.Second {
					t.Fatalf("retry after %v, want a minute", gap)
				}
				if tot := gov.Summary(stats).Totals; tot.Throttled != 1 || tot.Retries != 1 {
					t.Fatalf("totals %v, want 1 throttle, 1 retry", tot)
				}
			})
		})
	}
}
