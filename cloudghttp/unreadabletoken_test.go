//go:build go1.25

package cloudghttp_test

import (
	"net/http"
	"net/url"
	"testing"
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
