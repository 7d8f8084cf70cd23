//go:build go1.26

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/observe"
)

// RetryWait gives the retry Retry allowed the SDK's sleep as its delay,
// which its Retry event reports, when longer than Retry's (the provider's
// hint, or the wait asked). Without RetryWait (as before it was made),
// the first two cases report a Wait of 0.
func TestRetryWaitIsTheRetrysDelay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer error
		sleep  time.Duration
		want   time.Duration
	}{
		{"a transient answer, the SDK sleeps 2 s", transientErr(), 2 * time.Second, 2 * time.Second},
		{"a throttle without a hint, the SDK sleeps 2 s", throttle(), 2 * time.Second, 2 * time.Second},
		{"a throttle whose hint (5 s) is longer than the sleep", throttleAfter(5 * time.Second), time.Second, 5 * time.Second},
		{"a negative sleep is none", transientErr(), -time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				g := newGov(t, Config{}, WithObserver(rec))
				ctx := context.Background()
				gd, _ := g.Begin(ctx, ec2Vpcs)
				if err := gd.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				gd.After(tc.answer)
				if _, err := gd.Retry(0); err != nil {
					t.Fatal(err)
				}
				gd.RetryWait(tc.sleep)
				time.Sleep(max(tc.sleep, 0)) // the SDK's sleep
				if err := gd.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				gd.After(nil)
				gd.End(nil)
				if r := rec.first(observe.Retry); r.Retry != 1 || r.Wait != tc.want {
					t.Errorf("the Retry event: retry %d, Wait %v; want retry 1, Wait %v", r.Retry, r.Wait, tc.want)
				}
			})
		})
	}
}
