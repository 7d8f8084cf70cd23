//go:build go1.25

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A call's deadline is its context's when that comes first, however
// late the call first needs it: a call whose context gives it 10 s, and
// whose first attempt failed after 6 s, has 4 s left for its retry. The
// deadline is resolved on first use (the common call never needs it),
// and was taken as the call's start plus the time its context had left
// then: 4 s from the start for this call, the retry refused with a
// *DeadlineExceededError though the context had 4 s left.
func TestAContextDeadlineIsTheSameWhenFirstNeededLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		time.Sleep(5 * time.Second) // the call does not begin at the governor's start
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		sends := 0
		err := Do(ctx, ec2Vpcs, func(context.Context) error {
			if sends++; sends == 1 {
				time.Sleep(6 * time.Second)
				return transientErr()
			}
			return nil
		}, WithGovernor(g), WithPolicy(RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}))
		if err != nil || sends != 2 {
			t.Errorf("a call given 10s by its context, its first attempt failing after 6s: %v after %d sends at %v; want its retry sent, and a success", err, sends, time.Since(start))
		}
	})
}
