//go:build go1.25

package sim

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// fakeResult is a run whose goodput is succeeded/1000 of a capacity of
// 1000 calls and whose rejected share is throttled/1000 requests.
func fakeResult(strategy string, succeeded, throttled, lost int, makespan time.Duration) *Result {
	return &Result{Strategy: strategy, Succeeded: succeeded, Capacity: 1000, Attempts: 1000, Throttled: throttled, Lost: lost, Makespan: makespan}
}

// A sweep's figures are each strategy's mean, min and max over the seeds,
// and its wins count the seeds on which a strategy's goodput is at least
// the baseline's and its rejected share below it.
func TestSweepFiguresAndWins(t *testing.T) {
	sc, _ := Builtin(ScenarioDefault)
	sc.Strategies = []string{AWSAdaptive, CloudgGoodput}
	sw := NewSweep(sc)
	sw.Add(1, []*Result{fakeResult(AWSAdaptive, 990, 30, 0, 111*time.Second), fakeResult(CloudgGoodput, 995, 20, 0, 110*time.Second)}) // both
	sw.Add(2, []*Result{fakeResult(AWSAdaptive, 990, 30, 1, 112*time.Second), fakeResult(CloudgGoodput, 990, 30, 0, 112*time.Second)}) // goodput only (a tie)
	sw.Add(3, []*Result{fakeResult(AWSAdaptive, 999, 30, 2, 110*time.Second), fakeResult(CloudgGoodput, 995, 10, 0, 111*time.Second)}) // rejected only
	both, g, r := sw.Wins(CloudgGoodput, AWSAdaptive)
	if both != 1 || g != 2 || r != 2 {
		t.Fatalf("wins %d (goodput %d, rejected %d), want 1 (2, 2)", both, g, r)
	}
	gp, rej, lost, mk := sw.Figures(AWSAdaptive)
	if gp != (Spread{Mean: 0.993, Min: 0.99, Max: 0.999}) || rej.Mean != 0.03 || lost != (Spread{Mean: 1, Min: 0, Max: 2}) || mk != (Spread{Mean: 111, Min: 110, Max: 112}) {
		t.Fatalf("figures %+v %+v %+v %+v", gp, rej, lost, mk)
	}
	var b bytes.Buffer
	if err := WriteSweep(&b, sw, AWSAdaptive); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"seeds 1-3: mean (min-max) over 3 runs", "wins vs aws-adaptive", "1/3 (goodput 2, rejected 2)", "99.3%* (99.0-99.9)", "1 (0-2)", "*: calls were lost on some seeds"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteCSV(&b, sw); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 7 || lines[0] != "seed,strategy,goodput,rejected,lost,makespan,unused,overflowed" || lines[6] != "3,cloudg-goodput,0.995000,0.010000,0,111.000,0.0,0.0" {
		t.Fatalf("csv:\n%s", b.String())
	}
}

// A seed may have fewer runs than the sweep has strategies (a caller's
// Add of the runs that finished): the strategies it did not run have no
// run on that seed, which Figures, Wins and the tables leave out, the
// others' figures and wins counting the seeds they ran, with no panic.
func TestSweepSeedWithFewerRunsThanStrategies(t *testing.T) {
	figures := func(t *testing.T, what string, sw *Sweep, write func(*bytes.Buffer) error, checks func()) {
		t.Helper()
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("%s whose seed 2 has fewer runs than Strategies: panic %v; want the figures of the runs made", what, p)
			}
		}()
		checks()
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Errorf("writing the sweep: %v", err)
		}
	}
	sc, _ := Builtin(ScenarioDefault)
	sc.Strategies = []string{AWSAdaptive, CloudgGoodput}
	sw := NewSweep(sc)
	sw.Add(1, []*Result{fakeResult(AWSAdaptive, 990, 30, 0, 111*time.Second), fakeResult(CloudgGoodput, 995, 20, 0, 110*time.Second)})
	sw.Add(2, []*Result{fakeResult(AWSAdaptive, 980, 40, 0, 112*time.Second)})
	figures(t, "a sweep", sw, func(b *bytes.Buffer) error { return WriteSweep(b, sw, AWSAdaptive) }, func() {
		if gp, _, _, mk := sw.Figures(CloudgGoodput); gp != (Spread{Mean: 0.995, Min: 0.995, Max: 0.995}) || mk != (Spread{Mean: 110, Min: 110, Max: 110}) {
			t.Errorf("cloudg-goodput, run on seed 1 only: goodput %+v, makespan %+v; want seed 1's alone", gp, mk)
		}
		if gp, _, _, _ := sw.Figures(AWSAdaptive); gp.Mean != 0.985 {
			t.Errorf("aws-adaptive, run on both seeds: goodput %+v, want a mean of 0.985", gp)
		}
		if both, g, r := sw.Wins(CloudgGoodput, AWSAdaptive); both != 1 || g != 1 || r != 1 {
			t.Errorf("cloudg-goodput's wins over aws-adaptive %d (goodput %d, rejected %d), want 1 (1, 1): seed 1's", both, g, r)
		}
	})
	est, _ := Builtin(ScenarioEstateUniform)
	est.Strategies = []string{PoolAIMD, Plain} // the plain pool, whose makespan the table divides by the others', not run on seed 2
	esw := NewSweep(est)
	esw.Add(1, []*Result{fakeResult(PoolAIMD, 1000, 0, 0, 60*time.Second), fakeResult(Plain, 1000, 0, 0, 120*time.Second)})
	esw.Add(2, []*Result{fakeResult(PoolAIMD, 1000, 0, 0, 80*time.Second)})
	figures(t, "an estate's sweep", esw, func(b *bytes.Buffer) error { return WriteSweep(b, esw, "") }, func() {
		if _, _, _, mk := esw.Figures(Plain); mk != (Spread{Mean: 120, Min: 120, Max: 120}) {
			t.Errorf("an estate's plain pool, run on seed 1 only: makespan %+v, want seed 1's alone", mk)
		}
	})
}

type callCounter struct{ calls, retries, throttles atomic.Int32 }

func (c *callCounter) Observe(ev observe.Event) {
	switch ev.Kind {
	case observe.Call:
		c.calls.Add(1)
	case observe.Retry:
		c.retries.Add(1)
	case observe.Throttle:
		c.throttles.Add(1)
	}
}

// The cloudg-aws strategies run what a user installs: cloudgaws.Install at
// its defaults, the SDK's retry middleware making the retries. The
// governor counts one call per logical call (the SDK's retries are
// retries of it), sees the throttles, and the SDK retries in its standard
// mode unless the scenario's aws section says otherwise.
func TestInstalledStrategyRunsTheSDKRetryLoop(t *testing.T) {
	sc, err := Parse([]byte("workload: {workers: 16, calls: 240}\nprovider: {rate: 5, burst: 10}\n"))
	if err != nil {
		t.Fatal(err)
	}
	obs := &callCounter{}
	sc.observer = obs
	r := runVirtualOne(t, sc, CloudgAWS)
	if r.Lost != 0 || obs.calls.Load() != 240 || obs.retries.Load() == 0 || int(obs.throttles.Load()) != r.Throttled {
		t.Fatalf("lost %d; the governor counted %d calls, %d retries, %d throttles (the provider rejected %d)",
			r.Lost, obs.calls.Load(), obs.retries.Load(), obs.throttles.Load(), r.Throttled)
	}
	for mode, want := range map[aws.RetryMode]aws.RetryMode{"": aws.RetryModeStandard, aws.RetryModeAdaptive: aws.RetryModeAdaptive} {
		sc.SDK.RetryMode = mode
		synctest.Test(t, func(t *testing.T) {
			s, err := newInstalledStrategy(sc, SystemClock{}, controllerAIMD)
			if err != nil {
				t.Fatal(err)
			}
			if s.cfg.RetryMode != want {
				t.Errorf("aws.retry_mode %q: the SDK retries in %q mode, want %q", mode, s.cfg.RetryMode, want)
			}
			if err := s.Call(context.Background(), "DescribeInstances", func(context.Context) error { return nil }); err != nil {
				t.Fatal(err)
			}
		})
	}
}

type scopeRecorder struct {
	mu     sync.Mutex
	scopes map[resilience.Scope]int
}

func (r *scopeRecorder) Observe(ev observe.Event) {
	if ev.Kind != observe.Call {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.scopes == nil {
		r.scopes = map[resilience.Scope]int{}
	}
	r.scopes[ev.Scope]++
}

// The cloudg-aws strategies govern the scopes the scenario's provider
// has, as cloudg-aimd does: a scenario whose provider is another service
// than EC2 (provider.service: dynamodb) has its calls in that service's
// scopes, where its ratelimit section's settings for the service apply
// and where the strategy's rate is read (Rate), not in ec2's.
func TestInstalledStrategyGovernsTheProvidersService(t *testing.T) {
	sc, err := Parse([]byte("workload: {workers: 4, calls: 40}\nprovider: {service: dynamodb, rate: 10, burst: 20}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[resilience.Scope]int{}
	for _, a := range sc.Workload.Actions {
		want[sc.Scope(a)] = sc.Workload.Calls / len(sc.Workload.Actions)
	}
	for _, strategy := range []string{CloudgAIMD, CloudgAWS} {
		obs := &scopeRecorder{}
		sc.observer = obs
		if r := runVirtualOne(t, sc, strategy); r.Lost != 0 {
			t.Fatalf("%s lost %d calls", strategy, r.Lost)
		}
		if !maps.Equal(obs.scopes, want) {
			t.Errorf("%s: calls per scope %v, want %v", strategy, obs.scopes, want)
		}
	}
}

// A seed's results may hold a nil run (a strategy whose run failed, as
// the command leaves it): WriteSweep and WriteCSV leave it out as Figures
// does, whichever strategy it is, rather than panicking on the first.
func TestSweepWithANilRun(t *testing.T) {
	for _, name := range []string{ScenarioDefault, ScenarioEstateUniform} {
		sc, _ := Builtin(name)
		a, b := AWSAdaptive, CloudgGoodput
		if sc.Estate != nil {
			a, b = PoolAIMD, Plain
		}
		sc.Strategies = []string{a, b}
		sw := NewSweep(sc)
		sw.Add(1, []*Result{nil, fakeResult(b, 995, 20, 0, 110*time.Second)})
		sw.Add(2, []*Result{fakeResult(a, 990, 30, 0, 111*time.Second), fakeResult(b, 990, 10, 0, 112*time.Second)})
		for what, write := range map[string]func(*bytes.Buffer) error{
			"WriteSweep": func(w *bytes.Buffer) error { return WriteSweep(w, sw, a) },
			"WriteCSV":   func(w *bytes.Buffer) error { return WriteCSV(w, sw) },
		} {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s of the %s sweep, whose seed 1 has a nil first run: panic %v; want the figures of the runs made", what, name, p)
					}
				}()
				var buf bytes.Buffer
				if err := write(&buf); err != nil {
					t.Errorf("%s of the %s sweep: %v", what, name, err)
				}
			}()
		}
	}
}

// One seed's writers leave a nil run out as a sweep's do: the command
// writes the first seed's runs (a Sweep's Results[0], which may hold a
// nil run) with WriteTable, WriteRates and WriteChart, which wrote the
// runs made, not a nil pointer dereference.
func TestOneSeedsWritersWithANilRun(t *testing.T) {
	for _, name := range []string{ScenarioDefault, ScenarioEstateUniform} {
		sc, _ := Builtin(name)
		b := CloudgGoodput
		if sc.Estate != nil {
			b = Plain
		}
		made := fakeResult(b, 995, 20, 0, 110*time.Second)
		made.Series = []Sample{{Done: 10, Sent: 12, Throttled: 2}, {Done: 10, Sent: 10}}
		results := []*Result{nil, made}
		writers := map[string]func(*bytes.Buffer) error{
			"WriteTable": func(w *bytes.Buffer) error { return WriteTable(w, sc, results) },
		}
		if sc.Estate == nil {
			writers["WriteRates"] = func(w *bytes.Buffer) error { return WriteRates(w, sc, results, 10*time.Second) }
			writers["WriteChart"] = func(w *bytes.Buffer) error { return WriteChart(w, sc, results) }
		}
		for what, write := range writers {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s of %s's runs, the first nil: panic %v; want the figures of the run made", what, name, p)
					}
				}()
				var buf bytes.Buffer
				if err := write(&buf); err != nil {
					t.Errorf("%s of %s's runs, the first nil: %v", what, name, err)
				}
				if what != "WriteChart" && !strings.Contains(buf.String(), b) {
					t.Errorf("%s of %s's runs, the first nil, does not name %s, the run made:\n%s", what, name, b, buf.String())
				}
			}()
		}
	}
}

// A strategy that ran on no seed (each of its runs nil) has no figures:
// its row in a sweep's table, an estate's too, says so with a dash in
// each cell, rather than a makespan of 0s, a goodput of 0% and wins of
// 0/0 read from no run.
func TestSweepShowsNoFiguresForAStrategyThatNeverRan(t *testing.T) {
	for _, name := range []string{ScenarioDefault, ScenarioEstateUniform} {
		sc, _ := Builtin(name)
		a, b := AWSAdaptive, CloudgGoodput
		if sc.Estate != nil {
			a, b = Plain, PoolAIMD
		}
		sc.Strategies = []string{a, b}
		sw := NewSweep(sc)
		sw.Add(1, []*Result{fakeResult(a, 990, 30, 0, 111*time.Second), nil})
		sw.Add(2, []*Result{fakeResult(a, 980, 40, 0, 112*time.Second), nil})
		var buf bytes.Buffer
		if err := WriteSweep(&buf, sw, AWSAdaptive); err != nil {
			t.Fatal(err)
		}
		var row string
		for _, l := range strings.Split(buf.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), b+" (0 runs)") {
				row = l
			}
		}
		if row == "" {
			t.Fatalf("%s: no row of %s (0 runs):\n%s", name, b, buf.String())
		}
		for _, f := range strings.Fields(strings.TrimPrefix(strings.TrimSpace(row), b+" (0 runs)")) {
			if f != "-" {
				t.Errorf("%s: the row of %s, which ran on no seed, shows figures: %q, want a dash in each cell", name, b, row)
				break
			}
		}
	}
	// A baseline that ran on no seed is one the sweep did not run: the
	// table has no wins, as WriteSweep says.
	sc, _ := Builtin(ScenarioDefault)
	sc.Strategies = []string{AWSAdaptive, CloudgGoodput}
	sw := NewSweep(sc)
	sw.Add(1, []*Result{nil, fakeResult(CloudgGoodput, 995, 20, 0, 110*time.Second)})
	sw.Add(2, []*Result{nil, fakeResult(CloudgGoodput, 990, 10, 0, 112*time.Second)})
	var buf bytes.Buffer
	if err := WriteSweep(&buf, sw, AWSAdaptive); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "wins") {
		t.Errorf("the baseline, %s, ran on no seed, and the table counts wins against it:\n%s", AWSAdaptive, buf.String())
	}
}

// An estate's column of the plain pool's makespan over a strategy's is
// of the seeds that ran both: a strategy that never ran on a seed with
// the plain pool has a dash there, not 0.00 (a ratio of no seeds, which
// would say the plain pool took no time against it); a plain pool that
// ran on no seed has no such column.
func TestEstateSweepComparesWithPlainOnlyWhereBothRan(t *testing.T) {
	sc, _ := Builtin(ScenarioEstateUniform)
	sc.Strategies = []string{Plain, PoolAIMD}
	sw := NewSweep(sc)
	sw.Add(1, []*Result{fakeResult(Plain, 990, 30, 0, 200*time.Second), nil})
	sw.Add(2, []*Result{nil, fakeResult(PoolAIMD, 990, 30, 0, 100*time.Second)})
	var buf bytes.Buffer
	if err := WriteSweep(&buf, sw, ""); err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), PoolAIMD) {
			row = l
		}
	}
	if f := strings.Fields(row); len(f) < 8 || f[7] != "-" { // name (1 run), makespan (spread), makespan/ideal (spread), then plain's over its own
		t.Errorf("pool-aimd ran on seed 2 only, the plain pool on seed 1 only: its row %q, want a dash for the plain pool's makespan over its own", row)
	}
	sw = NewSweep(sc)
	sw.Add(1, []*Result{nil, fakeResult(PoolAIMD, 990, 30, 0, 100*time.Second)})
	buf.Reset()
	if err := WriteSweep(&buf, sw, ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "plain's makespan") {
		t.Errorf("the plain pool ran on no seed, and the table compares with it:\n%s", buf.String())
	}
}

// The table says how many runs each strategy's figures are over: a
// strategy a short seed lacks is not said to have run on every seed, and
// its wins are counted out of the seeds on which both it and the baseline
// ran.
func TestSweepCountsTheRunsOfAStrategyAShortSeedLacks(t *testing.T) {
	sc, _ := Builtin(ScenarioDefault)
	sc.Strategies = []string{AWSAdaptive, CloudgGoodput}
	sw := NewSweep(sc)
	sw.Add(1, []*Result{fakeResult(AWSAdaptive, 990, 30, 0, 111*time.Second), fakeResult(CloudgGoodput, 995, 20, 0, 110*time.Second)})
	sw.Add(2, []*Result{fakeResult(AWSAdaptive, 980, 40, 0, 112*time.Second)})
	var b bytes.Buffer
	if err := WriteSweep(&b, sw, AWSAdaptive); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "over 2 runs of each strategy") {
		t.Errorf("the table says every strategy ran on both seeds; cloudg-goodput ran on seed 1 only:\n%s", out)
	}
	for _, want := range []string{"cloudg-goodput (1 run)", "1/1 (goodput 1, rejected 1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
