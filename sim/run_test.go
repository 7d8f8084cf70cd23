//go:build go1.25

package sim

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
)

// A Run executes once: its Progress counts its own calls. A second
// Execute of the same Run is refused with ErrRunExecuted rather than
// running again with the first run's count, which Progress then overstates
// and Aborted reads.
func TestRunExecutesOnce(t *testing.T) {
	sc, err := Parse([]byte("workload: {workers: 4, calls: 40}\nprovider: {rate: 10, burst: 20}\n"))
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		run := NewRun(sc, Static)
		if _, err := run.Execute(context.Background(), SystemClock{}); err != nil {
			t.Fatal(err)
		}
		res, err := run.Execute(context.Background(), SystemClock{})
		if done, _ := run.Progress(); !errors.Is(err, ErrRunExecuted) || res != nil || done != 40 {
			t.Fatalf("a second Execute of one Run: result %v, error %v, Progress %d calls done; want no result, ErrRunExecuted, 40 (the first run's)", res != nil, err, done)
		}
	})
}
