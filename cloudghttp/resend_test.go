//go:build go1.25

package cloudghttp_test

import (
	"context"
	"io"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// What the Transport sends again, and what it never does.

// quick keeps the backoff of these tests short (they run in virtual time
// anyway): the rules, not the waits, are under test.
var quick = cloudghttp.WithPolicy(resilience.RetryPolicy{BaseDelay: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})

// do sends a request of method on url with the body r and the headers
// hdr (name, value pairs) with c, and returns the response; an error
// fails the test.
func do(t *testing.T, c *http.Client, method, url string, r io.Reader, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return send(t, c, req)
}

// send sends req with c and returns the response; an error fails the
// test.
func send(t testing.TB, c *http.Client, req *http.Request) *http.Response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestIdempotentMethodsRetryTransientAnswers(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete} {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(500), status(502), status(504), status(408))
				c := client(newMem(f), newGov(t, resilience.Config{}), quick)
				resp := do(t, c, method, "http://api.test/items/1", nil)
				readAll(t, resp)
				if resp.StatusCode != 200 || len(f.recorded()) != 5 {
					t.Fatalf("status %d after %d attempts, want 200 after 5", resp.StatusCode, len(f.recorded()))
				}
			})
		})
	}
}

func TestConnectionErrorsAreRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(reply{fail: syscall.ECONNRESET}, reply{fail: syscall.ECONNREFUSED})
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
		resp, err := client(newMem(f), gov, quick).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		tot := gov.Summary(stats).Totals
		if resp.StatusCode != 200 || tot.TransientErrors != 2 || tot.Retries != 2 || tot.Calls != 3 {
			t.Fatalf("status %d, totals %v; want 200 after 2 transient errors and 2 retries", resp.StatusCode, tot)
		}
	})
}

// A 429 says the server did not act on the request: a POST whose body
// can be rewound is sent again, body and all (after a 503, which does not
// say so, it is not: TestUnavailablePostIsNotResent).
func TestThrottledPostIsResentWithItsBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(429), status(429, "Retry-After", "1"))
		c := client(newMem(f), newGov(t, resilience.Config{}), quick)
		resp := do(t, c, http.MethodPost, "http://api.test/items", body(`{"name":"a"}`))
		readAll(t, resp)
		hits := f.recorded()
		if resp.StatusCode != 200 || len(hits) != 3 {
			t.Fatalf("status %d after %d attempts, want 200 after 3", resp.StatusCode, len(hits))
		}
		for i, h := range hits {
			if h.body != `{"name":"a"}` {
				t.Errorf("attempt %d sent body %q", i+1, h.body)
			}
		}
	})
}

// A 408 says the server did not receive the whole request, and so did not
// act on it; RFC 9110 (section 15.5.9) lets a client repeat it whatever its
// method. A POST whose body can be rewound is sent again, body and all, as
// after a 429; one whose body cannot be is not.
func TestRequestTimeoutPostIsResent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(http.StatusRequestTimeout))
		c := client(newMem(f), newGov(t, resilience.Config{}), quick)
		resp := do(t, c, http.MethodPost, "http://api.test/items", body(`{"name":"a"}`))
		readAll(t, resp)
		hits := f.recorded()
		if resp.StatusCode != 200 || len(hits) != 2 || hits[1].body != `{"name":"a"}` {
			t.Fatalf("status %d after %d attempts (%+v), want 200 after 2, the body sent again", resp.StatusCode, len(hits), hits)
		}

		f = &fakeAPI{}
		f.script(status(http.StatusRequestTimeout))
		c = client(newMem(f), newGov(t, resilience.Config{}), quick)
		resp = do(t, c, http.MethodPost, "http://api.test/items", noRewind("x"))
		readAll(t, resp)
		if resp.StatusCode != http.StatusRequestTimeout || len(f.recorded()) != 1 {
			t.Fatalf("status %d after %d attempts, want the 408 after 1: its body cannot be rewound", resp.StatusCode, len(f.recorded()))
		}
	})
}

// WithPolicy's MaxAttempts 1 turns the Transport's own retries off, but
// for a provider that waits for its breakers' verdicts (breaker_wait): a
// call that failed on a transient answer counts its failure, waits for the
// breaker's verdict (here its cooldown, 60 s, after the failure opened it)
// and goes again with its attempts renewed, within its deadline, as every
// call of such a provider does.
func TestOneAttemptIsRenewedByABreakerVerdictWithBreakerWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(500))
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1, BreakerWait: true}})
		c := client(newMem(f), gov, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		start := time.Now()
		resp := do(t, c, http.MethodGet, "http://api.test/items", nil)
		readAll(t, resp)
		hits := f.recorded()
		if resp.StatusCode != 200 || len(hits) != 2 || hits[1].at.Sub(start) != time.Minute {
			t.Fatalf("status %d after %d attempts, the last at %v; want 200 after 2, the second at the breaker's cooldown, 1m", resp.StatusCode, len(hits), hits[len(hits)-1].at.Sub(start))
		}
	})
}

// A transient answer to a POST may come after the server acted on it: it
// goes back to the caller, recorded as a failure.
func TestTransientPostIsNotResent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(500))
		gov := newGov(t, resilience.Config{})
		c := client(newMem(f), gov, quick)
		resp := do(t, c, http.MethodPost, "http://api.test/items", body("x"))
		readAll(t, resp)
		if resp.StatusCode != 500 || len(f.recorded()) != 1 {
			t.Fatalf("status %d after %d attempts, want the 500 after 1", resp.StatusCode, len(f.recorded()))
		}
		if got := gov.Inspect(apiScope).Breaker.Failures; got != 1 {
			t.Fatalf("breaker failures %d, want 1 (the call failed)", got)
		}
	})
}

// A call the Transport may not send again ends, in the observer's events,
// stopped for the reason "sdk" (the integration's own loop), as package
// observe and RoundTrip say: a transient answer to a POST is lost as
// failed, a throttle to a body that cannot be rewound is given up.
func TestCallNotSentAgainIsStoppedByTheIntegration(t *testing.T) {
	for _, c := range []struct {
		code int
		body io.Reader
		want string
	}{
		{500, body("x"), "lost failed sdk"},
		{429, noRewind("x"), "gave_up  sdk"},
	} {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeAPI{}
			f.script(status(c.code))
			var stops []string
			gov, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(observe.Func(func(e observe.Event) {
				if e.Kind == observe.GaveUp || e.Kind == observe.Lost {
					stops = append(stops, e.Kind.String()+" "+e.Loss+" "+e.Reason)
				}
			})))
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, do(t, client(newMem(f), gov, quick), http.MethodPost, "http://api.test/items", c.body))
			if len(stops) != 1 || stops[0] != c.want || len(f.recorded()) != 1 {
				t.Fatalf("%d: %q after %d attempts, want [%s] after 1", c.code, stops, len(f.recorded()), c.want)
			}
		})
	}
}

func TestIdempotencyKeyOrOptionAllowsTransientPostRetries(t *testing.T) {
	cases := []struct {
		name string
		opt  cloudghttp.Option
		hdr  []string
	}{
		{"idempotency-key", nil, []string{"Idempotency-Key", "k1"}},
		{"x-idempotency-key", nil, []string{"X-Idempotency-Key", "k1"}},
		{"WithRetryNonIdempotent", cloudghttp.WithRetryNonIdempotent(), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(500), status(502))
				c := client(newMem(f), newGov(t, resilience.Config{}), quick, tc.opt)
				resp := do(t, c, http.MethodPatch, "http://api.test/items/1", body("x"), tc.hdr...)
				readAll(t, resp)
				if resp.StatusCode != 200 || len(f.recorded()) != 3 {
					t.Fatalf("status %d after %d attempts, want 200 after 3", resp.StatusCode, len(f.recorded()))
				}
			})
		})
	}
}

// A body without GetBody cannot be had again: the request is sent once,
// even with WithRetryNonIdempotent, and a throttle not retried is a
// give-up.
func TestBodyWithoutGetBodyIsSentOnce(t *testing.T) {
	for _, method := range []string{http.MethodPut, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(429))
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				req, _ := http.NewRequestWithContext(ctx, method, "http://api.test/items/1", noRewind("x"))
				resp, err := client(newMem(f), gov, quick, cloudghttp.WithRetryNonIdempotent()).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				tot := gov.Summary(stats).Totals
				if resp.StatusCode != 429 || len(f.recorded()) != 1 || tot.GaveUp != 1 || tot.Throttled != 1 {
					t.Fatalf("status %d after %d attempts, totals %v; want the 429 after 1, throttled and given up", resp.StatusCode, len(f.recorded()), tot)
				}
			})
		})
	}
}

// A fatal answer is final: no retry, and the breaker hears the service
// answered.
func TestFatalAnswerIsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(404))
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items/9", nil)
		resp, err := client(newMem(f), gov, quick).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); resp.StatusCode != 404 || got != "Not Found" || len(f.recorded()) != 1 {
			t.Fatalf("status %d body %q after %d attempts, want the 404 after 1", resp.StatusCode, got, len(f.recorded()))
		}
		tot := gov.Summary(stats).Totals
		if tot.Calls != 1 || tot.GaveUp != 0 || tot.Throttled != 0 || tot.TransientErrors != 0 {
			t.Fatalf("totals %v, want one call and nothing else", tot)
		}
	})
}

// MaxAttempts 1 turns the Transport's retries off: each throttle is
// still learned from.
func TestPolicyBoundsAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.forever(status(503))
		gov := newGov(t, resilience.Config{})
		c := client(newMem(f), gov, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		resp := do(t, c, http.MethodGet, "http://api.test/items", nil)
		readAll(t, resp)
		if resp.StatusCode != 503 || len(f.recorded()) != 1 {
			t.Fatalf("status %d after %d attempts, want the 503 after 1", resp.StatusCode, len(f.recorded()))
		}
		if leaf := gov.Inspect(apiScope).Leaf; leaf.Rate >= leaf.Ceiling {
			t.Fatalf("leaf %+v not slowed by the throttle", leaf)
		}
	})
}
