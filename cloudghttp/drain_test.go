//go:build go1.25

package cloudghttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// The body of a response the Transport retries is read while the retry
// waits, never before it: a body slow to arrive holds nothing back.

// stallingBase answers its first request with a 503 (Retry-After: after)
// whose body sends a few bytes and then nothing until it is closed, or
// until an hour has passed, and every other request with 200 "ok". It
// records when each request was sent and whether the 503's body was
// closed.
type stallingBase struct {
	after string

	mu      sync.Mutex
	sent    []time.Time
	stalled *io.PipeReader
}

func (b *stallingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent = append(b.sent, time.Now())
	if len(b.sent) > 1 {
		return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
	}
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte("partial"))
		time.AfterFunc(time.Hour, func() { _ = pw.Close() })
	}()
	b.stalled = pr
	return &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Header: http.Header{"Retry-After": {b.after}}, Body: pr, Request: req}, nil
}

func (b *stallingBase) attempts() []time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]time.Time(nil), b.sent...)
}

// A retried answer whose body stalls does not hold its retry back: the
// retry goes when its hint says, not when the body ends.
func TestAStallingBodyDoesNotHoldTheRetryBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &stallingBase{after: "1"}
		start := time.Now()
		resp, err := client(base, newGov(t, resilience.Config{}), quick).Get("http://api.test/items")
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); resp.StatusCode != 200 || got != "ok" {
			t.Fatalf("status %d body %q after %v, want the retry's 200 after 1s", resp.StatusCode, got, time.Since(start))
		}
		sent := base.attempts()
		if len(sent) != 2 {
			t.Fatalf("%d attempts, want 2", len(sent))
		}
		if gap := sent[1].Sub(sent[0]); gap > 2*time.Second {
			t.Fatalf("retry sent %v after the 503, want 1s (its Retry-After) and a token: the 503's stalling body held it back", gap)
		}
	})
}

// A request whose context ends while the body of the answer it retries
// stalls ends then, with the context's error.
func TestContextEndsTheRetryOfAStallingBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &stallingBase{after: "30"}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(5*time.Second, cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
		start := time.Now()
		_, err := client(base, newGov(t, resilience.Config{}), quick).Do(req)
		var se *cloudghttp.StatusError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &se) || se.HTTPStatusCode() != 503 {
			t.Fatalf("err %v, want the context's end wrapping the 503", err)
		}
		if took := time.Since(start); took != 5*time.Second {
			t.Fatalf("the request ended %v after it began, want 5s, when its context ended", took)
		}
		if n := len(base.attempts()); n != 1 {
			t.Fatalf("%d attempts, want 1", n)
		}
	})
}

// Over 127.0.0.1, with net/http's own transport: a 503 whose body stalls
// after its headers does not hold its retry (Retry-After: 0) back.
func TestAStallingBodyOverLoopback(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if !first {
			_, _ = io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, strings.Repeat("x", 1<<10))
		w.(http.Flusher).Flush()
		select { // the rest of the body never comes
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	// The bound of a test that fails, not a timing: the retry goes at once.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/items", nil)
	resp, err := client(tr, newGov(t, resilience.Config{}), quick).Do(req)
	if err != nil {
		t.Fatalf("err %v, want the retry's 200: the 503's stalling body held the retry back", err)
	}
	if got := readAll(t, resp); resp.StatusCode != 200 || got != "ok" {
		t.Fatalf("status %d body %q, want the retry's 200", resp.StatusCode, got)
	}
}

// lateBody is a response body that arrives after a delay: its first Read
// waits that long.
type lateBody struct {
	delay time.Duration
	r     io.Reader
}

func (b *lateBody) Read(p []byte) (int, error) {
	if b.delay > 0 {
		time.Sleep(b.delay)
		b.delay = 0
	}
	return b.r.Read(p)
}

func (b *lateBody) Close() error { return nil }

// lateBase answers each request with a 500 whose body arrives late.
type lateBase struct{ delay time.Duration }

func (b lateBase) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 500, Status: "500 Internal Server Error", Header: http.Header{},
		Body: &lateBody{delay: b.delay, r: strings.NewReader("late " + req.URL.Path)}, Request: req}, nil
}

// When the breaker opens while a retry waits, the caller gets the last
// response with its body, even one whose body was still arriving when
// the breaker opened: the body is waited for (at most drainGrace), not
// dropped for the breaker's error.
func TestBreakerOpeningBeforeTheBodyArrivesReturnsTheLastResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(2 * time.Second) // whatever happens, the late body arrives before the bubble ends
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1}})
		slow := client(lateBase{delay: 1500 * time.Millisecond}, gov, cloudghttp.WithPolicy(resilience.RetryPolicy{BaseDelay: 10 * time.Second, MaxBackoff: 10 * time.Second}))
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(time.Second) // the slow call waits to retry, its body still on its way
			f := &fakeAPI{}
			f.script(status(500))
			readAll(t, do(t, client(newMem(f), gov, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1})), http.MethodGet, "http://api.test/b", nil))
		})
		start := time.Now()
		req, _ := http.NewRequest(http.MethodGet, "http://api.test/a", nil)
		resp, err := slow.Do(req)
		wg.Wait()
		if err != nil {
			t.Fatalf("err %v after %v, want the last response: its body, arriving at 1.5s, was dropped when the breaker opened at 1s", err, time.Since(start))
		}
		if got := readAll(t, resp); resp.StatusCode != 500 || got != "late /a" {
			t.Fatalf("status %d body %q, want the first 500 with its body", resp.StatusCode, got)
		}
		if took := time.Since(start); took != 1500*time.Millisecond {
			t.Fatalf("the last response came back after %v, want 1.5s, when its body had come", took)
		}
	})
}
