//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A call that waited for its token until a pause moved the token past
// its deadline, or past the most it may wait, is refused; the time it
// waited is a wait like any other, counted in waits and wait_seconds (it
// used to be in neither, while a wait its context ended is counted).
func TestAWaitEndedByARefusalIsCounted(t *testing.T) {
	for _, bound := range []string{"deadline", "max wait"} {
		t.Run(bound, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, oneRPS)
				ctx, stats := WithStats(context.Background())
				Do(ctx, secrets, func(context.Context) error { return nil }, WithGovernor(g)) // the burst
				var wg sync.WaitGroup
				var err error
				wg.Go(func() {
					c := ctx
					if bound == "deadline" {
						var cancel context.CancelFunc
						c, cancel = context.WithTimeout(ctx, 10*time.Second)
						defer cancel()
					} else {
						c = WithMaxWait(ctx, 10*time.Second)
					}
					err = Do(c, secrets, func(context.Context) error { return nil }, WithGovernor(g))
				})
				time.Sleep(500 * time.Millisecond) // the call waits 1 s for its token
				gd, _ := g.Begin(context.Background(), secrets)
				gd.Pause(30 * time.Second)
				gd.End(nil)
				wg.Wait()
				var de *DeadlineExceededError
				var ww *WouldWaitError
				if !errors.As(err, &de) && !errors.As(err, &ww) {
					t.Fatalf("err %v, want a refusal", err)
				}
				sum := g.Summary(stats)
				c := sum.Scopes[serviceScope(secrets)]
				if c.Refused != 1 || c.Waits != 1 || c.Wait != 500*time.Millisecond || c.MaxWait != 500*time.Millisecond {
					t.Errorf("refused %d, waits %d, waited %v (longest %v); want 1, 1, 500ms, 500ms", c.Refused, c.Waits, c.Wait, c.MaxWait)
				}
				if sum.Totals.WaitElapsed != 500*time.Millisecond {
					t.Errorf("wall-clock time waited %v, want 500ms", sum.Totals.WaitElapsed)
				}
			})
		})
	}
}
