//go:build go1.25

package cloudghttp_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// memTokenBase is an authenticating base transport in memory: it fails
// each request with the next of its token errors, as golang.org/x/oauth2's
// Transport fails one whose token it could not fetch, and once they are
// spent (or for ever, with always) it sends the request with next. It
// records when each token was asked for.
type memTokenBase struct {
	mu     sync.Mutex
	fails  []error
	always error
	asked  []time.Time
	next   http.RoundTripper
}

func (b *memTokenBase) RoundTrip(req *http.Request) (*http.Response, error) {
	b.mu.Lock()
	b.asked = append(b.asked, time.Now())
	var fail error
	if len(b.fails) > 0 {
		fail, b.fails = b.fails[0], b.fails[1:]
	} else {
		fail = b.always
	}
	b.mu.Unlock()
	if fail != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, fail
	}
	return b.next.RoundTrip(req)
}

func (b *memTokenBase) times() []time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]time.Time(nil), b.asked...)
}

const memTokenURL = "http://127.0.0.1:8181/token"

// tokenRefused is the error of an http.Client whose token endpoint
// refused the connection, as oauth2's Transport returns it.
func tokenRefused() error {
	return &url.Error{Op: "Post", URL: memTokenURL, Err: &net.OpError{
		Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED},
	}}
}

// tokenAnswer is the token server's error answer of status code, as
// oauth2's RetrieveError reports it; coded gives it an HTTPStatusCode
// method, which the core classifier reads.
func tokenAnswer(code int, body string, coded bool) error {
	te := &tokenError{Response: &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code))}, Body: []byte(body)}
	if coded {
		return codedTokenError{te}
	}
	return te
}

// A request whose token could not be had for a while (its token endpoint
// refused the connection, or answered 500, 503 or 429 "Rate exceeded",
// twice, in an error that carries the token server's answer as oauth2's
// RetrieveError does, or gives its status by method)
// is sent again after a backoff of the policy's, on the admission of its
// first attempt: the call succeeds once the token comes, as the AWS SDK
// rides out its credentials' failures. Nothing was sent to the API's
// scope meanwhile, which counts one call and no throttle, transient error
// or retry, and whose retry budget is untouched; nothing is lost.
func TestAnUnsentAttemptWhoseFailurePassesIsSentAgain(t *testing.T) {
	for name, fail := range map[string]func() error{
		"refused":       tokenRefused,
		"503 status":    func() error { return tokenAnswer(http.StatusServiceUnavailable, "backend error", true) },
		"503":           func() error { return tokenAnswer(http.StatusServiceUnavailable, "backend error", false) },
		"500":           func() error { return tokenAnswer(http.StatusInternalServerError, "backend error", false) },
		"rate exceeded": func() error { return tokenAnswer(http.StatusTooManyRequests, "Rate exceeded", false) },
	} {
		t.Run(name, func(t *testing.T) { tokenFailsTwiceThenSends(t, fail) })
	}
}

// tokenFailsTwiceThenSends runs a call whose token endpoint fails twice
// with fail() before it gives the token, and fails the test unless the
// request is sent once after the policy's backoffs (10ms to 100ms apart),
// the call succeeds, the API's scope counts one call and no throttle,
// transient error or retry, its rate, pause, breaker and retry budget are
// untouched, and nothing is lost.
func tokenFailsTwiceThenSends(t *testing.T, fail func() error) {
	t.Helper()
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
		asked := base.times()
		if n := len(f.recorded()); n != 1 || len(asked) != 3 {
			t.Fatalf("the API got %d requests, the token was asked for %d times; want 1 and 3", n, len(asked))
		}
		for i := 1; i < len(asked); i++ {
			if gap := asked[i].Sub(asked[i-1]); gap < 10*time.Millisecond || gap > 100*time.Millisecond {
				t.Errorf("token %d asked %v after the one before; want the policy's backoff, within [10ms, 100ms]", i+1, gap)
			}
		}
		tot := gov.Summary(stats).Totals
		if tot.Calls != 1 || tot.Throttled != 0 || tot.TransientErrors != 0 || tot.Retries != 0 || tot.Failed != 0 || tot.Errored != 0 {
			t.Fatalf("totals %v; want one call, no throttle, no transient error, no retry, nothing lost", tot)
		}
		if ledger.Lost() != 0 {
			t.Fatalf("ledger %q; want nothing lost", ledger.Describe())
		}
		snap := gov.Inspect(apiScope)
		if snap.Leaf.Rate != snap.Leaf.Ceiling || snap.Leaf.Paused != 0 || snap.Breaker.Failures != 0 || snap.RetryBudget != budget || snap.InFlight != 0 {
			t.Fatalf("scope %+v; want its rate, pause, breaker and retry budget (%v) untouched, no slot held", snap, budget)
		}
	})
}

// A request whose token never comes is sent again within the policy's
// attempts, or until its deadline, and no longer: the call ends with the
// base transport's error, a local error of its call, lost as errored,
// and the API's scope counts one call, no retry, no transient error.
func TestAnUnsentAttemptThatNeverPassesEndsAsALocalError(t *testing.T) {
	for name, tc := range map[string]struct {
		policy resilience.RetryPolicy
		asked  int           // the token's attempts
		within time.Duration // the call's end, after its start
	}{
		"max attempts": {resilience.RetryPolicy{MaxAttempts: 3, BaseDelay: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}, 3, 200 * time.Millisecond},
		"deadline":     {resilience.RetryPolicy{MaxAttempts: 100, BaseDelay: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond, Deadline: time.Second}, 0, time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				base := &memTokenBase{always: tokenRefused(), next: newMem(f)}
				gov := newGov(t, resilience.Config{})
				budget := gov.Inspect(apiScope).RetryBudget
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "items")
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
				start := time.Now()
				_, err := client(base, gov, cloudghttp.WithPolicy(tc.policy)).Do(req)
				took := time.Since(start)
				if !errors.Is(err, syscall.ECONNREFUSED) {
					t.Fatalf("err %v; want the token's refused connection", err)
				}
				asked := len(base.times())
				if took > tc.within || (tc.asked > 0 && asked != tc.asked) || asked < 2 {
					t.Fatalf("the token was asked for %d times, the call ended after %v; want %d times (0: any, at least 2) within %v", asked, took, tc.asked, tc.within)
				}
				if n := len(f.recorded()); n != 0 {
					t.Fatalf("the API got %d requests without a token", n)
				}
				tot := gov.Summary(stats).Totals
				if tot.Calls != 1 || tot.Throttled != 0 || tot.TransientErrors != 0 || tot.Retries != 0 || tot.Failed != 0 || tot.Errored != 1 {
					t.Fatalf("totals %v; want one call, no throttle, no transient error, no retry, the call errored", tot)
				}
				if ledger.Count(resilience.LossErrored) != 1 || ledger.Lost() != 1 {
					t.Fatalf("ledger %q; want the call lost as errored", ledger.Describe())
				}
				snap := gov.Inspect(apiScope)
				if snap.Leaf.Rate != snap.Leaf.Ceiling || snap.Leaf.Paused != 0 || snap.Breaker.Failures != 0 || snap.RetryBudget != budget || snap.InFlight != 0 {
					t.Fatalf("scope %+v; want its rate, pause, breaker and retry budget (%v) untouched, no slot held", snap, budget)
				}
			})
		})
	}
}

// A request whose token the token server refused for good (401, or a
// 400 of a bad key) is a local error at once: not sent again.
func TestAnUnsentAttemptThatWillNotPassIsNotSentAgain(t *testing.T) {
	for name, fail := range map[string]error{
		"401":        tokenAnswer(http.StatusUnauthorized, `{"error":"invalid_client"}`, false),
		"401 status": tokenAnswer(http.StatusUnauthorized, `{"error":"invalid_client"}`, true),
		"400 status": tokenAnswer(http.StatusBadRequest, `{"error":"invalid_grant"}`, true),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				base := &memTokenBase{always: fail, next: newMem(f)}
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
				start := time.Now()
				_, err := client(base, gov, withAttempts(5)).Do(req)
				if err == nil {
					t.Fatal("the request succeeded without a token")
				}
				if n, took := len(base.times()), time.Since(start); n != 1 || took != 0 {
					t.Fatalf("the token was asked for %d times, the call ended after %v; want once, at once (err %v)", n, took, err)
				}
				if tot := gov.Summary(stats).Totals; tot.Calls != 1 || tot.Errored != 1 || tot.Retries != 0 {
					t.Fatalf("totals %v; want one call, errored", tot)
				}
			})
		})
	}
}

// A request whose token endpoint refuses the connection, and whose
// context ends while the request waits to be sent again, ends with the
// context's error at once, recorded as cancelled; the scope learns
// nothing. A context whose deadline the next backoff would pass ends the
// call before it, with the base transport's error, as the Guard stops a
// retry its deadline would not let go.
func TestAnUnsentAttemptsResendHonoursTheContext(t *testing.T) {
	every100ms := cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 100, BaseDelay: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	t.Run("cancelled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			base := &memTokenBase{always: tokenRefused(), next: newMem(&fakeAPI{})}
			gov := newGov(t, resilience.Config{})
			ctx, stats := resilience.WithStats(context.Background())
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer time.AfterFunc(150*time.Millisecond, cancel).Stop()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
			start := time.Now()
			_, err := client(base, gov, every100ms).Do(req)
			if took := time.Since(start); !errors.Is(err, context.Canceled) || took != 150*time.Millisecond {
				t.Fatalf("err %v after %v; want the context's end, at 150ms", err, took)
			}
			tot := gov.Summary(stats).Totals
			if tot.Calls != 1 || tot.TransientErrors != 0 || tot.Retries != 0 || tot.Cancelled != 1 {
				t.Fatalf("totals %v; want one call, cancelled", tot)
			}
			if snap := gov.Inspect(apiScope); snap.Breaker.Failures != 0 || snap.InFlight != 0 {
				t.Fatalf("scope %+v; want its breaker untouched, no slot held", snap)
			}
		})
	})
	t.Run("deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			base := &memTokenBase{always: tokenRefused(), next: newMem(&fakeAPI{})}
			gov := newGov(t, resilience.Config{})
			ctx, stats := resilience.WithStats(context.Background())
			ctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/items", nil)
			start := time.Now()
			_, err := client(base, gov, every100ms).Do(req)
			if took := time.Since(start); !errors.Is(err, syscall.ECONNREFUSED) || took != 100*time.Millisecond {
				t.Fatalf("err %v after %v; want the token's refused connection, at 100ms", err, took)
			}
			if n := len(base.times()); n != 2 {
				t.Fatalf("the token was asked for %d times; want 2", n)
			}
			if tot := gov.Summary(stats).Totals; tot.Calls != 1 || tot.TransientErrors != 0 || tot.Retries != 0 || tot.Errored != 1 {
				t.Fatalf("totals %v; want one call, errored", tot)
			}
		})
	})
}

// Whether the failure of an attempt that was never sent passes is read in
// the base transport's error, not in the request's URL, which the
// Transport's own error names: a request to an API whose path or host
// happens to say "throttling" or "rate limit" (a throttling policy's
// resource, an internal throttler) and whose token the token server
// refused for good (a 400 invalid_grant) ends at once, as any other, and
// is not sent again for minutes as though its token endpoint throttled.
func TestAnUnsentAttemptIsNotReadByItsURL(t *testing.T) {
	for _, u := range []string{
		"http://api.test/v1/throttlingPolicies/p1",
		"http://api.test/v1/rate%20limits",
		"http://throttler.test/items",
	} {
		t.Run(u, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeAPI{}
				base := &memTokenBase{always: tokenAnswer(http.StatusBadRequest, `{"error":"invalid_grant"}`, true), next: newMem(f)}
				gov := newGov(t, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
				start := time.Now()
				_, err := client(base, gov, withAttempts(5)).Do(req)
				if err == nil {
					t.Fatal("the request succeeded without a token")
				}
				if n, took := len(base.times()), time.Since(start); n != 1 || took != 0 {
					t.Fatalf("the token was asked for %d times, the call ended after %v; want once, at once (err %v)", n, took, err)
				}
				if tot := gov.Summary(stats).Totals; tot.Calls != 1 || tot.Errored != 1 || tot.Retries != 0 {
					t.Fatalf("totals %v; want one call, errored", tot)
				}
			})
		})
	}
}

// tokenAnswerAfter is the token server's 429 "Rate exceeded" with
// Retry-After: after, as oauth2's RetrieveError carries it.
func tokenAnswerAfter(after string) error {
	te := tokenAnswer(http.StatusTooManyRequests, "Rate exceeded", false).(*tokenError)
	te.Response.Header = http.Header{"Retry-After": {after}}
	return te
}

// A token server that answers 429 with Retry-After is asked again no
// sooner than it asked, not after the policy's backoff (10 to 100 ms
// here), which would only have it refuse again: the request is sent
// once the token comes, 5 s after the refusal. A Retry-After that the
// call's deadline would not outlast is not waited for: the call ends at
// once, the token asked for once, as a retry past the deadline is
// refused.
func TestAnUnsentAttemptWaitsForTheTokenServersRetryAfter(t *testing.T) {
	t.Run("within the deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeAPI{}
			base := &memTokenBase{fails: []error{tokenAnswerAfter("5")}, next: newMem(f)}
			gov := newGov(t, resilience.Config{})
			resp, err := client(base, gov, withAttempts(5)).Get("http://api.test/items")
			if err != nil {
				t.Fatalf("err %v; want the call to succeed once it has its token", err)
			}
			readAll(t, resp)
			asked := base.times()
			if len(asked) != 2 || len(f.recorded()) != 1 {
				t.Fatalf("the token was asked for %d times, the API got %d requests; want 2 and 1", len(asked), len(f.recorded()))
			}
			if gap := asked[1].Sub(asked[0]); gap < 5*time.Second || gap > 5100*time.Millisecond {
				t.Fatalf("the token asked again %v after the 429; want its Retry-After, 5s, and at most the policy's backoff more", gap)
			}
		})
	})
	t.Run("past the deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeAPI{}
			base := &memTokenBase{fails: []error{tokenAnswerAfter("5")}, next: newMem(f)}
			gov := newGov(t, resilience.Config{})
			policy := cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 5, BaseDelay: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Deadline: 2 * time.Second})
			start := time.Now()
			resp, err := client(base, gov, policy).Get("http://api.test/items")
			if err == nil {
				readAll(t, resp)
			}
			if took := time.Since(start); err == nil || len(base.times()) != 1 || len(f.recorded()) != 0 || took != 0 {
				t.Fatalf("err %v after %v, the token asked for %d times; want the 429's error at once, asked once", err, took, len(base.times()))
			}
		})
	})
}
