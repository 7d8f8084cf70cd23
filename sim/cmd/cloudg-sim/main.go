// Command cloudg-sim runs a throttling scenario against every client
// strategy side by side (the AWS SDK's standard and adaptive retryers, a
// static x/time/rate limiter, failsafe-go, and this governor with its AIMD
// and goodput controllers) and prints their makespan, goodput, rejected
// requests, lost calls and latency, and writes a PNG chart.
//
// Usage:
//
//	cloudg-sim [-scenario default|drop|tenant|outage|model-10|model-drop] [-file scenario.yaml]
//	           [-scale 20] [-chart out.png] [-rates] [-seed N] [-strategies a,b]
//
// Time is scaled: every strategy, the governor and the simulated provider run
// on one sim.ScaledClock, -scale times faster than the wall clock.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cloudg/cloudg/sim"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "cloudg-sim:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cloudg-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("scenario", sim.ScenarioDefault, "built-in scenario: "+strings.Join(sim.BuiltinNames(), ", "))
	file := fs.String("file", "", "read the scenario from this YAML file instead")
	scale := fs.Float64("scale", 20, "simulated seconds per wall-clock second")
	chart := fs.String("chart", "", `write the PNG chart here (default "cloudg-sim-<scenario>.png"; "-" for none)`)
	rates := fs.Bool("rates", false, "also print the adaptive rate over time (every 10 s)")
	seed := fs.Uint64("seed", 0, "random seed (0: the scenario's)")
	strategies := fs.String("strategies", "", "comma-separated strategies to run (default: the scenario's, else all): "+strings.Join(sim.StrategyNames, ", "))
	quiet := fs.Bool("quiet", false, "no progress line")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if !(*scale > 0) {
		return errors.New("-scale must be > 0")
	}

	var sc *sim.Scenario
	if *file != "" {
		var err error
		if sc, err = sim.LoadFile(*file); err != nil {
			return err
		}
	} else {
		var ok bool
		if sc, ok = sim.Builtin(*name); !ok {
			return fmt.Errorf("unknown scenario %q (%s)", *name, strings.Join(sim.BuiltinNames(), ", "))
		}
	}
	if *seed != 0 {
		sc.Seed = *seed
	}
	if *strategies != "" {
		sc.Strategies = strings.Split(*strategies, ",")
	}
	if err := sc.Validate(); err != nil {
		return err
	}

	clock := sim.NewScaledClock(*scale)
	restore := sim.UseSDKClock(clock, sc.Seed)
	defer restore()

	names := sc.StrategyList()
	runs := make([]*sim.Run, len(names))
	for i, n := range names {
		runs[i] = sim.NewRun(sc, n)
	}
	results := make([]*sim.Result, len(runs))
	errs := make([]error, len(runs))
	start := time.Now()
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = r.Execute(context.Background(), clock)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for loop := true; loop; {
		select {
		case <-done:
			loop = false
		case <-tick.C:
		}
		if !*quiet {
			fmt.Fprint(stderr, "\r"+progress(sc, runs, time.Since(start)))
		}
	}
	if !*quiet {
		fmt.Fprintln(stderr)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	fmt.Fprintf(stdout, "cloudg-sim: %d strategies in %.1fs of wall time (time scaled x%g)\n", len(runs), time.Since(start).Seconds(), *scale)
	if err := sim.WriteTable(stdout, sc, results); err != nil {
		return err
	}
	if *rates {
		fmt.Fprintln(stdout)
		if err := sim.WriteRates(stdout, sc, results, 10*time.Second); err != nil {
			return err
		}
	}
	path := *chart
	if path == "" {
		path = "cloudg-sim-" + sc.Name + ".png"
	}
	if path != "-" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := sim.WriteChart(f, sc, results); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "chart:", path)
	}
	return nil
}

// progress is the one-line state of the runs.
func progress(sc *sim.Scenario, runs []*sim.Run, wall time.Duration) string {
	var b strings.Builder
	var sim time.Duration
	for _, r := range runs {
		_, t := r.Progress()
		sim = max(sim, t)
	}
	fmt.Fprintf(&b, "%5.1fs wall, t=%4.0fs:", wall.Seconds(), sim.Seconds())
	for _, r := range runs {
		d, _ := r.Progress()
		fmt.Fprintf(&b, " %s %3d%%", r.Strategy(), 100*d/sc.Workload.Calls)
	}
	return b.String()
}
