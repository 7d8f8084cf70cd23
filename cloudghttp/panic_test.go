//go:build go1.25

package cloudghttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// boom is the value the user's code panics with: the caller must get this
// very value back.
var boom = &struct{ s string }{"boom"}

// panicky is a base transport whose RoundTrip panics.
type panicky struct{}

func (panicky) RoundTrip(*http.Request) (*http.Response, error) { panic(boom) }

// panicReader is a request body whose Read panics.
type panicReader struct{}

func (panicReader) Read([]byte) (int, error) { panic(boom) }

// sendPanicking sends req and returns what it panicked with.
func sendPanicking(c *http.Client, req *http.Request) (r any) {
	defer func() { r = recover() }()
	resp, err := c.Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	return nil
}

// Code of the caller's that panics during a request (the base transport,
// the request body's Read, GetBody before a retry) ends the call as lost
// to the panic, once, and the panic reaches the caller as it was: the
// slot is given back (the next request, under a cap of one, goes at
// once), and the run's calls are the panicked one and the next one's
// success.
func TestPanicIsRecordedAndGoesOn(t *testing.T) {
	cases := map[string]struct {
		base func(http.RoundTripper) http.RoundTripper
		req  func(ctx context.Context) *http.Request
		f    func(f *fakeAPI)
	}{
		"base transport": {
			base: func(rt http.RoundTripper) http.RoundTripper { return panicky{} },
			req: func(ctx context.Context) *http.Request {
				r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
				return r
			},
		},
		"body read": {
			req: func(ctx context.Context) *http.Request {
				r, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://api.test/items", io.NopCloser(panicReader{}))
				return r
			},
		},
		"GetBody before a retry": {
			f: func(f *fakeAPI) { f.script(status(503)) },
			req: func(ctx context.Context) *http.Request {
				r, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://api.test/items", strings.NewReader("x"))
				r.GetBody = func() (io.ReadCloser, error) { panic(boom) }
				return r
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				if tc.f != nil {
					tc.f(f)
				}
				var base http.RoundTripper = newMem(f)
				if tc.base != nil {
					base = tc.base(base)
				}
				gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{MaxConcurrency: 1}})
				c := client(base, gov, quick)
				ctx, stats, ledger := newRun("items")
				if r := sendPanicking(c, tc.req(ctx)); r != boom {
					t.Fatalf("the caller got %v, want the panic's own value", r)
				}
				if tc.base != nil {
					c = client(newMem(f), gov, quick)
				}
				next, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				req, _ := http.NewRequestWithContext(next, http.MethodGet, "http://api.test/items", nil)
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("the next request: %v (the slot was not given back)", err)
				}
				readAll(t, resp)
				lostOnly(t, gov, stats, ledger, resilience.LossPanicked, 1)
				if tot := gov.Summary(stats).Totals; tot.Calls != 2 {
					t.Errorf("%d calls counted, want 2: the panicked one and the next one", tot.Calls)
				}
			})
		})
	}
}

// A GetBody that panics before a retry leaves nothing open behind the
// panic: the body of the answer it would have retried, which the caller
// never gets, is closed (over a network, its connection would otherwise
// stay taken).
func TestGetBodyPanicClosesTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(503))
		mem := newMem(f)
		c := client(mem, newGov(t, resilience.Config{}), quick)
		req, _ := http.NewRequest(http.MethodPut, "http://api.test/items", strings.NewReader("x"))
		req.GetBody = func() (io.ReadCloser, error) { panic(boom) }
		if r := sendPanicking(c, req); r != boom {
			t.Fatalf("the caller got %v, want the panic's own value", r)
		}
		if n := mem.closed.Load(); n != 1 {
			t.Fatalf("%d response bodies closed, want the 503's", n)
		}
	})
}
