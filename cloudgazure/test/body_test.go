package test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// fileBody is a request body that, like an *os.File, can be neither read
// nor seeked once closed. It counts its closings.
type fileBody struct {
	*bytes.Reader
	closed int
}

var errClosedBody = errors.New("file already closed")

func (f *fileBody) Read(p []byte) (int, error) {
	if f.closed > 0 {
		return 0, errClosedBody
	}
	return f.Reader.Read(p)
}

func (f *fileBody) Seek(off int64, whence int) (int64, error) {
	if f.closed > 0 {
		return 0, errClosedBody
	}
	return f.Reader.Seek(off, whence)
}

func (f *fileBody) Close() error { f.closed++; return nil }

// putTransport answers the first request 429, the others 200, and records
// the bodies it was sent.
type putTransport struct{ bodies *[]string }

func (p putTransport) Do(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	*p.bodies = append(*p.bodies, string(b))
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}
	if len(*p.bodies) == 1 {
		resp.StatusCode = http.StatusTooManyRequests
	}
	return resp, nil
}

type policyFunc func(*policy.Request) (*http.Response, error)

func (f policyFunc) Do(req *policy.Request) (*http.Response, error) { return f(req) }

// When the breaker's opening cut azcore's sleep before a retry and the
// breaker then lets the retry go after all (here a Reset, made by a
// per-call policy of the caller's as azcore's loop ends), the per-call
// policy sends the retry through azcore's retry policy again, with the
// request's body: azcore closes a request's body when its loop ends, so
// a body that cannot be read once closed (an *os.File) failed the retry
// with its Seek's error, nothing sent. The body is now closed once, when
// the request ends, and the retry carries it whole.
func TestARetrySentAfterACutCarriesTheBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(2), BaseDelaySeconds: 20, MaxBackoffSeconds: 20}})
		var bodies []string
		o := cloudgazure.ClientOptions(nil, cloudgazure.WithGovernor(gov))
		o.Transport = putTransport{&bodies}
		reset := false
		o.PerCallPolicies = append(o.PerCallPolicies, policyFunc(func(req *policy.Request) (*http.Response, error) {
			resp, err := req.Next()
			if errors.Is(err, context.Canceled) && !reset {
				reset = true // the cut ended azcore's loop: the breaker lets the retry go after all
				gov.Reset()
			}
			return resp, err
		}))
		pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, &o.ClientOptions)
		req, err := runtime.NewRequest(context.Background(), http.MethodPut, "http://127.0.0.1:1/subscriptions/"+subA+
			"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v?api-version=1")
		if err != nil {
			t.Fatal(err)
		}
		body := &fileBody{Reader: bytes.NewReader([]byte(`{"a":1}`))}
		if err := req.SetBody(body, "application/json"); err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		var status int
		go func() {
			resp, err := pl.Do(req)
			if resp != nil {
				status = resp.StatusCode
			}
			done <- err
		}()
		synctest.Wait() // throttled once, asleep in azcore's 20 s backoff
		time.Sleep(time.Second)
		openScope(gov, 5)
		err = <-done
		if !reset {
			t.Fatal("the breaker's opening did not cut azcore's sleep")
		}
		if err != nil || status != http.StatusOK || len(bodies) != 2 || bodies[1] != `{"a":1}` {
			t.Fatalf("the retry let through after the cut ended with %d, %v; bodies sent %q: want 200, and the body sent twice", status, err, bodies)
		}
		if body.closed != 1 {
			t.Fatalf("the body was closed %d times, want once", body.closed)
		}
		// Without a cut, too, the body is sent and closed once.
		body = &fileBody{Reader: bytes.NewReader([]byte(`{"b":2}`))}
		if err := req.SetBody(body, "application/json"); err != nil {
			t.Fatal(err)
		}
		if resp, err := pl.Do(req); err != nil || resp.StatusCode != http.StatusOK || bodies[2] != `{"b":2}` || body.closed != 1 {
			t.Fatalf("a plain PUT: %v, %v; bodies %q, closed %d times; want 200, the body sent and closed once", resp, err, bodies, body.closed)
		}
	})
}

// seekPanics is a request body whose Seek panics once armed.
type seekPanics struct {
	*bytes.Reader
	armed bool
}

func (b *seekPanics) Seek(off int64, whence int) (int64, error) {
	if b.armed {
		panic(boom)
	}
	return b.Reader.Seek(off, whence)
}

func (*seekPanics) Close() error { return nil }

// A request body whose Seek panics as the per-call policy readies it
// (hands azcore a body it cannot close): the panic reaches the caller as
// it was, and the request gets its own context back, as on any panic
// below the policy.
func TestABodyThatPanicsLeavesTheRequestItsContext(t *testing.T) {
	gov := newGov(t, resilience.Config{})
	o := cloudgazure.ClientOptions(nil, cloudgazure.WithGovernor(gov))
	o.Transport = putTransport{new([]string)}
	pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, &o.ClientOptions)
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "caller")
	req, err := runtime.NewRequest(ctx, http.MethodPut, "http://127.0.0.1:1/subscriptions/"+subA+
		"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v?api-version=1")
	if err != nil {
		t.Fatal(err)
	}
	body := &seekPanics{Reader: bytes.NewReader([]byte(`{"a":1}`))}
	if err := req.SetBody(body, "application/json"); err != nil {
		t.Fatal(err)
	}
	body.armed = true
	func() {
		defer func() {
			if r := recover(); r != boom {
				t.Fatalf("recovered %v, want the body's panic", r)
			}
		}()
		_, _ = pl.Do(req)
	}()
	if got := req.Raw().Context(); got != ctx {
		t.Fatalf("after the panic the request's context is %T, want the caller's", got)
	}
}
