package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cloudg/cloudg/examples/scan/estate"
)

// bound is an ideal lower bound of a makespan and the scope that sets it.
type bound struct {
	d     time.Duration
	scope estate.Scope
	calls int
	limit estate.Limit
	pause time.Duration
}

// String writes the bound and how its scope sets it.
func (b bound) String() string {
	if b.calls == 0 {
		return "0s"
	}
	s := fmt.Sprintf("%s (%s: %d calls at %g rps, burst %d", secs(b.d), b.scope, b.calls, b.limit.Rate, b.limit.Burst)
	if b.pause > 0 {
		s += fmt.Sprintf(", after a pause of %s", secs(b.pause))
	}
	return s + ")"
}

// ideal is the ideal lower bound of a run started at start, over the
// scopes keep selects: for each scope, what is left of its pause, then its
// planned calls, the first Burst at once (the estate's bucket is full at
// best) and the others at its rate; the largest. No client finishes a
// scope sooner. A dead scope has no bound and is left out.
func (s *scanner) ideal(start time.Time, keep func(estate.Scope) bool) bound {
	var b bound
	for sc, n := range plan(s.est.Sizes()) {
		if !keep(sc) || s.est.Dead(sc) {
			continue
		}
		lim := s.est.LimitOf(sc)
		pause := max(0, s.est.PausedUntil(sc).Sub(start))
		d := pause + time.Duration(float64(max(0, n-lim.Burst))/lim.Rate*float64(time.Second))
		if d > b.d || (d == b.d && sc.String() < b.scope.String()) {
			b = bound{d: d, scope: sc, calls: n, limit: lim, pause: pause}
		}
	}
	return b
}

// secs writes d in seconds with one decimal.
func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// estateTally sums what the estate answered between two snapshots of its
// counts.
func estateTally(before, after map[estate.Scope]estate.Count) (requests, throttled int64) {
	for sc, c := range after {
		requests += c.Requests - before[sc].Requests
		throttled += c.Throttled - before[sc].Throttled
	}
	return requests, throttled
}

// outcomeOrder is the order outcomes are printed in.
var outcomeOrder = []string{outcomeOK, outcomeThrottle, outcomeBudget, outcomeCircuit, outcomeDeadline, outcomeCanceled, outcomeOther}

// outcomes writes counts of outcomes, in outcomeOrder.
func outcomes(counts map[string]int) string {
	var parts []string
	for _, o := range outcomeOrder {
		if n := counts[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, o))
		}
	}
	return strings.Join(parts, ", ")
}

// silent is the number of calls of the run that failed but that no ledger
// counted: the silent partial results.
func (r *scanRun) silent() int64 {
	var n int64
	for _, c := range r.colls {
		n += c.silent()
	}
	return n
}

// report writes what the run did: its makespan against the ideal, when the
// scopes no knob touched were done, its calls per outcome, the estate's
// answers, the run's stats, the degraded collections and the failures no
// ledger counted.
func (r *scanRun) report(w io.Writer, title string, requests, throttled int64) {
	fmt.Fprintln(w, title)
	fmt.Fprintf(w, "  makespan            %s\n", secs(r.makespan))
	fmt.Fprintf(w, "  ideal lower bound   %s\n", r.s.ideal(r.start, func(estate.Scope) bool { return true }))
	if len(r.s.knobs) > 0 {
		fmt.Fprintf(w, "  unaffected scopes   done at %s, ideal %s\n", secs(r.unaffected),
			r.s.ideal(r.start, func(sc estate.Scope) bool { return !r.s.affected(sc) }))
	}
	calls := 0
	for _, n := range r.outcomes {
		calls += n
	}
	fmt.Fprintf(w, "  calls               %d of %d planned: %s\n", calls, total(plan(r.s.est.Sizes())), outcomes(r.outcomes))
	for _, o := range outcomeOrder {
		if e := r.examples[o]; e != "" {
			fmt.Fprintf(w, "    %s, e.g. %s\n", o, e)
		}
	}
	if n := r.deferred.Load(); n > 0 {
		fmt.Fprintf(w, "  deferred            %d first call(s) refused before sending (the scope busy after all), not made; the pool ran their tasks again\n", n)
	}
	var submitted, done, failedTasks, panicked, dropped int64
	for _, c := range r.colls {
		submitted += c.submitted.Load()
		done += c.done.Load()
		failedTasks += c.failedTasks.Load()
		panicked += c.panicked.Load()
		dropped += c.dropped()
	}
	if r.cancelled || dropped > 0 || panicked > 0 {
		line := fmt.Sprintf("  tasks               %d submitted: %d done, %d with a failed call", submitted, done, failedTasks)
		if panicked > 0 {
			line += fmt.Sprintf(", %d panicked", panicked)
		}
		fmt.Fprintf(w, "%s, %d dropped unrun\n", line, dropped)
	}
	if r.cancelled {
		fmt.Fprintf(w, "  cancelled           at %s: %d call(s) ended by the cancellation, %d planned call(s) never made\n",
			secs(r.cancelledAt), r.outcomes[outcomeCanceled], max(0, total(plan(r.s.est.Sizes()))-calls))
	}
	fmt.Fprintf(w, "  estate answered     %d requests, %d throttled\n", requests, throttled)
	fmt.Fprintf(w, "  governor            %s\n", r.s.gov.Summary(r.stats).Totals)
	for _, m := range r.stats.Messages() {
		fmt.Fprintf(w, "    %s\n", m)
	}
	names := make([]string, 0, len(r.colls))
	for name := range r.colls {
		names = append(names, name)
	}
	slices.Sort(names)
	header := false
	for _, name := range names {
		c := r.colls[name]
		failed := c.failed.Load()
		if failed == 0 && !c.ledger.Degraded() {
			continue
		}
		if !header {
			fmt.Fprintln(w, "  degraded tasks")
			header = true
		}
		desc := c.ledger.Describe()
		if desc == "" {
			desc = "(the ledger lost nothing)"
		}
		var unrun string
		if n := c.dropped(); n > 0 {
			unrun = fmt.Sprintf(", %d task(s) dropped unrun", n)
		}
		fmt.Fprintf(w, "    %s: %d failed call(s) (%s)%s; %s\n", name, failed, outcomes(c.fails), unrun, desc)
	}
	fmt.Fprintf(w, "  silent partial results: %d failed call(s) no ledger counted\n", r.silent())
}
