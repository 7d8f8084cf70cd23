//go:build go1.25

package cloudghttp_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cloudg/cloudg/resilience"
)

// tokenBase is a base transport that authenticates each request as
// golang.org/x/oauth2's Transport does: it fetches a token from tokenURL
// with an http.Client of its own, fails the request with the token's
// error when there is none (a *url.Error for a failed connection, an
// error that quotes the token server's answer for an error status), and
// otherwise sends the request with next.
type tokenBase struct {
	tokenURL string
	next     http.RoundTripper
	coded    bool // the token's error answer has an HTTPStatusCode method
}

// tokenError is the token server's error answer, as oauth2's
// RetrieveError reports it.
type tokenError struct {
	Response *http.Response
	Body     []byte
}

func (e *tokenError) Error() string {
	return fmt.Sprintf("oauth2: cannot fetch token: %v\nResponse: %s", e.Response.Status, e.Body)
}

// codedTokenError is a tokenError that gives its status as the core
// classifier reads one.
type codedTokenError struct{ *tokenError }

func (e codedTokenError) HTTPStatusCode() int { return e.Response.StatusCode }

func (b tokenBase) RoundTrip(req *http.Request) (*http.Response, error) {
	tr, err := http.NewRequestWithContext(req.Context(), http.MethodPost, b.tokenURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: b.next}).Do(tr)
	if err != nil {
		return nil, fmt.Errorf("oauth2: cannot fetch token: %w", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if b.coded {
			return nil, codedTokenError{&tokenError{Response: resp, Body: body}}
		}
		return nil, &tokenError{Response: resp, Body: body}
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+string(body))
	return b.next.RoundTrip(r)
}

// closedURL returns a URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T, path string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + path
}

// A request whose base transport failed before sending it (its token
// could not be had: the token endpoint on 127.0.0.1 refuses the
// connection, or answers 429 "Rate exceeded", in words or in an error
// that gives its status as the API's would) says nothing of the API's
// scope, to which nothing was sent: it is neither the scope's transient
// error nor its throttle; the scope is neither slowed, paused nor failed,
// and the call, which the token never comes to (the request is sent again
// within the policy's attempts, on its first attempt's admission: see
// TestAnUnsentAttemptWhoseFailurePassesIsSentAgain), is lost as errored
// (a local error). The caller gets the base transport's error.
func TestARequestThatNeverLeftIsNoAnswer(t *testing.T) {
	throttling := func() string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "Rate exceeded", http.StatusTooManyRequests)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/token"
	}
	for name, tc := range map[string]struct {
		tokenURL func() string
		coded    bool
	}{
		"refused":       {tokenURL: func() string { return closedURL(t, "/token") }},
		"rate exceeded": {tokenURL: throttling},
		"429 status":    {tokenURL: throttling, coded: true},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeAPI{}
			srv := loopback(t, f)
			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			gov := newGov(t, resilience.Config{})
			ctx, stats := resilience.WithStats(context.Background())
			ctx, ledger := resilience.WithLedger(ctx, "items")
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/items", nil)
			resp, err := client(tokenBase{tokenURL: tc.tokenURL(), next: tr, coded: tc.coded}, gov, withAttempts(3)).Do(req)
			if err == nil {
				_ = resp.Body.Close()
				t.Fatal("the request succeeded without a token")
			}
			if n := len(f.recorded()); n != 0 {
				t.Fatalf("the API got %d requests without a token", n)
			}
			tot := gov.Summary(stats).Totals
			if tot.Calls != 1 || tot.Throttled != 0 || tot.TransientErrors != 0 || tot.Retries != 0 || tot.Failed != 0 || tot.GaveUp != 0 || tot.Errored != 1 {
				t.Fatalf("totals %v; want one call, no throttle, no transient error, no retry, the call errored (err %v)", tot, err)
			}
			if ledger.Count(resilience.LossErrored) != 1 || ledger.Lost() != 1 {
				t.Fatalf("ledger %q, want the call lost as errored", ledger.Describe())
			}
			snap := gov.Inspect(apiScope)
			if snap.Leaf.Rate != snap.Leaf.Ceiling || snap.Leaf.Paused != 0 || snap.Breaker.Failures != 0 {
				t.Fatalf("scope %+v; want its rate, pause and breaker untouched", snap)
			}
		})
	}
}

// clientBase sends each request with an http.Client of its own, whose
// error, a *url.Error, names the request's own URL.
type clientBase struct{ c *http.Client }

func (b clientBase) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.RequestURI = ""
	return b.c.Do(r)
}

// The API's own endpoint refusing the connection is the scope's transient
// error, retried, with a token in hand or not, and through a base that
// sends the request with an http.Client (whose *url.Error is the
// request's own).
func TestARefusedAPIIsTheScopesTransientError(t *testing.T) {
	tok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "t0k3n")
	}))
	t.Cleanup(tok.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	for name, base := range map[string]http.RoundTripper{
		"net/http":    tr,
		"token":       tokenBase{tokenURL: tok.URL + "/token", next: tr},
		"http.Client": clientBase{&http.Client{Transport: tr}},
	} {
		t.Run(name, func(t *testing.T) {
			gov := newGov(t, resilience.Config{})
			ctx, stats := resilience.WithStats(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, closedURL(t, "/items"), nil)
			if resp, err := client(base, gov, withAttempts(3)).Do(req); err == nil {
				_ = resp.Body.Close()
				t.Fatal("the request succeeded against a closed port")
			}
			if tot := gov.Summary(stats).Totals; tot.TransientErrors != 3 || tot.Failed != 1 {
				t.Fatalf("totals %v; want 3 transient errors, the call failed", tot)
			}
		})
	}
}
