package sim

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable writes the figures of every strategy side by side, with the
// discrete-event model's beside them where the scenario has its figures.
// A nil run (one not made) is left out, as a Sweep's tables leave it out.
func WriteTable(w io.Writer, sc *Scenario, results []*Result) error {
	results = runsMade(results)
	if sc.Estate != nil {
		return writeEstateTable(w, sc, results)
	}
	ideal := writeHeader(w, sc)
	fmt.Fprintf(w, "seed %d\n\n", sc.Seed)
	hasModel := len(sc.Model) > 0
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "strategy\tmakespan\tideal/makespan\tgoodput\trequests\trejected\trejected %\t5xx\tlost\tp50\tp99\t"
	if hasModel {
		head += "model ideal/makespan\tmodel rejected %\t"
	}
	fmt.Fprintln(tw, head)
	lost := false
	for _, r := range results {
		mk := secs(r.Makespan)
		if r.Aborted {
			mk = ">" + mk
		}
		eff := fmt.Sprintf("%.2f", r.Efficiency())
		if r.Aborted {
			eff = "<" + eff // of a makespan that is a bound
		}
		if r.Lost > 0 {
			eff += "*"
			lost = true
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%.1f%%\t%d\t%d\t%.1f%%\t%d\t%d\t%s\t%s\t",
			r.Strategy, mk, eff, 100*r.Goodput(), r.Attempts, r.Throttled,
			100*r.RejectedShare(), r.Failed, r.Lost, secs(r.P50), secs(r.P99))
		if hasModel {
			m, ok := sc.Model[r.Strategy]
			eff, rej := "", ""
			if ok {
				switch {
				case m.Efficiency > 0:
					eff = fmt.Sprintf("%.2f", m.Efficiency)
				case m.Makespan > 0:
					eff = fmt.Sprintf("%.2f (%s)", float64(ideal)/float64(m.Makespan), secs(m.Makespan))
				}
				if m.Rejected >= 0 {
					rej = fmt.Sprintf("%.1f%%", 100*m.Rejected)
				}
			}
			line += eff + "\t" + rej + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "goodput: successful calls / calls the provider could have served over the makespan; lost: failed after all retries")
	if lost {
		fmt.Fprintln(w, "*: calls were lost, so the makespan is not the time to do the work")
	}
	if hasModel {
		fmt.Fprintln(w, "model: what a discrete-event model of the setup predicted (sim/README.md; its CUBIC row is aws-adaptive's; makespans given by the model are shown against this scenario's ideal)")
	}
	return nil
}

// writeHeader writes what a scenario is and its ideal makespan, which it
// returns; over a sweep's runs, whose ideals differ when a tenant's walk
// moves the limit, it writes their mean and spread.
func writeHeader(w io.Writer, sc *Scenario, runs ...*Result) time.Duration {
	ideal := sc.IdealMakespan()
	if sc.Description != "" {
		fmt.Fprintf(w, "scenario %s: %s\n", sc.Name, sc.Description)
	} else {
		fmt.Fprintf(w, "scenario %s:\n", sc.Name)
	}
	fmt.Fprintf(w, "  %s\n", sc.Summary())
	text := secs(ideal)
	var vs []float64
	for _, r := range runs {
		vs = append(vs, r.Ideal.Seconds())
	}
	if sp := spreadOf(vs); len(vs) > 0 && sp.Min != sp.Max {
		text = fmt.Sprintf("%s (%s-%s over the seeds)", secs(seconds(sp.Mean)), secs(seconds(sp.Min)), secs(seconds(sp.Max)))
	}
	fmt.Fprintf(w, "ideal makespan %s (work %d calls, true capacity %.1f rps at t=0 plus bursts)\n",
		text, sc.Workload.Calls, sc.TrueRate(0))
	return ideal
}

// Summary describes the scenario's settings in one line.
func (s *Scenario) Summary() string {
	p := s.Provider
	var b strings.Builder
	fmt.Fprintf(&b, "%d workers, %d calls over %s; provider %g rps, burst %g per action",
		s.Workload.Workers, s.Workload.Calls, strings.Join(s.Workload.Actions, ", "), p.Rate, p.Burst)
	for _, a := range slices.Sorted(maps.Keys(p.Per)) {
		// An override's zero leaves provider.rate or provider.burst.
		l := p.limitOf(a)
		fmt.Fprintf(&b, " (%s: %g rps, burst %g)", a, l.Rate, l.Burst)
	}
	for _, c := range p.Changes {
		fmt.Fprintf(&b, ", %g rps from %s", c.Rate, secs(c.At))
		if c.Action != "" {
			b.WriteString(" for " + c.Action)
		}
	}
	if t := p.Tenant; t != nil {
		b.WriteString(", " + t.describe())
	}
	if p.TransientRate > 0 {
		fmt.Fprintf(&b, ", %g%% transient 500s", 100*p.TransientRate)
	}
	for _, o := range p.Outages {
		fmt.Fprintf(&b, ", outage %s-%s", secs(o.From), secs(o.To))
	}
	p.describeStops(&b, ", ")
	if p.RetryAfter {
		b.WriteString(", Retry-After hints")
	}
	fmt.Fprintf(&b, "; latency %s median, %s p99; clients configured at %g rps, burst %g per action",
		secs(p.LatencyMedian), secs(p.LatencyP99), s.Client.Rate, s.Client.Burst)
	if s.Governor.AWS.BreakerWait {
		b.WriteString("; the governor's calls wait for their breakers' verdicts (breaker_wait)")
	}
	if m := s.SDK.RetryMode; m != "" {
		fmt.Fprintf(&b, "; cloudgaws in the SDK's %s retry mode", m)
	}
	return b.String()
}

// WriteRates writes the adaptive rate over time: each strategy's rate
// limit (summed over the actions) every step, where it exposes one, and
// the requests it sent per second over each step. A nil run is left out.
func WriteRates(w io.Writer, sc *Scenario, results []*Result, step time.Duration) error {
	results = runsMade(results)
	n := 0
	for _, r := range results {
		n = max(n, len(r.Series))
	}
	k := max(1, int(step/time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	var b strings.Builder
	b.WriteString("t (s)\ttrue\t")
	for _, r := range results {
		b.WriteString(r.Strategy + "\t")
	}
	fmt.Fprintln(tw, b.String())
	for i := 0; i < n; i += k {
		b.Reset()
		fmt.Fprintf(&b, "%d\t%.0f\t", i, sc.TrueRate(time.Duration(i)*time.Second))
		for _, r := range results {
			if i >= len(r.Series) {
				b.WriteString("\t")
				continue
			}
			sent := 0
			for j := i; j < min(i+k, len(r.Series)); j++ {
				sent += r.Series[j].Sent
			}
			rate := r.Series[i].Rate
			per := float64(sent) / float64(min(k, len(r.Series)-i))
			if math.IsNaN(rate) {
				fmt.Fprintf(&b, "-/%.1f\t", per)
			} else {
				fmt.Fprintf(&b, "%.1f/%.1f\t", rate, per)
			}
		}
		fmt.Fprintln(tw, b.String())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "each cell: the client's rate limit (rps, all actions; - where the strategy has none it exposes) / requests it sent per second")
	return nil
}

// runsMade returns the runs of results that are not nil: results itself
// when none is.
func runsMade(results []*Result) []*Result {
	if !slices.Contains(results, nil) {
		return results
	}
	return slices.DeleteFunc(slices.Clone(results), func(r *Result) bool { return r == nil })
}

// secs writes d in seconds to three significant figures (whole seconds
// from 100 s), choosing the figures by the value as it rounds: 99.96 s is
// 100s, 9.996 s 10.0s.
func secs(d time.Duration) string {
	s := d.Seconds()
	switch {
	case math.Round(s*10)/10 >= 100:
		return fmt.Sprintf("%.0fs", s)
	case math.Round(s*100)/100 >= 10:
		return fmt.Sprintf("%.1fs", s)
	default:
		return fmt.Sprintf("%.2fs", s)
	}
}
