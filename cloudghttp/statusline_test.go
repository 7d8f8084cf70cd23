//go:build go1.25

package cloudghttp_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/resilience"
)

// reasonTransport gives every answer of a status the reason phrase the
// server sent on the status line, as net/http's client reports it
// (Response.Status).
type reasonTransport struct {
	base   http.RoundTripper
	reason map[int]string // status -> "400 Rate Exceeded"
}

func (rt reasonTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(req)
	if err == nil {
		if s, ok := rt.reason[resp.StatusCode]; ok {
			resp.Status = s
		}
	}
	return resp, err
}

// A status on no list (400) decides nothing by itself: the server's words
// do, and the Transport's are the status line. "400 Rate Exceeded" is a
// throttle: the scope's rate is halved and the request, even a POST, is
// sent again.
func TestStatusLineThatSaysThrottledIsAThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(400))
		gov := newGov(t, resilience.Config{})
		base := reasonTransport{base: newMem(f), reason: map[int]string{400: "400 Rate Exceeded"}}
		ctx, stats := resilience.WithStats(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://api.test/graphql", body(`{"query":"{}"}`))
		resp, err := client(base, gov, quick).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); resp.StatusCode != 200 || got != "ok" || len(f.recorded()) != 2 {
			t.Fatalf("status %d body %q after %d attempts, want 200 after a retry", resp.StatusCode, got, len(f.recorded()))
		}
		tot := gov.Summary(stats).Totals
		if tot.Throttled != 1 || tot.Retries != 1 || tot.GaveUp != 0 {
			t.Fatalf("totals %v, want one throttle retried", tot)
		}
		if leaf := gov.Inspect(apiScope).Leaf; leaf.Rate != leaf.Ceiling/2 {
			t.Fatalf("leaf %+v, want the rate halved", leaf)
		}
	})
}

// The request's URL is not the server's answer: a 404 for a path that
// mentions throttling is a fatal answer, sent once and counted as nothing
// else, as any 404 is.
func TestURLIsNotSearchedForThrottling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(404))
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/throttling-rules/rate exceeded", nil)
		resp, err := client(newMem(f), gov, quick).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if readAll(t, resp); resp.StatusCode != 404 || len(f.recorded()) != 1 {
			t.Fatalf("status %d after %d attempts, want the 404 after 1", resp.StatusCode, len(f.recorded()))
		}
		if tot := gov.Summary(stats).Totals; tot.Throttled != 0 || tot.GaveUp != 0 || tot.Retries != 0 {
			t.Fatalf("totals %v, want nothing but the call", tot)
		}
	})
}
