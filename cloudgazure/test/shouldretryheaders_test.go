package test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// The caller's ShouldRetry, which ClientOptions keeps, is given each
// answer as the server sent it: a 429's Retry-After is there for it to
// read, though the per-retry policy hides the delay headers from azcore's
// own reading of them (azcore sleeps its backoff, the Guard waits out the
// hint). Before, ShouldRetry saw the 429 without its Retry-After, so that
// a ShouldRetry that decides by the server's hint (retry a short one,
// give a long one up) decided on a header that was not there.
func TestShouldRetrySeesTheAnswersDelayHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{RetryBudget: ptr(10)}})
		var seen []string
		base := *e.base
		base.Retry.ShouldRetry = func(resp *http.Response, err error) bool {
			if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
				return false
			}
			seen = append(seen, resp.Header.Get("Retry-After"))
			return true
		}
		e.base = &base
		e.srv.script(routeVnetGet, throttled("7"), throttled("3"))
		start := time.Now()
		if _, err := e.vnets(subA).Get(context.Background(), "rg", "vnet", nil); err != nil {
			t.Fatalf("got %v, want the vnet after two retries", err)
		}
		if len(seen) != 2 || seen[0] != "7" || seen[1] != "3" {
			t.Fatalf("ShouldRetry saw the 429s' Retry-After as %q, want [\"7\" \"3\"]", seen)
		}
		// The hints are still the Guard's to wait out, not azcore's to
		// give up on: the retries went after them.
		if d := time.Since(start); d < 10*time.Second {
			t.Fatalf("the request ended after %v, want the two hints (7 s, 3 s) waited out", d)
		}
	})
}
