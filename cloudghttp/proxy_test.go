package cloudghttp_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cloudg/cloudg/resilience"
)

// connectProxy is an HTTP proxy on 127.0.0.1 that refuses its first
// CONNECT with status, as a proxy does that cannot reach the target or
// is overloaded, and tunnels every later one. It counts the CONNECTs.
func connectProxy(t *testing.T, status int) (*url.URL, *atomic.Int32) {
	t.Helper()
	var connects atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect || connects.Add(1) == 1 {
			w.WriteHeader(status)
			return
		}
		up, err := net.Dial("tcp", r.Host)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		c, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			_ = up.Close()
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() { _, _ = io.Copy(up, rw); _ = up.Close() }()
		_, _ = io.Copy(c, up)
		_ = c.Close()
	}))
	t.Cleanup(proxy.Close)
	u, _ := url.Parse(proxy.URL)
	return u, &connects
}

// A proxy's refusal of the CONNECT that would carry the request (a 502,
// 503 or 504: it could not reach the API, or is overloaded) reaches the
// Transport as net/http's error that says the status's reason phrase
// alone ("Service Unavailable"). Nothing was sent to the API: the
// failure passes, as a token endpoint's 503 does, and the request, its
// body rewound, is sent again after the policy's backoff, through the
// tunnel the proxy opens then. The API's scope counts one call and no
// error; nothing is lost. A 429 passed before, its phrase read as a
// throttle's; a 502, 503 or 504 ended the call as a local error.
func TestAProxysRefusalOfTheTunnelPassesAndIsSentAgain(t *testing.T) {
	for _, status := range []int{http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusTooManyRequests} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			f := &fakeAPI{}
			api := httptest.NewTLSServer(f)
			t.Cleanup(api.Close)
			proxy, connects := connectProxy(t, status)
			tr := api.Client().Transport.(*http.Transport).Clone()
			tr.Proxy = http.ProxyURL(proxy)
			t.Cleanup(tr.CloseIdleConnections)
			gov := newGov(t, resilience.Config{})
			ctx, stats := resilience.WithStats(context.Background())
			ctx, ledger := resilience.WithLedger(ctx, "items")
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, api.URL+"/items", strings.NewReader(`{"a":1}`))
			resp, err := client(tr, gov, quick).Do(req)
			if err != nil {
				t.Fatalf("error %v after %d CONNECTs; want the request sent through the second tunnel", err, connects.Load())
			}
			readAll(t, resp)
			hits := f.recorded()
			tot := gov.Summary(stats).Totals
			if resp.StatusCode != 200 || connects.Load() != 2 || len(hits) != 1 || hits[0].body != `{"a":1}` {
				t.Fatalf("status %d after %d CONNECTs, the API got %+v; want 200 after 2, the body once", resp.StatusCode, connects.Load(), hits)
			}
			if tot.Calls != 1 || tot.Errored != 0 || tot.TransientErrors != 0 || tot.Throttled != 0 || tot.Retries != 0 || ledger.Lost() != 0 {
				t.Fatalf("totals %v, ledger %q; want one call, no error, nothing lost", tot, ledger.Describe())
			}
		})
	}
}

// A proxy's refusal that no retry mends (407: the proxy wants
// credentials) ends the call at once, a local error, sent once.
func TestAProxysRefusalThatWillNotPassEndsTheCall(t *testing.T) {
	f := &fakeAPI{}
	api := httptest.NewTLSServer(f)
	t.Cleanup(api.Close)
	proxy, connects := connectProxy(t, http.StatusProxyAuthRequired)
	tr := api.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(proxy)
	t.Cleanup(tr.CloseIdleConnections)
	gov := newGov(t, resilience.Config{})
	ctx, stats := resilience.WithStats(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api.URL+"/items", nil)
	resp, err := client(tr, gov, quick).Do(req)
	if err == nil {
		readAll(t, resp)
	}
	if tot := gov.Summary(stats).Totals; err == nil || connects.Load() != 1 || tot.Errored != 1 {
		t.Fatalf("error %v after %d CONNECTs, totals %v; want the refusal after 1, one local error", err, connects.Load(), tot)
	}
}
