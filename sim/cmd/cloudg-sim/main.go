// Command cloudg-sim runs a throttling scenario against every client
// strategy side by side (the AWS SDK's standard and adaptive retryers, a
// static x/time/rate limiter, failsafe-go, this governor with its AIMD and
// goodput controllers, and cloudgaws.Install under the SDK's own retry
// loop) and prints their makespan, goodput, rejected requests, lost calls
// and latency; over several seeds it prints each figure's spread and the
// seeds on which each strategy beat a baseline.
//
// The estate scenarios (estate-uniform, estate-paused, estate-dead,
// estate-tenant) scan accounts x regions x services with 16 workers and
// compare schedulers instead (plain, plain-adaptive, shuffle,
// random-queue, pool-aimd, pool-goodput, pool-oracle): the makespan
// against the ideal, when the scopes a pause or a dead operation does not
// touch were done, the calls lost and those in the scan's ledger.
//
// Usage:
//
//	cloudg-sim [-scenario default|drop|tenant|outage|model-10|model-drop|estate-uniform|...] [-file scenario.yaml]
//	           [-seed N | -seeds N [-baseline aws-adaptive]] [-csv] [-strategies a,b]
//	           [-scale 20] [-chart out.png] [-rates] [-quiet]
//
// Time is scaled: every strategy, the governor and the simulated provider run
// on one sim.ScaledClock, -scale times faster than the wall clock. The
// progress line is written to a terminal only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cloudg/cloudg/sim"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr, isTerminal(os.Stderr))
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "cloudg-sim:", err)
		os.Exit(1)
	}
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// run runs the command; progress says whether stderr takes the progress
// line. -h returns flag.ErrHelp after printing the usage.
func run(args []string, stdout, stderr io.Writer, progress bool) error {
	fs := flag.NewFlagSet("cloudg-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("scenario", sim.ScenarioDefault, "built-in scenario: "+strings.Join(sim.BuiltinNames(), ", "))
	file := fs.String("file", "", "read the scenario from this YAML file instead")
	scale := fs.Float64("scale", 20, "simulated seconds per wall-clock second, from 0.001 to 1e6")
	chart := fs.String("chart", "", "write a PNG chart of the run (with -seeds, of the first seed) to this file")
	rates := fs.Bool("rates", false, "also print the adaptive rate over time (every 10 s; with -seeds, of the first seed; not with -csv)")
	seed := fs.Uint64("seed", 0, "random seed (0: the scenario's)")
	seeds := fs.Int("seeds", 0, "run every strategy over seeds 1..N and print each figure's mean, min and max")
	baseline := fs.String("baseline", sim.AWSAdaptive, "with -seeds, the strategy whose per-seed figures the wins count against (not for an estate, whose sweep compares with the plain pool)")
	csvOut := fs.Bool("csv", false, "print one CSV row per seed and strategy (seed, strategy, goodput, rejected, lost, makespan, unused, overflowed; an estate adds ideal, unaffected, throttled, lost_elsewhere, in_ledger) instead of the tables")
	strategies := fs.String("strategies", "", "comma-separated strategies to run (default: the scenario's, else all): "+strings.Join(sim.StrategyNames, ", ")+"; a reference, run only when named: "+strings.Join(sim.ReferenceNames, ", ")+
		"; for an estate scenario: "+strings.Join(sim.EstateStrategyNames, ", "))
	quiet := fs.Bool("quiet", false, "no progress line, even on a terminal")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: cloudg-sim [flags]\n\nRuns a throttling scenario against every client strategy side by side.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if !(*scale > 0) || math.IsInf(*scale, 1) {
		return errors.New("-scale must be > 0 and finite")
	}
	if *scale < minScale || *scale > maxScale {
		// Past these the clock cannot keep time: its waits round to no
		// wall time, or overflow a Duration, and its reading overflows.
		return fmt.Errorf("-scale must be between %g and %g", minScale, maxScale)
	}
	if *seeds < 0 {
		return errors.New("-seeds must be >= 1")
	}
	if *seeds > 0 && *seed != 0 {
		return errors.New("-seed and -seeds: give one")
	}
	if *csvOut && *rates {
		return errors.New("-csv and -rates: give one (the CSV has no rate table)")
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
	// A baseline given is checked, not ignored: an estate's sweep compares
	// each scheduler with the plain pool and takes none.
	baselineSet := false
	fs.Visit(func(f *flag.Flag) { baselineSet = baselineSet || f.Name == "baseline" })
	switch known := slices.Concat(sim.StrategyNames, sim.ReferenceNames); {
	case baselineSet && sc.Estate != nil:
		return fmt.Errorf("-baseline: an estate takes no baseline (its sweep compares each scheduler with %s)", sim.Plain)
	case *baseline != "" && !slices.Contains(known, *baseline):
		return fmt.Errorf("unknown baseline %q (%s)", *baseline, strings.Join(known, ", "))
	}
	list := []uint64{sc.Seed}
	if *seeds > 0 {
		list = list[:0]
		for s := uint64(1); s <= uint64(*seeds); s++ {
			list = append(list, s)
		}
	}

	// The chart's file is made before the runs, which take minutes in
	// scaled time, so that a path that cannot be written fails at once.
	var chartFile *os.File
	if *chart != "" {
		f, err := os.Create(*chart)
		if err != nil {
			return fmt.Errorf("-chart: %w", err)
		}
		chartFile = f
		defer func() {
			if chartFile != nil { // an error ended the command before the chart was written
				chartFile.Close()
				os.Remove(*chart)
			}
		}()
	}

	start := time.Now()
	sweep := sim.NewSweep(sc)
	var first *sim.Scenario // the first seed's scenario, for the chart and the rates
	for k, s := range list {
		run := *sc
		run.Seed = s
		var line func(string)
		if progress && !*quiet {
			line = func(l string) {
				if len(list) > 1 {
					l = fmt.Sprintf("seed %d/%d ", k+1, len(list)) + l
				}
				fmt.Fprint(stderr, "\r"+l)
			}
		}
		results, err := runSeed(&run, *scale, line)
		if err != nil {
			return err
		}
		sweep.Add(s, results)
		if first == nil {
			first = &run
		}
	}
	if progress && !*quiet {
		fmt.Fprintln(stderr)
	}

	if *csvOut {
		if err := sim.WriteCSV(stdout, sweep); err != nil {
			return err
		}
	} else {
		n := len(sweep.Strategies)
		runs := plural(n, "strategy", "strategies")
		if len(list) > 1 {
			runs += " x " + plural(len(list), "seed", "seeds")
		}
		fmt.Fprintf(stdout, "cloudg-sim: %s in %.1fs of wall time (time scaled x%g)\n", runs, time.Since(start).Seconds(), *scale)
		if len(list) > 1 {
			if err := sim.WriteSweep(stdout, sweep, *baseline); err != nil {
				return err
			}
		} else if err := sim.WriteTable(stdout, first, sweep.Results[0]); err != nil {
			return err
		}
		if *rates {
			fmt.Fprintln(stdout)
			if err := sim.WriteRates(stdout, first, sweep.Results[0], 10*time.Second); err != nil {
				return err
			}
		}
	}
	if chartFile != nil {
		f := chartFile
		chartFile = nil
		if err := writeChart(f, first, sweep.Results[0]); err != nil {
			os.Remove(*chart)
			return fmt.Errorf("-chart: %w", err)
		}
		if !*csvOut {
			fmt.Fprintln(stdout, "chart:", *chart)
		}
	}
	return nil
}

// The scales the command's clock keeps time at: at 1e6 a millisecond of
// simulated time is a nanosecond of wall time, the least a wait can be;
// at 0.001 an hour's time limit is 1,000 hours of wall time.
const (
	minScale = 1e-3
	maxScale = 1e6
)

// runSeed runs every strategy of sc at once on a clock scale times faster
// than the wall clock, calling line with the progress every 250 ms when it
// is set.
func runSeed(sc *sim.Scenario, scale float64, line func(string)) ([]*sim.Result, error) {
	clock := sim.NewScaledClock(scale)
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
		if line != nil {
			line(progressLine(sc, runs, time.Since(start)))
		}
	}
	return results, errors.Join(errs...)
}

// writeChart writes the chart of a seed's results to f, and closes it.
func writeChart(f *os.File, sc *sim.Scenario, results []*sim.Result) error {
	if err := sim.WriteChart(f, sc, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// progressLine is the one-line state of the runs.
func progressLine(sc *sim.Scenario, runs []*sim.Run, wall time.Duration) string {
	var b strings.Builder
	var simt time.Duration
	for _, r := range runs {
		_, t := r.Progress()
		simt = max(simt, t)
	}
	fmt.Fprintf(&b, "%5.1fs wall, t=%4.0fs:", wall.Seconds(), simt.Seconds())
	for _, r := range runs {
		d, _ := r.Progress()
		fmt.Fprintf(&b, " %s %3d%%", r.Strategy(), 100*d/sc.Workload.Calls)
	}
	return b.String()
}
