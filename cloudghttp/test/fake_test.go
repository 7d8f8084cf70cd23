package test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// The services of the fake GitHub API, as the scopes name them.
const (
	svcREST    = cloudghttp.GitHubREST
	svcSearch  = cloudghttp.GitHubSearch
	svcGraphQL = cloudghttp.GitHubGraphQL
)

const account = "my-org"

func scopeOf(service string) resilience.Scope {
	return resilience.Scope{Provider: cloudghttp.ProviderGitHub, Account: account, Service: service}
}

// reply is one scripted answer of the fake GitHub API.
type reply struct {
	status  int    // 0: the route's success
	message string // the error body's message
	docURL  string // the error body's documentation_url
	header  map[string]func() string
}

// quota is the rate-limit headers of an answer: limit, remaining and the
// reset resetIn from the time of the answer. limit 0: none.
func quota(limit, remaining int, resetIn time.Duration) map[string]func() string {
	if limit == 0 {
		return nil
	}
	return map[string]func() string{
		"X-Ratelimit-Limit":     func() string { return strconv.Itoa(limit) },
		"X-Ratelimit-Remaining": func() string { return strconv.Itoa(remaining) },
		"X-Ratelimit-Reset":     func() string { return strconv.FormatInt(time.Now().Add(resetIn).Unix(), 10) },
	}
}

// primaryLimit is GitHub's answer once a primary rate limit is spent.
func primaryLimit(status int, resetIn time.Duration) reply {
	return reply{status: status, message: "API rate limit exceeded for user ID 1.",
		docURL: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
		header: quota(5000, 0, resetIn)}
}

// secondaryLimit is GitHub's answer to a secondary rate limit.
func secondaryLimit(status int, retryAfter string) reply {
	return reply{status: status, message: "You have exceeded a secondary rate limit.",
		docURL: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
		header: map[string]func() string{"Retry-After": func() string { return retryAfter }}}
}

// forbidden is a permission error: no rate-limit signal.
func forbidden() reply {
	return reply{status: http.StatusForbidden, message: "Resource not accessible by integration",
		docURL: "https://docs.github.com/rest/repos/repos#get-a-repository"}
}

// hit is one request the fake received.
type hit struct {
	service string
	method  string
	body    string
	at      time.Time
}

// fakeGitHub answers repository gets, repository searches and GraphQL
// queries, with scripted replies per service, in order, then successes
// carrying okQuota's headers.
type fakeGitHub struct {
	mu      sync.Mutex
	queue   map[string][]reply
	okQuota map[string]map[string]func() string
	hits    []hit
}

func newFake() *fakeGitHub {
	return &fakeGitHub{queue: map[string][]reply{}, okQuota: map[string]map[string]func() string{}}
}

func (f *fakeGitHub) script(service string, rs ...reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue[service] = append(f.queue[service], rs...)
}

// quotaOnSuccess sets the rate-limit headers of a service's successes.
func (f *fakeGitHub) quotaOnSuccess(service string, h map[string]func() string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.okQuota[service] = h
}

func (f *fakeGitHub) hitsOf(service string) []hit {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []hit
	for _, h := range f.hits {
		if h.service == service {
			out = append(out, h)
		}
	}
	return out
}

// service routes a path as GitHub counts it, an Enterprise Server's
// /api/v3 prefix included.
func service(path string) string {
	path = strings.TrimPrefix(path, "/api/v3")
	switch {
	case path == "/graphql" || path == "/api/graphql":
		return svcGraphQL
	case strings.HasPrefix(path, "/search/"):
		return svcSearch
	}
	return svcREST
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	svc := service(r.URL.Path)
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
	}
	f.mu.Lock()
	f.hits = append(f.hits, hit{service: svc, method: r.Method, body: string(body), at: time.Now()})
	var rp reply
	scripted := false
	if q := f.queue[svc]; len(q) > 0 {
		rp, scripted, f.queue[svc] = q[0], true, q[1:]
	}
	okQuota := f.okQuota[svc]
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Ratelimit-Resource", map[string]string{svcREST: "core", svcSearch: "search", svcGraphQL: "graphql"}[svc])
	if scripted && rp.status != 0 {
		for k, v := range rp.header {
			w.Header().Set(k, v())
		}
		w.WriteHeader(rp.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": rp.message, "documentation_url": rp.docURL})
		return
	}
	for k, v := range okQuota {
		w.Header().Set(k, v())
	}
	var out any
	switch svc {
	case svcSearch:
		out = map[string]any{"total_count": 1, "incomplete_results": false,
			"items": []any{map[string]any{"id": 1, "name": "app", "full_name": account + "/app"}}}
	case svcGraphQL:
		out = map[string]any{"data": map[string]any{"viewer": map[string]any{"login": "octocat"}}}
	default:
		out = map[string]any{"id": 1, "name": "app", "full_name": account + "/app"}
	}
	_ = json.NewEncoder(w).Encode(out)
}

// memTransport serves a request with the fake's handler in memory, on the
// caller's goroutine, so that the tests run inside a synctest bubble
// (where sockets cannot be used) in virtual time.
type memTransport struct{ f *fakeGitHub }

func (m memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	m.f.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Body = io.NopCloser(bytes.NewReader(rec.Body.Bytes()))
	resp.Request = req
	return resp, nil
}

// newGov returns a fresh governor at the built-in defaults.
func newGov(t testing.TB) *resilience.Governor {
	t.Helper()
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// memClient returns a go-github client that sends through a governed
// Transport to the fake, in memory.
func memClient(t testing.TB, f *fakeGitHub, gov *resilience.Governor, opts ...cloudghttp.Option) *github.Client {
	t.Helper()
	return ghClient(t, memTransport{f}, "http://api.github.test/", gov, opts...)
}

func ghClient(t testing.TB, base http.RoundTripper, baseURL string, gov *resilience.Governor, opts ...cloudghttp.Option) *github.Client {
	t.Helper()
	opts = append([]cloudghttp.Option{cloudghttp.WithGovernor(gov)}, opts...)
	hc := &http.Client{Transport: cloudghttp.NewTransport(base, cloudghttp.GitHub(account), opts...)}
	c := github.NewClient(hc)
	u, err := url.Parse(baseURL)
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = u
	return c
}

// once turns the Transport's retries off, so that a test sees what one
// answer does.
var once = cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1})

// quick keeps the jitter of a retry short, under any hint.
var quick = cloudghttp.WithPolicy(resilience.RetryPolicy{BaseDelay: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
