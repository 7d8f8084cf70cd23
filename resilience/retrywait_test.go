//go:build go1.26

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/observe"
)

// The delay of a retry, which its Retry event reports as Wait, is the
// longer of the delay Retry gave (the provider's hint, the wait asked)
// and the time from Retry to the retry's Enter or Pace: the backoff an
// SDK sleeps after Retry allowed the retry, deciding its length itself
// (the AWS SDK's retryer and azcore ask Retry with a wait of 0), whatever
// the SDK. The token waits after it are not part of it.
func TestARetrysDelayIsTheSleepBeforeIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer error
		sleep  time.Duration
		want   time.Duration
	}{
		{"a transient answer, the SDK sleeps 2 s", transientErr(), 2 * time.Second, 2 * time.Second},
		{"a throttle without a hint, the SDK sleeps 2 s", throttle(), 2 * time.Second, 2 * time.Second},
		{"a throttle whose hint (5 s) is longer than the sleep", throttleAfter(5 * time.Second), time.Second, 5 * time.Second},
		{"no sleep", transientErr(), 0, 0},
	} {
		for _, verb := range []string{"Enter", "Pace"} {
			t.Run(tc.name+", "+verb, func(t *testing.T) {
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
					time.Sleep(tc.sleep) // the SDK's sleep
					send := gd.Enter
					if verb == "Pace" {
						send = gd.Pace
					}
					if err := send(ctx); err != nil {
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
}
