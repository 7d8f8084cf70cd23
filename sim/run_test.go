//go:build go1.25

package sim

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
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

// Execute validates its scenario as Parse does: a scenario Validate
// refuses returns its *Error, naming the key, before any call is made,
// rather than a run of no calls (no workers), a panic (no actions, a
// negative number of calls) or an hour of throttles (a negative rate).
func TestExecuteValidatesTheScenario(t *testing.T) {
	for _, c := range []struct {
		path string
		edit func(*Scenario)
	}{
		{"workload.workers", func(sc *Scenario) { sc.Workload.Workers = 0 }},
		{"workload.calls", func(sc *Scenario) { sc.Workload.Calls = -1 }},
		{"workload.actions", func(sc *Scenario) { sc.Workload.Actions = nil }},
		{"provider.rate", func(sc *Scenario) { sc.Provider.Rate = -5 }},
		{"client.rate", func(sc *Scenario) { sc.Client.Rate = -5 }},
	} {
		t.Run(c.path, func(t *testing.T) {
			sc, err := Parse([]byte("workload: {workers: 4, calls: 40}\nprovider: {rate: 10, burst: 20}\n"))
			if err != nil {
				t.Fatal(err)
			}
			sc.TimeLimit = time.Minute
			c.edit(sc)
			synctest.Test(t, func(t *testing.T) {
				var res *Result
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("Execute of a scenario whose %s is bad: panic %v; want an *Error naming it", c.path, p)
						}
					}()
					res, err = NewRun(sc, Static).Execute(context.Background(), SystemClock{})
				}()
				var se *Error
				if !errors.As(err, &se) || se.Path != c.path || res != nil {
					t.Fatalf("Execute of a scenario whose %s is bad: error %v (a result: %v); want an *Error of path %s", c.path, err, res != nil, c.path)
				}
			})
		})
	}
}

// An Execute that Validate refused ran nothing: it is not the Run's
// execution, and once the scenario is mended the Run executes, rather
// than saying it was executed already (ErrRunExecuted) when it never ran.
func TestARunRefusedByValidateStillExecutes(t *testing.T) {
	sc, err := Parse([]byte("workload: {workers: 4, calls: 40}\nprovider: {rate: 10, burst: 20}\n"))
	if err != nil {
		t.Fatal(err)
	}
	sc.Workload.Workers = 0
	synctest.Test(t, func(t *testing.T) {
		run := NewRun(sc, Static)
		var se *Error
		if _, err := run.Execute(context.Background(), SystemClock{}); !errors.As(err, &se) || se.Path != "workload.workers" {
			t.Fatalf("Execute with no workers: error %v, want the *Error of workload.workers", err)
		}
		sc.Workload.Workers = 4
		res, err := run.Execute(context.Background(), SystemClock{})
		if done, _ := run.Progress(); err != nil || res == nil || done != 40 {
			t.Fatalf("Execute of a Run whose first Execute Validate refused, its scenario mended: result %v, error %v, Progress %d calls done; want the run of 40 calls", res != nil, err, done)
		}
	})
}
