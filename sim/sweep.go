package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Sweep holds the runs of a scenario's strategies over several seeds:
// Results[i][j] is seed Seeds[i]'s run of Strategies[j]; a seed's results
// may stop short, or hold a nil run, the strategies past them or of the
// nil runs not run on it, which its figures, wins and tables leave out
// (a strategy run on fewer seeds than the sweep has carries the number
// of its runs in WriteSweep's table). Make one with NewSweep and fill it
// with Add. The zero Sweep has no Scenario and no Strategies: Figures and
// Wins find no run in it, whatever Add gave it, and WriteSweep panics on
// it (WriteCSV writes its rows). It is not safe for concurrent use.
type Sweep struct {
	Scenario   *Scenario
	Seeds      []uint64
	Strategies []string
	Results    [][]*Result
}

// NewSweep returns an empty sweep of sc's strategies.
func NewSweep(sc *Scenario) *Sweep {
	return &Sweep{Scenario: sc, Strategies: sc.StrategyList()}
}

// Add records the runs of one seed, in the order of Strategies.
func (s *Sweep) Add(seed uint64, results []*Result) {
	s.Seeds = append(s.Seeds, seed)
	s.Results = append(s.Results, results)
}

// Spread is a figure's mean, minimum and maximum over the seeds, a plain
// value that several goroutines may read at once while none changes it.
// The zero Spread is that of no seeds, as Figures returns for a strategy
// the sweep did not run.
type Spread struct{ Mean, Min, Max float64 }

func spreadOf(vs []float64) Spread {
	if len(vs) == 0 {
		return Spread{}
	}
	sp := Spread{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, v := range vs {
		sp.Mean += v
		sp.Min, sp.Max = min(sp.Min, v), max(sp.Max, v)
	}
	sp.Mean /= float64(len(vs))
	return sp
}

// Figures returns a strategy's figures over the seeds that ran it:
// goodput and rejected share (0..1), calls lost, and makespan in seconds.
func (s *Sweep) Figures(strategy string) (goodput, rejected, lost, makespan Spread) {
	var g, r, l, m []float64
	for _, res := range s.runs(strategy) {
		if res == nil {
			continue
		}
		g, r = append(g, res.Goodput()), append(r, res.RejectedShare())
		l, m = append(l, float64(res.Lost)), append(m, res.Makespan.Seconds())
	}
	return spreadOf(g), spreadOf(r), spreadOf(l), spreadOf(m)
}

// Wins counts the seeds on which strategy did better than baseline: its
// goodput at least baseline's and its rejected share below it (both), and
// each on its own. A seed that did not run both counts for neither.
func (s *Sweep) Wins(strategy, baseline string) (both, goodput, rejected int) {
	a, b := s.runs(strategy), s.runs(baseline)
	for i := range min(len(a), len(b)) {
		if a[i] == nil || b[i] == nil {
			continue
		}
		g := a[i].Goodput() >= b[i].Goodput()
		r := a[i].RejectedShare() < b[i].RejectedShare()
		if g {
			goodput++
		}
		if r {
			rejected++
		}
		if g && r {
			both++
		}
	}
	return both, goodput, rejected
}

// runs returns strategy's result for each seed, nil for a seed that did
// not run it (one whose results stop before the strategy's place); nil
// for a strategy the sweep has not.
func (s *Sweep) runs(strategy string) []*Result {
	j := slices.Index(s.Strategies, strategy)
	if j < 0 {
		return nil
	}
	out := make([]*Result, len(s.Results))
	for i, rs := range s.Results {
		if j < len(rs) {
			out[i] = rs[j]
		}
	}
	return out
}

// WriteSweep writes each strategy's figures over the seeds, mean (min-max),
// and the seeds on which it did better than baseline (Wins), out of those
// that ran both; an empty baseline, or one the sweep did not run (on any
// seed), leaves the wins out. A strategy that ran on fewer seeds than the
// sweep has carries its runs after its name, and one that ran on none a
// dash in each cell.
//
// An estate's sweep has its own figures (see EstateStrategyNames): the
// makespan against the seed's ideal, when the scopes a pause or a dead
// operation does not touch were done, the plain pool's makespan over each
// strategy's, and the calls lost and recorded in the scan's ledger; it
// takes no baseline.
func WriteSweep(w io.Writer, s *Sweep, baseline string) error {
	if s.Scenario.Estate != nil {
		return writeEstateSweep(w, s)
	}
	writeHeader(w, s.Scenario, s.seedRuns()...)
	s.writeRunCount(w)
	wins := baseline != "" && s.ran(baseline) > 0
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "strategy\tmakespan\tgoodput\trejected %\tlost\t"
	if wins {
		head += "wins vs " + baseline + "\t"
	}
	fmt.Fprintln(tw, head)
	lostAny := false
	for _, name := range s.Strategies {
		if s.ran(name) == 0 {
			fmt.Fprintln(tw, noFigures(s.label(name), head))
			continue
		}
		g, r, l, m := s.Figures(name)
		mark := ""
		if l.Max > 0 {
			mark, lostAny = "*", true
		}
		line := fmt.Sprintf("%s\t%s (%s-%s)\t%.1f%%%s (%.1f-%.1f)\t%.2f%% (%.2f-%.2f)\t%s (%s-%s)\t",
			s.label(name), secs(seconds(m.Mean)), secs(seconds(m.Min)), secs(seconds(m.Max)),
			100*g.Mean, mark, 100*g.Min, 100*g.Max, 100*r.Mean, 100*r.Min, 100*r.Max,
			count(l.Mean), count(l.Min), count(l.Max))
		if wins {
			if name == baseline {
				line += "-\t"
			} else {
				both, gw, rw := s.Wins(name, baseline)
				line += fmt.Sprintf("%d/%d (goodput %d, rejected %d)\t", both, s.ranBoth(name, baseline), gw, rw)
			}
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "goodput: successful calls / calls the provider could have served over the makespan; lost: failed after all retries")
	if lostAny {
		fmt.Fprintln(w, "*: calls were lost on some seeds, whose makespan then ended early and whose goodput covers that shorter span")
	}
	if wins {
		fmt.Fprintf(w, "wins: seeds on which goodput >= %s's and rejected %% < %s's (both), and each on its own\n", baseline, baseline)
	}
	return nil
}

// seedRuns returns one run of each seed that has any, the first of its
// runs that is not nil.
func (s *Sweep) seedRuns() []*Result {
	var out []*Result
	for _, rs := range s.Results {
		if i := slices.IndexFunc(rs, func(r *Result) bool { return r != nil }); i >= 0 {
			out = append(out, rs[i])
		}
	}
	return out
}

// ranBoth counts the seeds that ran both a and b.
func (s *Sweep) ranBoth(a, b string) int {
	ra, rb := s.runs(a), s.runs(b)
	n := 0
	for i := range min(len(ra), len(rb)) {
		if ra[i] != nil && rb[i] != nil {
			n++
		}
	}
	return n
}

// ran counts the seeds that ran strategy.
func (s *Sweep) ran(strategy string) int { return s.ranBoth(strategy, strategy) }

// writeRunCount writes the line that says how many runs the figures are
// over: every strategy's seeds, or, when some ran on fewer seeds than the
// sweep has, that their names carry their runs (label).
func (s *Sweep) writeRunCount(w io.Writer) {
	for _, name := range s.Strategies {
		if s.ran(name) < len(s.Seeds) {
			fmt.Fprintf(w, "seeds %s: mean (min-max) over the runs of each strategy, %d seeds; a strategy run on fewer has its runs after its name\n\n", seedRange(s.Seeds), len(s.Seeds))
			return
		}
	}
	fmt.Fprintf(w, "seeds %s: mean (min-max) over %d runs of each strategy\n\n", seedRange(s.Seeds), len(s.Seeds))
}

// noFigures is the row of a strategy that ran on no seed, named label,
// in a table whose header is head: a dash in each cell after its name.
func noFigures(label, head string) string {
	return label + "\t" + strings.Repeat("-\t", strings.Count(head, "\t")-1)
}

// label returns a strategy's name in a sweep's table, with its runs when
// it ran on fewer seeds than the sweep has.
func (s *Sweep) label(strategy string) string {
	n := s.ran(strategy)
	switch {
	case n == len(s.Seeds):
		return strategy
	case n == 1:
		return strategy + " (1 run)"
	}
	return fmt.Sprintf("%s (%d runs)", strategy, n)
}

// WriteCSV writes one row per seed and strategy: seed, strategy, goodput
// and rejected share (0..1), calls lost, makespan in seconds, and the
// tokens the provider's buckets held at the end and lost while full
// (Result.Unused, Result.Overflowed); for an
// estate also the ideal makespan and when the unaffected scopes were done
// (seconds), the requests throttled, the calls lost outside the scope the
// scenario kills, and those in the scan's ledger.
func WriteCSV(w io.Writer, s *Sweep) error {
	cw := csv.NewWriter(w)
	estate := s.Scenario != nil && s.Scenario.Estate != nil
	head := []string{"seed", "strategy", "goodput", "rejected", "lost", "makespan", "unused", "overflowed"}
	if estate {
		head = append(head, estateCSVHeader...)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for i, rs := range s.Results {
		for _, r := range rs {
			if r == nil {
				continue // not run on this seed
			}
			row := []string{
				strconv.FormatUint(s.Seeds[i], 10), r.Strategy,
				strconv.FormatFloat(r.Goodput(), 'f', 6, 64), strconv.FormatFloat(r.RejectedShare(), 'f', 6, 64),
				strconv.Itoa(r.Lost), strconv.FormatFloat(r.Makespan.Seconds(), 'f', 3, 64),
				strconv.FormatFloat(r.Unused, 'f', 1, 64), strconv.FormatFloat(r.Overflowed, 'f', 1, 64),
			}
			if estate {
				row = append(row, estateCSV(r)...)
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// count prints a mean number of calls: whole when it is, else to a tenth
// (a hundredth under one, so that one call in 30 runs does not print as 0).
func count(v float64) string {
	switch {
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v < 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// seedRange prints the seeds as "1-30" when they are consecutive.
func seedRange(seeds []uint64) string {
	if len(seeds) == 0 {
		return "none"
	}
	for i := 1; i < len(seeds); i++ {
		if seeds[i] != seeds[0]+uint64(i) {
			return fmt.Sprint(seeds)
		}
	}
	if len(seeds) == 1 {
		return strconv.FormatUint(seeds[0], 10)
	}
	return fmt.Sprintf("%d-%d", seeds[0], seeds[len(seeds)-1])
}
