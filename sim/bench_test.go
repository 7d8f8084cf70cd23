//go:build go1.25

package sim

import (
	"context"
	"testing"
	"testing/synctest"
)

// inBubble runs f in a synctest bubble from a benchmark: synctest.Test takes
// a *testing.T, which testing.RunTests provides.
func inBubble(b *testing.B, f func(t *testing.T)) {
	b.Helper()
	ok := testing.RunTests(func(_, _ string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: b.Name(), F: func(t *testing.T) { synctest.Test(t, f) }}})
	if !ok {
		b.Fatal("the run failed")
	}
}

// BenchmarkScenario runs each strategy on the default and drop scenarios in
// virtual time, and reports the run's figures beside its CPU cost:
//
//	go test -run '^$' -bench Scenario -benchtime 1x ./sim
func BenchmarkScenario(b *testing.B) {
	for _, name := range []string{ScenarioDefault, ScenarioDrop} {
		for _, st := range StrategyNames {
			b.Run(name+"/"+st, func(b *testing.B) {
				sc, _ := Builtin(name)
				restore := UseSDKClock(SystemClock{}, sc.Seed)
				defer restore()
				var r *Result
				for b.Loop() {
					inBubble(b, func(t *testing.T) {
						var err error
						if r, err = NewRun(sc, st).Execute(context.Background(), SystemClock{}); err != nil {
							t.Fatal(err)
						}
					})
				}
				b.ReportMetric(r.Makespan.Seconds(), "makespan-s")
				b.ReportMetric(100*r.Goodput(), "goodput-%")
				b.ReportMetric(100*r.RejectedShare(), "rejected-%")
				b.ReportMetric(float64(r.Lost), "lost")
			})
		}
	}
}
