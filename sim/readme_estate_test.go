//go:build !race

package sim

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The READMEs show the estate sweep as it prints today: sim/README's
// tables (every strategy over seeds 1-30 in virtual time, as
// BenchmarkEstateSweep prints them, and the pools' runs as TestEstateGoals
// prints them) line for line, and the root README's
// table of makespans over the ideal cell by cell. A change to the
// governor, the pool or a strategy that moves a figure fails here until
// the READMEs say what the sweep prints. The sweep takes about 20 s on
// two idle cores and several minutes under the race detector, so the
// test runs only without it: scripts/test runs it in a step of its own.
func TestREADMEsShowTheEstateSweep(t *testing.T) {
	simReadme := readFile(t, "README.md")
	rootReadme := readFile(t, "../README.md")
	labels := map[string]string{ // the root README's row of each strategy
		Plain:         "plain (16 workers over `Do`)",
		PlainAdaptive: "plain-adaptive (the SDK's adaptive mode, no governor)",
		Shuffle:       "shuffle (CloudQuery)",
		RandomQueue:   "random-queue (CloudQuery)",
		PoolAIMD:      "package pool, AIMD",
		PoolGoodput:   "package pool, goodput controller",
		PoolOracle:    "pool-oracle",
	}
	rows := markdownRows(rootReadme)
	header, ok := rows["strategy"]
	if !ok {
		t.Fatal("README.md: no estate table (a row starting | strategy |)")
	}
	for col, name := range []string{ScenarioEstateUniform, ScenarioEstatePaused, ScenarioEstateDead, ScenarioEstateTenant} {
		sc, _ := Builtin(name)
		diffs := estateDiffs(t, sc, simReadme, header[col+1], rows, labels)
		if len(diffs) == 0 {
			continue
		}
		// Two calls at one virtual instant run on two cores, and under a
		// heavy load the scheduler has once ordered them the other way,
		// moving a mean by a throttle in the last digit: a sweep that
		// differs is run again, and a change in the code moves both.
		again := estateDiffs(t, sc, simReadme, header[col+1], rows, labels)
		if len(again) == 0 {
			t.Logf("%s: the first sweep differed from the READMEs, the second did not (a tie the scheduler decided):\n%s", name, strings.Join(diffs, "\n"))
			continue
		}
		for _, d := range again {
			t.Error(d)
		}
	}
}

// estateDiffs runs sc's sweep over seeds 1-30 and returns where the
// READMEs differ from what it prints: sim/README's blocks (the sweep's,
// and TestEstateGoals's runs), and the root README's cells of the
// scenario's column (heading its table with head).
func estateDiffs(t *testing.T, sc *Scenario, simReadme, head string, rows map[string][]string, labels map[string]string) []string {
	t.Helper()
	name := sc.Name
	col := slices.Index(rows["strategy"], head)
	var diffs []string
	sw := sweepVirtual(t, sc, 30, EstateStrategyNames...)
	var out strings.Builder
	if err := WriteSweep(&out, sw, ""); err != nil {
		t.Fatal(err)
	}
	printed := out.String()
	if !strings.Contains(simReadme, printed) {
		diffs = append(diffs, fmt.Sprintf("sim/README.md does not show %s's sweep as it prints now:\n%s", name, printed))
	}
	// The same runs as TestEstateGoals prints them, its strategies only.
	goals := NewSweep(sc)
	goals.Strategies = estateGoalStrategies[name]
	for i, seed := range sw.Seeds {
		var rs []*Result
		for _, st := range goals.Strategies {
			rs = append(rs, sw.runs(st)[i])
		}
		goals.Add(seed, rs)
	}
	out.Reset()
	if err := WriteSweep(&out, goals, AWSAdaptive); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(simReadme, out.String()) {
		diffs = append(diffs, fmt.Sprintf("sim/README.md does not show %s's runs in TestEstateGoals as it prints them now:\n%s", name, out.String()))
	}
	ideal := idealLine.FindStringSubmatch(printed)
	if ideal == nil || !strings.Contains(head, ideal[1]) {
		diffs = append(diffs, fmt.Sprintf("README.md's estate table heads %s %q; the sweep's ideal is %v", name, head, ideal))
	}
	for _, line := range strings.Split(printed, "\n") {
		cells := columnGap.Split(strings.TrimSpace(line), -1)
		label, ok := labels[cells[0]]
		if !ok || len(cells) < 3 {
			continue
		}
		row, ok := rows[label]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("README.md's estate table has no row %q", label))
			continue
		}
		if got := row[col]; got != cells[2] {
			diffs = append(diffs, fmt.Sprintf("README.md's estate table: %s, %s: %q; the sweep prints %q", label, name, got, cells[2]))
		}
	}
	return diffs
}

// columnGap parts a printed row's columns; idealLine finds a sweep's ideal.
var (
	columnGap = regexp.MustCompile(`\s{2,}`)
	idealLine = regexp.MustCompile(`(?m)^ideal makespan ([0-9.]+s)`)
)

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// markdownRows returns the cells of each row of the Markdown tables in s,
// keyed by the row's first cell.
func markdownRows(s string) map[string][]string {
	rows := map[string][]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if _, seen := rows[cells[0]]; !seen {
			rows[cells[0]] = cells
		}
	}
	return rows
}
