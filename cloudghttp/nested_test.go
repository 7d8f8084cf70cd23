//go:build go1.25

package cloudghttp_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
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
