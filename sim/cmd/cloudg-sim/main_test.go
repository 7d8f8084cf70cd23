package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/sim"
)

// small is a scenario every strategy finishes in a few simulated seconds.
const small = "name: small\nworkload: {workers: 16, calls: 240, actions: [DescribeInstances, DescribeVolumes]}\nprovider: {rate: 10, burst: 20}\nclient: {burst: 20}\n"

func smallFile(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "small.yaml")
	if err := os.WriteFile(file, []byte(small), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// A small scenario from a file, every strategy, scaled 50 times: the table,
// the rate table, the progress line (stderr is taken for a terminal) and
// the chart asked for.
func TestRunFile(t *testing.T) {
	file := smallFile(t)
	chart := filepath.Join(t.TempDir(), "chart.png")
	var out, errOut bytes.Buffer
	if err := run([]string{"-file", file, "-scale", "50", "-chart", chart, "-rates"}, &out, &errOut, true); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	text := out.String()
	t.Log("\n" + text)
	for _, want := range append([]string{"cloudg-sim: 8 strategies in", "scenario small:", "16 workers, 240 calls over DescribeInstances, DescribeVolumes; provider 10 rps, burst 20 per action", "ideal makespan", "rejected %", "each cell:", "chart: " + chart}, sim.StrategyNames...) {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) > 8 && (f[0] == sim.CloudgAIMD || f[0] == sim.CloudgGoodput) && f[8] != "0" {
			t.Errorf("the governor lost calls: %s", line)
		}
	}
	if !strings.Contains(errOut.String(), "wall, t=") || !strings.Contains(errOut.String(), "100%") {
		t.Errorf("no progress line: %q", errOut.String())
	}
	png, err := os.ReadFile(chart)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 10000 {
		t.Fatalf("chart: %d bytes, %v", len(png), err)
	}
}

// Without a terminal there is no progress line, without -chart no chart
// is written (in the current directory or anywhere), and one strategy is
// "1 strategy".
func TestRunQuietByDefault(t *testing.T) {
	file := smallFile(t)
	dir := t.TempDir()
	t.Chdir(dir)
	var out, errOut bytes.Buffer
	if err := run([]string{"-file", file, "-scale", "50", "-strategies", sim.CloudgGoodput}, &out, &errOut, false); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr not a terminal, but written to: %q", errOut.String())
	}
	if !strings.HasPrefix(out.String(), "cloudg-sim: 1 strategy in ") {
		t.Errorf("first line %q", strings.SplitN(out.String(), "\n", 2)[0])
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written without -chart: %v", entries)
	}
	// -quiet silences a terminal too.
	errOut.Reset()
	if err := run([]string{"-file", file, "-scale", "50", "-strategies", sim.CloudgGoodput, "-quiet"}, &out, &errOut, true); err != nil || errOut.Len() != 0 {
		t.Errorf("-quiet on a terminal: %v, stderr %q", err, errOut.String())
	}
}

// -seeds N runs every strategy over seeds 1..N: the spread of each figure
// and the wins against the baseline; with -csv one row per seed and
// strategy instead.
func TestRunSeeds(t *testing.T) {
	file := smallFile(t)
	strategies := sim.AWSAdaptive + "," + sim.CloudgGoodput
	var out, errOut bytes.Buffer
	if err := run([]string{"-file", file, "-scale", "50", "-seeds", "2", "-strategies", strategies}, &out, &errOut, false); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	text := out.String()
	t.Log("\n" + text)
	for _, want := range []string{"cloudg-sim: 2 strategies x 2 seeds in", "seeds 1-2: mean (min-max) over 2 runs", "wins vs aws-adaptive", "/2 (goodput "} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	out.Reset()
	if err := run([]string{"-file", file, "-scale", "50", "-seeds", "2", "-strategies", strategies, "-csv"}, &out, &errOut, false); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 || strings.Join(rows[0], ",") != "seed,strategy,goodput,rejected,lost,makespan,unused,overflowed" {
		t.Fatalf("csv rows %q", rows)
	}
	if rows[1][0] != "1" || rows[1][1] != sim.AWSAdaptive || rows[4][0] != "2" || rows[4][1] != sim.CloudgGoodput {
		t.Fatalf("csv rows %q", rows)
	}
}

// The reference runs when named, and can be the baseline of the wins; it
// is not among the strategies a scenario runs by default (TestRunFile).
func TestRunOracle(t *testing.T) {
	file := smallFile(t)
	var out, errOut bytes.Buffer
	if err := run([]string{"-file", file, "-scale", "50", "-seeds", "2", "-strategies", sim.Static + "," + sim.Oracle, "-baseline", sim.Oracle}, &out, &errOut, false); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	text := out.String()
	t.Log("\n" + text)
	for _, want := range []string{"cloudg-sim: 2 strategies x 2 seeds in", "wins vs oracle"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	rows := 0
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == sim.Oracle || f[0] == sim.Static) {
			rows++
		}
	}
	if rows != 2 {
		t.Errorf("%d rows of static and oracle, want 2", rows)
	}
}

// An estate scenario compares schedulers: one seed's table, and over
// seeds the spreads with the plain pool's makespan over each strategy's
// and the estate's CSV columns.
func TestRunEstate(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"-scenario", sim.ScenarioEstateDead, "-scale", "100", "-strategies", sim.PoolGoodput + "," + sim.RandomQueue}
	if err := run(args, &out, &errOut, false); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	text := out.String()
	t.Log("\n" + text)
	for _, want := range []string{"scenario estate-dead:", "4 accounts x 2 regions x 3 services, 48 scopes", "throttled for good", "ideal makespan 55.0s", "unaffected done", "in ledger", sim.PoolGoodput, sim.RandomQueue} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	out.Reset()
	args = []string{"-scenario", sim.ScenarioEstateUniform, "-scale", "300", "-seeds", "2", "-strategies", sim.Plain + "," + sim.PoolGoodput}
	if err := run(args, &out, &errOut, false); err != nil {
		t.Fatal(err)
	}
	if text := out.String(); !strings.Contains(text, "plain's makespan / this") || !strings.Contains(text, "seeds 1-2") {
		t.Errorf("estate sweep:\n%s", text)
	}
	out.Reset()
	if err := run(append(args, "-csv"), &out, &errOut, false); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(rows) != 5 || strings.Join(rows[0], ",") != "seed,strategy,goodput,rejected,lost,makespan,unused,overflowed,ideal,unaffected,throttled,lost_elsewhere,in_ledger" {
		t.Fatalf("csv rows %q, %v", rows, err)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("provider:\n  changes:\n    - {at_seconds: 60, rat: 8}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	small := smallFile(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-file", bad}, "bad.yaml: provider.changes[0].rat: unknown key"},
		{[]string{"-scenario", "nope"}, `unknown scenario "nope"`},
		{[]string{"-strategies", "aws-standard,nope"}, `strategies[1]: unknown strategy "nope"`},
		{[]string{"-scale", "0"}, "-scale must be > 0"},
		// An infinite scale is no scale: the clock would run at the wall
		// clock's pace (sim.NewScaledClock), the header saying x+Inf.
		{[]string{"-file", small, "-strategies", sim.CloudgGoodput, "-scale", "+Inf"}, "-scale must be > 0 and finite"},
		// A scale the clock cannot keep: at 1e10 a second of simulated
		// time is a tenth of a nanosecond of wall time (the clock's
		// waits round to none, its reading overflows within a second);
		// at 1e-300 a millisecond's wait overflows a Duration. Both ran
		// every call to the time limit in no wall time, all lost.
		{[]string{"-file", small, "-strategies", sim.CloudgGoodput, "-scale", "1e10"}, "-scale must be between 0.001 and 1e+06"},
		{[]string{"-file", small, "-strategies", sim.CloudgGoodput, "-scale", "1e-300"}, "-scale must be between 0.001 and 1e+06"},
		{[]string{"-seeds", "3", "-seed", "2"}, "-seed and -seeds: give one"},
		{[]string{"-seeds", "3", "-baseline", "nope"}, `unknown baseline "nope"`},
		// A baseline is checked whenever it is given, and an estate's
		// sweep, which compares each scheduler with the plain pool, takes
		// none: it is not ignored.
		{[]string{"-file", small, "-strategies", sim.CloudgGoodput, "-baseline", "nope"}, `unknown baseline "nope"`},
		{[]string{"-scenario", sim.ScenarioEstateUniform, "-seeds", "2", "-baseline", sim.Plain}, "-baseline: an estate takes no baseline"},
		{[]string{"-scenario", sim.ScenarioEstateUniform, "-scale", "1000", "-strategies", sim.Plain, "-seeds", "2", "-baseline", sim.Static}, "-baseline: an estate takes no baseline"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		// -csv prints no rate table: -rates with it would be dropped
		// after the runs.
		{[]string{"-file", small, "-strategies", sim.CloudgGoodput, "-csv", "-rates"}, "-csv and -rates: give one"},
	} {
		var out, errOut bytes.Buffer
		err := run(c.args, &out, &errOut, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
	// A chart's path that cannot be written fails before the runs, which
	// take minutes in scaled time: it used to fail once they were done.
	var out, errOut bytes.Buffer
	noDir := filepath.Join(dir, "nodir", "x.png")
	if err := run([]string{"-file", small, "-strategies", sim.CloudgGoodput, "-chart", noDir}, &out, &errOut, false); err == nil ||
		!strings.HasPrefix(err.Error(), "-chart: ") || out.Len() != 0 {
		t.Errorf("-chart %s: error %v after printing %q; want a -chart error before any run", noDir, err, out.String())
	}
	out.Reset()
	errOut.Reset()
	if err := run([]string{"-h"}, &out, &errOut, false); !errors.Is(err, flag.ErrHelp) || !strings.Contains(errOut.String(), "usage: cloudg-sim") {
		t.Errorf("-h: %v, usage %q", err, errOut.String())
	}
}

// The command's exit status: -h prints the usage and exits 0, a bad flag
// exits 1. The test binary runs main when CLOUDG_SIM_MAIN is set.
func TestExitStatus(t *testing.T) {
	if os.Getenv("CLOUDG_SIM_MAIN") != "" {
		os.Args = append([]string{"cloudg-sim"}, strings.Fields(os.Getenv("CLOUDG_SIM_MAIN"))...)
		main()
		os.Exit(0)
	}
	for _, c := range []struct {
		args string
		code int
	}{{"-h", 0}, {"-nope", 1}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestExitStatus$")
		cmd.Env = append(os.Environ(), "CLOUDG_SIM_MAIN="+c.args)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(stderr.String(), "usage: cloudg-sim") {
			t.Errorf("cloudg-sim %s: exit %d, want %d; stderr %q", c.args, code, c.code, stderr.String())
		}
	}
}
