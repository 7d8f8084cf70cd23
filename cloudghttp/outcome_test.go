//go:build go1.25

package cloudghttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// What the caller gets when the retries end, and what is recorded.

// A throttle answered to the last attempt goes back as the response it
// is, recorded as given up; the bodies of the responses retried were read
// to their end and closed, the last one is left to the caller.
func TestLastThrottleIsReturnedAndGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.forever(reply{status: 429, header: http.Header{"Retry-After": {"1"}}, body: `{"message":"slow down"}`})
		gov := newGov(t, resilience.Config{})
		mem := newMem(f)
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "items")
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
		resp, err := client(mem, gov, withAttempts(3)).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if n := mem.closed.Load(); n != 2 {
			t.Fatalf("%d bodies closed before the caller's turn, want the 2 retried", n)
		}
		if n := mem.ateEOF.Load(); n != 2 {
			t.Fatalf("%d bodies drained, want the 2 retried", n)
		}
		if got := readAll(t, resp); resp.StatusCode != 429 || got != `{"message":"slow down"}` {
			t.Fatalf("status %d body %q, want the last 429 with its body", resp.StatusCode, got)
		}
		if len(f.recorded()) != 3 {
			t.Fatalf("%d attempts, want 3", len(f.recorded()))
		}
		tot := gov.Summary(stats).Totals
		if tot.Calls != 3 || tot.Throttled != 3 || tot.Retries != 2 || tot.GaveUp != 1 {
			t.Fatalf("totals %v, want 3 calls, 3 throttles, 2 retries, 1 give-up", tot)
		}
		if !ledger.Degraded() {
			t.Fatal("the ledger does not show the call lost to throttling")
		}
		if br := gov.Inspect(apiScope).Breaker; br.Failures != 1 {
			t.Fatalf("breaker %+v, want one failure", br)
		}
	})
}

// A transient error status goes back as a response too, once the retries
// are spent: a failure, not a give-up.
func TestLastTransientAnswerIsReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.forever(status(502))
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
		resp, err := client(newMem(f), gov, quick).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		// The provider's max_retries (8): nine attempts.
		if resp.StatusCode != 502 || len(f.recorded()) != 9 {
			t.Fatalf("status %d after %d attempts, want the 502 after 9", resp.StatusCode, len(f.recorded()))
		}
		if tot := gov.Summary(stats).Totals; tot.TransientErrors != 9 || tot.GaveUp != 0 || tot.Retries != 8 {
			t.Fatalf("totals %v, want 9 transient errors, 8 retries, no give-up", tot)
		}
	})
}

// An empty retry budget stops a failing connection's retries with the
// budget's error, which wraps the connection's.
func TestEmptyBudgetStopsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		for range 5 {
			f.script(reply{fail: syscall.ECONNRESET})
		}
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{RetryBudget: intp(0)}})
		req, _ := http.NewRequest(http.MethodGet, "http://api.test/items", nil)
		_, err := client(newMem(f), gov, quick).Do(req)
		var be *resilience.RetryBudgetExhaustedError
		if !errors.As(err, &be) || !errors.Is(err, syscall.ECONNRESET) || !errors.Is(err, state.ErrBudgetExhausted) {
			t.Fatalf("err %v, want the budget's error wrapping ECONNRESET", err)
		}
		// Two free retries, then the budget.
		if n := len(f.recorded()); n != 3 {
			t.Fatalf("%d attempts, want 3", n)
		}
	})
}

// A request whose scope has no provider, or whose provider is disabled,
// goes straight through: one attempt, nothing counted.
func TestUngovernedRequests(t *testing.T) {
	off := false
	cases := []struct {
		name  string
		scope func(*http.Request) resilience.Scope
		cfg   resilience.Config
	}{
		{"no provider", func(*http.Request) resilience.Scope { return resilience.Scope{} }, resilience.Config{}},
		{"nil scope function", nil, resilience.Config{}},
		{"provider disabled", scopeOf, resilience.Config{GCP: resilience.ProviderConfig{Enabled: &off}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(429, "Retry-After", "1"))
				gov := newGov(t, tc.cfg)
				c := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), tc.scope, cloudghttp.WithGovernor(gov))}
				ctx, stats := resilience.WithStats(context.Background())
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
				resp := send(t, c, req)
				readAll(t, resp)
				if resp.StatusCode != 429 || len(f.recorded()) != 1 {
					t.Fatalf("status %d after %d attempts, want the 429 after 1", resp.StatusCode, len(f.recorded()))
				}
				if tot := gov.Summary(stats).Totals; tot.Calls != 0 {
					t.Fatalf("totals %v, want nothing counted", tot)
				}
			})
		})
	}
}

// The zero Transport and a nil base send with http.DefaultTransport.
func TestZeroTransportUsesDefaultTransport(t *testing.T) {
	f := &fakeAPI{}
	srv := loopback(t, f)
	for _, tr := range []http.RoundTripper{&cloudghttp.Transport{}, cloudghttp.NewTransport(nil, scopeOf, cloudghttp.WithGovernor(newGov(t, resilience.Config{})))} {
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/items")
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); got != "ok" {
			t.Fatalf("body %q", got)
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

// A body whose GetBody fails cannot be sent again: the throttle goes back
// to the caller as the response it is, recorded as given up.
func TestBodyThatCannotBeRewoundEndsTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(429))
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://api.test/items/1", body("x"))
		req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("the body is gone") }
		resp, err := client(newMem(f), gov, quick).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); resp.StatusCode != 429 || got != "Too Many Requests" || len(f.recorded()) != 1 {
			t.Fatalf("status %d body %q after %d attempts, want the 429 after 1", resp.StatusCode, got, len(f.recorded()))
		}
		if tot := gov.Summary(stats).Totals; tot.Throttled != 1 || tot.GaveUp != 1 || tot.Retries != 0 {
			t.Fatalf("totals %v, want the throttle given up, no retry", tot)
		}
		if br := gov.Inspect(apiScope).Breaker; br.Failures != 1 {
			t.Fatalf("breaker %+v, want one failure", br)
		}
	})
}

// An empty retry budget stops the retries of error answers too: the
// caller gets the last response, not the budget's error, and a throttle
// is given up.
func TestEmptyBudgetReturnsTheLastResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.forever(reply{status: 429, header: http.Header{"Retry-After": {"1"}}, body: "the last"})
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{RetryBudget: intp(0)}})
		ctx, stats := resilience.WithStats(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
		resp, err := client(newMem(f), gov, quick).Do(req)
		if err != nil {
			t.Fatalf("err %v, want the last response", err)
		}
		if got := readAll(t, resp); resp.StatusCode != 429 || got != "the last" {
			t.Fatalf("status %d body %q, want the last 429", resp.StatusCode, got)
		}
		// Two free retries, then the budget.
		tot := gov.Summary(stats).Totals
		if len(f.recorded()) != 3 || tot.Retries != 2 || tot.GaveUp != 1 {
			t.Fatalf("%d attempts, totals %v; want 3, 2 retries, the throttle given up", len(f.recorded()), tot)
		}
		// The budget, not the service, stopped the call: no breaker failure.
		if br := gov.Inspect(apiScope).Breaker; br.Failures != 0 {
			t.Fatalf("breaker %+v, want no failure", br)
		}
	})
}

// A throttle whose retry the breaker refuses (another call opened it
// while the retry waited) goes back as its response, given up.
func TestThrottleRefusedByTheBreakerIsGivenUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(429, "Retry-After", "10"), status(500))
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1}})
		mem := slowTransport{base: newMem(f), delay: map[string]time.Duration{"/b": time.Second}}
		once := client(mem, gov, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		var wg sync.WaitGroup
		wg.Go(func() { readAll(t, do(t, once, http.MethodGet, "http://api.test/b", nil)) }) // its 500 opens the breaker at t=1s
		synctest.Wait()
		ctx, stats := resilience.WithStats(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/a", nil)
		resp, err := client(mem, gov, quick).Do(req)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); resp.StatusCode != 429 || got != "Too Many Requests" || len(f.recorded()) != 2 {
			t.Fatalf("status %d body %q after %d requests, want the 429 and no retry", resp.StatusCode, got, len(f.recorded()))
		}
		if tot := gov.Summary(stats).Totals; tot.Calls != 1 || tot.Throttled != 1 || tot.GaveUp != 1 || tot.Retries != 0 {
			t.Fatalf("totals %v, want the throttle given up", tot)
		}
	})
}

// admissionRec records what the governor tells a scheduler of a task's
// first call (resilience.WithAdmission).
type admissionRec struct{ decided, deferred atomic.Int32 }

func (a *admissionRec) Decided()                      { a.decided.Add(1) }
func (a *admissionRec) Deferred(time.Duration, error) { a.deferred.Add(1) }

// A request of a disabled provider goes at once, ungoverned, and decides
// the admission its context carries (a scheduler's hold on the scope's
// next task, package pool's), as the core's calls of a disabled provider
// do: it used to decide nothing, and the scheduler held the scope's next
// task back until its hold timed out.
func TestADisabledProvidersRequestDecidesItsAdmission(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeAPI{}
			gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{Enabled: &enabled}})
			c := &http.Client{Transport: cloudghttp.NewTransport(newMem(f), scopeOf, cloudghttp.WithGovernor(gov))}
			var a admissionRec
			ctx := resilience.WithAdmission(context.Background(), &a, 0)
			for range 2 {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
				resp := send(t, c, req)
				readAll(t, resp)
			}
			if a.decided.Load() != 1 || a.deferred.Load() != 0 {
				t.Errorf("enabled %v: decided %d times, deferred %d; want 1 and 0", enabled, a.decided.Load(), a.deferred.Load())
			}
		})
	}
}
