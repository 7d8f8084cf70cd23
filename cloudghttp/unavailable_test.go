//go:build go1.25

package cloudghttp_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// A 503 slows the scope as a throttle does, but it does not say that the
// server left the request alone, as a 429 does: a gateway answers 503 for
// an upstream that reset the connection after it took the request (Envoy's
// "upstream connect error or disconnect/reset before headers"), and RFC
// 9110 asks a client not to send a request that is not idempotent again
// unless it knows that the first was not applied. A POST is not sent
// again after a 503: it goes back to the caller, given up, and the scope
// is slowed and paused all the same.
func TestUnavailablePostIsNotResent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(503, "Retry-After", "2"))
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "orders")
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://api.test/orders", body(`{"item":1}`))
		resp, err := client(newMem(f), gov, quick).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		tot := gov.Summary(stats).Totals
		if resp.StatusCode != 503 || len(f.recorded()) != 1 || tot.Throttled != 1 || tot.GaveUp != 1 {
			t.Fatalf("status %d after %d attempts, totals %v; want the 503 after 1, throttled and given up", resp.StatusCode, len(f.recorded()), tot)
		}
		if ledger.Count(resilience.LossGaveUp) != 1 {
			t.Fatalf("ledger %q, want the POST given up", ledger.Describe())
		}
		if snap := gov.Inspect(apiScope); snap.Leaf.Rate >= snap.Leaf.Ceiling || snap.Leaf.Paused <= 0 {
			t.Fatalf("leaf %+v, want it slowed and paused by the 503", snap.Leaf)
		}
	})
}

// A POST that says it may be sent twice (an Idempotency-Key), or a
// Transport made WithRetryNonIdempotent, is sent again after a 503, body
// and all.
func TestUnavailablePostIsResentWhenSafe(t *testing.T) {
	for name, c := range map[string]struct {
		hdr  []string
		opts []cloudghttp.Option
	}{
		"idempotency key":        {hdr: []string{"Idempotency-Key", "k-1"}},
		"WithRetryNonIdempotent": {opts: []cloudghttp.Option{cloudghttp.WithRetryNonIdempotent()}},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(503))
				cl := client(newMem(f), newGov(t, resilience.Config{}), append([]cloudghttp.Option{quick}, c.opts...)...)
				resp := do(t, cl, http.MethodPost, "http://api.test/orders", body(`{"item":1}`), c.hdr...)
				readAll(t, resp)
				if hits := f.recorded(); resp.StatusCode != 200 || len(hits) != 2 || hits[1].body != `{"item":1}` {
					t.Fatalf("status %d after %+v, want 200 after the body sent twice", resp.StatusCode, hits)
				}
			})
		})
	}
}
