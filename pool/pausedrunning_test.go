//go:build go1.25

package pool

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// A running task whose retry waits out its scope's pause (the provider's
// Retry-After) is not done before the pause ends: Progress says the
// scope is paused, and for how long yet (ScopeProgress.Paused), its line
// says a running task is in a paused scope, and the ETA is not less than
// the pause left. It used to read "done 1/2, running 1, queued 0, ETA 0s"
// for the whole of a 60 s pause, the scope idle with no wait, so that a
// person could not tell why the pool was not done.
func TestProgressOfARunningTaskWaitingOutAPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 10, resilience.Config{})
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		p.Go(ctx, scope("op1"), call(g, scope("op1"), 0))
		sent := 0
		p.Go(ctx, scope("op0"), func(ctx context.Context) error {
			return resilience.Do(ctx, scope("op0"), func(context.Context) error {
				sent++
				if sent == 1 {
					return throttleAfter(60 * time.Second)
				}
				return nil
			}, resilience.WithGovernor(g))
		})
		time.Sleep(14 * time.Second)
		pr := p.Progress()
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if pr.Running != 1 || pr.Queued != 0 || pr.Done != 1 {
			t.Fatalf("setup: %+v", pr)
		}
		var sp ScopeProgress
		for _, s := range pr.Scopes {
			if s.Scope == scope("op0") {
				sp = s
			}
		}
		if sp.Paused < 45*time.Second || sp.Paused > 46*time.Second {
			t.Errorf("op0, paused 60 s, 14 s ago: Paused %v, want 46s left", sp.Paused)
		}
		if pr.ETA < 45*time.Second || sp.ETA < 45*time.Second {
			t.Errorf("ETA %v, op0's %v; want at least the 46 s the pause holds its running task", pr.ETA, sp.ETA)
		}
		if line := pr.String(); !strings.Contains(line, "running 1 (1 in a paused scope, 46s left)") || !strings.HasSuffix(line, "ETA 46s") {
			t.Errorf("line %q; want it to say the running task is in a paused scope, 46 s left, ETA 46s", line)
		}
	})
}
