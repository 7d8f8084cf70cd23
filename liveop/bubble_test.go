//go:build go1.25

package liveop

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// One guard per process, as the package recommends, serves test after
// test in a testing/synctest bubble of its own: no channel of one bubble
// is left in the guard for the next (a channel a bubble made cannot be
// used outside it).
func TestAGuardServesBubbleAfterBubble(t *testing.T) {
	g := newGuard(t, Config{CooldownSeconds: ptr(0.0), MaxConcurrentTotal: 1})
	for i := range 3 {
		synctest.Test(t, func(t *testing.T) {
			a := goRun(context.Background(), g, req("a", "aws/1"), (&counted{d: time.Minute, val: "a"}).run)
			synctest.Wait()
			w := req("b", "aws/2")
			w.Wait = true
			v, err := Run(context.Background(), g, w, (&counted{d: time.Second, val: "b"}).run)
			if o := <-a; o.val != "a" || v != "b" || err != nil {
				t.Fatalf("bubble %d: %+v, %q %v", i, o, v, err)
			}
		})
	}
	// And outside any bubble afterwards.
	if v, err := Run(context.Background(), g, req("c", "aws/3"), func(context.Context) (string, error) { return "c", nil }); v != "c" || err != nil {
		t.Fatal(v, err)
	}
}

// A Guard keeps the cooldowns and the callers' starts of a bubble, at the
// times of the bubble's clock, which starts again at midnight UTC on
// 2000-01-01 in the next bubble: there, a cooldown begun two hours into
// the first has its length and those two hours left, and a start is
// still in the quota window, as the package documentation says;
// ResetAll between the tests forgets them.
func TestAGuardKeepsABubblesCooldownsUntilResetAll(t *testing.T) {
	for i, reset := range []bool{false, true} {
		g := newGuard(t, Config{CallerMaxOperations: 1})
		synctest.Test(t, func(t *testing.T) {
			time.Sleep(time.Hour)
			if _, err := Run(context.Background(), g, req("a", "aws/1"), (&counted{d: time.Hour}).run); err != nil {
				t.Fatal(err)
			}
		})
		if reset {
			g.ResetAll()
		}
		synctest.Test(t, func(t *testing.T) {
			left, err := g.CooldownRemaining("aws/1"), g.Check(req("b", "aws/2"))
			if reset && (left != 0 || err != nil) {
				t.Fatalf("%d: after ResetAll, the next bubble finds a cooldown of %v left, and %v", i, left, err)
			}
			if !reset && (left != 2*time.Hour+2*time.Minute || !errors.Is(err, ErrQuota) ||
				err.(*RefusedError).RetryAfter != 2*time.Hour) {
				t.Fatalf("%d: the next bubble finds a cooldown of %v left, and %v; want 2h2m0s, and a quota refusal of 2h", i, left, err)
			}
		})
	}
}
