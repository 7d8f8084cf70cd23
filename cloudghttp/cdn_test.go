//go:build go1.25

package cloudghttp_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// What a CDN in front of the API answers when it could not get the
// origin's answer: Cloudflare's 520 (an empty or unreadable answer), 521
// (connection refused), 522 (connection timed out), 523 (origin
// unreachable) and 524 (no answer in time after the connection). The
// origin was, or may be, down for a moment: a transient answer, as a 502
// or a 504 is.

var originFailures = []int{520, 521, 522, 523, 524}

// A GET answered with an origin failure is sent again, and the answer
// counts as a transient error, not as the fatal answer of a live scope.
func TestCDNOriginFailureIsRetried(t *testing.T) {
	for _, code := range originFailures {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(code))
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items/1", nil)
				resp, err := client(newMem(f), gov, quick).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				tot := gov.Summary(stats).Totals
				if resp.StatusCode != 200 || len(f.recorded()) != 2 || tot.TransientErrors != 1 || tot.Retries != 1 {
					t.Fatalf("status %d after %d attempts, totals %v; want 200 after 2, one transient error and one retry", resp.StatusCode, len(f.recorded()), tot)
				}
			})
		})
	}
}

// A POST answered with an origin failure is not sent again: a 524 comes
// after the origin took the request and may have acted on it, and the
// others are no surer. It goes back to the caller, lost as failed (the
// service failed it), and the breaker counts it.
func TestCDNOriginFailureOfAPostIsNotResent(t *testing.T) {
	for _, code := range originFailures {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(code))
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
				if resp.StatusCode != code || len(f.recorded()) != 1 || tot.TransientErrors != 1 || tot.Failed != 1 {
					t.Fatalf("status %d after %d attempts, totals %v; want the %d after 1, one transient error, lost as failed", resp.StatusCode, len(f.recorded()), tot, code)
				}
				if ledger.Count(resilience.LossFailed) != 1 {
					t.Fatalf("ledger %q, want the POST lost as failed", ledger.Describe())
				}
				if br := gov.Inspect(apiScope).Breaker; br.Failures != 1 {
					t.Fatalf("breaker %+v, want one failure", br)
				}
			})
		})
	}
}

// WithRetryNonIdempotent sends a POST again after an origin failure, as it
// does after a 502 or a 504.
func TestCDNOriginFailureOfAPostIsResentWhenAllowed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		f.script(status(522))
		c := client(newMem(f), newGov(t, resilience.Config{}), quick, cloudghttp.WithRetryNonIdempotent())
		resp := do(t, c, http.MethodPost, "http://api.test/orders", body(`{"item":1}`))
		readAll(t, resp)
		if hits := f.recorded(); resp.StatusCode != 200 || len(hits) != 2 || hits[1].body != `{"item":1}` {
			t.Fatalf("status %d after %+v, want 200 after the body sent twice", resp.StatusCode, hits)
		}
	})
}

// A CDN's answers about the origin's TLS (Cloudflare's 525, a failed
// handshake, and 526, an invalid certificate) are the origin's
// configuration, which no retry mends: fatal, as before.
func TestCDNTLSFailureIsFatal(t *testing.T) {
	for _, code := range []int{525, 526} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				f.script(status(code))
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items/1", nil)
				resp, err := client(newMem(f), gov, quick).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				if tot := gov.Summary(stats).Totals; resp.StatusCode != code || len(f.recorded()) != 1 || tot.TransientErrors != 0 {
					t.Fatalf("status %d after %d attempts, totals %v; want the %d after 1, fatal", resp.StatusCode, len(f.recorded()), tot, code)
				}
			})
		})
	}
}
