package statuspage

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// status is how troubled a scope (or an account) is now, worst first in the
// order of its values: the order of the page's rows.
type status uint8

const (
	statusOpen     status = iota // the breaker refuses calls
	statusHalfOpen               // one probe is out
	statusPaused                 // a pause holds every call
	statusDead                   // every answer fails: throttled for good, or down
	statusSlowed                 // the adaptive rate is below the ceiling
	statusQueued                 // callers wait for a token (an account's: for a slot)
	statusOK
	numStatuses
)

var statusNames = [numStatuses]string{"open", "half_open", "paused", "dead", "slowed", "queued", "ok"}

func (s status) String() string { return statusNames[s] }

// MarshalText writes the status's name.
func (s status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// statusOf classifies a scope by where it stands. A dead scope is dead
// whatever its breaker does (it opened because the scope was found dead,
// and its probes fail): it is the one status that says there is nothing
// to wait for.
func statusOf(s state.ScopeSnapshot) status {
	switch {
	case s.Dead != "":
		return statusDead
	case s.Breaker.State == state.Open:
		return statusOpen
	case s.Breaker.State == state.HalfOpen:
		return statusHalfOpen
	case pausedFor(s) > 0:
		return statusPaused
	case s.Leaf.Rate < s.Leaf.Ceiling:
		return statusSlowed
	case s.Leaf.Queued() > 0:
		return statusQueued
	}
	return statusOK
}

// pausedFor returns the time left in the longest pause holding the scope.
func pausedFor(s state.ScopeSnapshot) time.Duration { return max(s.Leaf.Paused, s.Account.Paused) }

// reasonOf says why a scope is open, half-open or dead: why its breaker
// last opened, and for a dead scope whether it is throttled for good
// (only throttling answered) or down.
func reasonOf(s state.ScopeSnapshot) string {
	switch {
	case s.Dead != "":
		return s.Dead // "throttled for good" or "down", as the governor saw its answers
	case s.Breaker.State != state.Closed:
		return s.OpenReason
	}
	return ""
}

// row is one live scope of the page: its parts, where it stands, and the
// counters of its service. The governor counts per service scope, while a
// service paced per operation has a leaf (a row) per operation: the
// service's rows are kept together, and the HTML shows its counters once,
// in one cell spanning them.
type row struct {
	Scope  resilience.Scope `json:"scope"`
	Key    string           `json:"key"` // Scope.Key: unambiguous, for a program to match rows by
	Status status           `json:"status"`
	// Reason says why the scope is open, half-open or dead: "throttling"
	// or "errors" (why its breaker opened), "throttled for good" or
	// "down" (why it is dead).
	Reason string              `json:"reason,omitempty"`
	Queued int                 `json:"queued"` // callers waiting for a token of the scope's own bucket
	State  state.ScopeSnapshot `json:"state"`
	// Counters are the service scope's (Counters.Scope), shared by the
	// rows of its operations.
	Counters resilience.Counters `json:"counters"`

	// Span is the rows the service's counters cell spans in the HTML; 0
	// when an earlier row holds it.
	Span    int    `json:"-"`
	service string // the service scope's key
}

// account is one account of the page: the values its scopes share, shown
// once.
type account struct {
	Provider string `json:"provider"`
	Account  string `json:"account"`
	// Status is paused (its bucket's pause holds every scope of the
	// account), slowed (its bucket below its ceiling), queued (callers
	// wait for a slot or for its bucket's tokens) or ok.
	Status      status `json:"status"`
	Scopes      int    `json:"scopes"`        // its live scopes
	InFlight    int    `json:"in_flight"`     // calls holding a slot of its bulkhead
	MaxInFlight int    `json:"max_in_flight"` // the bulkhead's cap
	Waiting     int    `json:"waiting"`       // callers waiting for a slot
	// Bucket is the account's own bucket, nil when its provider has none.
	Bucket *state.BucketSnapshot `json:"bucket,omitempty"`
	Queued int                   `json:"queued"` // callers waiting for a token of the account's bucket

	// Span is the rows the provider's cells span in the HTML; 0 when an
	// earlier row holds them. RetryBudget is the provider's.
	Span        int     `json:"-"`
	RetryBudget float64 `json:"-"`
}

// provider is a provider's retry budget, shown once.
type provider struct {
	Name        string  `json:"name"`
	RetryBudget float64 `json:"retry_budget"` // tokens left
}

// page is what the handler serves, as HTML or JSON.
type page struct {
	Time           time.Time           `json:"time"` // on the governor's clock
	RefreshSeconds int64               `json:"refresh_seconds"`
	Live           int                 `json:"live_scopes"`   // every live scope; Scopes holds the first Limit
	LiveAccounts   int                 `json:"live_accounts"` // every account of a live scope; Accounts holds the first Limit
	Statuses       map[string]int      `json:"statuses"`      // live scopes per status
	Totals         resilience.Counters `json:"totals"`        // the governor's lifetime
	Providers      []provider          `json:"providers"`
	Accounts       []account           `json:"accounts"`
	Scopes         []row               `json:"scopes"`
}

// collect reads the governor's scopes and lifetime counters into a page
// of at most limit rows (and limit accounts), the most troubled first.
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
	type acctKey struct{ provider, account string }
	accounts := map[acctKey]*account{}
	budgets := map[string]float64{}
	var rows []row
	for sc, snap := range g.Scopes() {
		svc := sc
		svc.Operation = ""
		r := row{
			Scope: sc, Key: sc.Key(), Status: statusOf(snap), Reason: reasonOf(snap),
			Queued: snap.Leaf.Queued(), State: snap, Counters: counters[svc], service: svc.Key(),
		}
		r.Counters.Scope = svc
		p.Statuses[r.Status.String()]++
		rows = append(rows, r)
		budgets[sc.Provider] = snap.RetryBudget
		k := acctKey{sc.Provider, sc.Account}
		if a := accounts[k]; a != nil {
			a.Scopes++
			continue
		}
		accounts[k] = accountOf(sc, snap)
	}
	p.Live = len(rows)
	p.Scopes = order(rows)[:min(len(rows), limit)]
	spanServices(p.Scopes)

	p.Accounts = make([]account, 0, len(accounts))
	for _, a := range accounts {
		a.RetryBudget = budgets[a.Provider]
		p.Accounts = append(p.Accounts, *a)
	}
	p.LiveAccounts = len(p.Accounts)
	// The limit keeps the most troubled accounts, whatever their
	// provider; the page shows them by provider.
	slices.SortFunc(p.Accounts, func(a, b account) int {
		return cmp.Or(cmp.Compare(a.Status, b.Status), strings.Compare(a.Provider, b.Provider), strings.Compare(a.Account, b.Account))
	})
	p.Accounts = p.Accounts[:min(len(p.Accounts), limit)]
	slices.SortFunc(p.Accounts, func(a, b account) int {
		return cmp.Or(strings.Compare(a.Provider, b.Provider), cmp.Compare(a.Status, b.Status), strings.Compare(a.Account, b.Account))
	})
	spanProviders(p.Accounts)

	p.Providers = make([]provider, 0, len(budgets))
	for name, b := range budgets {
		p.Providers = append(p.Providers, provider{name, b})
	}
	slices.SortFunc(p.Providers, func(a, b provider) int { return strings.Compare(a.Name, b.Name) })
	return p
}

// accountOf returns the account of sc as its snapshot shows it.
func accountOf(sc resilience.Scope, s state.ScopeSnapshot) *account {
	a := &account{
		Provider: sc.Provider, Account: sc.Account, Scopes: 1,
		InFlight: s.InFlight, MaxInFlight: s.MaxInFlight, Waiting: s.Waiting,
		Status: statusOK,
	}
	if s.Account.Ceiling > 0 {
		b := s.Account
		a.Bucket = &b
		a.Queued = b.Queued()
	}
	switch {
	case s.Account.Paused > 0:
		a.Status = statusPaused
	case a.Bucket != nil && a.Bucket.Rate < a.Bucket.Ceiling:
		a.Status = statusSlowed
	case a.Waiting > 0 || a.Queued > 0:
		a.Status = statusQueued
	}
	return a
}

// order sorts the rows so that trouble comes first and a row stays where
// it is from one refresh to the next while its status holds: the rows of
// a service scope together, the services by their worst row's status and
// then by key, and a service's rows by status and then by key. Nothing
// that changes at every call (counts, rates, queues) moves a row.
func order(rows []row) []row {
	worst := map[string]status{}
	for _, r := range rows {
		if w, ok := worst[r.service]; !ok || r.Status < w {
			worst[r.service] = r.Status
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(
			cmp.Compare(worst[a.service], worst[b.service]),
			strings.Compare(a.service, b.service),
			cmp.Compare(a.Status, b.Status),
			strings.Compare(a.Key, b.Key),
		)
	})
	if rows == nil {
		rows = []row{}
	}
	return rows
}

// spanServices sets the span of the first row of each service's run of
// rows to the run's length.
func spanServices(rows []row) {
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && rows[j].service == rows[i].service {
			j++
		}
		rows[i].Span = j - i
		i = j
	}
}

// spanProviders sets the span of the first account of each provider's run
// of accounts to the run's length.
func spanProviders(as []account) {
	for i := 0; i < len(as); {
		j := i + 1
		for j < len(as) && as[j].Provider == as[i].Provider {
			j++
		}
		as[i].Span = j - i
		i = j
	}
}
