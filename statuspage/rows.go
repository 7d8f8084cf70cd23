package statuspage

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// status is how troubled a scope is now, worst first in the order of its
// values.
type status uint8

const (
	statusOpen     status = iota // the breaker refuses calls
	statusHalfOpen               // one probe is out
	statusPaused                 // a pause holds every call
	statusSlowed                 // the adaptive rate is below the ceiling
	statusQueued                 // calls wait for a slot of the account
	statusOK
	numStatuses
)

var statusNames = [numStatuses]string{"open", "half_open", "paused", "slowed", "queued", "ok"}

func (s status) String() string { return statusNames[s] }

// MarshalText writes the status's name.
func (s status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// statusOf classifies a scope by where it stands.
func statusOf(s state.ScopeSnapshot) status {
	switch {
	case s.Breaker.State == state.Open:
		return statusOpen
	case s.Breaker.State == state.HalfOpen:
		return statusHalfOpen
	case pausedFor(s) > 0:
		return statusPaused
	case s.Leaf.Rate < s.Leaf.Ceiling:
		return statusSlowed
	case s.Waiting > 0:
		return statusQueued
	}
	return statusOK
}

// pausedFor returns the time left in the longest pause holding the scope.
func pausedFor(s state.ScopeSnapshot) time.Duration { return max(s.Leaf.Paused, s.Account.Paused) }

// row is one scope of the page: its parts, where it stands, and the
// counters of its service (the governor counts per service, while a
// service paced per operation has a leaf per operation).
type row struct {
	Scope    resilience.Scope    `json:"scope"`
	Key      string              `json:"key"` // Scope.Key: unambiguous, for a program to match rows by
	Status   status              `json:"status"`
	State    state.ScopeSnapshot `json:"state"`
	Counters resilience.Counters `json:"counters"` // of the service scope, which Counters.Scope names
}

// page is what the handler serves, as HTML or JSON.
type page struct {
	Time           time.Time           `json:"time"` // on the governor's clock
	RefreshSeconds float64             `json:"refresh_seconds"`
	Live           int                 `json:"live_scopes"` // every live scope; Scopes holds the first Limit
	Statuses       map[string]int      `json:"statuses"`    // live scopes per status
	Totals         resilience.Counters `json:"totals"`      // the governor's lifetime
	Scopes         []row               `json:"scopes"`
}

// collect reads the governor's scopes and lifetime counters into a page
// of at most limit rows, the most troubled first.
func collect(g *resilience.Governor, limit int) page {
	sum := g.Summary(nil)
	counters := make(map[resilience.Scope]resilience.Counters, len(sum.Scopes))
	for _, c := range sum.Scopes {
		counters[c.Scope] = c
	}
	p := page{Time: g.Clock().Now(), Totals: sum.Totals, Statuses: map[string]int{}}
	for _, s := range statusNames {
		p.Statuses[s] = 0
	}
	var rows []row
	for sc, snap := range g.Scopes() {
		svc := sc
		svc.Operation = ""
		r := row{Scope: sc, Key: sc.Key(), Status: statusOf(snap), State: snap, Counters: counters[svc]}
		r.Counters.Scope = svc
		p.Statuses[r.Status.String()]++
		rows = append(rows, r)
	}
	p.Live = len(rows)
	slices.SortFunc(rows, worseFirst)
	p.Scopes = rows[:min(len(rows), limit)]
	if p.Scopes == nil {
		p.Scopes = []row{}
	}
	return p
}

// worseFirst orders rows by status, then by calls lost (given up or
// skipped), throttles and the share of the ceiling left, then by key so
// that the order is stable from one refresh to the next.
func worseFirst(a, b row) int {
	return cmp.Or(
		cmp.Compare(a.Status, b.Status),
		cmp.Compare(b.Counters.GaveUp+b.Counters.Rejected, a.Counters.GaveUp+a.Counters.Rejected),
		cmp.Compare(b.Counters.Throttled, a.Counters.Throttled),
		cmp.Compare(share(a.State), share(b.State)),
		cmp.Compare(b.State.Waiting, a.State.Waiting),
		strings.Compare(a.Key, b.Key),
	)
}

// share returns the leaf's rate as a share of its ceiling, 0 to 1.
func share(s state.ScopeSnapshot) float64 {
	if s.Leaf.Ceiling <= 0 {
		return 1
	}
	return min(1, max(0, s.Leaf.Rate/s.Leaf.Ceiling))
}
