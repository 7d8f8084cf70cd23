package resilience

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/internal/jsonsec"
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
	numTallies
)

// counters are the telemetry of one service scope. Every field is atomic so
// that calls record without a lock.
type counters struct {
	n         [numTallies]atomic.Int64 // indexed by tally
	waitNS    atomic.Int64
	maxWaitNS atomic.Int64
	backoffNS atomic.Int64
	rate      atomic.Uint64 // float64 bits of the last adaptive rate seen; 0: never changed
	minRate   atomic.Uint64 // float64 bits of the lowest; 0: never slowed
	lastErr   atomic.Pointer[string]
}

func (c *counters) recordWait(d time.Duration) {
	c.n[waitsTally].Add(1)
	c.waitNS.Add(int64(d))
	for {
		m := c.maxWaitNS.Load()
		if int64(d) <= m || c.maxWaitNS.CompareAndSwap(m, int64(d)) {
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

// eventful reports whether the scope has anything to say beyond calls.
func (c *counters) eventful() bool {
	for t := throttledTally; t < numTallies; t++ {
		if c.n[t].Load() != 0 {
			return true
		}
	}
	return false
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
	if c, ok := t.m.Load(svc); ok {
		return c.(*counters)
	}
	c, _ := t.m.LoadOrStore(svc, new(counters))
	return c.(*counters)
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
	table statsTable
}

// WithStats returns a context carrying a fresh Stats, and that Stats. Every
// call governed with the context (or one derived from it) records into it,
// so two runs in one process keep separate numbers.
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
func (s *Stats) Messages() []string {
	if s == nil {
		return nil
	}
	return messages(s.table.snapshot())
}

// binding is what a context carries: the run's stats, the task's ledger
// and the most a call may wait, in one value so that a call looks the
// context up once.
type binding struct {
	stats   *Stats
	ledger  *Ledger
	maxWait time.Duration // when bounded
	bounded bool
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
// snake_case names of the report, times in seconds.
type Counters struct {
	// Scope is the service scope counted; zero for totals.
	Scope           Scope `json:"scope,omitzero"`
	Calls           int64 `json:"calls"`
	Throttled       int64 `json:"throttled"`
	TransientErrors int64 `json:"transient_errors"`
	Retries         int64 `json:"retries"`
	GaveUp          int64 `json:"gave_up"`
	Rejected        int64 `json:"rejected"`
	// Failed, Refused and Cancelled are the calls lost otherwise (see
	// Loss): failing with transient errors after their retries, refused
	// before they were sent because their wait would have passed their
	// deadline, and ended by their context. With GaveUp (throttled after
	// retries) and Rejected (an open breaker's skips) they are every call
	// the scope lost.
	Failed       int64         `json:"failed"`
	Refused      int64         `json:"refused"`
	Cancelled    int64         `json:"cancelled"`
	BreakerTrips int64         `json:"breaker_trips"`
	Waits        int64         `json:"waits"`
	Wait         time.Duration `json:"-"` // wait_seconds: the waits for rate tokens added up
	MaxWait      time.Duration `json:"-"` // max_wait_seconds
	// Backoff (backoff_seconds) is the retries' backoff sleeps added up:
	// Call and Do's, and those of an SDK's own retry loop (cloudgaws),
	// from the moment the governor allowed a retry to its sending, before
	// its token wait. It is not part of Wait, which is the time calls
	// waited for the rate limit.
	Backoff    time.Duration `json:"-"`
	RateRPS    float64       `json:"rate_rps,omitempty"`     // the last adaptive rate seen; 0: never changed
	MinRateRPS float64       `json:"min_rate_rps,omitempty"` // the lowest; 0: never slowed
	LastError  string        `json:"last_error,omitempty"`
}

// MarshalJSON writes Wait, MaxWait and Backoff as wait_seconds,
// max_wait_seconds and backoff_seconds.
func (c Counters) MarshalJSON() ([]byte, error) {
	type plain Counters
	return jsonsec.Marshal(plain(c), "wait_seconds", c.Wait, "max_wait_seconds", c.MaxWait, "backoff_seconds", c.Backoff)
}

// String renders the totals the way the worked example prints them:
// {calls: 9, throttled: 2, ..., wait_seconds: 5.000}. The calls lost as
// failed, refused or cancelled follow rejected, each only when there are
// any, so that a run that lost none prints the example's line.
func (c Counters) String() string {
	var lost string
	for _, f := range [...]struct {
		name string
		n    int64
	}{{"failed", c.Failed}, {"refused", c.Refused}, {"cancelled", c.Cancelled}} {
		if f.n != 0 {
			lost += fmt.Sprintf(", %s: %d", f.name, f.n)
		}
	}
	return fmt.Sprintf("{calls: %d, throttled: %d, transient_errors: %d, retries: %d, gave_up: %d, rejected: %d%s, breaker_trips: %d, wait_seconds: %.3f}",
		c.Calls, c.Throttled, c.TransientErrors, c.Retries, c.GaveUp, c.Rejected, lost, c.BreakerTrips, c.Wait.Seconds())
}

// Lost returns the calls lost, whatever the kind (see Loss).
func (c Counters) Lost() int64 { return c.GaveUp + c.Rejected + c.Failed + c.Refused + c.Cancelled }

func (c *counters) snapshot() Counters {
	s := Counters{
		Calls:           c.n[callsTally].Load(),
		Throttled:       c.n[throttledTally].Load(),
		TransientErrors: c.n[transientTally].Load(),
		Retries:         c.n[retriesTally].Load(),
		GaveUp:          c.n[gaveUpTally].Load(),
		Rejected:        c.n[rejectedTally].Load(),
		Failed:          c.n[failedTally].Load(),
		Refused:         c.n[refusedTally].Load(),
		Cancelled:       c.n[cancelledTally].Load(),
		BreakerTrips:    c.n[tripsTally].Load(),
		Waits:           c.n[waitsTally].Load(),
		Wait:            time.Duration(c.waitNS.Load()),
		MaxWait:         time.Duration(c.maxWaitNS.Load()),
		Backoff:         time.Duration(c.backoffNS.Load()),
		RateRPS:         math.Float64frombits(c.rate.Load()),
		MinRateRPS:      math.Float64frombits(c.minRate.Load()),
	}
	if p := c.lastErr.Load(); p != nil {
		s.LastError = *p
	}
	return s
}

// add adds s's counts to c (not its rates or last error).
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
	c.BreakerTrips += s.BreakerTrips
	c.Waits += s.Waits
	c.Wait += s.Wait
	c.MaxWait = max(c.MaxWait, s.MaxWait)
	c.Backoff += s.Backoff
}

// minReportedWait is the total wait that makes a scope worth a line of its
// own: shorter waits are the ordinary pacing of a busy scope.
const minReportedWait = time.Second

// message renders one scope's line, or "" when it has nothing to say. A
// scope is eventful when it was throttled, had transient errors, lost
// calls, tripped its breaker, or waited at least a second in all. Its
// parts come in this order, each only when it applies:
//
//	throttled {n}x, slowed to {rate} rps, waited {s}s for rate limit,
//	{n} retries, circuit opened {n}x, {n} calls skipped,
//	{n} calls gave up, {n} calls failed, {n} calls refused,
//	{n} calls cancelled, {n} transient errors
//
// where the slowest rate is shown for a throttled scope, and transient
// errors only for a scope that was not throttled.
func (c Counters) message(scope string) string {
	var parts []string
	if c.Throttled > 0 {
		parts = append(parts, fmt.Sprintf("throttled %dx", c.Throttled))
		if c.MinRateRPS > 0 {
			parts = append(parts, fmt.Sprintf("slowed to %.1f rps", c.MinRateRPS))
		}
	}
	waited := c.Wait >= minReportedWait
	if waited {
		parts = append(parts, fmt.Sprintf("waited %.1fs for rate limit", c.Wait.Seconds()))
	}
	if !waited && c.Throttled == 0 && c.TransientErrors == 0 && c.Lost() == 0 && c.BreakerTrips == 0 {
		return ""
	}
	if c.Retries > 0 {
		parts = append(parts, plural(c.Retries, "retry", "retries"))
	}
	if c.BreakerTrips > 0 {
		parts = append(parts, fmt.Sprintf("circuit opened %dx", c.BreakerTrips))
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
	if c.TransientErrors > 0 && c.Throttled == 0 {
		parts = append(parts, plural(c.TransientErrors, "transient error", "transient errors"))
	}
	return scope + ": " + strings.Join(parts, ", ")
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
		if line := r.c.message(r.name); line != "" {
			out = append(out, line)
		}
	}
	return out
}
