//go:build go1.25

package cloudggcp

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// countingBody counts the reads of a body.
type countingBody struct {
	io.Reader
	reads atomic.Int32
}

func (b *countingBody) Read(p []byte) (int, error) { b.reads.Add(1); return b.Reader.Read(p) }
func (b *countingBody) Close() error               { return nil }

// The body of an error answer is waited for a second at most while the
// attempt holds its slot: a body that has not come by then decides
// nothing and still reaches the client whole; a success's body is never
// read ahead.
func TestRateReasonsWaitsForTheBodyBoundedly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		base := roundTripper(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 429, Status: "429 Too Many Requests", Body: pr, Request: r}, nil
		})
		req, _ := http.NewRequest("GET", "https://compute.googleapis.com/compute/v1/projects/p1", nil)
		start := time.Now()
		resp, err := rateReasons{base}.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != reasonGrace {
			t.Errorf("waited %v for a body that did not come, want %v", waited, reasonGrace)
		}
		if _, ok := resp.Body.(hintedBody); ok {
			t.Errorf("a body not read has a hint")
		}
		const body = `{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"30s"}]}}`
		go func() { _, _ = io.WriteString(pw, body); _ = pw.Close() }()
		if b, _ := io.ReadAll(resp.Body); string(b) != body {
			t.Errorf("the client read %q, want the body whole", b)
		}
	})
	ok := &countingBody{Reader: strings.NewReader(`{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"30s"}]}}`)}
	base := roundTripper(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Status: "200 OK", Body: ok, Request: r}, nil
	})
	req, _ := http.NewRequest("GET", "https://compute.googleapis.com/compute/v1/projects/p1", nil)
	resp, err := rateReasons{base}.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if n := ok.reads.Load(); n != 0 || resp.Body != io.ReadCloser(ok) {
		t.Errorf("a success's body was read %d times ahead (body %T), want never", n, resp.Body)
	}
}

// RetryInfo's delay, as protobuf's JSON writes a Duration, is the
// answer's hint, whatever its status; an answer without one has none.
func TestRateReasonsReadsRetryInfo(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   time.Duration // 0: no hint
	}{
		{429, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED"},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"30s"}]}}`, 30 * time.Second},
		{503, `{"error":{"code":503,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.500s"}]}}`, 1500 * time.Millisecond},
		{403, `{"error":{"code":403,"errors":[{"reason":"rateLimitExceeded"}],"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"2s"}]}}`, 2 * time.Second},
		{429, `{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED"}]}}`, 0},
		{429, `{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"soon"}]}}`, 0},
	} {
		base := roundTripper(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: tc.status, Body: io.NopCloser(strings.NewReader(tc.body)), Request: r}, nil
		})
		req, _ := http.NewRequest("GET", "https://compute.googleapis.com/compute/v1/projects/p1", nil)
		resp, err := rateReasons{base}.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		var got time.Duration
		if hb, ok := resp.Body.(hintedBody); ok {
			got = hb.BodyRetryAfter()
		}
		b, _ := io.ReadAll(resp.Body)
		if got != tc.want || string(b) != tc.body {
			t.Errorf("%d %.60q: hint %v, body of %d bytes; want %v and the body whole", tc.status, tc.body, got, len(b), tc.want)
		}
	}
}
