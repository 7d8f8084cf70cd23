//go:build go1.25

package cloudghttp_test

import (
	"context"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// signingBase fetches a token through a governed client, with the
// request's context, before it sends each request with base: a
// credential fetched while signing, as an SDK's signer does.
type signingBase struct {
	tokens *http.Client
	base   http.RoundTripper
}

func (s signingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	treq, _ := http.NewRequestWithContext(req.Context(), http.MethodPost, "http://token.test/token", nil)
	resp, err := s.tokens.Do(treq)
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	_ = resp.Body.Close()
	return s.base.RoundTrip(req)
}

// A governed call made by the base transport with the request's context
// (a token fetched while signing) is nested in the request's attempt: it
// never waits for the slot the attempt holds, as a call nested in a
// resilience.Do made WithNestedCalls does not; with max_concurrency 1 it
// waited for it until the request's deadline.
func TestACallMadeByTheBaseTransportIsNested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		gov := newGov(t, oneSlot())
		mem := newMem(f)
		c := client(signingBase{tokens: client(mem, gov, quick), base: mem}, gov, quick)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("err %v after %v, want the answer at once: the token's call waited for the slot its own request held", err, time.Since(start))
		}
		if got := readAll(t, resp); resp.StatusCode != 200 || got != "ok" || time.Since(start) != 0 {
			t.Fatalf("status %d body %q after %v, want 200 ok at once", resp.StatusCode, got, time.Since(start))
		}
		if resp.Request != req {
			t.Fatal("the response's Request is not the caller's")
		}
		if n := len(f.recorded()); n != 2 {
			t.Fatalf("%d requests, want 2: the token and the call", n)
		}
		if s := gov.Inspect(apiScope); s.InFlight != 0 || s.Waiting != 0 {
			t.Fatalf("%d in flight, %d waiting after the call, want none", s.InFlight, s.Waiting)
		}
	})
}

// keepingBase answers every request with 200 ok and, as net/http's
// dialer and an SDK's background refresh do, starts a governed call of
// the same account with the request's context that it does not wait for:
// a context that outlives the attempt it was sent with.
type keepingBase struct {
	gov  *resilience.Governor
	wg   *sync.WaitGroup
	late resilience.Scope
}

func (k keepingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	k.wg.Go(func() {
		_ = resilience.Do(ctx, k.late, func(context.Context) error { return nil }, resilience.WithGovernor(k.gov))
	})
	runtime.Gosched()
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

// A context is safe for simultaneous use by goroutines, and the one a
// request's attempt is sent with is no exception: a goroutine the base
// transport starts, and does not wait for, may make its governed call
// with it while the request gives its slot back, records its answer and
// ends. With the account's bulkhead full (another call holds its other
// slot), that call looks the request up as the call it is nested in, and
// reads nothing the request writes meanwhile (run with -race): it is
// nested in the request while its attempt runs only, as a call nested in
// a resilience.Do made WithNestedCalls is.
func TestAContextOutlivingTheAttemptIsSafe(t *testing.T) {
	fast := 1e9 // no call waits for a token
	gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{
		MaxConcurrency: 2, MaxRPS: fast, Burst: fast, GlobalMaxRPS: &fast, GlobalBurst: fast, AccountMaxRPS: &fast, AccountBurst: fast,
	}})
	parked, err := gov.Begin(context.Background(), resilience.Scope{Provider: "gcp", Account: apiScope.Account, Service: "parked"})
	if err != nil {
		t.Fatal(err)
	}
	if err := parked.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	late := resilience.Scope{Provider: "gcp", Account: apiScope.Account, Service: "tokens"}
	c := client(keepingBase{gov: gov, wg: &wg, late: late}, gov, quick)
	for range 100 {
		resp, err := c.Get("http://api.test/items")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	parked.End(nil)
	wg.Wait()
	if s := gov.Inspect(apiScope); s.InFlight != 0 || s.Waiting != 0 {
		t.Fatalf("%d in flight, %d waiting after the calls, want none", s.InFlight, s.Waiting)
	}
}
