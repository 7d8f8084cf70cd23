package cloudghttp_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// reply is one scripted answer of the fake API.
type reply struct {
	status int         // 0: 200 "ok"
	header http.Header // added to the answer
	body   string      // 0 status: "ok"
	fail   error       // in-memory transport only: fail the attempt with this error
}

func status(code int, kv ...string) reply {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return reply{status: code, header: h, body: http.StatusText(code)}
}

// hit is one request the fake API received.
type hit struct {
	method string
	path   string
	body   string
	at     time.Time
}

// fakeAPI answers with scripted replies, in order, then 200 "ok".
type fakeAPI struct {
	mu     sync.Mutex
	queue  []reply
	always *reply
	hits   []hit
}

func (f *fakeAPI) script(rs ...reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, rs...)
}

func (f *fakeAPI) forever(r reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.always = &r
}

func (f *fakeAPI) next() (reply, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queue) > 0 {
		r := f.queue[0]
		f.queue = f.queue[1:]
		return r, true
	}
	if f.always != nil {
		return *f.always, true
	}
	return reply{}, false
}

func (f *fakeAPI) record(r *http.Request) {
	var b []byte
	if r.Body != nil {
		b, _ = io.ReadAll(r.Body)
	}
	f.mu.Lock()
	f.hits = append(f.hits, hit{method: r.Method, path: r.URL.Path, body: string(b), at: time.Now()})
	f.mu.Unlock()
}

func (f *fakeAPI) recorded() []hit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]hit(nil), f.hits...)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.record(r)
	rp, _ := f.next()
	for k, v := range rp.header {
		w.Header()[k] = v
	}
	if rp.status == 0 {
		_, _ = io.WriteString(w, "ok")
		return
	}
	w.WriteHeader(rp.status)
	_, _ = io.WriteString(w, rp.body)
}

// memTransport serves a request with the fake's handler in memory, on the
// caller's goroutine, so that tests run inside a synctest bubble (where
// sockets cannot be used) in virtual time. It counts the response bodies
// closed and read to their end.
type memTransport struct {
	f              *fakeAPI
	closed, ateEOF *atomic.Int32
}

func newMem(f *fakeAPI) memTransport {
	return memTransport{f: f, closed: new(atomic.Int32), ateEOF: new(atomic.Int32)}
}

func (m memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	m.f.mu.Lock()
	var fail error
	if len(m.f.queue) > 0 && m.f.queue[0].fail != nil {
		fail = m.f.queue[0].fail
		m.f.queue = m.f.queue[1:]
	}
	m.f.mu.Unlock()
	if fail != nil {
		m.f.record(req)
		return nil, fail
	}
	rec := httptest.NewRecorder()
	m.f.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Body = &countedBody{r: bytes.NewReader(rec.Body.Bytes()), closed: m.closed, eof: m.ateEOF}
	resp.Request = req
	return resp, nil
}

// countedBody is a response body that counts its closing and its end.
type countedBody struct {
	r           *bytes.Reader
	closed, eof *atomic.Int32
	sawEOF      bool
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF && !b.sawEOF {
		b.sawEOF = true
		b.eof.Add(1)
	}
	return n, err
}

func (b *countedBody) Close() error { b.closed.Add(1); return nil }

// apiScope is the scope of the fake API's requests. Its provider is
// configurable (gcp), so that tests can tune breakers and budgets.
var apiScope = resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "items"}

func scopeOf(*http.Request) resilience.Scope { return apiScope }

func newGov(t testing.TB, cfg resilience.Config) *resilience.Governor {
	t.Helper()
	g, err := resilience.NewGovernor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// client returns an http.Client whose transport governs base with gov.
func client(base http.RoundTripper, gov *resilience.Governor, opts ...cloudghttp.Option) *http.Client {
	opts = append([]cloudghttp.Option{cloudghttp.WithGovernor(gov)}, opts...)
	return &http.Client{Transport: cloudghttp.NewTransport(base, scopeOf, opts...)}
}

// readAll reads and closes a response body.
func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return string(b)
}

// body returns a request body the client can rewind (GetBody is set).
func body(s string) io.Reader { return strings.NewReader(s) }

// noRewind is a request body without GetBody.
func noRewind(s string) io.Reader { return io.NopCloser(strings.NewReader(s)) }

func intp(n int) *int { return &n }

// withAttempts is quick with at most n attempts.
func withAttempts(n int) cloudghttp.Option {
	return cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: n, BaseDelay: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
}

// gapsWithin checks that the fake received n requests, each within
// [lo, hi] after the one before.
func gapsWithin(t *testing.T, hits []hit, n int, lo, hi time.Duration) {
	t.Helper()
	if len(hits) != n {
		t.Fatalf("%d attempts, want %d", len(hits), n)
	}
	for i := 1; i < len(hits); i++ {
		if gap := hits[i].at.Sub(hits[i-1].at); gap < lo || gap > hi {
			t.Errorf("attempt %d went %v after the one before, want within [%v, %v]", i+1, gap, lo, hi)
		}
	}
}
