//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A call's deadline, the policy's (RetryPolicy.Deadline, deadline_seconds)
// as well as its context's, bounds its wait for a concurrency slot, as it
// bounds every wait of the call: a call that waits for a slot until its
// deadline ends then, unsent, with a *DeadlineExceededError, lost as
// refused (its wait passed its deadline), and a call nested in another
// without WithNestedCalls, which waits for the slot its own caller holds,
// waits until its deadline, as Call's documentation says, not for ever.
// Before, only the context ended such a wait: a call whose policy gave it
// 2 s waited for the slot as long as another call held it, 10 minutes,
// and was then sent, 9 minutes 58 seconds past its deadline; the nested
// call waited for ever.
func TestAPolicysDeadlineEndsTheWaitForASlot(t *testing.T) {
	t.Run("policy", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
			go Do(context.Background(), ec2Vpcs, func(context.Context) error { time.Sleep(10 * time.Minute); return nil }, WithGovernor(g))
			synctest.Wait()
			r := newRun(context.Background())
			start, sent := time.Now(), false
			err := Do(r.ctx, ec2Subnets, func(context.Context) error { sent = true; return nil },
				WithGovernor(g), WithPolicy(RetryPolicy{Deadline: 2 * time.Second}))
			var de *DeadlineExceededError
			if !errors.As(err, &de) || sent || time.Since(start) != 2*time.Second {
				t.Errorf("after %v: %v (sent: %v); want a *DeadlineExceededError after the deadline, 2s, nothing sent", time.Since(start), err, sent)
			}
			r.lost(t, g, LossRefused, 1)
			if s := g.Inspect(ec2Subnets); s.Waiting != 0 || s.InFlight != 1 {
				t.Errorf("in flight %d, waiting %d; want the other call's slot, none waiting", s.InFlight, s.Waiting)
			}
			time.Sleep(10 * time.Minute)
		})
	})
	t.Run("nested, deadline_seconds", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1, DeadlineSeconds: 60}})
			r := newRun(context.Background())
			start := time.Now()
			var inner error
			outer := Do(r.ctx, ec2Vpcs, func(ctx context.Context) error {
				inner = Do(ctx, ec2Subnets, func(context.Context) error { return nil }, WithGovernor(g))
				return nil
			}, WithGovernor(g))
			var de *DeadlineExceededError
			if outer != nil || !errors.As(inner, &de) || time.Since(start) != time.Minute {
				t.Errorf("after %v: the nested call ended with %v, its caller with %v; want a *DeadlineExceededError at the deadline, 1m0s, and the caller's success", time.Since(start), inner, outer)
			}
			r.lost(t, g, LossRefused, 1)
		})
	})
}
