package cloudghttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// A generic API governed by a Transport: the first request is throttled,
// the Transport waits for the hint and sends it again, and the run's
// stats say so.
func ExampleTransport() {
	var n atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprint(w, `{"items":[]}`)
	}))
	defer api.Close()

	gov, _ := resilience.NewGovernor(resilience.Config{}) // or the process governor
	scope := func(r *http.Request) resilience.Scope {
		return resilience.Scope{Provider: "acme", Account: "tenant-1", Service: "items"}
	}
	client := &http.Client{Transport: cloudghttp.NewTransport(nil, scope,
		cloudghttp.WithGovernor(gov),
		cloudghttp.WithPolicy(resilience.RetryPolicy{BaseDelay: time.Millisecond, MaxBackoff: 10 * time.Millisecond}))}

	ctx, stats := resilience.WithStats(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api.URL+"/items", nil)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	for _, line := range stats.Messages() {
		fmt.Println(line)
	}
	// Output:
	// 200 {"items":[]}
	// acme/tenant-1/*/items: throttled 1x, slowed to 10.0 rps, 1 retry
}

// GitHub's scopes: search, code search, GraphQL and the REST operations
// GitHub limits apart, such as an organisation's audit log, have limits of
// their own (the audit log's, one for each organisation).
func ExampleGitHub() {
	scope := cloudghttp.GitHub("my-org")
	for _, u := range []string{
		"https://api.github.com/repos/my-org/app/issues",
		"https://api.github.com/search/code?q=foo",
		"https://api.github.com/graphql",
		"https://ghe.example.com/api/v3/search/issues?q=bar",
		"https://api.github.com/orgs/my-org/audit-log",
	} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		fmt.Println(scope(req))
	}
	// Output:
	// github/my-org/*/rest
	// github/my-org/*/code_search
	// github/my-org/*/graphql
	// github-enterprise/ghe.example.com/my-org/*/search
	// github/my-org/orgs/my-org/audit_log
}

// A scheduler asks how long a request would wait now (Governor.Delay on
// the scope the Transport's scope function gives it, changing nothing),
// and lets a request refuse to wait past a bound (resilience.WithMaxWait),
// so that it can requeue the task instead of holding its worker. Here the
// API answered 429 with Retry-After: 30.
func ExampleTransport_maxWait() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer api.Close()
	gov, _ := resilience.NewGovernor(resilience.Config{})
	scope := func(r *http.Request) resilience.Scope {
		return resilience.Scope{Provider: "acme", Account: "tenant-1", Service: "items"}
	}
	client := &http.Client{Transport: cloudghttp.NewTransport(nil, scope, cloudghttp.WithGovernor(gov))}

	req, _ := http.NewRequest(http.MethodGet, api.URL+"/items", nil)
	wait, why := gov.Delay(scope(req))
	fmt.Println(scope(req), wait, why)

	ctx := resilience.WithMaxWait(context.Background(), time.Second)
	_, err := client.Do(req.WithContext(ctx)) // 429, Retry-After: 30: refused at once
	retryAfter, _ := resilience.RetryAfter(err)
	fmt.Println(resilience.Classify(err), retryAfter.Round(time.Second), errors.Is(err, resilience.ErrNoToken))
	wait, why = gov.Delay(scope(req))
	fmt.Println(wait.Round(time.Second), why)
	// Output:
	// acme/tenant-1/*/items 0s <nil>
	// THROTTLED 30s true
	// 30s resilience: no rate token now
}

// GitHub's limits are tuned under ratelimit.providers.github, per service
// (rest, search, code_search, graphql, audit_log...); importing cloudghttp makes the configuration
// check refuse any other service.
func ExampleGitHub_configuration() {
	cfg, err := resilience.ParseConfig([]byte(`
ratelimit:
  providers:
    github:
      max_rps: 1.4
      services:
        search: {max_rps: 0.5, min_rps: 0.05}
`))
	gov, _ := resilience.NewGovernor(cfg)
	scope := cloudghttp.GitHub("octo")
	req, _ := http.NewRequest("GET", "https://api.github.com/search/issues?q=x", nil)
	fmt.Println(gov.Inspect(scope(req)).Leaf.Rate, err)

	_, err = resilience.ParseConfig([]byte("providers: {github: {services: {serach: {max_rps: 0.5}}}}\n"))
	fmt.Println(err)
	// Output:
	// 0.5 <nil>
	// ratelimit.providers.github.services.serach: unknown GitHub service (did you mean search?)
}
