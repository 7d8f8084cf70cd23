//go:build go1.25

package cloudghttp_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/resilience"
)

// brokenTokenError is a token server's answer, as codedTokenError gives
// it (its status by method and in its Response field), whose Unwrap
// reads its cause through a pointer left nil: only Unwrap panics.
type brokenTokenError struct {
	codedTokenError
	cause *struct{ err error }
}

func (e brokenTokenError) Unwrap() error { return e.cause.err }

// A base transport's error whose Unwrap alone panics is read as far as
// it reads, as the core classifier reads one (what was read before the
// panic stands): the *url.Error of the token endpoint, another URL than
// the request's, around a token server's 429 "Rate exceeded" whose
// Unwrap panics, is a failure before the request was sent, which passes.
// The request is sent again once its token comes, and the API's scope is
// neither slowed, paused nor failed for its token endpoint's throttle;
// nothing is lost.
func TestABaseErrorWhoseUnwrapPanicsIsReadAsFarAsItReads(t *testing.T) {
	fail := func() error {
		te := tokenAnswer(http.StatusTooManyRequests, "Rate exceeded", true).(codedTokenError)
		return &url.Error{Op: "Post", URL: memTokenURL, Err: brokenTokenError{codedTokenError: te}}
	}
	synctest.Test(t, func(t *testing.T) {
		f := &fakeAPI{}
		base := &memTokenBase{fails: []error{fail(), fail()}, next: newMem(f)}
		gov := newGov(t, resilience.Config{})
		budget := gov.Inspect(apiScope).RetryBudget
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "items")
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
		resp, err := client(base, gov, withAttempts(5)).Do(req)
		if err != nil {
			t.Fatalf("err %v; want the call to succeed once it has its token", err)
		}
		readAll(t, resp)
		if n, asked := len(f.recorded()), len(base.times()); n != 1 || asked != 3 {
			t.Fatalf("the API got %d requests, the token was asked for %d times; want 1 and 3", n, asked)
		}
		tot := gov.Summary(stats).Totals
		if tot.Calls != 1 || tot.Throttled != 0 || tot.TransientErrors != 0 || tot.Retries != 0 || tot.Lost() != 0 {
			t.Fatalf("totals %v; want one call, no throttle, no transient error, no retry, nothing lost (ledger %q)", tot, ledger.Describe())
		}
		snap := gov.Inspect(apiScope)
		if snap.Leaf.Rate != snap.Leaf.Ceiling || snap.Leaf.Paused != 0 || snap.Breaker.Failures != 0 || snap.RetryBudget != budget || snap.InFlight != 0 {
			t.Fatalf("scope %+v; want its rate, pause, breaker and retry budget (%v) untouched, no slot held", snap, budget)
		}
	})
}
