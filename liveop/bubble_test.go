//go:build go1.25

package liveop

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// One guard per process, as the package recommends, serves test after
// test in a testing/synctest bubble of its own: nothing of one bubble is
// left in the guard for the next (a channel a bubble made cannot be used
// outside it).
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
