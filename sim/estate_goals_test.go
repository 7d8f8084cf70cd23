//go:build go1.25

package sim

import (
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
)

// estateGoal is one goal of the pool on the estate, checked on every seed:
// value(seed) against a bound, for one strategy.
type estateGoal struct {
	name  string
	most  bool // the bound is a maximum (else a minimum)
	bound float64
	value func(i int, strategy string) float64
}

// estateGoalStrategies are the strategies TestEstateGoals runs in each
// estate variant: the pools, the oracle that tells the scheduling's share
// of their distance to the ideal from their controllers', and the plain
// pool where a goal compares with it.
var estateGoalStrategies = map[string][]string{
	ScenarioEstateUniform: {PoolAIMD, PoolGoodput, PoolOracle},
	ScenarioEstatePaused:  {Plain, PoolAIMD, PoolGoodput, PoolOracle},
	ScenarioEstateDead:    {PoolAIMD, PoolGoodput, PoolOracle},
	ScenarioEstateTenant:  {PoolAIMD, PoolGoodput},
}

// The pool's goals on the estate, over seeds 1-30 in virtual time, with 16
// workers, for both controllers:
//
//   - its makespan is at most 1.2 times the ideal in every variant;
//   - with a scope paused for 60 s, or an operation dead, the scopes it
//     does not touch are done within 1.1 times the time the same seed's
//     run without it took to do them;
//   - with the pause, it ends at least 3 times sooner than the plain pool
//     (W workers over one FIFO queue, the same governor);
//   - no call is lost but the dead operation's, all of whose calls are
//     lost, and every lost call is in the scan's ledger.
//
// A pool that gave its workers any queued task, as a plain pool does,
// fails the first three: its workers wait inside the slowest and the
// paused scopes while the other scopes' tasks wait behind them.
func TestEstateGoals(t *testing.T) {
	const n = 30
	pools := []string{PoolAIMD, PoolGoodput}
	run := func(name string, strategies ...string) *Sweep {
		sc, _ := Builtin(name)
		return sweepVirtual(t, sc, n, strategies...)
	}
	uniform := run(ScenarioEstateUniform, estateGoalStrategies[ScenarioEstateUniform]...)
	paused := run(ScenarioEstatePaused, estateGoalStrategies[ScenarioEstatePaused]...)
	dead := run(ScenarioEstateDead, estateGoalStrategies[ScenarioEstateDead]...)
	tenant := run(ScenarioEstateTenant, estateGoalStrategies[ScenarioEstateTenant]...)
	pausedKey, deadKey := paused.Scenario.Estate.Affected, dead.Scenario.Estate.Affected
	deadCalls := dead.Scenario.workPer()[deadKey]

	of := func(s *Sweep, i int, strategy string) *Result { return s.runs(strategy)[i] }
	overIdeal := func(s *Sweep) func(int, string) float64 {
		return func(i int, st string) float64 { r := of(s, i, st); return ratio(r.Makespan, r.Ideal) }
	}
	unaffected := func(s *Sweep, key string) func(int, string) float64 {
		return func(i int, st string) float64 {
			return ratio(of(s, i, st).DoneExcept(key), of(uniform, i, st).DoneExcept(key))
		}
	}
	goals := []estateGoal{
		{"makespan / ideal, uniform", true, 1.2, overIdeal(uniform)},
		{"makespan / ideal, paused", true, 1.2, overIdeal(paused)},
		{"makespan / ideal, dead", true, 1.2, overIdeal(dead)},
		{"makespan / ideal, tenant", true, 1.2, overIdeal(tenant)},
		{"unaffected done / uniform run's, paused", true, 1.1, unaffected(paused, pausedKey)},
		{"unaffected done / uniform run's, dead", true, 1.1, unaffected(dead, deadKey)},
		{"plain's makespan / this, paused", false, 3, func(i int, st string) float64 {
			return ratio(of(paused, i, Plain).Makespan, of(paused, i, st).Makespan)
		}},
		// Losses: 0 when nothing is lost as it should be.
		{"calls lost but the dead scope's (all variants)", true, 0, func(i int, st string) float64 {
			lost := 0
			for _, s := range []*Sweep{uniform, paused, dead, tenant} {
				r := of(s, i, st)
				lost += r.Lost - r.LostAffected
			}
			return float64(lost)
		}},
		{"dead scope's calls not lost", true, 0, func(i int, st string) float64 {
			return float64(deadCalls - of(dead, i, st).LostAffected)
		}},
		{"lost calls not in the ledger (all variants)", true, 0, func(i int, st string) float64 {
			missing := 0
			for _, s := range []*Sweep{uniform, paused, dead, tenant} {
				r := of(s, i, st)
				missing += max(0, r.Lost-r.InLedger) + max(0, r.InLedger-r.Lost)
			}
			return float64(missing)
		}},
	}

	// Goals the pool misses for a cause outside it, reported: logged with
	// their figures rather than failed, and failed once they are met, so
	// that the waiver goes with the cause.
	waived := map[string]string{}

	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "goal, every seed of %d\tbound\t%s\t\n", n, strings.Join(pools, "\t"))
	for _, g := range goals {
		line := fmt.Sprintf("%s\t", g.name)
		if g.most {
			line += fmt.Sprintf("<= %g\t", g.bound)
		} else {
			line += fmt.Sprintf(">= %g\t", g.bound)
		}
		for _, st := range pools {
			worst, met := 0.0, 0
			why, isWaived := waived[st+"/"+g.name]
			for i := range n {
				v := g.value(i, st)
				if i == 0 || (g.most && v > worst) || (!g.most && v < worst) {
					worst = v
				}
				if (g.most && v <= g.bound) || (!g.most && v >= g.bound) {
					met++
				} else if !isWaived {
					t.Errorf("%s, seed %d: %s %.3f, want %s %g", st, i+1, g.name, v, map[bool]string{true: "<=", false: ">="}[g.most], g.bound)
				}
			}
			line += fmt.Sprintf("worst %.2f, met on %d/%d", worst, met, n)
			if isWaived {
				line += " (waived)"
				if met == n {
					t.Errorf("%s: %q is met on every seed now: remove its waiver (%s)", st, g.name, why)
				} else {
					t.Logf("%s: %q waived, met on %d/%d seeds: %s", st, g.name, met, n, why)
				}
			}
			line += "\t"
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	t.Logf("the pool's goals on the estate (virtual time):\n%s", b.String())
}
