//go:build go1.25

package cloudghttp_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

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
	tokenFailsTwiceThenSends(t, fail)
}

// A base transport's error that joins an error whose As method panics
// (it reads a nil pointer) before the *url.Error of the token endpoint,
// whose connection was refused, is read past that branch: the *url.Error
// names another URL than the request's, the attempt failed before the
// request was sent, and the failure passes. The request is sent again
// once its token comes, and the API's scope counts no transient error,
// retry or failure of its token endpoint's.
func TestABaseErrorJoinedAfterABranchWhoseAsPanicsIsReadPastIt(t *testing.T) {
	fail := func() error { return errors.Join(asPanicsError{}, tokenRefused()) }
	tokenFailsTwiceThenSends(t, fail)
}

// asPanicsError is an error whose As method reads a pointer left nil:
// errors.As panics on it, while its message and its shape (no cause, no
// code, no status) read.
type asPanicsError struct{ into *struct{ matches bool } }

func (asPanicsError) Error() string { return "a token source's error" }
func (e asPanicsError) As(any) bool { return e.into.matches }

// tokenStop is the error of an http.Client whose token call, governed
// and nested in the request's attempt, the governor refused: the token
// scope's open breaker.
func tokenStop() error {
	return &url.Error{Op: "Post", URL: memTokenURL, Err: &resilience.CircuitOpenError{
		Scope: resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "oauth2"}, Wait: time.Second,
	}}
}

// The governor's refusal of a call nested in the attempt (the token's,
// whose scope's breaker is open), which an http.Client wraps in a
// *url.Error of the token endpoint, is that call's stop whatever the base
// transport's error holds beside it: alone; joined after an error whose
// As method panics (which the core classifier never calls); after one
// whose Unwrap panics, whose 429 status the core reads before the panic;
// after a token server's 429 answer. The Guard records the refusal alone,
// which the core reads as another call's stop: the request ends with it
// at once, and the API's scope is neither throttled nor retried for the
// token's 429, nor is the request sent again, to the policy's attempts,
// each refused again.
func TestAGovernorStopBesideOtherErrorsIsAStop(t *testing.T) {
	answer429 := func() codedTokenError {
		return tokenAnswer(http.StatusTooManyRequests, "Rate exceeded", true).(codedTokenError)
	}
	for name, fail := range map[string]func() error{
		"alone":                   tokenStop,
		"after an As that panics": func() error { return errors.Join(asPanicsError{}, tokenStop()) },
		"after an Unwrap that panics, of a 429": func() error {
			return errors.Join(brokenTokenError{codedTokenError: answer429()}, tokenStop())
		},
		"after a 429": func() error { return errors.Join(answer429(), tokenStop()) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				base := &memTokenBase{always: fail(), next: newMem(f)}
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "items")
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
				_, err := client(base, gov, withAttempts(5)).Do(req)
				if err == nil || !strings.Contains(err.Error(), "circuit open for gcp/projects/p1/*/oauth2") {
					t.Fatalf("err %v; want the request to end with the token call's refusal", err)
				}
				asked, sent := len(base.times()), len(f.recorded())
				tot := gov.Summary(stats).Totals
				if asked != 1 || sent != 0 || tot.Calls != 1 || tot.Retries != 0 || tot.TransientErrors != 0 || tot.Throttled != 0 || ledger.Lost() != 0 {
					t.Fatalf("the token was asked for %d times, the API got %d requests, totals %v, ledger %q; "+
						"want the token asked for once, no request, one call, no retry, nothing lost (the refused call records its own loss)",
						asked, sent, tot, ledger.Describe())
				}
			})
		})
	}
}
