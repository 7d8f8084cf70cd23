//go:build go1.25

package sim

import (
	"context"
	"fmt"
	"strings"
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

// BenchmarkEstateSweep runs every strategy of the estate scenarios over
// seeds 1-30 in virtual time, the seeds in parallel, and prints each
// scenario's table, as the command prints it for -seeds 30 but free of the
// machine's load:
//
//	go test -run '^$' -bench EstateSweep -benchtime 1x ./sim
func BenchmarkEstateSweep(b *testing.B) {
	for _, name := range []string{ScenarioEstateUniform, ScenarioEstatePaused, ScenarioEstateDead, ScenarioEstateTenant} {
		b.Run(name, func(b *testing.B) {
			var sw *Sweep
			for b.Loop() {
				ok := testing.RunTests(func(_, _ string) (bool, error) { return true, nil },
					[]testing.InternalTest{{Name: b.Name(), F: func(t *testing.T) {
						sc, _ := Builtin(name)
						sw = sweepVirtual(t, sc, 30, EstateStrategyNames...)
					}}})
				if !ok {
					b.Fatal("the sweep failed")
				}
			}
			var out strings.Builder
			if err := WriteSweep(&out, sw, ""); err != nil {
				b.Fatal(err)
			}
			// Printed rather than logged: a benchmark's log is cut to a few
			// lines unless -v, which would print every seed's run too.
			fmt.Printf("%s:\n%s\n", b.Name(), out.String())
		})
	}
}
