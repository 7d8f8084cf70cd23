//go:build go1.25

package sim

import (
	"math"
	"testing"
	"time"
)

// Oracle follows the limit the moment it moves, the workers already
// waiting included: against a limit of 10, then 4 from 10 s, then 16 from
// 20 s, each second's successes are the limit of that second, and nothing
// is rejected. A pace that kept the waiting workers on reservations made
// at the old rate (x/time/rate's) would serve 4 a second for seconds
// after the rise to 16.
func TestOracleFollowsTheLimitAtOnce(t *testing.T) {
	sc := base()
	sc.Name = "oracle-steps"
	sc.Workload.Actions = []string{"DescribeInstances"}
	sc.Workload.Calls = 10 + 10*10 + 4*10 + 16*10
	sc.Provider.Rate, sc.Provider.Burst = 10, 10
	sc.Provider.Changes = []Change{{At: 10 * time.Second, Rate: 4}, {At: 20 * time.Second, Rate: 16}}
	r := runVirtualOne(t, sc, Oracle)
	if r.Throttled != 0 || r.Lost != 0 {
		t.Errorf("rejected %d requests and lost %d calls, want none", r.Throttled, r.Lost)
	}
	for s := 1; s < len(r.Series)-1; s++ {
		want := sc.TrueRate(time.Duration(s)*time.Second + time.Second/2)
		if got := r.Series[s].OK; math.Abs(float64(got)-want) > 1 {
			t.Errorf("second %d: %d successes, want the limit %v (within 1)", s, got, want)
		}
		if rate := r.Series[s].Rate; s != 10 && s != 20 && rate != want {
			t.Errorf("second %d: Rate() %v, want the limit %v", s, rate, want)
		}
	}
}

// Against a second tenant whose share moves every 10 s, Oracle's successes
// follow the limit left to it second by second, on both actions.
func TestOracleFollowsTheTenantsShare(t *testing.T) {
	sc, _ := Builtin(ScenarioTenant)
	sc.Seed = 3
	r := runVirtualOne(t, sc, Oracle)
	if r.Lost != 0 {
		t.Errorf("lost %d calls", r.Lost)
	}
	off := 0
	for s := 1; s < len(r.Series)-1; s++ {
		want := sc.TrueRate(time.Duration(s)*time.Second + time.Second/2)
		if got := r.Series[s].OK; math.Abs(float64(got)-want) > 2 {
			off++
			t.Logf("second %d: %d successes, limit %.1f", s, got, want)
		}
	}
	if off > 2 {
		t.Errorf("%d of %d seconds more than 2 successes from the limit, want at most 2", off, len(r.Series)-2)
	}
}

// A bucket of burst 1 holds one token at most, and the provider admits a
// request on it: Oracle sends then too. Against 10 rps with a burst of 1,
// 100 calls of one action take about 10 s and none is lost.
func TestOracleSendsOnABurstOfOne(t *testing.T) {
	sc := base()
	sc.Name = "oracle-burst-1"
	sc.Workload.Actions = []string{"DescribeInstances"}
	sc.Workload.Calls = 100
	sc.Provider.Rate, sc.Provider.Burst = 10, 1
	sc.TimeLimit = 5 * time.Minute
	r := runVirtualOne(t, sc, Oracle)
	if r.Aborted || r.Lost != 0 || r.Makespan > 12*time.Second {
		t.Errorf("100 calls at 10 rps, burst 1: aborted %v, lost %d, makespan %v; want all done in about 10 s", r.Aborted, r.Lost, r.Makespan)
	}
}
