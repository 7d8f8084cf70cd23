//go:build go1.25

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// End with an answer After never saw (an SDK whose hook missed its last
// attempt, a call that ended on an error outside the attempt hooks)
// records it as After and the stop would: a throttle is counted as one,
// lowers the rate, pauses the scope for its Retry-After, and is a give-up;
// a transient error is counted as one and fails the call. Before, End
// recorded only the stop (gave_up 1, throttled 0, the scope at its
// ceiling and not paused), so that the next call was sent into the
// provider's Retry-After.
func TestEndRecordsAnAnswerAfterNeverSaw(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		entered                    bool
		err                        error
		throttled, transient, gave int64
		failed                     int64
		paused                     time.Duration
	}{
		{"a throttle, sent", true, throttleAfter(60 * time.Second), 1, 0, 1, 0, 60 * time.Second},
		{"a throttle, never entered", false, throttleAfter(60 * time.Second), 1, 0, 1, 0, 60 * time.Second},
		{"a transient error, sent", true, transientErr(), 0, 1, 0, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				ctx, stats := WithStats(context.Background())
				gd, err := g.Begin(ctx, ec2Vpcs)
				if err != nil {
					t.Fatal(err)
				}
				if tc.entered {
					if err := gd.Enter(ctx); err != nil {
						t.Fatal(err)
					}
				}
				gd.End(tc.err)
				tot := g.Summary(stats).Totals
				if tot.Throttled != tc.throttled || tot.TransientErrors != tc.transient || tot.GaveUp != tc.gave || tot.Failed != tc.failed {
					t.Errorf("totals %+v: want throttled %d, transient %d, gave up %d, failed %d", tot, tc.throttled, tc.transient, tc.gave, tc.failed)
				}
				b := g.Inspect(ec2Vpcs).Leaf
				if b.Paused != tc.paused {
					t.Errorf("the scope is paused for %v, want %v", b.Paused, tc.paused)
				}
				if tc.throttled > 0 && b.Rate >= b.Ceiling {
					t.Errorf("the leaf's rate %.1f is at its ceiling %.1f, want it lowered by the throttle", b.Rate, b.Ceiling)
				}
			})
		})
	}
}
