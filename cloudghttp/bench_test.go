package cloudghttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// fast is a configuration whose buckets and bulkhead never hold a request
// back (for gcp, the provider of scopeOf's scopes), so that a benchmark
// measures the Transport's own cost.
func fast() resilience.Config {
	huge := 1e9
	return resilience.Config{GCP: resilience.ProviderConfig{MaxRPS: huge, Burst: huge, MaxConcurrency: 1 << 20}}
}

// staticTransport answers every request with 200 and an empty body, in
// memory.
type staticTransport struct{}

func (staticTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// BenchmarkRoundTrip is one GET through net/http's client, bare (the base
// transport alone) and governed (a Transport around the same base), over
// loopback TCP to an httptest server and in memory (the Transport's cost
// alone).
func BenchmarkRoundTrip(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	b.Cleanup(srv.Close)
	tcp := &http.Transport{}
	b.Cleanup(tcp.CloseIdleConnections)
	gov := newGov(b, fast())
	for _, base := range []struct {
		name string
		rt   http.RoundTripper
		url  string
	}{{"loopback", tcp, srv.URL + "/items"}, {"memory", staticTransport{}, "http://api.test/items"}} {
		for _, c := range []struct {
			name string
			rt   http.RoundTripper
		}{{"bare", base.rt}, {"governed", cloudghttp.NewTransport(base.rt, scopeOf, cloudghttp.WithGovernor(gov))}} {
			b.Run(base.name+"/"+c.name, func(b *testing.B) {
				hc := &http.Client{Transport: c.rt}
				b.ReportAllocs()
				for b.Loop() {
					resp, err := hc.Get(base.url)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
			})
		}
	}
}

// A governed request that succeeds allocates six objects more than a
// bare one: the Guard of its call, the three of the watch that gives its
// slot back should it be dropped without End, and the copy of the request
// sent with the context that carries the call, with that context.
func TestGovernedAllocations(t *testing.T) {
	gov := newGov(t, fast())
	bare := &http.Client{Transport: staticTransport{}}
	governed := &http.Client{Transport: cloudghttp.NewTransport(staticTransport{}, scopeOf, cloudghttp.WithGovernor(gov))}
	get := func(c *http.Client) func() {
		return func() {
			resp, err := c.Get("http://api.test/items")
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
		}
	}
	base := testing.AllocsPerRun(200, get(bare))
	gv := testing.AllocsPerRun(200, get(governed))
	t.Logf("allocations per request: bare %.0f, governed %.0f", base, gv)
	if gv-base > 6 {
		t.Fatalf("the Transport adds %.0f allocations per request, want at most 6", gv-base)
	}
}

// BenchmarkGitHubGraphQLSuccess is what reading a GraphQL answer for a
// rate limit costs a query that was answered, over loopback TCP: a POST
// /graphql (its answer read to its first member, data) against the same
// request to a REST path (no read ahead), both governed, and bare. The
// answer is 2 KiB of JSON with GitHub's rate-limit headers, none of them
// spent.
func BenchmarkGitHubGraphQLSuccess(b *testing.B) {
	answer := `{"data":{"viewer":{"login":"octo","repositories":{"nodes":[` + strings.Repeat(`{"name":"hello-world"},`, 90) + `{"name":"x"}]}}}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-RateLimit-Limit", "5000")
		w.Header().Set("X-RateLimit-Remaining", "4200")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
		_, _ = io.WriteString(w, answer)
	}))
	b.Cleanup(srv.Close)
	tcp := &http.Transport{}
	b.Cleanup(tcp.CloseIdleConnections)
	huge := 1e9
	gov := newGov(b, resilience.Config{Providers: map[string]resilience.ProviderConfig{
		cloudghttp.ProviderGitHub: {MaxRPS: huge, Burst: huge, MaxConcurrency: 1 << 20}}})
	governed := cloudghttp.NewTransport(tcp, cloudghttp.GitHub("octo"), cloudghttp.WithGovernor(gov))
	for _, c := range []struct {
		name, path string
		rt         http.RoundTripper
	}{
		{"bare", "/graphql", tcp},
		{"governed/rest", "/repos/octo/hello/issues", governed},
		{"governed/graphql", "/graphql", governed},
	} {
		b.Run(c.name, func(b *testing.B) {
			hc := &http.Client{Transport: c.rt}
			b.ReportAllocs()
			for b.Loop() {
				resp, err := hc.Post(srv.URL+c.path, "application/json", strings.NewReader(`{"query":"query { viewer { login } }"}`))
				if err != nil {
					b.Fatal(err)
				}
				if n, _ := io.Copy(io.Discard, resp.Body); n != int64(len(answer)) {
					b.Fatalf("read %d bytes, want %d", n, len(answer))
				}
				_ = resp.Body.Close()
			}
		})
	}
}
