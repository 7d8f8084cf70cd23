package sim

import (
	"math"
	"slices"
	"testing"
	"time"
)

// Every strategy a chart can draw has a color of its own, opaque, told
// apart from the others a chart of its family draws beside it: a strategy
// without one would be drawn in the zero color, transparent, its lines
// invisible (the oracle reference, every estate scheduler).
func TestChartColorsEveryStrategy(t *testing.T) {
	for _, family := range [][]string{slices.Concat(StrategyNames, ReferenceNames), EstateStrategyNames} {
		seen := map[[3]uint8]string{}
		for _, name := range family {
			c, ok := strategyColors[name]
			if !ok || c.A != 0xff {
				t.Errorf("strategy %s: color %v, want an opaque one of its own", name, c)
				continue
			}
			rgb := [3]uint8{c.R, c.G, c.B}
			if other, dup := seen[rgb]; dup {
				t.Errorf("strategies %s and %s share the color %v", other, name, c)
			}
			seen[rgb] = name
		}
	}
}

// The chart's ideal line is the calls the ideal client has completed by
// each second: every token used at once, but no action's tokens beyond its
// own work, which another action's calls cannot use. It reaches the
// workload's calls at the ideal makespan, not before: an estate's 48
// scopes hold in their bursts alone more tokens than its calls, but its
// ideal is 55 s. In default, whose two actions have as much work each,
// it is the capacity until the work is done.
func TestChartIdealEndsAtTheIdealMakespan(t *testing.T) {
	for _, name := range []string{ScenarioEstateUniform, ScenarioDefault} {
		sc, _ := Builtin(name)
		ideal := sc.IdealMakespan()
		before := ideal - time.Second
		if got := sc.idealCalls(before); !(got < float64(sc.Workload.Calls)) {
			t.Errorf("%s: the ideal line at %v holds %.1f calls of %d, a second before the ideal makespan %v", name, before, got, sc.Workload.Calls, ideal)
		}
		if got := sc.idealCalls(ideal); math.Abs(got-float64(sc.Workload.Calls)) > 1e-6 {
			t.Errorf("%s: the ideal line at the ideal makespan %v holds %.1f calls of %d", name, ideal, got, sc.Workload.Calls)
		}
	}
	sc, _ := Builtin(ScenarioDefault)
	if got, want := sc.idealCalls(50*time.Second), sc.Capacity(50*time.Second); math.Abs(got-want) > 1e-6 {
		t.Errorf("default: the ideal line at 50 s %.1f, want the capacity %.1f", got, want)
	}
}
