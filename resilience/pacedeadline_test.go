//go:build go1.25

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A retry an SDK readies with Pace or Admit after its own backoff slept
// past the call's deadline (the policy's, RetryPolicy.Deadline) is not
// sent, as Enter does not send one: the call ends with its last answer,
// recorded as failed after its retries (given up, when throttled), and
// no retry is counted as sent. Before, Pace and Admit checked the
// context's deadline only: the retry went 5 s past the call's deadline,
// counted as sent, and the call was not lost.
func TestARetryReadiedPastItsDeadlineIsNotSent(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer error
		ready  func(gd *Guard, ctx context.Context) error
		loss   Loss
	}{
		{"Pace after a transient answer", transientErr(), (*Guard).Pace, LossFailed},
		{"Admit after a transient answer", transientErr(), (*Guard).Admit, LossFailed},
		{"Pace after a throttle", throttle(), (*Guard).Pace, LossGaveUp},
		{"Admit after a throttle", throttle(), (*Guard).Admit, LossGaveUp},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				r := newRun(context.Background())
				gd, _ := g.Begin(r.ctx, iamUsers, WithPolicy(RetryPolicy{Deadline: 5 * time.Second}))
				if err := gd.Enter(r.ctx); err != nil {
					t.Fatal(err)
				}
				gd.After(c.answer)
				if _, err := gd.Retry(0); err != nil {
					t.Fatal(err)
				}
				time.Sleep(10 * time.Second) // the SDK's own backoff, past the deadline
				err := c.ready(gd, r.ctx)
				gd.End(err)
				if err != c.answer {
					t.Errorf("the retry, readied 10s into a call of 5s: %v; want the last answer, nothing sent", err)
				}
				r.lost(t, g, c.loss, 1)
				if n := g.Summary(r.stats).Totals.Retries; n != 0 {
					t.Errorf("%d retries counted as sent; want none", n)
				}
			})
		})
	}
}
