package resilience

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/internal/jsonsec"
	"github.com/cloudg/cloudg/internal/scopekey"
)

// A tally is one of the events counters count.
type tally uint8

const (
	callsTally tally = iota
	throttledTally
	transientTally
	retriesTally
	gaveUpTally
	rejectedTally
	tripsTally
	waitsTally
	failedTally
	refusedTally
	cancelledTally
	pausesTally  // pauses set on the scope's leaf or account
	forGoodTally // breaker trips of a scope throttled for good
	erroredTally
	panickedTally
	deniedTally
	numTallies
)

// counters are the telemetry of one service scope. Every field is atomic so
// that calls record without a lock.
type counters struct {
	n          [numTallies]atomic.Int64 // indexed by tally
	waitNS     atomic.Int64
	maxWaitNS  atomic.Int64
	backoffNS  atomic.Int64
	maxPauseNS atomic.Int64
	rate       atomic.Uint64 // float64 bits of the last adaptive rate seen; 0: never changed
	minRate    atomic.Uint64 // float64 bits of the lowest; 0: never slowed
	lastErr    atomic.Pointer[string]
	spans      atomic.Pointer[spans] // the waits and pauses in wall-clock time, made at the first
}

// recordWait counts a wait of d.
func (c *counters) recordWait(d time.Duration) {
	c.n[waitsTally].Add(1)
	c.waitNS.Add(int64(d))
	storeMax(&c.maxWaitNS, int64(d))
}

// recordWaitAt counts a wait that ended at end after d: in the sum, and in
// the wall-clock time waited.
func (c *counters) recordWaitAt(d, end time.Duration) {
	c.recordWait(d)
	spansOf(&c.spans).waited.add(end-d, end)
}

// recordPause counts a pause of d set at now.
func (c *counters) recordPause(now, d time.Duration) {
	c.n[pausesTally].Add(1)
	storeMax(&c.maxPauseNS, int64(d))
	spansOf(&c.spans).paused.add(now, now+d)
}

// storeMax raises m to v.
func storeMax(m *atomic.Int64, v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}

func (c *counters) recordRate(r float64, decreased bool) {
	c.rate.Store(math.Float64bits(r))
	if !decreased {
		return
	}
	for {
		old := c.minRate.Load()
		if old != 0 && math.Float64frombits(old) <= r {
			return
		}
		if c.minRate.CompareAndSwap(old, math.Float64bits(r)) {
			return
		}
	}
}

// statsTable maps service scopes to counters. Keys are only added (or all
// cleared at once), and a scope's counters are looked up when a leaf entry
// first needs them, not on every call (the entry keeps them), so a
// sync.Map does: lookups take no lock, and a run of a million scopes adds
// its keys without copying the table.
type statsTable struct {
	m sync.Map // Scope -> *counters
}

// get returns the counters of svc, making them on first use.
func (t *statsTable) get(svc Scope) *counters {
	if c := t.find(svc); c != nil {
		return c
	}
	c, _ := t.m.LoadOrStore(svc, new(counters))
	return c.(*counters)
}

// find returns the counters of svc, or nil when it has none yet.
func (t *statsTable) find(svc Scope) *counters {
	if c, ok := t.m.Load(svc); ok {
		return c.(*counters)
	}
	return nil
}

// snapshot returns the counts of every scope.
func (t *statsTable) snapshot() map[Scope]Counters {
	out := map[Scope]Counters{}
	t.m.Range(func(k, c any) bool {
		out[k.(Scope)] = c.(*counters).snapshot()
		return true
	})
	return out
}

// clear forgets every scope.
func (t *statsTable) clear() { t.m.Clear() }

// Stats collects the telemetry of one run: every governed call made with a
// context from WithStats records into it, as well as into the governor's
// lifetime stats. It is safe for concurrent use; the zero value is empty and
// ready to use.
type Stats struct {
	table  statsTable
	waited span // the wall-clock time during which a call of the run waited
}

// WithStats returns a context carrying a fresh Stats, and that Stats. Every
// call governed with the context (or one derived from it) records into it,
// so two runs in one process keep separate numbers. A context carries one
// Stats: WithStats on a context that has one replaces it for the calls
// made with the new context (the innermost wins, as with WithLedger), and
// their numbers reach the outer Stats only through the governor's
// lifetime stats.
func WithStats(ctx context.Context) (context.Context, *Stats) {
	s := new(Stats)
	b := *bindingOf(ctx)
	b.stats = s
	return context.WithValue(ctx, bindingKey{}, &b), s
}

// Messages returns one line per eventful scope, sorted, in the form
//
//	aws/123456789012/eu-west-1/ec2: throttled 2x, slowed to 5.0 rps, 2 retries
//	aws/123456789012/eu-west-1/secretsmanager: waited 5.0s for rate limit
//
// A line is a service scope's (Scope.ServiceScope, the operation left
// out), where a run's counters are kept, even for a service paced per
// operation (ec2, or per_operation: true): its operations' calls are
// added up, and "slowed to" is the lowest rate any of its leaves fell to.
// Which operation was slowed or paused, or had its breaker opened, the
// governor's Summary says: its SlowedBuckets and Breakers are keyed by
// the leaf (aws/123456789012/eu-west-1/ec2/DescribeVpcs).
//
// A scope whose string (Scope.String) holds a character that is not
// printable, a newline or a byte that is not UTF-8, is written quoted as
// strconv.Quote quotes it ("gcp/*/*/dri\nve": 1 call errored), so that
// no part of a scope ends a line or forges another.
func (s *Stats) Messages() []string {
	if s == nil {
		return nil
	}
	return messages(s.table.snapshot())
}

// binding is what a context carries: the run's stats, the task's ledger
// and the most a call may wait, in one value so that a call looks the
// context up once. Its flags are side by side, in one word (see
// TestAScopesStateStaysInItsSizeClass's admittedCtx).
type binding struct {
	stats   *Stats
	ledger  *Ledger
	maxWait time.Duration // when bounded
	adm     *admission    // a scheduler's hold on the first call, or nil
	bounded bool
	held    bool // bounded or adm: a call's admission has a bound to compute
}

type bindingKey struct{}

var noBinding binding

func bindingOf(ctx context.Context) *binding {
	if b, ok := ctx.Value(bindingKey{}).(*binding); ok {
		return b
	}
	return &noBinding
}

// Counters are what happened in one scope, or in a whole run (a
// Summary's totals): calls, throttles, transient errors, retries, calls
// given up, calls rejected by an open circuit, breaker trips, and the waits
// for rate tokens. It marshals to JSON with the
// snake_case names of the report, times in seconds. The zero Counters
// count nothing. Counters are a snapshot the governor does not change
// once it returned them: any goroutine may read them.
type Counters struct {
	// Scope is the service scope counted; zero for totals.
	Scope Scope `json:"scope,omitzero"`
	// Calls counts the calls sent, each as its integration counts one:
	// an attempt of Do or Call, an HTTP attempt (package cloudghttp, the
	// Azure SDK), a request or a further page (the Google Cloud clients),
	// and an AWS SDK operation with the retries the SDK makes inside it,
	// which Retries counts. A listing counts each page.
	Calls           int64 `json:"calls"`
	Throttled       int64 `json:"throttled"`
	TransientErrors int64 `json:"transient_errors"`
	Retries         int64 `json:"retries"`
	GaveUp          int64 `json:"gave_up"`
	Rejected        int64 `json:"rejected"`
	// Failed, Refused, Cancelled, Errored, Panicked and Denied are the
	// calls lost otherwise (see Loss): failing with transient errors after
	// their retries, refused before they were sent because their wait
	// would have passed their deadline, ended by their context, ended by a
	// local error no provider answered, ended by a panic of their
	// function, and denied by the provider for a quota the governor does
	// not pace (answered, and not counted as throttled). With GaveUp
	// (throttled after retries) and Rejected (an open breaker's skips)
	// they are every call the scope lost.
	Failed       int64         `json:"failed"`
	Refused      int64         `json:"refused"`
	Cancelled    int64         `json:"cancelled"`
	Errored      int64         `json:"errored"`
	Panicked     int64         `json:"panicked"`
	Denied       int64         `json:"denied"`
	BreakerTrips int64         `json:"breaker_trips"`
	Waits        int64         `json:"waits"`
	Wait         time.Duration `json:"-"` // wait_seconds: the waits for rate tokens added up
	MaxWait      time.Duration `json:"-"` // max_wait_seconds
	// WaitElapsed (wait_elapsed_seconds) is the wall-clock time during
	// which at least one call waited for a rate token: the waits of
	// concurrent callers, which Wait adds up, counted once. In a
	// Summary's totals it is the run's, across its scopes.
	WaitElapsed time.Duration `json:"-"`
	// Pauses are the pauses set on the scope's leaf or account (a
	// provider's Retry-After, a proactive pause); Paused (paused_seconds)
	// is the wall-clock time they held it, each counted once, to the end
	// of the last, and MaxPause (max_pause_seconds) the longest. In a
	// Summary's totals, Pauses are the scopes' added up and MaxPause the
	// longest, but Paused is 0: the pauses of different scopes are not
	// merged into one time (each scope's counters have theirs); the
	// totals' JSON carries none of the three.
	Pauses   int64         `json:"pauses"`
	Paused   time.Duration `json:"-"`
	MaxPause time.Duration `json:"-"`
	// ThrottledForGood counts the scope's breaker opening because every
	// answer was throttling for the provider's breaker_dead_seconds: the
	// scope never answered (see BreakerTrips, which counts these too).
	ThrottledForGood int64 `json:"throttled_for_good"`
	// Backoff (backoff_seconds) is the retries' backoff sleeps added up:
	// Call and Do's, and those of an SDK's own retry loop (cloudgaws),
	// from the moment the governor allowed a retry to its sending, before
	// its token wait, less a wait for the breaker's verdict (breaker_wait).
	// It is not part of Wait, which is the time calls waited for the rate
	// limit.
	Backoff time.Duration `json:"-"`
	Rate    float64       `json:"rate_rps,omitempty"`     // the last adaptive rate seen, in requests per second; 0: never changed
	MinRate float64       `json:"min_rate_rps,omitempty"` // the lowest, in requests per second; 0: never slowed
	// LastError describes the last throttled or failed answer, or, for a
	// call whose retries the empty retry budget, its deadline or an open
	// breaker stopped, what stopped them ("retry budget exhausted",
	// "deadline exceeded", "circuit open") "after" that answer.
	LastError string `json:"last_error,omitempty"`
}

// MarshalJSON writes Wait, MaxWait, WaitElapsed, Backoff, Paused and
// MaxPause as wait_seconds, max_wait_seconds, wait_elapsed_seconds,
// backoff_seconds, paused_seconds and max_pause_seconds, and a Rate or a
// MinRate that is no finite number (NaN, +Inf or -Inf: the rate a
// Store of the user's answered) as null, which JSON holds and no rate
// is, as state.BucketSnapshot writes its rates.
func (c Counters) MarshalJSON() ([]byte, error) {
	type plain Counters
	return jsonsec.Marshal(struct {
		plain
		Rate    jsonsec.Float `json:"rate_rps,omitempty"`
		MinRate jsonsec.Float `json:"min_rate_rps,omitempty"`
	}{plain(c), jsonsec.Float(c.Rate), jsonsec.Float(c.MinRate)},
		"wait_seconds", c.Wait, "max_wait_seconds", c.MaxWait, "wait_elapsed_seconds", c.WaitElapsed,
		"backoff_seconds", c.Backoff, "paused_seconds", c.Paused, "max_pause_seconds", c.MaxPause)
}

// UnmarshalJSON reads what MarshalJSON writes, and a summary's totals
// (the report's form, a part of it), the durations from their seconds,
// a rate of null as NaN (a rate that was no number). A null leaves c as
// it is, as encoding/json leaves any value it reads null into.
func (c *Counters) UnmarshalJSON(b []byte) error {
	type plain Counters
	w := struct {
		*plain
		Rate    jsonsec.Float `json:"rate_rps,omitempty"`
		MinRate jsonsec.Float `json:"min_rate_rps,omitempty"`
	}{(*plain)(c), jsonsec.Float(c.Rate), jsonsec.Float(c.MinRate)}
	if err := jsonsec.Unmarshal(b, &w, "wait_seconds", &c.Wait, "max_wait_seconds", &c.MaxWait, "wait_elapsed_seconds", &c.WaitElapsed,
		"backoff_seconds", &c.Backoff, "paused_seconds", &c.Paused, "max_pause_seconds", &c.MaxPause); err != nil {
		return err
	}
	c.Rate, c.MinRate = float64(w.Rate), float64(w.MinRate)
	return nil
}

// String renders the totals the way the worked example prints them:
// {calls: 9, throttled: 2, ..., wait_seconds: 5.000}. The calls lost as
// failed, refused, cancelled, errored, panicked or denied follow rejected, each
// only when there are any, so that a run that lost none prints the
// example's line. When the waits of concurrent callers overlapped enough
// that their sum misleads (see Overlapped), the wall-clock time waited
// and the longest wait follow wait_seconds: ..., wait_seconds: 985.700,
// wait_elapsed_seconds: 61.200, max_wait_seconds: 12.000}.
func (c Counters) String() string {
	var lost string
	for _, f := range [...]struct {
		name string
		n    int64
	}{{"failed", c.Failed}, {"refused", c.Refused}, {"cancelled", c.Cancelled}, {"errored", c.Errored}, {"panicked", c.Panicked}, {"denied", c.Denied}} {
		if f.n != 0 {
			lost += fmt.Sprintf(", %s: %d", f.name, f.n)
		}
	}
	var wall string
	if c.Overlapped() {
		wall = fmt.Sprintf(", wait_elapsed_seconds: %.3f, max_wait_seconds: %.3f", c.WaitElapsed.Seconds(), c.MaxWait.Seconds())
	}
	return fmt.Sprintf("{calls: %d, throttled: %d, transient_errors: %d, retries: %d, gave_up: %d, rejected: %d%s, breaker_trips: %d, wait_seconds: %.3f%s}",
		c.Calls, c.Throttled, c.TransientErrors, c.Retries, c.GaveUp, c.Rejected, lost, c.BreakerTrips, c.Wait.Seconds(), wall)
}

// The waits added up read as more time than passed when they are several
// times the wall-clock time waited (minOverlapFactor) or far more than it
// (minOverlap): callers waited at the same time.
const (
	minOverlapFactor = 3
	minOverlap       = 10 * time.Second
)

// Overlapped reports whether the waits added up (Wait) are three times the
// wall-clock time waited (WaitElapsed) or more, or exceed it by ten
// seconds or more: concurrent callers waited at the same time, so that
// the sum alone would read as more time than passed. The messages and
// String then say the wall-clock time and the longest wait beside the
// sum. (The worked example's six callers at 2 rps waited 5 s during 2 s:
// 2.5 times, 3 s more, so that its lines, which examples/pacedcalls
// prints, say the sum alone.)
func (c Counters) Overlapped() bool {
	return c.WaitElapsed > 0 && (c.Wait >= minOverlapFactor*c.WaitElapsed || c.Wait-c.WaitElapsed >= minOverlap)
}

// Lost returns the calls lost, whatever the kind (see Loss).
func (c Counters) Lost() int64 {
	return c.GaveUp + c.Rejected + c.Failed + c.Refused + c.Cancelled + c.Errored + c.Panicked + c.Denied
}

func (c *counters) snapshot() Counters {
	s := Counters{
		Calls:            c.n[callsTally].Load(),
		Throttled:        c.n[throttledTally].Load(),
		TransientErrors:  c.n[transientTally].Load(),
		Retries:          c.n[retriesTally].Load(),
		GaveUp:           c.n[gaveUpTally].Load(),
		Rejected:         c.n[rejectedTally].Load(),
		Failed:           c.n[failedTally].Load(),
		Refused:          c.n[refusedTally].Load(),
		Cancelled:        c.n[cancelledTally].Load(),
		Errored:          c.n[erroredTally].Load(),
		Panicked:         c.n[panickedTally].Load(),
		Denied:           c.n[deniedTally].Load(),
		BreakerTrips:     c.n[tripsTally].Load(),
		Waits:            c.n[waitsTally].Load(),
		Wait:             time.Duration(c.waitNS.Load()),
		MaxWait:          time.Duration(c.maxWaitNS.Load()),
		Backoff:          time.Duration(c.backoffNS.Load()),
		Pauses:           c.n[pausesTally].Load(),
		MaxPause:         time.Duration(c.maxPauseNS.Load()),
		ThrottledForGood: c.n[forGoodTally].Load(),
		Rate:             math.Float64frombits(c.rate.Load()),
		MinRate:          math.Float64frombits(c.minRate.Load()),
	}
	if p := c.lastErr.Load(); p != nil {
		s.LastError = *p
	}
	if sp := c.spans.Load(); sp != nil {
		s.WaitElapsed, s.Paused = sp.waited.covered(), sp.paused.covered()
	}
	return s
}

// add adds s's counts to c (not its rates or last error, nor its
// wall-clock times, which add up only as a whole run's).
func (c *Counters) add(s Counters) {
	c.Calls += s.Calls
	c.Throttled += s.Throttled
	c.TransientErrors += s.TransientErrors
	c.Retries += s.Retries
	c.GaveUp += s.GaveUp
	c.Rejected += s.Rejected
	c.Failed += s.Failed
	c.Refused += s.Refused
	c.Cancelled += s.Cancelled
	c.Errored += s.Errored
	c.Panicked += s.Panicked
	c.Denied += s.Denied
	c.BreakerTrips += s.BreakerTrips
	c.Waits += s.Waits
	c.Wait += s.Wait
	c.MaxWait = max(c.MaxWait, s.MaxWait)
	c.Backoff += s.Backoff
	c.Pauses += s.Pauses
	c.MaxPause = max(c.MaxPause, s.MaxPause)
	c.ThrottledForGood += s.ThrottledForGood
}

// minReportedWait is the total wait that makes a scope worth a line of its
// own: shorter waits are the ordinary pacing of a busy scope.
const minReportedWait = time.Second

// message renders one scope's line, or "" when it has nothing to say. A
// scope is eventful when it was throttled, had transient errors, lost
// calls, tripped its breaker, or waited or was paused at least a second
// in all. Its parts come in this order, each only when it applies:
//
//	throttled {n}x, slowed to {rate} rps, paused for {s}s,
//	waited {s}s for rate limit, {n} retries, circuit opened {n}x,
//	{n} calls skipped, {n} calls gave up, {n} calls failed,
//	{n} calls refused, {n} calls cancelled, {n} calls errored,
//	{n} calls panicked, {n} calls denied, {n} transient errors
//
// where the slowest rate is shown for a throttled scope (with one
// decimal, or two significant digits under 1 rps), transient
// errors only for a scope that was not throttled, and the pauses' time
// in wall-clock time. The waits are added up over the callers, as the
// totals' wait_seconds; when that sum reads as more time than passed
// (Counters.Overlapped: three times the wall-clock time waited, or ten
// seconds more), the wall-clock time waited and the longest wait follow
// it:
//
//	waited 985.7s for rate limit (summed over callers: 61.2s wall-clock, longest 12.0s)
//
// A breaker that opened because the scope was throttled for good says
// so: "circuit opened 1x (throttled for good)", or "circuit opened 3x
// (1x throttled for good)" when it opened for other reasons too.
func (c Counters) message(scope string) string {
	var parts []string
	if c.Throttled > 0 {
		parts = append(parts, fmt.Sprintf("throttled %dx", c.Throttled))
		if c.MinRate > 0 {
			parts = append(parts, "slowed to "+rateText(c.MinRate)+" rps")
		}
	}
	paused := c.Paused >= minReportedWait
	if paused {
		parts = append(parts, fmt.Sprintf("paused for %.1fs", c.Paused.Seconds()))
	}
	waited := c.Wait >= minReportedWait
	if waited {
		w := fmt.Sprintf("waited %.1fs for rate limit", c.Wait.Seconds())
		if c.Overlapped() {
			w += fmt.Sprintf(" (summed over callers: %.1fs wall-clock, longest %.1fs)", c.WaitElapsed.Seconds(), c.MaxWait.Seconds())
		}
		parts = append(parts, w)
	}
	if !waited && !paused && c.Throttled == 0 && c.TransientErrors == 0 && c.Lost() == 0 && c.BreakerTrips == 0 {
		return ""
	}
	if c.Retries > 0 {
		parts = append(parts, plural(c.Retries, "retry", "retries"))
	}
	if c.BreakerTrips > 0 {
		trips := fmt.Sprintf("circuit opened %dx", c.BreakerTrips)
		switch {
		case c.ThrottledForGood >= c.BreakerTrips:
			trips += " (throttled for good)"
		case c.ThrottledForGood > 0:
			trips += fmt.Sprintf(" (%dx throttled for good)", c.ThrottledForGood)
		}
		parts = append(parts, trips)
	}
	if c.Rejected > 0 {
		parts = append(parts, plural(c.Rejected, "call", "calls")+" skipped")
	}
	if c.GaveUp > 0 {
		parts = append(parts, plural(c.GaveUp, "call", "calls")+" gave up")
	}
	if c.Failed > 0 {
		parts = append(parts, plural(c.Failed, "call", "calls")+" failed")
	}
	if c.Refused > 0 {
		parts = append(parts, plural(c.Refused, "call", "calls")+" refused")
	}
	if c.Cancelled > 0 {
		parts = append(parts, plural(c.Cancelled, "call", "calls")+" cancelled")
	}
	if c.Errored > 0 {
		parts = append(parts, plural(c.Errored, "call", "calls")+" errored")
	}
	if c.Panicked > 0 {
		parts = append(parts, plural(c.Panicked, "call", "calls")+" panicked")
	}
	if c.Denied > 0 {
		parts = append(parts, plural(c.Denied, "call", "calls")+" denied")
	}
	if c.TransientErrors > 0 && c.Throttled == 0 {
		parts = append(parts, plural(c.TransientErrors, "transient error", "transient errors"))
	}
	return scope + ": " + strings.Join(parts, ", ")
}

// rateText writes a rate in requests per second as a scope's line says
// it: with one decimal (5.0, as the worked example prints it), or, under 1 rps,
// where one decimal would be a third or more off (0.165 as 0.2) or 0.0,
// with two significant digits (azure storage's 0.33 halved, 0.17; gcp's
// floor, 0.05; 0.094), a rate that rounds to 1 reading 1.0.
func rateText(r float64) string {
	if r < 1 {
		if s := strconv.FormatFloat(r, 'g', 2, 64); s != "1" {
			return s
		}
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func messages(m map[Scope]Counters) []string {
	type row struct {
		name, key string
		c         Counters
	}
	rows := make([]row, 0, len(m))
	for k, c := range m {
		rows = append(rows, row{k.String(), k.Key(), c})
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(a.key, b.key))
	})
	var out []string
	for _, r := range rows {
		// One line per scope: a part's newline, a byte that is not UTF-8,
		// is written escaped.
		r.name = scopekey.OneLine(r.name)
		if line := r.c.message(r.name); line != "" {
			out = append(out, line)
		}
	}
	return out
}
