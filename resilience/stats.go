package resilience

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// counters are the telemetry of one service scope. Every field is atomic so
// that calls record without a lock.
type counters struct {
	calls     atomic.Int64
	throttled atomic.Int64
	transient atomic.Int64
	retries   atomic.Int64
	gaveUp    atomic.Int64
	rejected  atomic.Int64
	trips     atomic.Int64
	waits     atomic.Int64
	waitNS    atomic.Int64
	maxWaitNS atomic.Int64
	rate      atomic.Uint64 // float64 bits of the last adaptive rate seen; 0: never changed
	minRate   atomic.Uint64 // float64 bits of the lowest; 0: never slowed
	lastErr   atomic.Pointer[string]

	// refs counts the live leaf entries that write here (lifetime table
	// only); a negative value marks counters folded into the totals.
	refs atomic.Int64
}

func (c *counters) recordWait(d int64) {
	c.waits.Add(1)
	c.waitNS.Add(d)
	for {
		m := c.maxWaitNS.Load()
		if d <= m || c.maxWaitNS.CompareAndSwap(m, d) {
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

func (c *counters) recordErr(err error) {
	s := DescribeError(err)
	c.lastErr.Store(&s)
}

// eventful reports whether the scope has anything to say beyond calls.
func (c *counters) eventful() bool {
	return c.throttled.Load() != 0 || c.transient.Load() != 0 || c.retries.Load() != 0 ||
		c.gaveUp.Load() != 0 || c.rejected.Load() != 0 || c.trips.Load() != 0 || c.waits.Load() != 0
}

// statsTable maps service scopes to counters.
type statsTable struct {
	m readMap[Scope, *counters]
}

func (t *statsTable) get(svc Scope) *counters {
	if c, ok := t.m.load(svc); ok {
		return c
	}
	t.m.lock()
	defer t.m.unlock()
	c, ok := t.m.loadLocked(svc)
	if !ok {
		c = new(counters)
		t.m.storeLocked(svc, c)
	}
	return c
}

// snapshot copies the table's entries.
func (t *statsTable) snapshot() map[Scope]*counters { return t.m.snapshot() }

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
	return BindStats(ctx, s), s
}

// BindStats returns a context carrying s, to reuse a Stats a caller already
// made (the outer run sees the inner one's calls).
func BindStats(ctx context.Context, s *Stats) context.Context {
	b := bindingOf(ctx)
	return context.WithValue(ctx, bindingKey{}, &binding{stats: s, ledger: b.ledger})
}

// StatsFrom returns the Stats bound to ctx, or nil.
func StatsFrom(ctx context.Context) *Stats { return bindingOf(ctx).stats }

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

// binding is what a context carries: the run's stats and the task's ledger,
// in one value so that a call looks the context up once.
type binding struct {
	stats  *Stats
	ledger *Ledger
}

type bindingKey struct{}

var noBinding binding

func bindingOf(ctx context.Context) *binding {
	if b, ok := ctx.Value(bindingKey{}).(*binding); ok {
		return b
	}
	return &noBinding
}

// Totals adds up the counters of every scope.
type Totals struct {
	Calls           int64         `json:"calls"`
	Throttled       int64         `json:"throttled"`
	TransientErrors int64         `json:"transient_errors"`
	Retries         int64         `json:"retries"`
	GaveUp          int64         `json:"gave_up"`
	Rejected        int64         `json:"rejected"`
	BreakerTrips    int64         `json:"breaker_trips"`
	Wait            time.Duration `json:"-"` // marshals as wait_seconds
}

// MarshalJSON writes the spec's form, with wait_seconds in seconds.
func (t Totals) MarshalJSON() ([]byte, error) {
	type plain Totals
	return marshalWithSeconds(plain(t), "wait_seconds", t.Wait)
}

// String renders the totals as the spec's example prints them.
func (t Totals) String() string {
	return fmt.Sprintf("{calls: %d, throttled: %d, transient_errors: %d, retries: %d, gave_up: %d, rejected: %d, breaker_trips: %d, wait_seconds: %.3f}",
		t.Calls, t.Throttled, t.TransientErrors, t.Retries, t.GaveUp, t.Rejected, t.BreakerTrips, t.Wait.Seconds())
}

// ScopeStats are the counters of one service scope.
type ScopeStats struct {
	Calls           int64         `json:"calls"`
	Throttled       int64         `json:"throttled"`
	TransientErrors int64         `json:"transient_errors"`
	Retries         int64         `json:"retries"`
	GaveUp          int64         `json:"gave_up"`
	Rejected        int64         `json:"rejected"`
	BreakerTrips    int64         `json:"breaker_trips"`
	Waits           int64         `json:"waits"`
	Wait            time.Duration `json:"-"`                      // wait_seconds
	MaxWait         time.Duration `json:"-"`                      // max_wait_seconds
	RateRPS         float64       `json:"rate_rps,omitempty"`     // last adaptive rate seen; 0: never changed
	MinRateRPS      float64       `json:"min_rate_rps,omitempty"` // lowest; 0: never slowed
	LastError       string        `json:"last_error,omitempty"`
}

// MarshalJSON writes wait_seconds and max_wait_seconds in seconds.
func (s ScopeStats) MarshalJSON() ([]byte, error) {
	type plain ScopeStats
	return marshalWithSeconds(plain(s), "wait_seconds", s.Wait, "max_wait_seconds", s.MaxWait)
}

func (c *counters) stats() ScopeStats {
	s := ScopeStats{
		Calls:           c.calls.Load(),
		Throttled:       c.throttled.Load(),
		TransientErrors: c.transient.Load(),
		Retries:         c.retries.Load(),
		GaveUp:          c.gaveUp.Load(),
		Rejected:        c.rejected.Load(),
		BreakerTrips:    c.trips.Load(),
		Waits:           c.waits.Load(),
		Wait:            time.Duration(c.waitNS.Load()),
		MaxWait:         time.Duration(c.maxWaitNS.Load()),
		RateRPS:         math.Float64frombits(c.rate.Load()),
		MinRateRPS:      math.Float64frombits(c.minRate.Load()),
	}
	if p := c.lastErr.Load(); p != nil {
		s.LastError = *p
	}
	return s
}

func (t *Totals) add(s ScopeStats) {
	t.Calls += s.Calls
	t.Throttled += s.Throttled
	t.TransientErrors += s.TransientErrors
	t.Retries += s.Retries
	t.GaveUp += s.GaveUp
	t.Rejected += s.Rejected
	t.BreakerTrips += s.BreakerTrips
	t.Wait += s.Wait
}

// message renders one scope's line, or "" when it has nothing to say.
func (s ScopeStats) message(scope string) string {
	var parts []string
	if s.Throttled > 0 {
		parts = append(parts, fmt.Sprintf("throttled %dx", s.Throttled))
	}
	if s.MinRateRPS > 0 {
		parts = append(parts, fmt.Sprintf("slowed to %.1f rps", s.MinRateRPS))
	}
	if s.TransientErrors > 0 {
		parts = append(parts, plural(s.TransientErrors, "transient error", "transient errors"))
	}
	if s.Retries > 0 {
		parts = append(parts, plural(s.Retries, "retry", "retries"))
	}
	if s.GaveUp > 0 {
		parts = append(parts, fmt.Sprintf("gave up on %s", plural(s.GaveUp, "call", "calls")))
	}
	if s.Rejected > 0 {
		parts = append(parts, fmt.Sprintf("%s rejected (circuit open)", plural(s.Rejected, "call", "calls")))
	}
	if s.BreakerTrips > 0 {
		parts = append(parts, fmt.Sprintf("circuit opened %dx", s.BreakerTrips))
	}
	if s.Wait >= 50*time.Millisecond {
		parts = append(parts, fmt.Sprintf("waited %.1fs for rate limit", s.Wait.Seconds()))
	}
	if len(parts) == 0 {
		return ""
	}
	return scope + ": " + strings.Join(parts, ", ")
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func messages(m map[Scope]*counters) []string {
	keys := sortedScopes(m)
	var out []string
	for _, k := range keys {
		if line := m[k].stats().message(k.String()); line != "" {
			out = append(out, line)
		}
	}
	return out
}

func sortedScopes[V any](m map[Scope]V) []Scope {
	keys := make([]Scope, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}
