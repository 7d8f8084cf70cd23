//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// Admit readies a retry sent without Enter as Pace does, but a retry
// after a throttled answer takes no token: with the leaf's next token
// 10 s away, Pace waits for it and Admit does not. Both ask the breaker:
// once it is open, Admit refuses the retry with a *CircuitOpenError
// wrapping the last answer, the call failed.
func TestAdmitTakesNoTokenAfterAThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fixed := false
		g := newGov(t, Config{AWS: ProviderConfig{Adaptive: &fixed, BreakerThreshold: 1,
			Services: map[string]ServiceConfig{"ec2": {MaxRPS: 0.1, MinRPS: 0.1, Burst: 1}}}})
		retry := func(ready func(*Guard, context.Context) error) (time.Duration, error) {
			gd := throttledRetry(t, g, context.Background(), ec2Vpcs)
			defer gd.End(nil)
			start := time.Now()
			err := ready(gd, context.Background())
			return time.Since(start), err
		}
		if d, err := retry((*Guard).Admit); err != nil || d != 0 {
			t.Fatalf("Admit: %v after %v; want the retry at once", err, d)
		}
		if d, err := retry((*Guard).Pace); err != nil || d == 0 {
			t.Fatalf("Pace: %v after %v; want the retry after a token's wait", err, d)
		}

		r := newRun(context.Background())
		gd := throttledRetry(t, g, r.ctx, ec2Vpcs)
		other, _ := g.Begin(context.Background(), ec2Vpcs) // threshold 1: the breaker opens
		other.After(transientErr())
		other.End(transientErr())
		var coe *CircuitOpenError
		if err := gd.Admit(r.ctx); !errors.As(err, &coe) || Classify(coe.Err) != Throttled {
			t.Fatalf("Admit on an open breaker: %v; want a CircuitOpenError wrapping the throttle", err)
		}
		gd.End(coe)
		r.lost(t, g, LossGaveUp, 1)
	})
}
