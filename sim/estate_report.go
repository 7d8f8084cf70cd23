package sim

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// writeEstateHeader writes what an estate scenario is and its ideal
// makespan: over the seeds of a sweep (the tenant's walk moves it from
// seed to seed), or of the one run.
func writeEstateHeader(w io.Writer, sc *Scenario, ideals []time.Duration) {
	if sc.Description != "" {
		fmt.Fprintf(w, "scenario %s: %s\n", sc.Name, sc.Description)
	} else {
		fmt.Fprintf(w, "scenario %s:\n", sc.Name)
	}
	fmt.Fprintf(w, "  %s\n", sc.Estate.summary(sc))
	var vs []float64
	for _, d := range ideals {
		vs = append(vs, d.Seconds())
	}
	sp := spreadOf(vs)
	ideal := secs(seconds(sp.Mean))
	if sp.Min != sp.Max {
		ideal = fmt.Sprintf("%s (%s-%s)", ideal, secs(seconds(sp.Min)), secs(seconds(sp.Max)))
	}
	fmt.Fprintf(w, "ideal makespan %s: each scope's calls over its limit (its burst first, nothing while it is paused, the tenant's share left out), the largest; %d calls\n",
		ideal, sc.Workload.Calls)
}

// writeEstateTable writes one seed's runs of an estate.
func writeEstateTable(w io.Writer, sc *Scenario, results []*Result) error {
	var ideals []time.Duration
	for _, r := range results {
		ideals = append(ideals, r.Ideal)
	}
	writeEstateHeader(w, sc, ideals[:min(1, len(ideals))])
	fmt.Fprintf(w, "seed %d\n\n", sc.Seed)
	affected := sc.Estate.Affected != ""
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "strategy\tmakespan\tmakespan/ideal\t"
	if affected {
		head += "unaffected done\t"
	}
	head += "requests\tthrottled\tlost\tof which elsewhere\tin ledger\tp50\tp99\t"
	fmt.Fprintln(tw, head)
	for _, r := range results {
		mk := secs(r.Makespan)
		if r.Aborted {
			mk = ">" + mk
		}
		over := fmt.Sprintf("%.2f", ratio(r.Makespan, r.Ideal))
		if r.Aborted {
			over = ">" + over // of a makespan that is a bound
		}
		line := fmt.Sprintf("%s\t%s\t%s\t", r.Strategy, mk, over)
		if affected {
			done := secs(r.Unaffected())
			if r.UnaffectedCut {
				done = ">" + done
			}
			line += done + "\t"
		}
		line += fmt.Sprintf("%d\t%d\t%d\t%d\t%d\t%s\t%s\t", r.Attempts, r.Throttled, r.Lost, r.Lost-r.LostAffected, r.InLedger, secs(r.P50), secs(r.P99))
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	writeEstateFootnotes(w, affected)
	return nil
}

// writeEstateSweep writes each strategy's figures over the seeds of an
// estate sweep, mean (min-max): makespan, and against the seed's ideal;
// when a scope is paused or killed, when the other scopes were done; the
// plain pool's makespan over the strategy's, seed by seed, over the seeds
// that ran both (a dash where none did; no column when the plain pool ran
// on no seed); the calls lost, those of scopes the scenario does not
// kill, and those in the scan's ledger; the requests throttled.
func writeEstateSweep(w io.Writer, s *Sweep) error {
	var ideals []time.Duration
	for _, r := range s.seedRuns() {
		ideals = append(ideals, r.Ideal)
	}
	writeEstateHeader(w, s.Scenario, ideals)
	s.writeRunCount(w)
	affected := s.Scenario.Estate.Affected != ""
	var plain []*Result // nil: the plain pool ran on no seed, and nothing is compared with it
	if s.ran(Plain) > 0 {
		plain = s.runs(Plain)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "strategy\tmakespan\tmakespan/ideal\t"
	if affected {
		head += "unaffected done\t"
	}
	if plain != nil {
		head += "plain's makespan / this\t"
	}
	head += "lost\tof which elsewhere\tin ledger\tthrottled\t"
	fmt.Fprintln(tw, head)
	for _, name := range s.Strategies {
		if s.ran(name) == 0 {
			fmt.Fprintln(tw, noFigures(s.label(name), head))
			continue
		}
		runs := s.runs(name)
		fig := func(f func(r *Result) float64) Spread {
			var vs []float64
			for _, r := range runs {
				if r != nil {
					vs = append(vs, f(r))
				}
			}
			return spreadOf(vs)
		}
		mk := fig(func(r *Result) float64 { return r.Makespan.Seconds() })
		line := fmt.Sprintf("%s\t%s\t%s\t", s.label(name), secsSpread(mk), fixedSpread(fig(func(r *Result) float64 { return ratio(r.Makespan, r.Ideal) })))
		if affected {
			line += secsSpread(fig(func(r *Result) float64 { return r.Unaffected().Seconds() })) + "\t"
		}
		if plain != nil {
			var vs []float64
			for i, r := range runs {
				if r != nil && plain[i] != nil {
					vs = append(vs, ratio(plain[i].Makespan, r.Makespan))
				}
			}
			if len(vs) == 0 {
				line += "-\t" // no seed ran both
			} else {
				line += fixedSpread(spreadOf(vs)) + "\t"
			}
		}
		line += fmt.Sprintf("%s\t%s\t%s\t%s\t",
			countSpread(fig(func(r *Result) float64 { return float64(r.Lost) })),
			countSpread(fig(func(r *Result) float64 { return float64(r.Lost - r.LostAffected) })),
			countSpread(fig(func(r *Result) float64 { return float64(r.InLedger) })),
			countSpread(fig(func(r *Result) float64 { return float64(r.Throttled) })))
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	writeEstateFootnotes(w, affected)
	return nil
}

func writeEstateFootnotes(w io.Writer, affected bool) {
	if affected {
		fmt.Fprintln(w, "unaffected done: when the last call of a scope the scenario does not pause or kill ended")
	}
	fmt.Fprintln(w, "lost: calls that did not succeed (elsewhere: outside the scope the scenario kills); in ledger: lost calls the scan's resilience.Ledger recorded")
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func secsSpread(sp Spread) string {
	return fmt.Sprintf("%s (%s-%s)", secs(seconds(sp.Mean)), secs(seconds(sp.Min)), secs(seconds(sp.Max)))
}

func fixedSpread(sp Spread) string {
	return fmt.Sprintf("%.2f (%.2f-%.2f)", sp.Mean, sp.Min, sp.Max)
}

func countSpread(sp Spread) string {
	return fmt.Sprintf("%s (%s-%s)", count(sp.Mean), count(sp.Min), count(sp.Max))
}

// estateCSVHeader is the estate's columns after the common ones.
var estateCSVHeader = []string{"ideal", "unaffected", "throttled", "lost_elsewhere", "in_ledger"}

func estateCSV(r *Result) []string {
	return []string{
		strconv.FormatFloat(r.Ideal.Seconds(), 'f', 3, 64),
		strconv.FormatFloat(r.Unaffected().Seconds(), 'f', 3, 64),
		strconv.Itoa(r.Throttled),
		strconv.Itoa(r.Lost - r.LostAffected),
		strconv.Itoa(r.InLedger),
	}
}
