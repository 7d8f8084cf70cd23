//go:build go1.25

package resilience

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// AfterOpen's f is called for a Guard whose call has no attempt yet (just
// begun, or idle again after End), its breaker open: the call's next
// attempt is its first, which the open breaker refuses, as the rule says
// ("once the breaker would still refuse the call's next attempt"). Only
// a Guard of a disabled provider, which the governor does not govern,
// never calls f.
func TestAfterOpenOfAGuardWithNoAttemptYet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		openBreaker(t, g)
		gd, _ := g.Begin(context.Background(), ec2Subnets)
		for _, when := range []string{"just begun", "after End"} {
			var calls atomic.Int32
			stop := gd.AfterOpen(0, func() { calls.Add(1) })
			synctest.Wait()
			if calls.Load() != 1 || stop() {
				t.Errorf("%s, the breaker open: f called %d times, want once", when, calls.Load())
			}
			if err := gd.TryEnter(); err == nil {
				t.Errorf("%s: the first attempt let through an open breaker", when)
			}
			gd.End(nil)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		off := false
		g := newGov(t, Config{AWS: ProviderConfig{Enabled: &off}})
		gd, _ := g.Begin(context.Background(), ec2Subnets)
		stop := gd.AfterOpen(0, func() { t.Error("f called for a Guard of a disabled provider") })
		synctest.Wait()
		if !stop() {
			t.Error("stop did not report that f was never called")
		}
		gd.End(nil)
	})
}
