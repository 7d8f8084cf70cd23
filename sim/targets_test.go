//go:build go1.25

package sim

import (
	"fmt"
	"strings"
	"testing"
)

// runVirtual runs every strategy of sc, each in its own synctest bubble:
// virtual time, so the figures do not depend on the machine's speed.
func runVirtual(t *testing.T, sc *Scenario) map[string]*Result {
	t.Helper()
	out := map[string]*Result{}
	var list []*Result
	for _, name := range sc.StrategyList() {
		r := runVirtualOne(t, sc, name)
		out[name] = r
		list = append(list, r)
	}
	var b strings.Builder
	if err := WriteTable(&b, sc, list); err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d\n%s", sc.Seed, b.String())
	return out
}

// The targets, on the default scenario and on the one where the
// limit drops from 20 to 8 at t = 60 s, in virtual time, for two seeds.
//
// Met by the goodput controller (controller: goodput) and asserted: it
// loses no call; no strategy loses fewer; it is rejected less often than
// every other strategy, and at most 3% of the time; its goodput is at least
// 95% of the true capacity and within 5% of every other strategy's.
//
// AIMD, the default controller, loses no call, is rejected less than the
// AWS SDK's standard mode, the static limiter and failsafe-go, at most 3%
// of the time; its goodput floor is a regression guard.
//
// The strategies compared are the six clients of the first version of the
// simulator; the cloudg-aws rows are the same governor under the SDK's
// retry loop, and TestGoodputControllerBeatsAdaptiveMode and its siblings
// hold the goals that came after.
func TestTargets(t *testing.T) {
	for _, name := range []string{ScenarioDefault, ScenarioDrop} {
		for _, seed := range []uint64{1, 2} {
			t.Run(fmt.Sprintf("%s/seed%d", name, seed), func(t *testing.T) {
				sc, _ := Builtin(name)
				sc.Seed = seed
				sc.Strategies = []string{AWSStandard, AWSAdaptive, Static, Failsafe, CloudgAIMD, CloudgGoodput}
				res := runVirtual(t, sc)
				gp, aimd := res[CloudgGoodput], res[CloudgAIMD]
				for _, g := range []*Result{gp, aimd} {
					if g.Lost != 0 {
						t.Errorf("%s lost %d calls, want 0", g.Strategy, g.Lost)
					}
					if g.Aborted {
						t.Errorf("%s did not finish", g.Strategy)
					}
				}
				if gp.Goodput() < 0.95 {
					t.Errorf("goodput controller: goodput %.1f%% of the true capacity, want >= 95%%", 100*gp.Goodput())
				}
				for _, o := range res {
					if o == gp || o == aimd {
						continue
					}
					if o.Lost < gp.Lost {
						t.Errorf("%s lost %d calls, fewer than the goodput controller's %d", o.Strategy, o.Lost, gp.Lost)
					}
					if gp.Goodput() < 0.95*o.Goodput() {
						t.Errorf("goodput controller: goodput %.1f%%, more than 5%% under %s's %.1f%%", 100*gp.Goodput(), o.Strategy, 100*o.Goodput())
					}
					if aimd.Throttled >= o.Throttled {
						t.Errorf("aimd: %d requests rejected, not fewer than %s's %d", aimd.Throttled, o.Strategy, o.Throttled)
					}
					if gp.Throttled >= o.Throttled {
						t.Errorf("goodput controller: %d requests rejected, not fewer than %s's %d", gp.Throttled, o.Strategy, o.Throttled)
					}
				}
				if aimd.RejectedShare() > 0.03 {
					t.Errorf("aimd: %.1f%% of requests rejected, want <= 3%%", 100*aimd.RejectedShare())
				}
				if gp.RejectedShare() > 0.03 {
					t.Errorf("goodput controller: %.1f%% of requests rejected, want <= 3%%", 100*gp.RejectedShare())
				}
				if aimd.Goodput() < 0.55 {
					t.Errorf("aimd: goodput %.1f%%, under its measured floor of 55%%", 100*aimd.Goodput())
				}
			})
		}
	}
}
