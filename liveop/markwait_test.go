//go:build go1.25

package liveop

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A caller waiting for a slot (Request.Wait) of a scope that MarkCompleted
// sets cooling is refused at once with the cooldown, as a Run of its
// request made then is (the cooldown comes before the caps), rather than
// wait for a slot it can never use; and the free slot it kept of another
// of its scopes goes at once to a caller that came later for that scope
// alone.
func TestAWaitingCallerIsRefusedWhenMarkCompletedCoolsItsScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{MaxConcurrentTotal: 5})
		a := goRun(context.Background(), g, req("a", "aws/a"), (&counted{d: time.Hour, val: "a"}).run)
		synctest.Wait()
		w := req("w", "aws/a", "aws/b")
		w.Wait = true
		waiting := goRun(context.Background(), g, w, (&counted{d: time.Minute, val: "w"}).run)
		synctest.Wait()
		start := time.Now()
		g.MarkCompleted("aws/a")
		synctest.Wait()
		if err := g.Check(req("b", "aws/b")); err != nil {
			t.Errorf("a caller for aws/b alone, once aws/a was marked completed: %v; want it to start", err)
		}
		o, ok := received(waiting)
		if !ok {
			o = <-waiting
		}
		if !errors.Is(o.err, ErrCooldown) || time.Since(start) != 0 {
			t.Errorf("the caller waiting for aws/a, which MarkCompleted set cooling, got %q %v after %v; want the cooldown refusal at once",
				o.val, o.err, time.Since(start))
		}
		<-a
	})
}
