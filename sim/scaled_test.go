package sim

import (
	"context"
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// The command's way: real time, scaled. Every strategy, the SDK's included,
// must run on the scaled clock: a strategy left on the wall clock would take
// 50 times longer than its simulated makespan, or never finish.
func TestScaledClock(t *testing.T) {
	sc, _ := Builtin(ScenarioModel10)
	sc.Workload = Workload{Workers: 16, Calls: 300, Actions: []string{"DescribeInstances"}}
	sc.Provider.Burst = 20
	sc.Client.Burst = 20
	sc.TimeLimit = 10 * time.Minute
	ideal := sc.IdealMakespan() // 28 s
	clock := resilience.NewScaledClock(50)
	restore := UseSDKClock(clock, sc.Seed)
	defer restore()
	for _, name := range []string{AWSAdaptive, Failsafe, Static, CloudgGoodput} {
		start := time.Now()
		r, err := NewRun(sc, name).Execute(context.Background(), clock)
		if err != nil {
			t.Fatal(err)
		}
		wall := time.Since(start)
		t.Logf("%s: makespan %v (ideal %v) in %v of wall time, %d lost, %d rejected", name, r.Makespan, ideal, wall, r.Lost, r.Throttled)
		if r.Aborted || r.Makespan < ideal*9/10 || r.Makespan > 4*ideal {
			t.Errorf("%s: makespan %v, ideal %v", name, r.Makespan, ideal)
		}
		// x50 would take a fiftieth; a strategy on the wall clock would take
		// all of it. The bound leaves room for a loaded machine.
		if wall > r.Makespan/5 {
			t.Errorf("%s: %v of wall time for %v simulated at x50", name, wall, r.Makespan)
		}
		if name == CloudgGoodput && r.Lost != 0 {
			t.Errorf("governor lost %d calls", r.Lost)
		}
	}
}
