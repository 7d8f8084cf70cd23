//go:build go1.25

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/observe"
)

// With breaker_wait, a retry whose failure counted towards its scope's
// breaker first waits for the breaker's verdict. That wait is a wait for
// admission, not the retry's backoff: the retry's Retry event (Wait, the
// backoff the SDK slept after Retry allowed it) and the scope's Backoff
// count the sleep alone, whether the retry is sent with Enter or with
// Pace.
func TestABreakerVerdictWaitIsNotTheRetrysBackoff(t *testing.T) {
	const sleep = 2 * time.Second
	for _, verb := range []string{"Enter", "Pace"} {
		t.Run(verb, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: true}}, WithObserver(rec))
				ctx, stats := WithStats(context.Background())
				// One attempt: the failed one counts towards the breaker, and
				// its retry awaits the verdict.
				gd, _ := g.Begin(ctx, ec2Vpcs, WithPolicy(RetryPolicy{MaxAttempts: 1}))
				if err := gd.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				gd.After(transientErr())
				if _, err := gd.Retry(0); err != nil {
					t.Fatal(err)
				}
				if gd.phase != phaseAwaiting {
					t.Fatalf("the retry is %v; want it awaiting the breaker's verdict", gd.phase)
				}
				time.Sleep(sleep) // the SDK's backoff
				from := time.Now()
				send := gd.Enter
				if verb == "Pace" {
					send = gd.Pace
				}
				if err := send(ctx); err != nil {
					t.Fatal(err)
				}
				verdict := time.Since(from)
				if verdict == 0 {
					t.Fatal("the retry did not wait for the breaker's verdict")
				}
				gd.After(nil)
				gd.End(nil)
				if r := rec.first(observe.Retry); r.Wait != sleep {
					t.Errorf("%s after a %v verdict wait: the Retry event's Wait %v; want the %v slept", verb, verdict, r.Wait, sleep)
				}
				if b := g.Summary(stats).Scopes[serviceScope(ec2Vpcs)].Backoff; b != sleep {
					t.Errorf("%s after a %v verdict wait: Backoff %v; want the %v slept", verb, verdict, b, sleep)
				}
			})
		})
	}
}
