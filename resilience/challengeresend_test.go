//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// unauthorized is a provider's 401 that an integration reads as an
// authentication challenge: a fatal answer.
func unauthorized() error { return &apiErr{code: "Unauthorized", status: http.StatusUnauthorized} }

// A request an integration sends again after the provider's fatal answer
// to its last attempt, as the answer to an authentication challenge
// (resendChallenged, through attemptctx.ResendChallenged), is a call
// counted as sent and no retry, and the same request: it keeps the
// call's retries, so that the first two retries are free and every later
// one costs a token of the retry budget however many challenges come
// between them, and the call's deadline.
func TestAChallengeResendKeepsTheCallsRetriesAndDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{DeadlineSeconds: 20}})
		r := newRun(context.Background())
		sdk := WithPolicy(RetryPolicy{MaxAttempts: math.MaxInt})
		enter := func(gd *Guard) {
			t.Helper()
			if err := gd.Enter(r.ctx); err != nil {
				t.Fatal(err)
			}
		}
		retry := func(gd *Guard) error {
			t.Helper()
			_, err := gd.Retry(0)
			return err
		}

		// Throttled, its retry challenged and resent, three times over:
		// three retries, as a request throttled three times alone.
		// With tried, each resend is first tried and refused while the
		// scope is paused (a refused TryEnter does not move the Guard):
		// it is still the same request when it goes.
		spent := func(challenged, tried bool) float64 {
			before := g.Budget("aws")
			gd, _ := g.Begin(r.ctx, ec2Vpcs, sdk)
			enter(gd)
			for range 3 {
				gd.After(throttle())
				if err := retry(gd); err != nil {
					t.Fatal(err)
				}
				enter(gd)
				if challenged {
					gd.After(unauthorized())
					gd.resendChallenged()
					if tried {
						gd.Pause(time.Second)
						if err := gd.TryEnter(); err == nil {
							t.Fatal("TryEnter on a paused scope let the resend go")
						}
						time.Sleep(time.Second)
					}
					enter(gd)
				}
			}
			gd.After(nil)
			gd.End(nil)
			return before - g.Budget("aws")
		}
		calls0, retries0 := g.Summary(r.stats).Totals.Calls, g.Summary(r.stats).Totals.Retries
		challenged := spent(true, false)
		tot := g.Summary(r.stats).Totals
		if calls, retries := tot.Calls-calls0, tot.Retries-retries0; calls != 7 || retries != 3 {
			t.Errorf("a request throttled three times, each retry challenged and resent: %d calls, %d retries; want 7 calls (the first, 3 retries, 3 resends), 3 retries", calls, retries)
		}
		plain := spent(false, false)
		if math.Abs(challenged-plain) > 1e-9 || plain < 0.5 {
			t.Errorf("three retries, each challenged and resent, took %.2f of the retry budget, three retries alone %.2f; want the same, the third paid for", challenged, plain)
		}
		if tried := spent(true, true); math.Abs(tried-plain) > 1e-9 {
			t.Errorf("three retries, each challenged and resent after a refused TryEnter, took %.2f of the retry budget, three retries alone %.2f; want the same, the third paid for", tried, plain)
		}

		// Throttled for 8 s, its retries challenged: the resend at 16 s
		// is not a new call, whose deadline would be 20 s away, and its
		// throttle's retry, 24 s after the call began, is past the call's
		// deadline.
		gd, _ := g.Begin(r.ctx, ec2Vpcs, sdk)
		enter(gd)
		var err error
		for range 3 {
			gd.After(throttleAfter(8 * time.Second))
			if err = retry(gd); err != nil {
				break
			}
			enter(gd)
			gd.After(unauthorized())
			gd.resendChallenged()
			enter(gd)
		}
		var de *DeadlineExceededError
		if !errors.As(err, &de) {
			t.Errorf("a request throttled for 8 s three times, its retries challenged: %v; want a *DeadlineExceededError at the third retry, 24 s past its start, its deadline 20 s", err)
		}
		gd.End(err)
	})
}
