//go:build go1.25

package modeltest

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// The watchdog fails once no step has begun within its limit, naming the
// test and listing the steps of the sequence running, not those of the
// sequence before; while steps go on, it does nothing.
func TestWatchFailsWhenNoStepBegins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w Watch
		fails := make(chan string, 2)
		stop := w.start("TestModel", time.Minute, func(msg string) { fails <- msg })
		defer stop()
		w.Begin("old sequence")
		w.Begin("new sequence")
		for i := range 8 {
			time.Sleep(40 * time.Second)
			w.Step("step %d", i)
		}
		synctest.Wait()
		if len(fails) != 0 {
			t.Fatalf("failed while steps went on: %q", <-fails)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if len(fails) != 1 {
			t.Fatalf("failed %d times after two minutes without a step, want once", len(fails))
		}
		msg := <-fails
		want := "TestModel: no step began in 1m0s of real time: a goroutine spins at one instant of the bubble's clock. The sequence:\n  new sequence\n  step 0\n"
		if !strings.HasPrefix(msg, want) || strings.Contains(msg, "old sequence") || !strings.HasSuffix(msg, "step 7") {
			t.Fatalf("message %q, want it to begin %q and list the steps of the new sequence alone", msg, want)
		}
	})
}
