//go:build go1.25

package cloudghttp_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cloudg/cloudg/resilience"
)

// The same Transport over real sockets: the fake API on a loopback
// httptest server, net/http's own client and transport, the wall clock.
// Sockets cannot be inside a synctest bubble, so these tests keep their
// waits at zero (Retry-After: 0, a 10 ms backoff).

// loopback serves f on 127.0.0.1 and counts the connections it accepts.
func loopback(t testing.TB, f *fakeAPI) *loopbackServer {
	s := &loopbackServer{Server: httptest.NewUnstartedServer(f)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

type loopbackServer struct {
	*httptest.Server
	conns atomic.Int32
}

// A retried response's body is drained and closed before the retry, so
// the retry goes on the same connection.
func TestRetryOverLoopbackReusesTheConnection(t *testing.T) {
	f := &fakeAPI{}
	f.script(reply{status: 503, header: http.Header{"Retry-After": {"0"}}, body: strings.Repeat("x", 8<<10)})
	srv := loopback(t, f)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	gov := newGov(t, resilience.Config{})
	c := client(tr, gov, quick)
	resp, err := c.Get(srv.URL + "/items")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); resp.StatusCode != 200 || got != "ok" {
		t.Fatalf("status %d body %q, want 200 ok", resp.StatusCode, got)
	}
	if n, c := len(f.recorded()), srv.conns.Load(); n != 2 || c != 1 {
		t.Fatalf("%d attempts on %d connections, want 2 on 1", n, c)
	}
	if leaf := gov.Inspect(apiScope).Leaf; leaf.Rate >= leaf.Ceiling {
		t.Fatalf("leaf %+v not slowed by the 503", leaf)
	}
}

// A throttled POST is sent again with its body over the wire, and the
// last response reaches the caller intact.
func TestThrottledPostOverLoopback(t *testing.T) {
	f := &fakeAPI{}
	f.script(status(429, "Retry-After", "0"), reply{status: 429, header: http.Header{"Retry-After": {"0"}}, body: "last"})
	srv := loopback(t, f)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := client(tr, newGov(t, resilience.Config{}), quick, withAttempts(2))
	resp, err := c.Post(srv.URL+"/items", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); resp.StatusCode != 429 || got != "last" {
		t.Fatalf("status %d body %q, want the last 429", resp.StatusCode, got)
	}
	hits := f.recorded()
	if len(hits) != 2 || hits[0].body != `{"a":1}` || hits[1].body != `{"a":1}` {
		t.Fatalf("hits %+v, want the body twice", hits)
	}
}
