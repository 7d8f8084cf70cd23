//go:build go1.25

package sim

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// sdkRuns serializes the runs of the strategies that run the AWS SDK's
// code: the SDK's jitter stream is the process's, seeded for each run
// (UseSDKClock), so that a run in virtual time is the same every time.
var sdkRuns sync.Mutex

var allWalks = flag.Bool("allwalks", false, "TestTenantWinsTurnOnHowOftenTheLimitMoves: measure the eight walks of sim/README's table, not two")

func usesSDK(strategy string) bool {
	return strings.HasPrefix(strategy, "aws-") || strings.HasPrefix(strategy, "cloudg-aws") || strategy == PlainAdaptive
}

// sweepVirtual runs strategies of sc over seeds 1..n in virtual time, each
// run in its own synctest bubble, the seeds in parallel (the SDK's runs one
// at a time), and logs the table the command prints for -seeds.
func sweepVirtual(t *testing.T, sc *Scenario, n int, strategies ...string) *Sweep {
	t.Helper()
	sc.Strategies = strategies
	results := make([][]*Result, n)
	t.Run("seeds", func(t *testing.T) {
		for i := range n {
			t.Run(fmt.Sprint(i+1), func(t *testing.T) {
				t.Parallel()
				run := *sc
				run.Seed = uint64(i + 1)
				for _, name := range strategies {
					results[i] = append(results[i], runVirtualOne(t, &run, name))
				}
			})
		}
	})
	sw := NewSweep(sc)
	for i, rs := range results {
		if len(rs) != len(strategies) {
			t.Fatalf("seed %d did not run", i+1)
		}
		sw.Add(uint64(i+1), rs)
	}
	var b strings.Builder
	if err := WriteSweep(&b, sw, AWSAdaptive); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	return sw
}

// runVirtualOne runs one strategy of sc in a synctest bubble.
func runVirtualOne(t *testing.T, sc *Scenario, name string) *Result {
	t.Helper()
	if usesSDK(name) {
		sdkRuns.Lock()
		defer sdkRuns.Unlock()
		// Inside the bubble the SDK's clock is the time package, which is
		// virtual there; UseSDKClock seeds its jitter and sets its
		// shortest sleep, so that every run starts from the same state.
		restore := UseSDKClock(SystemClock{}, sc.Seed)
		defer restore()
	}
	var r *Result
	synctest.Test(t, func(t *testing.T) {
		var err error
		if r, err = NewRun(sc, name).Execute(context.Background(), SystemClock{}); err != nil {
			t.Fatal(err)
		}
	})
	return r
}

// The first goal: against aws-adaptive, the opt-in goodput controller
// has a goodput at least aws-adaptive's and fewer rejected requests on 28
// of seeds 1-30 of default, drop and tenant. Both strategies are
// reproducible in virtual time up to one rare tie (an answer and an SDK
// caller's wake on the same nanosecond: over nine sweeps one aws-adaptive
// run of 90 moved, and no count with it), so the counts hold from run to
// run. They are not robust to immaterial changes, though: SDK sleeps
// ending up to 2.4 µs later moved drop's by 2 and tenant's by 5 (sim/README,
// Time; measured before the controller's sprint). It is met on default and
// drop; this test holds what is (it fails if the controller regresses, and
// once the goal is met on tenant, so that this comment goes with it):
//
//   - default and drop: rejected less than aws-adaptive on every seed, and
//     both on at least 28 seeds of each (29 and 30). The sprint at the end
//     of the demand (bucket.GoodputSprintQuiet) made drop's: before it, 26,
//     the provider's bucket holding at the end what the controller, paced
//     a percent under the limit, had left in it. The seeds it does not win
//     are near-ties (a fraction of a second of makespan), decided by
//     whether a throttle, and its retry's backoff, falls in the run's last
//     second.
//   - tenant, whose second tenant's share moves every 10 s: a mean
//     goodput of at least 99% (99.5%; aws-adaptive's is 99.3%, and the
//     first climb's was 90.8%) at a lower mean rejected share than
//     aws-adaptive's, rejected less on at least 29 seeds (30), and both
//     on at least 20 (21, or 22 when aws-adaptive's one tie takes its
//     other figure; 15 before the controller's moving mode, 3 with its
//     first climb). The seeds it loses it loses on goodput: the limit
//     rose in the run's last seconds, and the provider's bucket held what
//     the controller had not drawn yet when the demand ended.
//
// The reference Oracle, which knows the limit at every instant and sends
// the moment the provider's bucket holds a token, wins all 30 seeds of
// each of the three, rejected on none; the test asserts it (at least 29,
// for the rare tie), so that these scenarios keep measuring how closely a
// client follows the limit. That is what the counts turn on, to the last
// fifth of a percent of the capacity: an oracle that serves 99.8% of the
// limit wins 22, 12 and 27 (sim/README).
//
// On model-10 and model-drop it keeps at least 97% of the true capacity on
// every seed, and it loses no call anywhere.
func TestGoodputControllerBeatsAdaptiveMode(t *testing.T) {
	for _, name := range []string{ScenarioDefault, ScenarioDrop, ScenarioTenant} {
		t.Run(name, func(t *testing.T) {
			sc, _ := Builtin(name)
			sw := sweepVirtual(t, sc, 30, AWSAdaptive, CloudgGoodput, Oracle)
			both, g, r := sw.Wins(CloudgGoodput, AWSAdaptive)
			t.Logf("%s: goodput >= aws-adaptive's and rejected < aws-adaptive's on %d of 30 seeds (goodput %d, rejected %d); the goal is 28", name, both, g, r)
			// The reference: following the limit perfectly meets the goal.
			ob, og, or := sw.Wins(Oracle, AWSAdaptive)
			gpo, rejo, losto, _ := sw.Figures(Oracle)
			t.Logf("%s: the oracle wins on %d of 30 seeds (goodput %d, rejected %d), mean goodput %.2f%%, rejected %.2f%%", name, ob, og, or, 100*gpo.Mean, 100*rejo.Mean)
			if ob < 29 || rejo.Max != 0 || losto.Max != 0 {
				t.Errorf("%s: the oracle wins on %d of 30 seeds (want >= 29), rejected up to %.2f%% (want 0), lost up to %v (want 0): it no longer follows the limit, or the scenario no longer measures following it",
					name, ob, 100*rejo.Max, losto.Max)
			}
			if name == ScenarioTenant && both >= 28 {
				t.Errorf("%s: wins on %d of 30 seeds: the goal is met, assert it (and update the comment)", name, both)
			}
			gp, rej, lost, _ := sw.Figures(CloudgGoodput)
			ga, reja, _, _ := sw.Figures(AWSAdaptive)
			switch name {
			case ScenarioTenant:
				if both < 20 || r < 29 || gp.Mean < 0.99 || rej.Mean >= reja.Mean {
					t.Errorf("tenant: wins on %d seeds (want >= 20), rejected less on %d (want >= 29), mean goodput %.2f%% (want >= 99%%; aws-adaptive %.2f%%), mean rejected %.2f%% (want < aws-adaptive's %.2f%%)",
						both, r, 100*gp.Mean, 100*ga.Mean, 100*rej.Mean, 100*reja.Mean)
				}
			default:
				if both < 28 || r != 30 { // the goal
					t.Errorf("wins on %d of 30 seeds (want >= 28), rejected less on %d (want 30)", both, r)
				}
			}
			if lost.Max != 0 {
				t.Errorf("the goodput controller lost up to %v calls", lost.Max)
			}
		})
	}
	for _, name := range []string{ScenarioModel10, ScenarioModelDrop} {
		t.Run(name, func(t *testing.T) {
			sc, _ := Builtin(name)
			sw := sweepVirtual(t, sc, 30, CloudgGoodput)
			if g, _, _, _ := sw.Figures(CloudgGoodput); g.Min < 0.97 {
				t.Errorf("goodput %.2f%% on its worst seed, want >= 97%%", 100*g.Min)
			}
		})
	}
}

// shortBurst is a burst of demand about ten seconds long at a limit equal
// to the configured rate, with a burst as small as the configured one: one
// action, 220 calls by 64 workers, the provider refilling 20 per second
// with a burst of 20, and clients (the governor's EC2 settings included)
// configured at 20 rps with a burst of 20.
func shortBurst() *Scenario {
	sc := base()
	sc.Name = "short-burst"
	sc.Description = "64 workers, 220 calls of one EC2 action; limit 20 rps (burst 20), clients configured at 20 rps, burst 20"
	sc.Workload.Actions = []string{"DescribeInstances"}
	sc.Workload.Calls = 220
	sc.Provider.Rate, sc.Provider.Burst = 20, 20
	sc.Client.Burst = 20
	sc.Governor.AWS.Services = map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 20, Burst: 20}}
	return sc
}

// What the goodput controller's first-event rule costs a short burst: a
// first throttle less than a second after counting began halves the rate
// and puts the bucket in its moving mode, whose first drain finds the
// limit again (bucket.GoodputFirstShare). When the configured rate is well
// above the limit, halving is the right first guess (default is 20 against
// 10, and the rule cut its rejections from 2.18% to 1.33%); when they are
// equal, as here, the burst runs at half the limit until that drain, and
// the provider's bucket, as small as the client's, stores only part of
// what it was not asked for. The first drain therefore comes once the
// bucket's burst would have lasted at its rate, here 1 s. Over seeds 1-10
// the controller keeps 94.1% of the capacity, rejected on 0.45% of
// requests (aws-adaptive 81.5%, rejected on 18.4%; AIMD 58.5%): 83.3% with
// the first drain 4 s after the event whatever the burst, 97.03% before
// the moving mode (sim/README, the moving mode). The test asserts at
// least 93% on average, at least aws-adaptive's goodput, and fewer
// rejections.
func TestGoodputControllerOnAShortBurst(t *testing.T) {
	sw := sweepVirtual(t, shortBurst(), 10, AWSAdaptive, CloudgGoodput, CloudgAIMD)
	gp, rej, lost, _ := sw.Figures(CloudgGoodput)
	ga, reja, _, _ := sw.Figures(AWSAdaptive)
	both, g, r := sw.Wins(CloudgGoodput, AWSAdaptive)
	t.Logf("goodput %.2f%% (aws-adaptive %.2f%%), rejected %.2f%% (%.2f%%); wins on %d of 10 (goodput %d, rejected %d)",
		100*gp.Mean, 100*ga.Mean, 100*rej.Mean, 100*reja.Mean, both, g, r)
	if gp.Mean < 0.93 || gp.Mean < ga.Mean || rej.Mean >= reja.Mean || lost.Max != 0 {
		t.Errorf("the goodput controller keeps %.2f%% of the capacity (want >= 93%% and >= aws-adaptive's %.2f%%), rejected on %.2f%% of requests (want < aws-adaptive's %.2f%%), lost up to %v calls (want 0)",
			100*gp.Mean, 100*ga.Mean, 100*rej.Mean, 100*reja.Mean, lost.Max)
	}
}

// How far tenant's count of wins is the scenario's and how far the
// controller's: the same scenario with its second tenant moving more
// slowly (every 10 s to every minute) or by less (steps of up to 4 or 2
// rps), seeds 1-30 in virtual time. On every walk the goodput controller
// keeps more of the capacity than aws-adaptive on average and is rejected
// less; the count of seeds it wins on both turns on how often the limit
// moves, since a rise in the run's last seconds is what it loses a seed
// to (sim/README): with a step every minute it wins 28 (29 before the
// controller's moving mode), which the test asserts less one, for
// aws-adaptive's rare tie.
//
// By default it measures two walks, steps of up to 4 rps every 20 s (the
// one a controller whose climb no longer doubles fails on: 99.08% of the
// capacity against aws-adaptive's 99.30%) and every minute; -allwalks
// measures the eight of sim/README's table (about a minute, 7 under the
// race detector).
func TestTenantWinsTurnOnHowOftenTheLimitMoves(t *testing.T) {
	everies, steps := []time.Duration{20 * time.Second, time.Minute}, []float64{0.25}
	if *allWalks {
		everies, steps = []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second, time.Minute}, []float64{0.25, 0.125}
	}
	var rows []string
	for _, every := range everies {
		for _, step := range steps {
			sc, _ := Builtin(ScenarioTenant)
			sc.Provider.Tenant.Walk.Every, sc.Provider.Tenant.Walk.Step = every, step
			sc.Description = fmt.Sprintf("tenant, its second tenant moving every %v by up to %.0f rps", every, 16*step)
			sw := sweepVirtual(t, sc, 30, AWSAdaptive, CloudgGoodput)
			both, g, r := sw.Wins(CloudgGoodput, AWSAdaptive)
			gp, rej, lost, _ := sw.Figures(CloudgGoodput)
			ga, reja, _, _ := sw.Figures(AWSAdaptive)
			rows = append(rows, fmt.Sprintf("| every %v, up to %.0f rps | %d (goodput %d, rejected %d) | %.2f%% / %.2f%% | %.2f%% / %.2f%% |",
				every, 16*step, both, g, r, 100*gp.Mean, 100*ga.Mean, 100*rej.Mean, 100*reja.Mean))
			if gp.Mean < ga.Mean || rej.Mean >= reja.Mean || lost.Max != 0 {
				t.Errorf("every %v, step %v: mean goodput %.2f%% (aws-adaptive %.2f%%), rejected %.2f%% (%.2f%%), lost up to %v: want at least its goodput, fewer rejected, none lost",
					every, step, 100*gp.Mean, 100*ga.Mean, 100*rej.Mean, 100*reja.Mean, lost.Max)
			}
			if every == time.Minute && step == 0.25 && both < 27 {
				t.Errorf("a step every minute: wins on %d of 30 seeds, want >= 27", both)
			}
		}
	}
	t.Logf("\n| the tenant's walk | wins vs aws-adaptive | mean goodput (goodput / aws-adaptive) | mean rejected |\n| --- | --- | --- | --- |\n%s", strings.Join(rows, "\n"))
}

// The second goal: in the outage scenario, whose governor waits for its
// breakers' verdicts (breaker_wait), every cloudg strategy loses no call
// over seeds 1-30, those that run their calls through the governor's loop
// and those that run them through the SDK's retry middleware under
// cloudgaws.Install: each call's deadline allows it to wait out the 30 s
// outage and the breaker's 60 s cooldown. With the governor's default
// breaker, which fails calls at once, they lose most of the calls left at
// the outage.
func TestNoCallLostToTheOutage(t *testing.T) {
	sc, _ := Builtin(ScenarioOutage)
	if !sc.Governor.AWS.BreakerWait {
		t.Fatal("the outage scenario's governor does not wait for verdicts")
	}
	sw := sweepVirtual(t, sc, 30, CloudgAIMD, CloudgGoodput, CloudgAWS, CloudgAWSGoodput)
	for _, name := range sw.Strategies {
		if _, _, lost, _ := sw.Figures(name); lost.Max != 0 {
			t.Errorf("%s lost up to %v calls in the outage, want none", name, lost.Max)
		}
	}
	ff, err := LoadFile("scenarios/outage-failfast.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fast := sweepVirtual(t, ff, 3, CloudgAIMD, CloudgGoodput, CloudgAWS, CloudgAWSGoodput)
	for _, name := range fast.Strategies {
		if _, _, lost, _ := fast.Figures(name); lost.Min < 100 {
			t.Errorf("%s with the default breaker lost only %v calls on its best seed: the outage scenario no longer tests the wait", name, lost.Min)
		}
	}
}

// The third goal: the spec's AIMD, still the default with its numbers,
// no longer crawls while its rate climbs back, since the callers queued
// at a halved rate follow the rate up: over seeds 1-30 of the default
// scenario every run ends within 10% of the ideal makespan (110 s; with
// the queue kept as a time the mean was 137.5 s and the worst 176 s), and
// none loses a call.
func TestAIMDQueueFollowsTheRate(t *testing.T) {
	sc, _ := Builtin(ScenarioDefault)
	sw := sweepVirtual(t, sc, 30, CloudgAIMD)
	_, rejected, lost, makespan := sw.Figures(CloudgAIMD)
	ideal := sc.IdealMakespan().Seconds()
	if makespan.Max > 1.1*ideal || lost.Max != 0 || rejected.Max > 0.03 {
		t.Errorf("AIMD: makespan up to %.1f s (ideal %.0f s), %v calls lost, up to %.2f%% rejected", makespan.Max, ideal, lost.Max, 100*rejected.Max)
	}
}

// The runs the tests compare are reproducible: a strategy's figures in
// virtual time do not depend on the scheduler, the AWS SDK's adaptive mode
// included (its sleeps end on a grid, a nanosecond apart per call).
func TestVirtualRunsAreReproducible(t *testing.T) {
	sc, _ := Builtin(ScenarioDrop)
	sc.Seed = 4
	for _, name := range []string{AWSAdaptive, CloudgGoodput, CloudgAWS} {
		a, b := runVirtualOne(t, sc, name), runVirtualOne(t, sc, name)
		same := slices.EqualFunc(a.Series, b.Series, func(x, y Sample) bool {
			x.Rate, y.Rate = 0, 0 // NaN for a strategy that exposes none
			return x == y
		})
		if a.Makespan != b.Makespan || a.Attempts != b.Attempts || a.Throttled != b.Throttled || !same {
			t.Errorf("%s: two runs differ: %v %d %d and %v %d %d", name, a.Makespan, a.Attempts, a.Throttled, b.Makespan, b.Attempts, b.Throttled)
		}
	}
}

// A run the time limit cuts is aborted, its makespan the limit, even when
// every call had started before it: the calls it cut are lost, not done.
// 64 calls at once against a burst of 20 and 10 rps are not done in 2 s;
// an estate of one listing and 20 detail calls at 1 rps (burst 5) is not
// done in 3 s.
func TestTimeLimitAbortsARunWhoseCallsAllStarted(t *testing.T) {
	sc, _ := Builtin(ScenarioDefault)
	sc.TimeLimit = 2 * time.Second
	sc.Workload.Calls = 64
	sc.Workload.Actions = []string{"A"}
	sc.Provider.Burst = 20
	est := estateScenario("tiny", "")
	(&Estate{Accounts: []string{"111111111111"}, Regions: []string{"us-east-1"},
		Services: []EstateService{{Name: "ec2", List: "DescribeInstances", ListRate: 20, PageSize: 100,
			Detail: "DescribeInstanceAttribute", DetailRate: 1, Items: 20}}}).apply(est)
	est.TimeLimit = 3 * time.Second
	for _, c := range []struct {
		sc       *Scenario
		strategy string
	}{{sc, Static}, {sc, CloudgAIMD}, {est, Plain}, {est, PoolAIMD}} {
		r := runVirtualOne(t, c.sc, c.strategy)
		if r.Lost == 0 {
			t.Fatalf("%s %s: no call lost; the test needs a run the limit cuts", c.sc.Name, c.strategy)
		}
		if !r.Aborted || r.Makespan != c.sc.TimeLimit {
			t.Errorf("%s %s: %d of %d calls lost at the %v limit, but aborted %v, makespan %v",
				c.sc.Name, c.strategy, r.Lost, r.Calls, c.sc.TimeLimit, r.Aborted, r.Makespan)
		}
	}
}

// The time limit ends a run when it falls, not at the next whole second:
// a limit of 2.5 s cuts the run at 2.5 s, so that no call succeeds after
// it and the successes stay within what the provider could serve by then
// (the capacity over the makespan, the limit), and no scope of an estate
// is done after it. 1,000 calls against a burst of 10 and 10 rps are not
// done in 2.5 s, nor are an estate's 1,000 detail calls at 10 rps.
func TestTimeLimitBetweenWholeSecondsCutsTheRunAtIt(t *testing.T) {
	sc, _ := Builtin(ScenarioDefault)
	sc.TimeLimit = 2500 * time.Millisecond
	sc.Workload.Calls = 1000
	sc.Workload.Actions = []string{"A"}
	sc.Provider.Burst = 10
	est := estateScenario("tiny", "")
	(&Estate{Accounts: []string{"111111111111"}, Regions: []string{"us-east-1"},
		Services: []EstateService{{Name: "ec2", List: "DescribeInstances", ListRate: 20, PageSize: 1000,
			Detail: "DescribeInstanceAttribute", DetailRate: 10, Items: 1000}}}).apply(est)
	est.TimeLimit = 2500 * time.Millisecond
	for _, c := range []struct {
		sc       *Scenario
		strategy string
	}{{sc, Oracle}, {sc, CloudgGoodput}, {est, PoolOracle}} {
		r := runVirtualOne(t, c.sc, c.strategy)
		if !r.Aborted || r.Makespan != c.sc.TimeLimit {
			t.Errorf("%s %s: aborted %v, makespan %v, want the %v limit", c.sc.Name, c.strategy, r.Aborted, r.Makespan, c.sc.TimeLimit)
		}
		if r.Goodput() > 1 {
			t.Errorf("%s %s: %d calls succeeded where the provider could serve %.1f by the %v limit: goodput %.1f%%",
				c.sc.Name, c.strategy, r.Succeeded, r.Capacity, c.sc.TimeLimit, 100*r.Goodput())
		}
		if done := r.DoneExcept(""); done > c.sc.TimeLimit {
			t.Errorf("%s %s: a scope's last call ended at %v, after the %v limit", c.sc.Name, c.strategy, done, c.sc.TimeLimit)
		}
	}
}

// A run whose context ends before it is done is aborted there: its
// makespan is when the context ended, not the time limit it never
// reached, and its capacity and goodput cover that span. The default
// scenario cut after 5 s, and an estate's.
func TestRunCutByItsContextEndsThere(t *testing.T) {
	sc, _ := Builtin(ScenarioDefault)
	est, _ := Builtin(ScenarioEstateUniform)
	for _, c := range []struct {
		sc       *Scenario
		strategy string
	}{{sc, CloudgGoodput}, {est, PoolAIMD}} {
		t.Run(c.sc.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Cancelled, not a deadline: the governor fails at once
				// a call whose wait would pass a deadline.
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				time.AfterFunc(5*time.Second, cancel)
				r, err := NewRun(c.sc, c.strategy).Execute(ctx, SystemClock{})
				if err != nil {
					t.Fatal(err)
				}
				if !r.Aborted || r.Makespan != 5*time.Second {
					t.Errorf("%s cut by its context at 5s: aborted %v, makespan %v (%d of %d calls succeeded)",
						c.strategy, r.Aborted, r.Makespan, r.Succeeded, r.Calls)
				}
				if want := c.sc.Capacity(5 * time.Second); r.Capacity != want {
					t.Errorf("%s: capacity %.1f, want %.1f (the provider's over the 5s run)", c.strategy, r.Capacity, want)
				}
			})
		})
	}
}
