//go:build go1.25

package cloudghttp_test

import (
	"errors"
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
