//go:build go1.25

package cloudghttp_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// A GitHub answer slows its scope only when under a tenth of its quota is
// left, however absurd the numbers of its headers: 499 of 5,000 left
// pause the scope for the time to the reset shared by the 500 requests
// it may still make, 500 of 5,000 hold nothing back, and so do 10^18 or
// 2^63-1 left of 5,000, which must not wrap around to a quota read as
// low (a pause of a few nanoseconds, which still drops the scope's stored
// burst, before a reset 286 years away).
func TestGitHubQuotaIsLowUnderATenthWhateverItsNumbers(t *testing.T) {
	for _, c := range []struct {
		remaining int64
		reset     time.Duration // from now
		want      time.Duration // the pause; 0: none
	}{
		{499, 500 * time.Second, time.Second},
		{500, 500 * time.Second, 0},
		{1e18, 0, 0}, // the reset: 9999999999, in the year 2286
		{math.MaxInt64, 0, 0},
	} {
		synctest.Test(t, func(t *testing.T) {
			var pauses []time.Duration
			gov, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(observe.Func(func(e observe.Event) {
				if e.Kind == observe.Pause {
					pauses = append(pauses, e.Until.Sub(e.Time))
				}
			})))
			if err != nil {
				t.Fatal(err)
			}
			reset := "9999999999"
			if c.reset > 0 {
				reset = strconv.FormatInt(time.Now().Add(c.reset).Unix(), 10)
			}
			f := &fakeAPI{}
			f.script(status(http.StatusOK, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", strconv.FormatInt(c.remaining, 10), "X-RateLimit-Reset", reset))
			hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(gov))}
			readAll(t, do(t, hc, http.MethodGet, "https://api.github.com/repos/octo/hello", nil))
			var want []time.Duration
			if c.want > 0 {
				want = []time.Duration{c.want}
			}
			if len(pauses) != len(want) || len(want) == 1 && pauses[0] != want[0] {
				t.Errorf("%d of 5000 left: pauses %v, want %v", c.remaining, pauses, want)
			}
		})
	}
}

// A spent GitHub quota whose x-ratelimit-reset is too far away for a
// time.Time to hold (an epoch near 2^63 seconds) pauses the scope for
// MaxPause, as any reset more than MaxPause away does; it must not wrap
// around to a reset in the past, read as no pause at all.
func TestGitHubResetTooFarForATimeIsCappedAtMaxPause(t *testing.T) {
	for _, reset := range []string{"9999999999", strconv.FormatInt(math.MaxInt64-62135596800, 10), strconv.FormatInt(math.MaxInt64, 10)} {
		for _, code := range []int{http.StatusForbidden, http.StatusOK} {
			t.Run(strconv.Itoa(code)+"/"+reset, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					gov := newGov(t, resilience.Config{})
					f := &fakeAPI{}
					f.script(status(code, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset))
					scope := cloudghttp.GitHub("octo")
					hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), scope, cloudghttp.WithGovernor(gov), cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))}
					resp := do(t, hc, http.MethodGet, "https://api.github.com/repos/octo/hello", nil)
					readAll(t, resp)
					if p := gov.Inspect(scope(resp.Request)).Leaf.Paused; p != resilience.MaxPause {
						t.Errorf("%d with nothing left, reset %s: scope paused %v, want MaxPause (%v)", code, reset, p, resilience.MaxPause)
					}
				})
			})
		}
	}
}

// The body of a GitHub 403 read for a secondary limit's words reaches the
// caller whole, however long: what was read, then the rest.
func TestGitHubForbiddenBodyIsGivenBackWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		long := `{"message":"Resource not accessible by integration","padding":"` + strings.Repeat("x", 10<<10) + `"}`
		f.script(reply{status: http.StatusForbidden, header: http.Header{}, body: long})
		hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(newGov(t, resilience.Config{})))}
		resp := do(t, hc, http.MethodGet, "https://api.github.com/repos/octo/hello", nil)
		if got := readAll(t, resp); resp.StatusCode != http.StatusForbidden || got != long {
			t.Fatalf("status %d, %d bytes of body, want the 403's %d", resp.StatusCode, len(got), len(long))
		}
		if n := len(f.recorded()); n != 1 {
			t.Fatalf("%d attempts, want 1 (a permission)", n)
		}
	})
}

// A GitHub 403 whose body stalls after its headers holds its attempt's
// slot (and every request of the account waiting for it) no longer than
// the drain's grace, a second, however long the body takes: the body is
// read for a secondary limit's words only for that long, and still
// reaches the caller whole when it comes.
func TestGitHubForbiddenBodyThatStallsDoesNotHoldTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const head, tail = `{"message":"Resource not`, ` accessible by integration"}`
		release := make(chan struct{})
		pr, pw := io.Pipe()
		go func() {
			_, _ = io.WriteString(pw, head)
			select { // the rest comes when the test says, or after an hour
			case <-release:
			case <-time.After(time.Hour):
			}
			_, _ = io.WriteString(pw, tail)
			_ = pw.Close()
		}()
		hc := &http.Client{Transport: cloudghttp.NewTransport(forbiddenBase{pr}, cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(newGov(t, resilience.Config{})))}
		start := time.Now()
		resp := do(t, hc, http.MethodGet, "https://api.github.com/repos/octo/hello", nil)
		if took := time.Since(start); took > time.Second {
			t.Errorf("the 403 came back %v after the request, want at most a second: its stalling body held the attempt's slot", took)
		}
		close(release)
		if got := readAll(t, resp); resp.StatusCode != http.StatusForbidden || got != head+tail {
			t.Fatalf("status %d, body %q, want the 403's %q", resp.StatusCode, got, head+tail)
		}
	})
}

// forbiddenBase answers every request with a 403 of body, no header.
type forbiddenBase struct{ body io.ReadCloser }

func (b forbiddenBase) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusForbidden, Status: "403 Forbidden", Header: http.Header{}, Body: b.body, Request: req}, nil
}

// GitHub limits its code search apart from its other searches (10
// requests a minute against 30, x-ratelimit-resource code_search against
// search): /search/code is a scope of its own, code_search, so that a
// code search that spent its quota holds code searches only, not an
// issue search, whose quota is whole, for up to a minute; and the code
// search's scope is tuned under its own service key.
func TestGitHubCodeSearchIsPausedApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		start := time.Now()
		f.script(status(http.StatusForbidden, "X-RateLimit-Limit", "10", "X-RateLimit-Remaining", "0",
			"X-RateLimit-Reset", strconv.FormatInt(start.Add(50*time.Second).Unix(), 10), "X-RateLimit-Resource", "code_search"))
		gov := newGov(t, resilience.Config{})
		scope := cloudghttp.GitHub("octo")
		c := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), scope, cloudghttp.WithGovernor(gov),
			cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))}
		code := do(t, c, http.MethodGet, "https://api.github.com/search/code?q=secret", nil)
		readAll(t, code)
		if code.StatusCode != http.StatusForbidden {
			t.Fatalf("code search: status %d, want the 403", code.StatusCode)
		}
		sent := time.Now()
		readAll(t, do(t, c, http.MethodGet, "https://api.github.com/search/issues?q=bug", nil))
		if waited := time.Since(sent); waited != 0 {
			t.Errorf("an issue search waited %v behind the code search's spent quota, want none", waited)
		}
		req, _ := http.NewRequest(http.MethodGet, "https://api.github.com/search/code?q=x", nil)
		if got := scope(req).String(); got != "github/octo/*/code_search" {
			t.Errorf("code search's scope %s, want github/octo/*/code_search", got)
		}
		if p := gov.Inspect(scope(req)).Leaf.Paused; p != 50*time.Second {
			t.Errorf("code search paused %v, want 50s, until its reset", p)
		}
		cfg, err := resilience.ParseConfig([]byte("ratelimit: {providers: {github: {services: {code_search: {max_rps: 0.16, min_rps: 0.05}}}}}\n"))
		if err != nil {
			t.Fatalf("a code_search service key: %v", err)
		}
		if rate := newGov(t, cfg).Inspect(scope(req)).Leaf.Rate; rate != 0.16 {
			t.Errorf("code search runs at %v rps, want its service key's 0.16", rate)
		}
	})
}

// GitHub limits some REST operations apart from the rest of its REST API,
// each with a quota of its own in the resources of GET /rate_limit: a
// quota spent on one of them (a 403 with x-ratelimit-remaining: 0 and its
// x-ratelimit-resource) pauses that operation's scope only, never the
// account's other REST calls, whose core quota is whole; the scope is
// tuned under its own service key, as the resource is named. The paths
// are those GitHub's documentation gives each quota, on github.com and
// behind an Enterprise Server's /api/v3.
func TestGitHubSeparateQuotasArePausedApart(t *testing.T) {
	for _, c := range []struct {
		resource, method, path string
		region                 string // the scope's, * but for the audit log's entity
	}{
		{"integration_manifest", http.MethodPost, "/app-manifests/0123abcd/conversions", "*"},
		{"dependency_snapshots", http.MethodPost, "/repos/octo/hello/dependency-graph/snapshots", "*"},
		{"dependency_sbom", http.MethodGet, "/repos/octo/hello/dependency-graph/sbom", "*"},
		{"dependency_sbom", http.MethodGet, "/repos/octo/hello/dependency-graph/sbom/generate-report", "*"},
		{"audit_log", http.MethodGet, "/orgs/octo/audit-log", "orgs/octo"},
		{"audit_log", http.MethodGet, "/enterprises/octo-corp/audit-log", "enterprises/octo-corp"},
		{"scim", http.MethodGet, "/scim/v2/organizations/octo/Users", "*"},
		{"scim", http.MethodPatch, "/scim/v2/enterprises/octo-corp/Groups/7", "*"},
		{"audit_log_streaming", http.MethodGet, "/enterprises/octo-corp/audit-log/streams", "*"},
		{"audit_log_streaming", http.MethodPut, "/enterprises/octo-corp/audit-log/streams/3", "*"},
		{"audit_log_streaming", http.MethodGet, "/enterprises/octo-corp/audit-log/stream-key", "*"},
		{"actions_runner_registration", http.MethodPost, "/actions/runner-registration", "*"},
		{"code_scanning_autofix", http.MethodPost, "/repos/octo/hello/code-scanning/alerts/7/autofix", "*"},
		{"code_scanning_autofix", http.MethodPost, "/repos/octo/hello/code-scanning/alerts/7/autofix/commits", "*"},
	} {
		t.Run(c.resource+c.path, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				start := time.Now()
				f.script(status(http.StatusForbidden, "X-RateLimit-Limit", "100", "X-RateLimit-Remaining", "0",
					"X-RateLimit-Reset", strconv.FormatInt(start.Add(50*time.Second).Unix(), 10), "X-RateLimit-Resource", c.resource))
				gov := newGov(t, resilience.Config{})
				scope := cloudghttp.GitHub("octo")
				hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), scope, cloudghttp.WithGovernor(gov),
					cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))}
				spent := do(t, hc, c.method, "https://api.github.com"+c.path, nil)
				readAll(t, spent)
				if spent.StatusCode != http.StatusForbidden {
					t.Fatalf("%s %s: status %d, want the 403", c.method, c.path, spent.StatusCode)
				}
				sent := time.Now()
				readAll(t, do(t, hc, http.MethodGet, "https://api.github.com/repos/octo/hello/issues", nil))
				if waited := time.Since(sent); waited != 0 {
					t.Errorf("a REST call waited %v behind %s's spent quota (%s %s), want none", waited, c.resource, c.method, c.path)
				}
				want := "github/octo/" + c.region + "/" + c.resource
				for u, want := range map[string]string{"https://api.github.com" + c.path: want, "https://ghe.example.com/api/v3" + c.path: onGHES(want)} {
					req, _ := http.NewRequest(c.method, u, nil)
					if got := scope(req).String(); got != want {
						t.Errorf("%s %s: scope %s, want %s", c.method, u, got, want)
					}
				}
				req, _ := http.NewRequest(c.method, "https://api.github.com"+c.path, nil)
				if p := gov.Inspect(scope(req)).Leaf.Paused; p != 50*time.Second {
					t.Errorf("%s paused %v, want 50s, until its reset", c.resource, p)
				}
				cfg, err := resilience.ParseConfig([]byte("ratelimit: {providers: {github: {services: {" + c.resource + ": {max_rps: 0.02, min_rps: 0.01}}}}}\n"))
				if err != nil {
					t.Fatalf("a %s service key: %v", c.resource, err)
				}
				if rate := newGov(t, cfg).Inspect(scope(req)).Leaf.Rate; rate != 0.02 {
					t.Errorf("%s runs at %v rps, want its service key's 0.02", c.resource, rate)
				}
			})
		})
	}
}

// The paths near those of GitHub's separate quotas that GitHub's
// documentation does not put under them stay in rest: reading a SARIF
// upload's status, the dependency graph's compare, an organisation's
// other settings.
func TestGitHubPathsNearSeparateQuotasStayREST(t *testing.T) {
	scope := cloudghttp.GitHub("octo")
	for _, p := range []string{
		"/app-manifests/0123abcd",
		"/repos/octo/hello/dependency-graph/compare/main...dev",
		"/repos/octo/hello/code-scanning/sarifs",
		"/orgs/octo/audit-log-x",
		"/orgs/octo/hooks",
		"/repos/octo/audit-log",
		"/orgs/octo/repos/dependency-graph/sbom",
		"/scim",
		"/orgs/octo/audit-log/streams",
		"/enterprises/octo-corp/audit-log/streams-x",
		"/repos/octo/hello/actions/runners",
		"/repos/octo/hello/actions/runners/remove-token",
		"/orgs/octo/actions/runners/registration-token",
		"/actions/runner-registration/x",
		"/actions/runners",
		"/repos/octo/hello/code-scanning/alerts/7",
		"/repos/octo/hello/code-scanning/alerts/autofix",
		"/repos/octo/hello/code-scanning/alerts/7/autofix/x",
	} {
		req, _ := http.NewRequest(http.MethodGet, "https://api.github.com"+p, nil)
		if got := scope(req).String(); got != "github/octo/*/rest" {
			t.Errorf("%s: scope %s, want github/octo/*/rest", p, got)
		}
	}
}

// GitHub answers a GraphQL query made once its primary quota is spent
// with a 200 whose body holds only errors, of type RATE_LIMITED, and
// x-ratelimit-remaining: 0 ("Rate limits and query limits for the GraphQL
// API", docs.github.com: the status is still 200, and no request should
// be sent again before x-ratelimit-reset). Such an answer is a throttle,
// as a REST 403 with nothing left is: the query, which GitHub did not
// run, is sent again after the reset, and one whose attempts are spent
// is the caller's last response, recorded as given up to throttling
// (the run's stats, its ledger), not as a success. A query that spent the
// last point and was answered (its data) is a success, which pauses the
// scope until the reset.
func TestGitHubGraphQLRateLimitedAnswerIsAThrottle(t *testing.T) {
	const limited = `{"errors":[{"type":"RATE_LIMITED","code":"graphql_rate_limit","message":"API rate limit exceeded for user ID 1."}]}`
	const query = `{"query":"query { viewer { login } }"}`
	spent := func(body string) reply {
		r := status(http.StatusOK, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0",
			"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(30*time.Second).Unix(), 10), "X-RateLimit-Resource", "graphql")
		r.body = body
		return r
	}
	t.Run("retried after the reset", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeAPI{}
			f.script(spent(limited))
			gov := newGov(t, resilience.Config{})
			ctx, stats := resilience.WithStats(context.Background())
			hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(gov))}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.github.com/graphql", strings.NewReader(query))
			start := time.Now()
			resp := send(t, hc, req)
			if got := readAll(t, resp); got != "ok" {
				t.Fatalf("body %q after %v, want the query sent again after the reset and answered", got, time.Since(start))
			}
			hits := f.recorded()
			if len(hits) != 2 || hits[1].body != query || hits[1].at.Sub(hits[0].at) < 30*time.Second {
				t.Fatalf("%d attempts (%v), want the query sent again, whole, 30 s later, after the reset", len(hits), hits)
			}
			if tot := gov.Summary(stats).Totals; tot.Throttled != 1 || tot.Retries != 1 || tot.GaveUp != 0 {
				t.Fatalf("totals %+v, want 1 throttle, 1 retry, no give-up", tot)
			}
		})
	})
	t.Run("given up", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeAPI{}
			f.script(spent(limited))
			gov := newGov(t, resilience.Config{})
			ctx, stats := resilience.WithStats(context.Background())
			ctx, ledger := resilience.WithLedger(ctx, "graphql")
			hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(gov),
				cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.github.com/graphql", strings.NewReader(query))
			resp := send(t, hc, req)
			if got := readAll(t, resp); resp.StatusCode != http.StatusOK || got != limited {
				t.Fatalf("status %d body %q, want GitHub's 200 with its errors, whole", resp.StatusCode, got)
			}
			if tot := gov.Summary(stats).Totals; tot.Throttled != 1 || tot.GaveUp != 1 {
				t.Errorf("totals %+v, want the query recorded as throttled and given up", tot)
			}
			if !ledger.Degraded() {
				t.Error("the ledger does not show the query lost to GitHub's rate limit")
			}
		})
	})
	t.Run("answered", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeAPI{}
			f.script(spent(`{"data":{"viewer":{"login":"octo"}}}`))
			gov := newGov(t, resilience.Config{})
			ctx, stats := resilience.WithStats(context.Background())
			scope := cloudghttp.GitHub("octo")
			hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), scope, cloudghttp.WithGovernor(gov))}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.github.com/graphql", strings.NewReader(query))
			resp := send(t, hc, req)
			if got := readAll(t, resp); got != `{"data":{"viewer":{"login":"octo"}}}` {
				t.Fatalf("body %q, want the query's data", got)
			}
			if n := len(f.recorded()); n != 1 {
				t.Fatalf("%d attempts, want 1: the query was answered", n)
			}
			if tot := gov.Summary(stats).Totals; tot.Throttled != 0 || tot.GaveUp != 0 || tot.Calls != 1 {
				t.Errorf("totals %+v, want one call, a success", tot)
			}
			if p := gov.Inspect(scope(req)).Leaf.Paused; p != 30*time.Second {
				t.Errorf("graphql paused %v, want 30s, until its reset", p)
			}
		})
	})
}

// A client that asks for gzip itself (Accept-Encoding: gzip) gets GitHub's
// answers as they came, compressed (net/http decompresses only what it
// asked for): GitHub's GraphQL 200 that its rate limit is exceeded is
// still a throttle, its body read decompressed, and the caller gets it
// as it came, compressed.
func TestGitHubGraphQLRateLimitedAnswerIsAThrottleCompressed(t *testing.T) {
	const limited = `{"errors":[{"type":"RATE_LIMITED","code":"graphql_rate_limit","message":"API rate limit exceeded for user ID 1."}]}`
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	io.WriteString(zw, limited)
	zw.Close()
	r := status(http.StatusOK, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0",
		"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(30*time.Second).Unix(), 10), "Content-Encoding", "gzip")
	r.body = z.String()
	for _, attempts := range []int{0, 1} {
		name := map[int]string{0: "retried after the reset", 1: "given up"}[attempts]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(r)
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				opts := []cloudghttp.Option{cloudghttp.WithGovernor(gov)}
				if attempts > 0 {
					opts = append(opts, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: attempts}))
				}
				hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), cloudghttp.GitHub("octo"), opts...)}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.github.com/graphql", strings.NewReader(`{"query":"query { viewer { login } }"}`))
				req.Header.Set("Accept-Encoding", "gzip")
				resp := send(t, hc, req)
				got := readAll(t, resp)
				tot := gov.Summary(stats).Totals
				switch {
				case attempts == 0 && (got != "ok" || len(f.recorded()) != 2):
					t.Fatalf("body of %d bytes (gzip %v) after %d attempts, want the query sent again after the reset and answered", len(got), strings.HasPrefix(got, "\x1f\x8b"), len(f.recorded()))
				case attempts == 1 && got != z.String():
					t.Fatalf("body %q, want GitHub's 200, compressed as it came", got)
				case tot.Throttled != 1 || tot.GaveUp != int64(attempts):
					t.Fatalf("totals %+v, want 1 throttle and %d given up", tot, attempts)
				}
			})
		})
	}
}

// A GitHub 403 that says only in its body that a secondary rate limit was
// exceeded is a throttle whose retry waits a minute for a client that
// asks for gzip itself too, which gets the body gzip-encoded: the body is
// read decompressed for GitHub's words, and the caller gets it as it came.
func TestGitHubSecondaryLimitWordsAreReadCompressed(t *testing.T) {
	const words = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits","status":"403"}`
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	io.WriteString(zw, words)
	zw.Close()
	r := status(http.StatusForbidden, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4990",
		"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10), "Content-Encoding", "gzip")
	r.body = z.String()
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(r)
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(gov))}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.github.com/repos/octo/app", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp := send(t, hc, req)
		readAll(t, resp)
		hits := f.recorded()
		if len(hits) != 2 || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d after %d requests, want 200 after 2: the secondary limit retried", resp.StatusCode, len(hits))
		}
		if gap := hits[1].at.Sub(hits[0].at); gap < time.Minute || gap > time.Minute+time.Second {
			t.Fatalf("retry after %v, want a minute", gap)
		}
		if tot := gov.Summary(stats).Totals; tot.Throttled != 1 || tot.Retries != 1 {
			t.Fatalf("totals %+v, want 1 throttle, 1 retry", tot)
		}
	})
}

// onceFailing is a response body that gives part, then fails once with
// err, then reports its end: a body whose failure is not repeated on the
// next read, as the io.Reader contract allows.
type onceFailing struct {
	part   *strings.Reader
	err    error
	failed bool
}

func (b *onceFailing) Read(p []byte) (int, error) {
	if b.part.Len() > 0 {
		return b.part.Read(p)
	}
	if !b.failed {
		b.failed = true
		return 0, b.err
	}
	return 0, io.EOF
}

func (b *onceFailing) Close() error { return nil }

// failingBody answers every request with a GraphQL 200 whose quota is
// spent (x-ratelimit-remaining: 0), as the last point's answer is, and
// whose body fails after its first bytes.
type failingBody struct{ err error }

func (f failingBody) RoundTrip(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Minute).Unix(), 10))
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: h, Request: req,
		Body: &onceFailing{part: strings.NewReader(`{"data":{"viewer":`), err: f.err}}, nil
}

// The body of GitHub's GraphQL answer that spent the last point, which
// the Transport reads ahead for RATE_LIMITED, gives the caller what it
// gives: when its read fails (a connection lost midway), the caller's
// read fails with that error after the bytes that came, never reads a
// truncated body to its end as if it were whole, whatever the base's body
// says on the read after.
func TestPeekedBodyKeepsItsReadError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lost := errors.New("connection lost midway")
		gov := newGov(t, resilience.Config{})
		hc := &http.Client{Transport: cloudghttp.NewTransport(failingBody{lost}, cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(gov))}
		req, _ := http.NewRequest(http.MethodPost, "https://api.github.com/graphql", strings.NewReader(`{"query":"query { viewer { login } }"}`))
		resp := send(t, hc, req)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if !errors.Is(err, lost) || string(b) != `{"data":{"viewer":` {
			t.Fatalf("the caller read %q and %v, want %q and the body's error", b, err, `{"data":{"viewer":`)
		}
	})
}

// GitHub answers a GraphQL query that hit a secondary rate limit with a
// 200 or a 403 ("Rate limits and query limits for the GraphQL API",
// docs.github.com), with retry-after when it says how long to wait. Such
// a 200 (no data, an error saying a rate limit was exceeded) with
// retry-after is a throttle whose retry waits that long, as the 403 is:
// the query, which GitHub did not run, is sent again (a POST too), and
// one given up is recorded so. An answer with data and retry-after stays
// a success.
func TestGitHubGraphQLSecondaryLimitAnswerIsAThrottle(t *testing.T) {
	const limited = `{"errors":[{"type":"RATE_LIMITED","message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}]}`
	const query = `{"query":"mutation { addStar(input: {starrableId: \"R_1\"}) { clientMutationId } }"}`
	secondary := func(body string) reply {
		r := status(http.StatusOK, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4200",
			"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10), "Retry-After", "20")
		r.body = body
		return r
	}
	for _, c := range []struct {
		name     string
		body     string
		attempts int
	}{
		{"retried after retry-after", limited, 0},
		{"given up", limited, 1},
		{"answered", `{"data":{"addStar":{"clientMutationId":null}}}`, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(secondary(c.body))
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				opts := []cloudghttp.Option{cloudghttp.WithGovernor(gov)}
				if c.attempts > 0 {
					opts = append(opts, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: c.attempts}))
				}
				hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), cloudghttp.GitHub("octo"), opts...)}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.github.com/graphql", strings.NewReader(query))
				resp := send(t, hc, req)
				got := readAll(t, resp)
				hits := f.recorded()
				tot := gov.Summary(stats).Totals
				switch c.name {
				case "retried after retry-after":
					if got != "ok" || len(hits) != 2 || hits[1].body != query || hits[1].at.Sub(hits[0].at) < 20*time.Second {
						t.Fatalf("body %q after %d attempts, want the query sent again, whole, 20 s later, and answered", got, len(hits))
					}
				case "given up":
					if got != limited || tot.Throttled != 1 || tot.GaveUp != 1 {
						t.Fatalf("body %q, totals %+v, want GitHub's 200 whole, recorded as throttled and given up", got, tot)
					}
				case "answered":
					if got != c.body || len(hits) != 1 || tot.Throttled != 0 {
						t.Fatalf("body %q after %d attempts, totals %+v, want the data at once, a success", got, len(hits), tot)
					}
				}
			})
		})
	}
}

// GitHub answers a GraphQL query that hit a secondary rate limit with a
// 200 or a 403, with retry-after only when it says how long to wait:
// without it, and with x-ratelimit-remaining above 0, the client is to
// "wait for at least one minute before retrying" ("Rate limits and query
// limits for the GraphQL API", docs.github.com), the body alone saying
// that the query was not run. Such a 200 is a throttle whose retry waits
// a minute, as a 403 that says so only in its body is: the query is sent
// again (a POST too), one given up is recorded so, and the caller gets
// the answer whole, as it came (compressed when it asked for gzip
// itself).
func TestGitHubGraphQLSecondaryLimitWithoutRetryAfterIsAThrottle(t *testing.T) {
	const limited = `{"errors":[{"type":"RATE_LIMITED","message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}]}`
	const query = `{"query":"mutation { addStar(input: {starrableId: \"R_1\"}) { clientMutationId } }"}`
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	io.WriteString(zw, limited)
	zw.Close()
	for _, c := range []struct {
		name     string
		body     string
		gzip     bool
		attempts int
	}{
		{"retried after a minute", limited, false, 0},
		{"given up", limited, false, 1},
		{"retried after a minute, gzip", z.String(), true, 0},
		{"given up, gzip", z.String(), true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := status(http.StatusOK, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4200",
					"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10), "X-RateLimit-Resource", "graphql")
				if c.gzip {
					r.header.Set("Content-Encoding", "gzip")
				}
				r.body = c.body
				f := &fakeAPI{}
				f.script(r)
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "graphql")
				opts := []cloudghttp.Option{cloudghttp.WithGovernor(gov)}
				if c.attempts > 0 {
					opts = append(opts, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: c.attempts}))
				}
				hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), cloudghttp.GitHub("octo"), opts...)}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.github.com/graphql", strings.NewReader(query))
				if c.gzip {
					req.Header.Set("Accept-Encoding", "gzip")
				}
				resp := send(t, hc, req)
				got := readAll(t, resp)
				hits := f.recorded()
				tot := gov.Summary(stats).Totals
				if c.attempts == 0 {
					if got != "ok" || len(hits) != 2 {
						t.Fatalf("body %q after %d attempts, want the query sent again a minute later and answered", got, len(hits))
					}
					if gap := hits[1].at.Sub(hits[0].at); hits[1].body != query || gap < time.Minute || gap > time.Minute+time.Second {
						t.Fatalf("the query sent again %v later (body %q), want a minute later, whole", gap, hits[1].body)
					}
					return
				}
				if got != c.body {
					t.Errorf("body %q, want GitHub's 200 whole, as it came", got)
				}
				if tot.Throttled != 1 || tot.GaveUp != 1 {
					t.Errorf("totals %+v, want the query recorded as throttled and given up", tot)
				}
				if !ledger.Degraded() {
					t.Error("the ledger does not show the query lost to GitHub's secondary limit")
				}
			})
		})
	}
}

// stallingGraphQL answers every request with a GraphQL 200 whose body
// gives first, then nothing until it is closed (a large answer still on
// its way), counting the bytes the body gave.
type stallingGraphQL struct {
	first string
	read  *atomic.Int64
}

func (s stallingGraphQL) RoundTrip(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", "4200")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, s.first)
		<-req.Context().Done() // the rest never comes before the caller closes the body
	}()
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: h, Request: req,
		Body: &countingBody{ReadCloser: pr, n: s.read}}, nil
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// What reading a GraphQL 200 for a rate limit costs a query that was
// answered: its body is read only until its first member says so (data,
// not null), so that the Transport returns the answer, and gives its slot
// back, as soon as those first bytes are in, not once 4 KiB or the body's
// end came, and the caller reads what was read ahead, then the rest.
func TestGitHubGraphQLAnswerIsReadOnlyToItsData(t *testing.T) {
	const first = `{"data":{"viewer":{"login":"octo","repositories":{"nodes":[`
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		read := new(atomic.Int64)
		gov := newGov(t, resilience.Config{})
		scope := cloudghttp.GitHub("octo")
		hc := &http.Client{Transport: cloudghttp.NewTransport(stallingGraphQL{first, read}, scope, cloudghttp.WithGovernor(gov))}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.github.com/graphql", strings.NewReader(`{"query":"query { viewer { login } }"}`))
		start := time.Now()
		resp := send(t, hc, req)
		defer resp.Body.Close()
		if d := time.Since(start); d != 0 {
			t.Fatalf("the answer came back %v after its headers and first bytes, want at once", d)
		}
		if n := read.Load(); n > int64(len(first)) {
			t.Fatalf("%d bytes read ahead, want at most the %d that came", n, len(first))
		}
		if s := gov.Inspect(scope(req)); s.InFlight != 0 {
			t.Errorf("%d in flight once the answer is back, want its slot given back", s.InFlight)
		}
		b := make([]byte, len(first))
		if _, err := io.ReadFull(resp.Body, b); err != nil || string(b) != first {
			t.Errorf("the caller read %q (%v), want %q", b, err, first)
		}
	})
}

// The same over 127.0.0.1, net/http's own client and transport (which
// asks for gzip itself and decompresses what it asked for): GitHub's
// GraphQL 200 that a secondary limit was hit, without retry-after, given
// up after its one attempt, is recorded as throttled and given up, and
// the caller reads it whole.
func TestGitHubGraphQLSecondaryLimitWithoutRetryAfterOverLoopback(t *testing.T) {
	const limited = `{"errors":[{"type":"RATE_LIMITED","message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}]}`
	f := &fakeAPI{}
	r := status(http.StatusOK, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4200",
		"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	r.body = limited
	f.script(r)
	srv := loopback(t, f)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	gov := newGov(t, resilience.Config{})
	ctx, stats := resilience.WithStats(context.Background())
	hc := &http.Client{Transport: cloudghttp.NewTransport(tr, cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(gov),
		cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/graphql", strings.NewReader(`{"query":"query { viewer { login } }"}`))
	resp := send(t, hc, req)
	if got := readAll(t, resp); got != limited {
		t.Errorf("body %q, want GitHub's 200 whole", got)
	}
	if tot := gov.Summary(stats).Totals; tot.Throttled != 1 || tot.GaveUp != 1 {
		t.Errorf("totals %+v, want the query recorded as throttled and given up", tot)
	}
}

// GitHub counts the audit log's quota (1,750 queries an hour) "on each
// combination of an individual user, IP address and entity path
// (/orgs/<org_name>/audit_log or /enterprises/<enterprise_name>/audit_log)
// independently" (GitHub's changelog of 2023-08-01, "New rate limit for
// the audit log API endpoints is active"): a token that reads the audit
// logs of several organisations has a quota for each. An organisation
// whose quota is spent holds back its own audit log only, never another
// organisation's or an enterprise's, and each runs at the audit_log
// service key's rate, not all of them together.
func TestGitHubAuditLogIsPacedPerOrganisation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		start := time.Now()
		f.script(status(http.StatusForbidden, "X-RateLimit-Limit", "1750", "X-RateLimit-Remaining", "0",
			"X-RateLimit-Reset", strconv.FormatInt(start.Add(50*time.Second).Unix(), 10), "X-RateLimit-Resource", "audit_log"))
		gov := newGov(t, resilience.Config{})
		scope := cloudghttp.GitHub("octo")
		hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), scope, cloudghttp.WithGovernor(gov),
			cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))}
		readAll(t, do(t, hc, http.MethodGet, "https://api.github.com/orgs/acme/audit-log", nil))
		for _, other := range []string{"/orgs/globex/audit-log", "/enterprises/acme/audit-log"} {
			sent := time.Now()
			readAll(t, do(t, hc, http.MethodGet, "https://api.github.com"+other, nil))
			if waited := time.Since(sent); waited != 0 {
				t.Errorf("GET %s waited %v behind /orgs/acme/audit-log's spent quota, want none", other, waited)
			}
		}
		for path, want := range map[string]string{
			"https://api.github.com/orgs/acme/audit-log":                   "github/octo/orgs/acme/audit_log",
			"https://api.github.com/orgs/ACME/audit-log?phrase=action:git": "github/octo/orgs/acme/audit_log",
			"https://ghe.example.com/api/v3/orgs/acme/audit-log":           "github-enterprise/ghe.example.com/octo/orgs/acme/audit_log",
			"https://api.github.com/enterprises/acme/audit-log":            "github/octo/enterprises/acme/audit_log",
		} {
			req, _ := http.NewRequest(http.MethodGet, path, nil)
			if got := scope(req).String(); got != want {
				t.Errorf("GET %s: scope %s, want %s", path, got, want)
			}
		}
		cfg, err := resilience.ParseConfig([]byte("ratelimit: {providers: {github: {services: {audit_log: {max_rps: 0.48}}}}}\n"))
		if err != nil {
			t.Fatal(err)
		}
		tuned := newGov(t, cfg)
		a, _ := http.NewRequest(http.MethodGet, "https://api.github.com/orgs/acme/audit-log", nil)
		b, _ := http.NewRequest(http.MethodGet, "https://api.github.com/orgs/globex/audit-log", nil)
		if sa, sb := scope(a), scope(b); sa == sb {
			t.Errorf("two organisations' audit logs share the scope %s, whose leaf paces them together, want one each", sa)
		}
		for _, r := range []*http.Request{a, b} {
			if rate := tuned.Inspect(scope(r)).Leaf.Rate; rate != 0.48 {
				t.Errorf("%s runs at %v rps, want the audit_log service key's 0.48", scope(r), rate)
			}
		}
	})
}

// GitHub's GraphQL answer to a query it could not parse or validate is a
// 200 without data whose errors point at the query (their locations, a
// path) and quote it: a query that searches for "rate limit" with a colon
// missing gets `Parse error on "rate limit" (STRING) at [1, 17]`, one that
// gives the search's type as that string an invalid value ("rate
// limit"). Such an
// answer is the query's own fault, a success's status that no retry
// mends: it is answered at once, sent once, not recorded as throttled,
// and pauses no other query of the account. An error of GitHub's rate
// limits, which points at no place in the query (type RATE_LIMITED, or
// RATE_LIMIT, as GitHub has also been seen to send it), stays a
// throttle.
func TestGitHubGraphQLQueryErrorQuotingRateLimitIsNoThrottle(t *testing.T) {
	const parse = `{"errors":[{"message":"Parse error on \"rate limit\" (STRING) at [1, 17]","locations":[{"line":1,"column":17}]}]}`
	const invalid = `{"errors":[{"path":["query","search","type"],"extensions":{"code":"argumentLiteralsIncompatible","typeName":"Field","argumentName":"type"},"locations":[{"line":1,"column":3}],"message":"Argument 'type' on Field 'search' has an invalid value (\"rate limit\"). Expected type 'SearchType!'."}]}`
	const limited = `{"errors":[{"type":"RATE_LIMIT","code":"graphql_rate_limit","message":"API rate limit already exceeded for user ID 1."}]}`
	for _, c := range []struct {
		name, body string
		throttle   bool
	}{
		{"parse error", parse, false},
		{"invalid argument", invalid, false},
		{"RATE_LIMIT", limited, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := status(http.StatusOK, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0",
					"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
				if !c.throttle {
					r.header.Set("X-RateLimit-Remaining", "4200")
				}
				r.body = c.body
				f := &fakeAPI{}
				f.script(r)
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				scope := cloudghttp.GitHub("octo")
				hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), scope, cloudghttp.WithGovernor(gov),
					cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 3}))}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.github.com/graphql",
					strings.NewReader(`{"query":"{ search(query \"rate limit\", type: ISSUE, first: 10) { issueCount } }"}`))
				start := time.Now()
				resp := send(t, hc, req)
				got := readAll(t, resp)
				tot := gov.Summary(stats).Totals
				if c.throttle {
					if tot.Throttled == 0 {
						t.Errorf("totals %+v, want GitHub's rate limit recorded as a throttle", tot)
					}
					return
				}
				if got != c.body || len(f.recorded()) != 1 || time.Since(start) != 0 {
					t.Errorf("body %q after %d attempts and %v, want the query's errors at once, after one", got, len(f.recorded()), time.Since(start))
				}
				if tot.Throttled != 0 {
					t.Errorf("totals %+v, want no throttle: the query's own error", tot)
				}
				if p := gov.Inspect(scope(req)).Leaf.Paused; p != 0 {
					t.Errorf("graphql paused %v after the query's own error, want not paused", p)
				}
			})
		})
	}
}

// GitHub refuses a GraphQL query that costs more points than are left
// with its primary limit's answer, a 200 whose error is of type
// RATE_LIMITED ("API rate limit already exceeded"), while
// x-ratelimit-remaining still shows the points left, not 0, as octokit's
// throttling plugin found (octokit/plugin-throttling.js #632, #636, which
// waits until x-ratelimit-reset for any RATE_LIMITED error, and a minute
// only for one whose message says "secondary rate"). No point comes back
// before the reset, so that the query is sent again after it, not a
// minute later, when GitHub would refuse it again.
func TestGitHubGraphQLPrimaryLimitWithPointsLeftWaitsForTheReset(t *testing.T) {
	const limited = `{"errors":[{"type":"RATE_LIMITED","code":"graphql_rate_limit","message":"API rate limit already exceeded for user ID 1."}]}`
	synctest.Test(t, func(t *testing.T) {
		reset := time.Now().Add(4 * time.Minute)
		r := status(http.StatusOK, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "12",
			"X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10), "X-RateLimit-Resource", "graphql")
		r.body = limited
		f := &fakeAPI{}
		f.script(r)
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(gov))}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.github.com/graphql",
			strings.NewReader(`{"query":"query { search(query: \"is:pr\", type: ISSUE, first: 100) { issueCount } }"}`))
		resp := send(t, hc, req)
		if got := readAll(t, resp); got != "ok" {
			t.Fatalf("body %q, want the query sent again and answered", got)
		}
		hits := f.recorded()
		if len(hits) != 2 {
			t.Fatalf("%d attempts, want 2", len(hits))
		}
		if hits[1].at.Before(reset) {
			t.Errorf("the query sent again %v later, want after the reset, %v later", hits[1].at.Sub(hits[0].at), reset.Sub(hits[0].at))
		}
		if tot := gov.Summary(stats).Totals; tot.Throttled != 1 || tot.GaveUp != 0 {
			t.Errorf("totals %+v, want 1 throttle, no give-up", tot)
		}
	})
}

// Reading a GraphQL 200 for a rate limit that its headers do not show
// (no retry-after, points left, the quota not low) holds no slot: the
// account's slot goes back with the answer's headers, as it did before
// every GraphQL 200 was read, while the Transport waits, a second at
// most, for the body's first bytes (an answer whose headers came first)
// or for an answer that begins with its errors (a partial answer whose
// data is still coming), so that a slow body holds no other call of the
// account back.
func TestGitHubGraphQLSlowBodyHoldsNoSlot(t *testing.T) {
	for _, c := range []struct{ name, first string }{
		{"no bytes yet", ""},
		{"errors first", `{"errors":[{"type":"NOT_FOUND","path":["repository"],"locations":[{"line":1,"column":3}],"message":"Could not resolve to a Repository with the name 'octo/gone'."}],"data":{"viewer":`},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				gov := newGov(t, resilience.Config{})
				scope := cloudghttp.GitHub("octo")
				hc := &http.Client{Transport: cloudghttp.NewTransport(stallingGraphQL{c.first, new(atomic.Int64)}, scope, cloudghttp.WithGovernor(gov))}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.github.com/graphql", strings.NewReader(`{"query":"query { viewer { login } }"}`))
				done := make(chan struct{})
				go func() {
					defer close(done)
					resp, err := hc.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
				}()
				time.Sleep(500 * time.Millisecond)
				if s := gov.Inspect(scope(req)); s.InFlight != 0 {
					t.Errorf("%d in flight while the answer's body is awaited, want its slot given back with its headers", s.InFlight)
				}
				<-done
			})
		})
	}
}

// GitHub's logins are case-insensitive: a token's owner named Octo in one
// client and octo in another is one account with one quota, as the
// audit log's organisation in a scope's Region is one whatever its case.
// GitHub("Octo") and GitHub("octo") make the same scopes, the account in
// lower case, so that a throttle answered to one client's call holds back
// the other's calls of the token until GitHub's reset, and the two share
// the account's bucket and bulkhead.
func TestGitHubAccountIsCaseInsensitive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		upper, lower := cloudghttp.GitHub("Octo"), cloudghttp.GitHub("octo")
		for _, p := range []string{"/user", "/search/code", "/graphql", "/orgs/ACME/audit-log"} {
			req, _ := http.NewRequest(http.MethodGet, "https://api.github.com"+p, nil)
			if a, b := upper(req), lower(req); a != b {
				t.Errorf("GET %s: GitHub(\"Octo\") gives the scope %s, GitHub(\"octo\") %s; want one scope", p, a, b)
			}
		}
		f := &fakeAPI{}
		start := time.Now()
		f.script(status(http.StatusForbidden, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0",
			"X-RateLimit-Reset", strconv.FormatInt(start.Add(50*time.Second).Unix(), 10)))
		gov := newGov(t, resilience.Config{})
		one := resilience.RetryPolicy{MaxAttempts: 1}
		a := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), upper, cloudghttp.WithGovernor(gov), cloudghttp.WithPolicy(one))}
		b := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), lower, cloudghttp.WithGovernor(gov), cloudghttp.WithPolicy(one))}
		readAll(t, do(t, a, http.MethodGet, "https://api.github.com/user", nil))
		sent := time.Now()
		readAll(t, do(t, b, http.MethodGet, "https://api.github.com/user", nil))
		if waited := time.Since(sent); waited < 49*time.Second {
			t.Errorf("GitHub(\"octo\")'s call waited %v after GitHub(\"Octo\")'s spent the token's quota until a reset 50s away; want it held until the reset", waited)
		}
	})
}

// GitHub names in x-ratelimit-resource the quota an answer's
// x-ratelimit-* headers count (docs.github.com's "Rate limits for the
// REST API"): an answer to a rest call whose headers are another quota's
// than core (search's, or one GitHub's documentation gives no paths for
// and whose calls are in rest: copilot_usage_records, source_import)
// paces none of the account's core calls. That quota
// spent, or nearly, neither pauses nor slows the scope: a core REST call
// made next goes at once, at the scope's full rate. A 403 of that spent
// quota comes back to the caller after its one attempt, GitHub's headers
// telling it when the quota resets, and is not retried in a scope whose
// quota it does not know. A search call whose headers are search's own
// paces only the search scope, as before.
func TestGitHubAnotherQuotasHeadersPaceOnlyThatQuota(t *testing.T) {
	for _, c := range []struct {
		code           int
		resource, path string
		remaining      string
	}{
		{http.StatusOK, "search", "/search/issues", "0"},
		{http.StatusForbidden, "search", "/search/issues", "0"},
		{http.StatusOK, "search", "/repos/octo/hello", "0"},
		{http.StatusForbidden, "search", "/repos/octo/hello", "0"},
		{http.StatusOK, "copilot_usage_records", "/repos/octo/hello/pulls", "0"},
		{http.StatusOK, "copilot_usage_records", "/repos/octo/hello/pulls", "1"},
		{http.StatusForbidden, "copilot_usage_records", "/repos/octo/hello/pulls", "0"},
		{http.StatusTooManyRequests, "source_import", "/repos/octo/hello/import", "0"},
	} {
		t.Run(strconv.Itoa(c.code)+"/"+c.resource+c.path+"/"+c.remaining, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(c.code, "X-RateLimit-Limit", "30", "X-RateLimit-Remaining", c.remaining,
					"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(50*time.Second).Unix(), 10), "X-RateLimit-Resource", c.resource))
				gov := newGov(t, resilience.Config{})
				scope := cloudghttp.GitHub("octo")
				hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), scope, cloudghttp.WithGovernor(gov))}
				core, _ := http.NewRequest(http.MethodGet, "https://api.github.com/repos/octo/hello/issues", nil)
				rate := gov.Inspect(scope(core)).Leaf.Rate
				other := do(t, hc, http.MethodGet, "https://api.github.com"+c.path, nil)
				readAll(t, other)
				if own := c.path == "/search/issues"; !own && (other.StatusCode != c.code || len(f.recorded()) != 1) {
					t.Errorf("%s: status %d after %d attempts, want the %d of %s's quota back after one", c.path, other.StatusCode, len(f.recorded()), c.code, c.resource)
				}
				if s := gov.Inspect(scope(core)).Leaf; s.Paused != 0 || s.Rate != rate {
					t.Errorf("%s's quota (%s left) answered to %s: rest paused %v at %v rps, want no pause at %v rps", c.resource, c.remaining, c.path, s.Paused, s.Rate, rate)
				}
				sent := time.Now()
				readAll(t, do(t, hc, http.MethodGet, core.URL.String(), nil))
				if waited := time.Since(sent); waited != 0 {
					t.Errorf("a core REST call waited %v behind %s's quota (%s left) answered to %s, want none", waited, c.resource, c.remaining, c.path)
				}
			})
		})
	}
}

// Another quota's refusal answered to a rest call (a 403 or 429 whose
// x-ratelimit-resource names copilot_usage_records or source_import, with
// nothing left) reaches the caller as GitHub's answer, with no error, but
// the call is no success: the governor counts it lost to GitHub's quota,
// in the run's Stats and the task's Ledger of the scope it was made in,
// so that a collector that reads the answer as "nothing there" reports
// its task degraded rather than complete. Since the quota is not the
// scope's, the scope is neither slowed nor paused, nor throttled, nor
// given up, and its breaker counts no failure.
func TestGitHubAnotherQuotasRefusalIsCountedLost(t *testing.T) {
	for _, c := range []struct {
		code           int
		resource, path string
	}{
		{http.StatusForbidden, "copilot_usage_records", "/repos/octo/hello/pulls"},
		{http.StatusTooManyRequests, "source_import", "/repos/octo/hello/import"},
	} {
		t.Run(strconv.Itoa(c.code)+"/"+c.resource, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(c.code, "X-RateLimit-Limit", "30", "X-RateLimit-Remaining", "0",
					"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(50*time.Second).Unix(), 10), "X-RateLimit-Resource", c.resource))
				gov := newGov(t, resilience.Config{})
				scope := cloudghttp.GitHub("octo")
				hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), scope, cloudghttp.WithGovernor(gov))}
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "pulls")
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.github.com"+c.path, nil)
				rate := gov.Inspect(scope(req)).Leaf.Rate
				resp := send(t, hc, req)
				readAll(t, resp)
				if resp.StatusCode != c.code {
					t.Fatalf("status %d, want GitHub's %d", resp.StatusCode, c.code)
				}
				got := gov.Summary(stats).Scopes[scope(req)]
				if got.Calls != 1 || got.Lost() != 1 || got.Denied != 1 || got.Throttled != 0 || got.GaveUp != 0 || got.BreakerTrips != 0 {
					t.Errorf("%s's refusal: stats of %v %+v, want its one call lost as denied, not throttled or given up", c.resource, scope(req), got)
				}
				if n := ledger.Count(resilience.LossDenied); n != 1 || !ledger.Degraded() {
					t.Errorf("%s's refusal: the ledger counts %d denied (%q), want the call lost as denied", c.resource, n, ledger.Describe())
				}
				if s := gov.Inspect(scope(req)); s.Leaf.Paused != 0 || s.Leaf.Rate != rate || s.Breaker.Failures != 0 {
					t.Errorf("%s's refusal: rest paused %v at %v rps with %d breaker failures, want no pause at %v rps and none", c.resource, s.Leaf.Paused, s.Leaf.Rate, s.Breaker.Failures, rate)
				}
			})
		})
	}
}

// Another quota's refusal that comes as the request's context ends (its
// deadline passes as GitHub answers) is still counted lost: the caller
// has GitHub's 403 with no error, and a ledger that did not list the call
// would report the task complete.
func TestGitHubAnotherQuotasRefusalAsTheContextEndsIsCountedLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(http.StatusForbidden, "X-RateLimit-Limit", "30", "X-RateLimit-Remaining", "0",
			"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(50*time.Second).Unix(), 10), "X-RateLimit-Resource", "copilot_usage_records"))
		gov := newGov(t, resilience.Config{})
		scope := cloudghttp.GitHub("octo")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		mem := newMem(f)
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := mem.RoundTrip(r)
			cancel() // the context ends as the answer comes
			return resp, err
		})
		hc := &http.Client{Transport: cloudghttp.NewTransport(base, scope, cloudghttp.WithGovernor(gov))}
		ctx, stats := resilience.WithStats(ctx)
		ctx, ledger := resilience.WithLedger(ctx, "pulls")
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.github.com/repos/octo/hello/pulls", nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("the request: %v, want GitHub's answer", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d, want GitHub's 403", resp.StatusCode)
		}
		if got := gov.Summary(stats).Scopes[scope(req)]; got.Denied != 1 || got.Lost() != 1 {
			t.Errorf("stats of %v %+v, want its one call lost as denied", scope(req), got)
		}
		if n := ledger.Count(resilience.LossDenied); n != 1 {
			t.Errorf("the ledger counts %d denied (%q), want the call lost as denied", n, ledger.Describe())
		}
	})
}

// A GraphQL 200 that carries data and an error of GitHub's rate limit (a
// partial answer: GitHub ran part of the request before the limit held
// the rest back) is no success: the caller's result is missing what the
// limit held back. It is a throttle, which slows and pauses the scope as
// a data-less one does (until the reset for the primary limit), and,
// since GitHub acted on part of the request (a mutation's fields may have
// run), it is not sent again unless the request may be (an
// Idempotency-Key, or WithRetryNonIdempotent): the caller gets the
// partial answer, whole, and the call is recorded as throttled and given
// up, in the run's stats and its ledger. That holds whether the errors
// come first (read as any answer that does not begin with its data) or
// after the data, as GitHub writes them, of an answer whose headers say
// the quota is spent.
func TestGitHubGraphQLPartialAnswerWithARateLimitIsNoSuccess(t *testing.T) {
	const limited = `{"type":"RATE_LIMITED","message":"API rate limit already exceeded for user ID 1."}`
	const data = `"data":{"viewer":{"login":"octo","repositories":null}}`
	const query = `{"query":"query { viewer { login repositories(first: 100) { nodes { name } } } }"}`
	for _, c := range []struct {
		name, body, remaining string
		key                   bool // an Idempotency-Key: sent again after the reset
	}{
		{"errors first", `{"errors":[` + limited + `],` + data + `}`, "4200", false},
		{"data first, quota spent", `{` + data + `,"errors":[` + limited + `]}`, "0", false},
		{"errors first, idempotency key", `{"errors":[` + limited + `],` + data + `}`, "4200", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				r := status(http.StatusOK, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", c.remaining,
					"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(30*time.Second).Unix(), 10), "X-RateLimit-Resource", "graphql")
				r.body = c.body
				f.script(r)
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "graphql")
				scope := cloudghttp.GitHub("octo")
				hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), scope, cloudghttp.WithGovernor(gov))}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.github.com/graphql", strings.NewReader(query))
				if c.key {
					req.Header.Set("Idempotency-Key", "k1")
				}
				start := time.Now()
				resp := send(t, hc, req)
				got := readAll(t, resp)
				hits := f.recorded()
				tot := gov.Summary(stats).Totals
				if c.key {
					if got != "ok" || len(hits) != 2 || hits[1].at.Sub(hits[0].at) < 30*time.Second {
						t.Fatalf("body %q after %d attempts and %v, want the request sent again after the reset, 30s later, and answered", got, len(hits), time.Since(start))
					}
					return
				}
				if got != c.body || len(hits) != 1 {
					t.Errorf("body %q after %d attempts, want the partial answer whole after one: GitHub ran part of the request", got, len(hits))
				}
				if tot.Throttled != 1 || tot.GaveUp != 1 {
					t.Errorf("totals %+v, want the partial answer recorded as throttled and given up", tot)
				}
				if ledger.Count(resilience.LossGaveUp) != 1 {
					t.Errorf("the ledger (%s) does not show the call lost to GitHub's rate limit", ledger.Describe())
				}
				if p := gov.Inspect(scope(req)).Leaf.Paused; p != 30*time.Second {
					t.Errorf("graphql paused %v, want 30s, until the reset", p)
				}
			})
		})
	}
}

// Each scope but rest holds the calls of one operation (a search, a code
// search, GraphQL, each REST operation GitHub limits apart), which all
// count against one quota, whatever the server names it: GitHub's own
// name (docs.github.com's "REST API endpoints for rate limits": search,
// code_search, graphql, integration_manifest, dependency_snapshots,
// dependency_sbom, audit_log), search for a code search on an Enterprise
// Server, which limits code search as its other searches ("REST API
// endpoints for search": 30 a minute for every search, code search apart
// only on github.com and GHEC), core on a server that counts an operation
// in core. rest's quota is core, and code_scanning_upload is core's too
// (GitHub's changelog of 2026-05-05: it "shares the same limit pool as
// core"). A 403 of that quota spent is a throttle of the call's scope:
// the scope paused until the reset, and the call sent again then and
// answered, not handed back as a fatal answer.
func TestGitHubEachScopeIsPacedByItsOwnQuota(t *testing.T) {
	for _, c := range []struct {
		resource, method, url string
	}{
		{"search", http.MethodGet, "https://api.github.com/search/issues?q=bug"},
		{"code_search", http.MethodGet, "https://api.github.com/search/code?q=secret"},
		{"search", http.MethodGet, "https://ghe.example.com/api/v3/search/code?q=secret"},
		{"graphql", http.MethodPost, "https://api.github.com/graphql"},
		{"integration_manifest", http.MethodPost, "https://api.github.com/app-manifests/0123abcd/conversions"},
		{"dependency_snapshots", http.MethodPost, "https://api.github.com/repos/octo/hello/dependency-graph/snapshots"},
		{"dependency_sbom", http.MethodGet, "https://api.github.com/repos/octo/hello/dependency-graph/sbom"},
		{"audit_log", http.MethodGet, "https://api.github.com/orgs/octo/audit-log"},
		{"core", http.MethodGet, "https://ghe.example.com/api/v3/enterprises/octo-corp/audit-log"},
		{"core", http.MethodGet, "https://api.github.com/repos/octo/hello/issues"},
		{"code_scanning_upload", http.MethodPost, "https://api.github.com/repos/octo/hello/code-scanning/sarifs"},
	} {
		t.Run(c.resource+"/"+c.url, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(http.StatusForbidden, "X-RateLimit-Limit", "30", "X-RateLimit-Remaining", "0",
					"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(50*time.Second).Unix(), 10), "X-RateLimit-Resource", c.resource))
				gov := newGov(t, resilience.Config{})
				hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(gov))}
				var b io.Reader
				if c.method == http.MethodPost {
					b = strings.NewReader(`{"query":"query { viewer { login } }"}`)
				}
				resp := do(t, hc, c.method, c.url, b)
				got := readAll(t, resp)
				hits := f.recorded()
				if resp.StatusCode != http.StatusOK || got != "ok" || len(hits) != 2 || hits[1].at.Sub(hits[0].at) < 50*time.Second {
					t.Errorf("%s %s, its %s quota spent: status %d after %d attempts, want it sent again after the reset, 50s later, and answered", c.method, c.url, c.resource, resp.StatusCode, len(hits))
				}
			})
		})
	}
}

// A SCIM scan, an audit log stream's configuration, a self-hosted
// runner's registration or a code scanning alert's autofix counts against
// a quota of its own (scim, audit_log_streaming,
// actions_runner_registration, code_scanning_autofix in GitHub's GET
// /rate_limit), whose paths are known: a 403 or 429 of that quota spent
// is a throttle of the operation's own scope, which waits for the reset
// and sends the call again then, answered, as a search's does (no
// failure handed to the caller for a quota that resets within minutes);
// that quota low paces its scope; neither holds back the account's other
// REST calls, whose core quota is whole.
func TestGitHubAKnownQuotasCallWaitsForItsReset(t *testing.T) {
	for _, c := range []struct {
		code                   int
		resource, method, path string
		remaining              string
	}{
		{http.StatusTooManyRequests, "scim", http.MethodGet, "/scim/v2/organizations/octo/Users", "0"},
		{http.StatusForbidden, "scim", http.MethodGet, "/scim/v2/enterprises/octo-corp/Users", "0"},
		{http.StatusForbidden, "audit_log_streaming", http.MethodGet, "/enterprises/octo-corp/audit-log/streams", "0"},
		{http.StatusForbidden, "actions_runner_registration", http.MethodPost, "/actions/runner-registration", "0"},
		{http.StatusTooManyRequests, "code_scanning_autofix", http.MethodPost, "/repos/octo/hello/code-scanning/alerts/7/autofix", "0"},
		{http.StatusOK, "audit_log_streaming", http.MethodGet, "/enterprises/octo-corp/audit-log/streams", "1"},
	} {
		t.Run(strconv.Itoa(c.code)+"/"+c.resource+c.path, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(c.code, "X-RateLimit-Limit", "15", "X-RateLimit-Remaining", c.remaining,
					"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(50*time.Second).Unix(), 10), "X-RateLimit-Resource", c.resource))
				gov := newGov(t, resilience.Config{})
				ctx, ledger := resilience.WithLedger(context.Background(), "scan")
				scope := cloudghttp.GitHub("octo")
				hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), scope, cloudghttp.WithGovernor(gov))}
				req, _ := http.NewRequestWithContext(ctx, c.method, "https://api.github.com"+c.path, nil)
				core, _ := http.NewRequest(http.MethodGet, "https://api.github.com/repos/octo/hello/issues", nil)
				rate := gov.Inspect(scope(core)).Leaf.Rate
				resp := send(t, hc, req)
				got := readAll(t, resp)
				hits := f.recorded()
				if c.code != http.StatusOK {
					if resp.StatusCode != http.StatusOK || got != "ok" || len(hits) != 2 || hits[1].at.Sub(hits[0].at) < 50*time.Second {
						t.Errorf("%s %s, its %s quota spent: status %d after %d attempts, want it sent again after the reset, 50s later, and answered", c.method, c.path, c.resource, resp.StatusCode, len(hits))
					}
					if n := ledger.Count(resilience.LossGaveUp) + ledger.Count(resilience.LossErrored); n != 0 {
						t.Errorf("the ledger has %d calls lost (%s), want none", n, ledger.Describe())
					}
				} else if p := gov.Inspect(scope(req)).Leaf.Paused; p != 25*time.Second {
					t.Errorf("%s %s, 1 of its %s quota left: its scope paused %v, want 25s (the reset shared by what is left)", c.method, c.path, c.resource, p)
				}
				if s := gov.Inspect(scope(core)).Leaf; s.Paused != 0 || s.Rate != rate {
					t.Errorf("%s's quota (%s left) answered to %s: rest paused %v at %v rps, want no pause at %v rps", c.resource, c.remaining, c.path, s.Paused, s.Rate, rate)
				}
			})
		})
	}
}

// A GraphQL 200 whose headers say the quota is spent is read past its
// data for a partial answer's errors only when it can be read to its end
// (maxPeek, 4 KiB, and no more): one whose Content-Length is longer is a
// success, as its errors would not be read, and it is given back with
// its first bytes, at once, not when 4 KiB of it came or a second passed
// (a query that spent the last point of the quota and whose long answer
// streams slowly). It is recorded as a success, and the scope paused
// until the reset. A short answer whose body stalls is still waited for,
// for a second at most.
func TestGitHubGraphQLSpentSuccessTooLongToReadIsNotHeldBack(t *testing.T) {
	for _, c := range []struct {
		name   string
		length int64 // the Content-Length; -1: unknown
		want   time.Duration
	}{
		{"longer than 4 KiB", 10 << 10, 0},
		{"length unknown", -1, time.Second},
		{"4 KiB", 4 << 10, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				scope := cloudghttp.GitHub("octo")
				const head, tail = `{"data":{"viewer":{"login":"octo","repositories":{"nodes":[`, `]}}}}`
				size := c.length // the body's
				if size < 0 {
					size = 10 << 10
				}
				base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
					h := http.Header{}
					h.Set("X-RateLimit-Limit", "5000")
					h.Set("X-RateLimit-Remaining", "0")
					h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(30*time.Second).Unix(), 10))
					h.Set("X-RateLimit-Resource", "graphql")
					pr, pw := io.Pipe()
					go func() {
						_, _ = io.WriteString(pw, head)
						time.Sleep(5 * time.Second) // the rest of the answer, slow to come
						_, _ = io.WriteString(pw, strings.Repeat(" ", int(size)-len(head)-len(tail))+tail)
						pw.Close()
					}()
					return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: h, Request: req, ContentLength: c.length, Body: pr}, nil
				})
				hc := &http.Client{Transport: cloudghttp.NewTransport(base, scope, cloudghttp.WithGovernor(gov))}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.github.com/graphql", strings.NewReader(`{"query":"query { viewer { login } }"}`))
				start := time.Now()
				resp := send(t, hc, req)
				if took := time.Since(start); took != c.want {
					t.Errorf("Content-Length %d, quota spent: the answer came back after %v, want %v", c.length, took, c.want)
				}
				if got := readAll(t, resp); int64(len(got)) != size {
					t.Errorf("%d bytes of body, want the answer whole", len(got))
				}
				if tot := gov.Summary(stats).Totals; tot.Calls != 1 || tot.Throttled != 0 || tot.GaveUp != 0 {
					t.Errorf("totals %+v, want one call answered", tot)
				}
				if p := gov.Inspect(scope(req)).Leaf.Paused; p < 20*time.Second {
					t.Errorf("graphql paused %v, want until the reset", p)
				}
			})
		})
	}
}

// roundTripFunc is a base transport made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Only another quota's refusal, its x-ratelimit-remaining 0, is handed
// back to a rest call as a fatal answer (TestGitHubAnotherQuotasHeadersPaceOnlyThatQuota):
// a 429 whose headers name another quota with requests left, or say
// nothing of what is left, is no refusal of that quota's but a throttle
// of the account's REST calls (a secondary limit that gave no
// retry-after and no words), retried after a backoff as any 429.
func TestGitHubA429OfAnotherQuotaNotSpentIsAThrottle(t *testing.T) {
	for _, remaining := range []string{"5", ""} {
		t.Run("remaining "+remaining, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				r := status(http.StatusTooManyRequests, "X-RateLimit-Resource", "source_import", "X-RateLimit-Limit", "10",
					"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(50*time.Second).Unix(), 10))
				if remaining != "" {
					r.header.Set("X-RateLimit-Remaining", remaining)
				}
				f.script(r)
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(gov))}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.github.com/repos/octo/hello/import", nil)
				resp := send(t, hc, req)
				got := readAll(t, resp)
				if n := len(f.recorded()); resp.StatusCode != http.StatusOK || got != "ok" || n != 2 {
					t.Errorf("a 429 naming source_import, %q left: status %d after %d attempts, want it retried and answered", remaining, resp.StatusCode, n)
				}
				if tot := gov.Summary(stats).Totals; tot.Throttled != 1 {
					t.Errorf("totals %+v, want the 429 counted as a throttle", tot)
				}
			})
		})
	}
}

// Only a 403 or 429 of another quota's, spent, is a refusal of that
// quota's handed back to a rest call as a fatal answer: a server error
// (500, 502, 504) or a 503 whose headers name another quota with nothing
// left is what its status says, a failure or a throttle of the account's
// REST calls, and a GET is retried after a backoff and answered, as any
// such answer's. GitHub's headers count the call that spent the quota's
// last request even when the answer to it failed.
func TestGitHubAServerErrorNamingAnotherSpentQuotaIsRetried(t *testing.T) {
	for _, code := range []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(code, "X-RateLimit-Resource", "copilot_usage_records", "X-RateLimit-Limit", "10",
					"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(50*time.Second).Unix(), 10)))
				gov := newGov(t, resilience.Config{})
				hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(gov))}
				resp := do(t, hc, http.MethodGet, "https://api.github.com/repos/octo/hello/pulls", nil)
				got := readAll(t, resp)
				if n := len(f.recorded()); resp.StatusCode != http.StatusOK || got != "ok" || n != 2 {
					t.Errorf("a %d naming copilot_usage_records, 0 left, to a GET: status %d after %d attempts, want it retried and answered", code, resp.StatusCode, n)
				}
			})
		})
	}
}

// A self-hosted runner's registration token (POST
// .../actions/runners/registration-token of a repository, an
// organisation or an enterprise) counts against core, as the account's
// other REST calls: GitHub's actions_runner_registration quota counts the
// runner's own registration with that token (POST
// /actions/runner-registration, what config.sh sends), not the token's
// creation (actions/runner#1339, GitHub's answer: "It only applies to
// registering a runner when using ./config.sh"; #1386 asks for the
// token's endpoints to be moved to it). The token's call is in rest, so
// that core spent, answered to any REST call, holds it back until the
// reset rather than let it go to be refused, and core low paces it with
// the rest, not twice over in two scopes.
func TestGitHubRunnerRegistrationTokenCountsInCore(t *testing.T) {
	for _, p := range []string{
		"/repos/octo/hello/actions/runners/registration-token",
		"/orgs/octo/actions/runners/registration-token",
		"/enterprises/octo-corp/actions/runners/registration-token",
	} {
		t.Run(p, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				scope := cloudghttp.GitHub("octo")
				for u, want := range map[string]string{"https://api.github.com" + p: "github/octo/*/rest", "https://ghe.example.com/api/v3" + p: "github-enterprise/ghe.example.com/octo/*/rest"} {
					req, _ := http.NewRequest(http.MethodPost, u, nil)
					if got := scope(req).String(); got != want {
						t.Errorf("POST %s: scope %s, want %s", u, got, want)
					}
				}
				f := &fakeAPI{}
				f.script(status(http.StatusForbidden, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0",
					"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(50*time.Second).Unix(), 10), "X-RateLimit-Resource", "core"))
				gov := newGov(t, resilience.Config{})
				hc := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), scope, cloudghttp.WithGovernor(gov),
					cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))}
				readAll(t, do(t, hc, http.MethodGet, "https://api.github.com/repos/octo/hello/issues", nil))
				readAll(t, do(t, hc, http.MethodPost, "https://api.github.com"+p, nil))
				if hits := f.recorded(); len(hits) != 2 || hits[1].at.Sub(hits[0].at) < 50*time.Second {
					t.Errorf("POST %s sent %v after core was spent until a reset 50s away, want held until the reset", p, hits[len(hits)-1].at.Sub(hits[0].at))
				}
			})
		})
	}
}

// The audit log's entity is read from the path (unescaped): a name that
// holds a character that is not printable (a newline, a byte that is not
// UTF-8, a bidirectional override), a space, or that makes the scope's
// region (orgs/<org>) more than 128 bytes names none, so that the request's text reaches no log line or metric
// label as it is, and makes no scope without bound; the call is the
// audit log's still, in the scope of no entity.
func TestGitHubAuditLogEntityThatIsNotPlainIsNone(t *testing.T) {
	long := strings.Repeat("x", 129)
	scope := cloudghttp.GitHub("octo")
	for _, c := range []struct{ path, want string }{
		{"/orgs/ev%0Ail/audit-log", "github/octo/*/audit_log"},
		{"/orgs/ev%20il/audit-log", "github/octo/*/audit_log"},
		{"/orgs/ev%FFil/audit-log", "github/octo/*/audit_log"},
		{"/orgs/ev%E2%80%AEil/audit-log", "github/octo/*/audit_log"},
		{"/enterprises/" + long + "/audit-log", "github/octo/*/audit_log"},
		{"/orgs/Octo-Org/audit-log", "github/octo/orgs/octo-org/audit_log"},
		{"/enterprises/" + long[:116] + "/audit-log", "github/octo/enterprises/" + long[:116] + "/audit_log"}, // 128 bytes
		{"/enterprises/" + long[:117] + "/audit-log", "github/octo/*/audit_log"},
	} {
		for u, want := range map[string]string{"https://api.github.com" + c.path: c.want, "https://ghe.example.com/api/v3" + c.path: onGHES(c.want)} {
			req, err := http.NewRequest(http.MethodGet, u, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := scope(req).String(); got != want {
				t.Errorf("GET %.80s: scope %q, want %q", u, got, want)
			}
		}
	}
}
