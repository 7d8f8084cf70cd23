package statuspage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cloudg/cloudg/internal/jsonsec"
	"github.com/cloudg/cloudg/internal/scopekey"
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
	statusQueued                 // callers wait for a token of one of its buckets (an account: or for a slot)
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
// to wait for. A breaker in a state that is none of closed, half-open and
// open (knownBreaker; as a Store's breaker decoded from a corrupt record
// may report) is open: the governor takes a breaker that is not closed for one
// that refuses calls while it reports a wait, and the row says that its
// state is unknown (explain).
func statusOf(s state.ScopeSnapshot) status {
	switch {
	case s.Dead != "":
		return statusDead
	case s.Breaker.State == state.Open || !knownBreaker(s.Breaker.State):
		return statusOpen
	case s.Breaker.State == state.HalfOpen:
		return statusHalfOpen
	case pausedFor(s) > 0:
		return statusPaused
	case s.Leaf.Rate < s.Leaf.Ceiling:
		return statusSlowed
	case queuedFor(s) > 0:
		return statusQueued
	}
	return statusOK
}

// knownBreaker reports whether b is a breaker's position: closed,
// half-open or open.
func knownBreaker(b state.BreakerState) bool {
	return b == state.Closed || b == state.HalfOpen || b == state.Open
}

// breakerClass returns the HTML class of a breaker in state b: its name
// (closed, half_open, open), or unknown for a state that is none of them,
// whose name (state.BreakerState(7)) is no class a style sheet selects.
func breakerClass(b state.BreakerState) string {
	if !knownBreaker(b) {
		return "unknown"
	}
	return b.String()
}

// pausedFor returns the time left in the longest pause holding the scope.
func pausedFor(s state.ScopeSnapshot) time.Duration {
	return max(s.Leaf.Paused, s.Account.Paused, s.Provider.Paused)
}

// pausedOn names the bucket of the longest pause holding the scope when
// it is not the scope's own: "account" (its account's bucket) or
// "provider" (its provider's, global_max_rps), "" when its own is as
// long; the page marks them acct and prov, as queuedOn's.
func pausedOn(s state.ScopeSnapshot) string {
	switch d := pausedFor(s); {
	case d <= 0 || s.Leaf.Paused == d:
		return ""
	case s.Account.Paused == d:
		return onAccount
	}
	return onProvider
}

// The buckets queuedOn and pausedOn name, as the JSON names them.
const (
	onAccount  = "account"
	onProvider = "provider"
)

// marks are the HTML's marks of the buckets queuedOn and pausedOn name.
var marks = map[string]string{onAccount: "acct", onProvider: "prov"}

// queuedFor returns the callers waiting for a token of the scope's
// longest queue: its own bucket's, its account's or its provider's
// (global_max_rps), where a call of the scope would wait behind them.
func queuedFor(s state.ScopeSnapshot) int {
	return max(s.Leaf.Queued(), s.Account.Queued(), s.Provider.Queued())
}

// queuedOn names the bucket of the scope's longest queue when it is not
// the scope's own: "account" (its account's bucket) or "provider" (its
// provider's), "" when its own is as long.
func queuedOn(s state.ScopeSnapshot) string {
	switch n := queuedFor(s); {
	case n == 0 || s.Leaf.Queued() == n:
		return ""
	case s.Account.Queued() == n:
		return onAccount
	}
	return onProvider
}

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
	Reason string `json:"reason,omitempty"`
	// Queued is the callers a call of the scope would wait behind for a
	// token: those of its own bucket, or of its account's or its
	// provider's (global_max_rps) when more wait there, which QueuedOn
	// then names ("account" or "provider"; omitted for its own): the
	// count and the mark of the page's queued cell (State.Queued, the
	// same count). A queue on its account's or provider's bucket is
	// counted in the rows of each scope it holds.
	Queued   int    `json:"queued"`
	QueuedOn string `json:"queued_on,omitempty"`
	// PausedOn names the bucket of the longest pause holding the scope
	// (State.PausedUntil) when it is not its own: "account" or
	// "provider", the mark of the page's paused cell.
	PausedOn string              `json:"paused_on,omitempty"`
	State    state.ScopeSnapshot `json:"state"`
	// Counters are the service scope's (Counters.Scope), shared by the
	// rows of its operations.
	Counters resilience.Counters `json:"counters"`

	// Span is the rows the service's counters cell spans in the HTML; 0
	// when an earlier row holds it.
	Span int `json:"-"`
	// BreakerWait is set when the provider has breaker_wait: its open
	// breaker makes calls wait for its verdict rather than refusing them.
	BreakerWait bool   `json:"-"`
	service     string // the service scope's key
}

// account is one account of the page: the values its scopes share, shown
// once.
type account struct {
	Provider string `json:"provider"`
	Account  string `json:"account"`
	// Status is paused (its bucket's pause, or its provider bucket's,
	// holds every scope of the account), slowed (its bucket below its
	// ceiling), queued (callers wait for a slot, for its bucket's tokens
	// or for its provider bucket's) or ok.
	Status      status `json:"status"`
	Scopes      int    `json:"scopes"`        // its live scopes
	InFlight    int    `json:"in_flight"`     // calls holding a slot of its bulkhead
	MaxInFlight int    `json:"max_in_flight"` // the bulkhead's cap
	Waiting     int    `json:"waiting"`       // callers waiting for a slot
	// Bucket is the account's own bucket, nil when its provider has none.
	Bucket *state.BucketSnapshot `json:"bucket,omitempty"`
	// Queued is the callers a call of the account would wait behind for
	// a token: those of its bucket, or of its provider's bucket
	// (global_max_rps) when more wait there, which QueuedOn then names
	// ("provider"; omitted for its own): the count and the mark of the
	// page's queued cell. A queue on the provider's bucket is counted in
	// each account of the provider, and once in the provider's queued.
	Queued   int    `json:"queued"`
	QueuedOn string `json:"queued_on,omitempty"`
	// Paused is the time left in the pause holding the account's calls,
	// paused_seconds in the JSON: its bucket's, or its provider bucket's
	// when longer, which PausedOn then names ("provider"; omitted for its
	// own); 0 when none.
	Paused   time.Duration `json:"-"`
	PausedOn string        `json:"paused_on,omitempty"`

	// Span is the rows the provider's cells span in the HTML; 0 when an
	// earlier row holds them. RetryBudget is the provider's.
	Span        int     `json:"-"`
	RetryBudget float64 `json:"-"`
}

// provider is a provider's retry budget and its provider-wide bucket,
// shown once.
type provider struct {
	Name        string  `json:"name"`
	RetryBudget float64 `json:"retry_budget"` // tokens left
	// Bucket is the provider-wide bucket (global_max_rps) as a live
	// scope of the provider read it, nil when the provider has none (or
	// no live scope).
	Bucket *state.BucketSnapshot `json:"bucket,omitempty"`
	Queued int                   `json:"queued"` // callers waiting for a token of the provider's bucket
}

// MarshalJSON writes the provider as its fields say, a retry budget that
// is no finite number (as a Store of the user's may answer) as null, as
// state.ScopeSnapshot writes it.
func (p provider) MarshalJSON() ([]byte, error) {
	type plain provider
	return json.Marshal(struct {
		plain
		RetryBudget jsonsec.Float `json:"retry_budget"`
	}{plain(p), jsonsec.Float(p.RetryBudget)})
}

// page is what the handler serves, as HTML or JSON.
type page struct {
	Time           time.Time      `json:"time"` // on the governor's clock
	RefreshSeconds int64          `json:"refresh_seconds"`
	Live           int            `json:"live_scopes"`    // every live scope of a provider enabled; Scopes holds the first Limit
	LiveAccounts   int            `json:"live_accounts"`  // every account of a live scope; Accounts holds the first Limit
	LiveProviders  int            `json:"live_providers"` // every provider whose budget the page reads (see collect); Providers holds the Limit with the least budget left
	Statuses       map[string]int `json:"statuses"`       // live scopes per status
	Totals         totals         `json:"totals"`         // the governor's lifetime
	Providers      []provider     `json:"providers"`
	Accounts       []account      `json:"accounts"`
	Scopes         []row          `json:"scopes"`
	// Disabled are the providers a Configure turned off (aws, azure, gcp,
	// those with live scopes, those the governor holds, and those an
	// earlier page read or found disabled, for as long as they are), the
	// first Limit by name: their calls go straight through, ungoverned,
	// and the state their scopes learned is not shown as where they
	// stand.
	Disabled      []string `json:"disabled_providers"`
	DisabledCount int      `json:"disabled_count"` // every provider disabled; Disabled holds the first Limit
}

// totals are the governor's lifetime totals as the page serves them:
// their counters without paused_seconds, which Governor.Lifetime does not
// add up over the scopes (a scope's is the wall-clock time its pauses
// held it), and which would otherwise be written 0 beside the pauses.
type totals struct{ resilience.Counters }

// MarshalJSON writes the counters as Counters does, but for
// paused_seconds.
func (t totals) MarshalJSON() ([]byte, error) {
	type plain resilience.Counters
	c := t.Counters
	return jsonsec.Marshal(plain(c), "wait_seconds", c.Wait, "max_wait_seconds", c.MaxWait, "wait_elapsed_seconds", c.WaitElapsed,
		"backoff_seconds", c.Backoff, "max_pause_seconds", c.MaxPause)
}

// knownProviders remembers the providers the page read, for the governor
// it read last, until the governor forgets them
// (resilience.Governor.Providers), and those it found disabled, for as
// long as they are, so that the page names them disabled: the governor
// forgets a disabled provider between its calls (they make no scope),
// and makes it again at the next, which goes through ungoverned. The
// retry budgets shown are not its: they are those the governor holds
// (see collect). It is safe for concurrent use.
type knownProviders struct {
	mu    sync.Mutex
	g     *resilience.Governor
	names map[string]bool
}

// others records the providers g has live scopes of, seen, and those it
// holds, held (Governor.Providers, sorted), that enabled says are
// disabled, and returns the ones read before that have no live scope now
// and that g still holds or that are disabled; it forgets the others.
// enabled is called under k's lock: it must not call back into k.
func (k *knownProviders) others(g *resilience.Governor, seen map[string]float64, held []string, enabled func(string) bool) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.g != g {
		k.g, k.names = g, map[string]bool{} // another governor: its own providers
	}
	for _, name := range held {
		if !enabled(name) {
			k.names[name] = true
		}
	}
	var out []string
	for name := range k.names {
		if _, ok := seen[name]; ok {
			continue
		}
		if _, ok := slices.BinarySearch(held, name); !ok && enabled(name) {
			delete(k.names, name) // forgotten by the governor, and governed: not to be named
			continue
		}
		out = append(out, name)
	}
	for name := range seen {
		k.names[name] = true
	}
	return out
}

// collect reads the governor's scopes and lifetime counters into a page
// of at most limit rows (and limit accounts), the most troubled first. It
// goes once over the live scopes, keeping of each only its scope and
// status, and the snapshots of the rows it may show (see picker); the
// counters it reads are the totals and those of the services shown. The
// retry budgets are those of the providers with live scopes, and those
// the governor holds spent (Governor.BudgetAndSize: its tokens below its
// size), whose scopes are gone: only successes refund a budget. The
// providers disabled are those the governor holds, and those known
// remembers (nil: none). It stops, with ctx's error, when ctx ends before
// it has read every scope.
func collect(ctx context.Context, g *resilience.Governor, limit int, known *knownProviders) (page, error) {
	p := page{Time: g.Clock().Now(), Statuses: make(map[string]int, numStatuses)}
	var counts [numStatuses]int
	type acctKey struct{ provider, account string }
	accounts := map[acctKey]int{} // index in p.Accounts
	budgets := map[string]float64{}
	buckets := map[string]state.BucketSnapshot{} // the providers' buckets
	pk := picker{limit: limit}
	enabled := map[string]bool{}
	isEnabled := func(name string) bool {
		en, ok := enabled[name]
		if !ok {
			en = g.Enabled(name)
			enabled[name] = en
		}
		return en
	}
	done := ctx.Done()
	for sc, snap := range g.Scopes() {
		select {
		case <-done:
			return page{}, ctx.Err()
		default:
		}
		if !isEnabled(sc.Provider) {
			continue // ungoverned: what its scopes learned is not in force
		}
		st := statusOf(snap)
		counts[st]++
		pk.add(sc, snap, st)
		budgets[sc.Provider] = snap.RetryBudget
		if snap.Provider.Ceiling > 0 {
			buckets[sc.Provider] = snap.Provider
		}
		k := acctKey{sc.Provider, sc.Account}
		if i, ok := accounts[k]; ok {
			p.Accounts[i].Scopes++
			continue
		}
		accounts[k] = len(p.Accounts)
		p.Accounts = append(p.Accounts, accountOf(sc, snap))
	}
	for s, n := range counts {
		p.Statuses[status(s).String()] = n
	}
	p.Live = pk.live
	p.Scopes = pk.rows(g.Inspect)
	var cfg *resilience.Config
	for i, r := range p.Scopes {
		if r.Status == statusOpen {
			if cfg == nil {
				c := g.Config()
				cfg = &c
			}
			p.Scopes[i].BreakerWait = cfg.Provider(r.Scope.Provider).BreakerWait
		}
	}
	services := make([]resilience.Scope, len(p.Scopes))
	for i, r := range p.Scopes {
		services[i] = r.Scope.ServiceScope()
	}
	var counters []resilience.Counters
	p.Totals.Counters, counters = g.Lifetime(services...)
	for i := range p.Scopes {
		p.Scopes[i].Counters = counters[i]
	}
	spanServices(p.Scopes)

	for i := range p.Accounts {
		p.Accounts[i].RetryBudget = budgets[p.Accounts[i].Provider]
	}
	p.LiveAccounts = len(p.Accounts)
	// The limit keeps the most troubled accounts, whatever their
	// provider; the page shows them by provider.
	p.Accounts = smallest(p.Accounts, limit, func(a, b account) int {
		return cmp.Or(cmp.Compare(a.Status, b.Status), strings.Compare(a.Provider, b.Provider), strings.Compare(a.Account, b.Account))
	})
	slices.SortFunc(p.Accounts, func(a, b account) int {
		return cmp.Or(strings.Compare(a.Provider, b.Provider), cmp.Compare(a.Status, b.Status), strings.Compare(a.Account, b.Account))
	})
	spanProviders(p.Accounts)

	held := g.Providers()
	if known != nil {
		// A disabled provider an earlier page read or found disabled is
		// named: isEnabled records it.
		for _, name := range known.others(g, budgets, held, isEnabled) {
			isEnabled(name)
		}
	}
	for _, name := range held { // aws, azure and gcp among them
		if _, live := budgets[name]; live || !isEnabled(name) {
			continue
		}
		if left, size := g.BudgetAndSize(name); left < float64(size) {
			budgets[name] = left // spent, after the scopes that spent it
		}
	}
	p.Disabled = []string{}
	for name, en := range enabled {
		if !en {
			p.Disabled = append(p.Disabled, name)
		}
	}
	p.DisabledCount = len(p.Disabled)
	// A program may call many providers by name, all disabled by the
	// global switch: the limit keeps the page's size.
	p.Disabled = smallest(p.Disabled, limit, strings.Compare)
	p.Providers = make([]provider, 0, len(budgets))
	for name, b := range budgets {
		pv := provider{Name: name, RetryBudget: b}
		if bk, ok := buckets[name]; ok {
			pv.Bucket, pv.Queued = &bk, bk.Queued()
		}
		p.Providers = append(p.Providers, pv)
	}
	p.LiveProviders = len(p.Providers)
	// A program may call many providers by name: the limit keeps the
	// page's size, with the budgets nearest their end.
	p.Providers = smallest(p.Providers, limit, func(a, b provider) int {
		return cmp.Or(cmp.Compare(a.RetryBudget, b.RetryBudget), strings.Compare(a.Name, b.Name))
	})
	slices.SortFunc(p.Providers, func(a, b provider) int { return strings.Compare(a.Name, b.Name) })
	return p, nil
}

// smallest returns the first n of xs in the order of compare, sorted, in
// xs's array: a selection that keeps n of them in a heap rather than
// sorting them all. It returns an empty slice, not nil, for no xs.
func smallest[T any](xs []T, n int, compare func(a, b T) int) []T {
	if xs == nil {
		xs = []T{}
	}
	if len(xs) > n {
		// xs[:n] is a max-heap of the n smallest so far: each other x
		// replaces its largest when it is smaller.
		h := xs[:n]
		down := func(i int) {
			for {
				l := 2*i + 1
				if l >= n {
					return
				}
				if r := l + 1; r < n && compare(h[r], h[l]) > 0 {
					l = r
				}
				if compare(h[l], h[i]) <= 0 {
					return
				}
				h[i], h[l] = h[l], h[i]
				i = l
			}
		}
		for i := n/2 - 1; i >= 0; i-- {
			down(i)
		}
		for _, x := range xs[n:] {
			if n > 0 && compare(x, h[0]) < 0 {
				h[0] = x
				down(0)
			}
		}
		xs = h
	}
	slices.SortFunc(xs, compare)
	return xs
}

// scoped is a live scope as the page's pass over the scopes keeps it:
// its scope and its status, and the status of its service's worst row
// once that is known.
type scoped struct {
	sc    resilience.Scope
	st    status
	worst status
}

// kept is a scope whose snapshot the pass keeps: one of the first limit
// by status, service and key.
type kept struct {
	scoped
	snap state.ScopeSnapshot
}

// picker picks the rows a page shows, in the page's order (see order),
// in one pass over the live scopes, without a row per scope. The page's
// order is by the worst status of a row's service, then by service,
// status and key, and a service's worst is known only once every scope
// has gone by; but the services shown are among those of the first
// limit scopes by status, service and key, which the picker keeps, with
// their snapshots, in a heap: a shown service's best row comes after no
// more than the rows of the services before it, fewer than limit, and
// the shown rows of the service before it in its own order; and that
// row, its service's worst status, is among those kept. The other rows
// of those services come from the scope and status kept of every scope;
// one whose snapshot was not kept is read again (Governor.Inspect), and
// shows its status then.
type picker struct {
	limit  int
	live   int
	all    [][]scoped // every scope, in chunks: no copying as they add up
	top    []kept     // a max-heap by status, service and key: the limit first
	ka, kb []byte     // keys being compared
}

// add takes a live scope with its snapshot and status.
func (pk *picker) add(sc resilience.Scope, snap state.ScopeSnapshot, st status) {
	s := scoped{sc: sc, st: st}
	if n := len(pk.all); n == 0 || len(pk.all[n-1]) == cap(pk.all[n-1]) {
		pk.all = append(pk.all, make([]scoped, 0, 1024))
	}
	pk.all[len(pk.all)-1] = append(pk.all[len(pk.all)-1], s)
	pk.live++
	switch {
	case pk.limit <= 0:
	case len(pk.top) < pk.limit:
		pk.top = append(pk.top, kept{s, snap})
		for i := len(pk.top) - 1; i > 0; {
			up := (i - 1) / 2
			if pk.compareKept(pk.top[i].scoped, pk.top[up].scoped) <= 0 {
				break
			}
			pk.top[i], pk.top[up] = pk.top[up], pk.top[i]
			i = up
		}
	case pk.compareKept(s, pk.top[0].scoped) < 0:
		pk.top[0] = kept{s, snap}
		for i, n := 0, len(pk.top); ; {
			l := 2*i + 1
			if l >= n {
				break
			}
			if r := l + 1; r < n && pk.compareKept(pk.top[r].scoped, pk.top[l].scoped) > 0 {
				l = r
			}
			if pk.compareKept(pk.top[l].scoped, pk.top[i].scoped) <= 0 {
				break
			}
			pk.top[i], pk.top[l] = pk.top[l], pk.top[i]
			i = l
		}
	}
}

// compareKept orders scopes by status, service and key.
func (pk *picker) compareKept(a, b scoped) int {
	return cmp.Or(cmp.Compare(a.st, b.st), pk.compareKeys(a.sc, b.sc))
}

// compareKeys orders scopes by their service's key and then by their
// own (Scope.Key), as strings.Compare orders those strings.
func (pk *picker) compareKeys(a, b resilience.Scope) int {
	pk.ka = scopekey.AppendKey(pk.ka[:0], &[5]string{a.Provider, a.Account, a.Region, a.Service, ""})
	pk.kb = scopekey.AppendKey(pk.kb[:0], &[5]string{b.Provider, b.Account, b.Region, b.Service, ""})
	if c := bytes.Compare(pk.ka, pk.kb); c != 0 || a.Operation == b.Operation {
		return c
	}
	// One service: its key is the start of both scopes' keys.
	pk.ka = scopekey.AppendKey(pk.ka[:0], &[5]string{a.Provider, a.Account, a.Region, a.Service, a.Operation})
	pk.kb = scopekey.AppendKey(pk.kb[:0], &[5]string{b.Provider, b.Account, b.Region, b.Service, b.Operation})
	return bytes.Compare(pk.ka, pk.kb)
}

// rows returns the rows to show, the first limit in the page's order,
// with their snapshots: kept ones, or those reread returns.
func (pk *picker) rows(reread func(resilience.Scope) state.ScopeSnapshot) []row {
	worst := make(map[resilience.Scope]status, len(pk.top))
	snaps := make(map[resilience.Scope]int, len(pk.top))
	for i, k := range pk.top {
		svc := k.sc.ServiceScope()
		if w, ok := worst[svc]; !ok || k.st < w {
			worst[svc] = k.st
		}
		snaps[k.sc] = i
	}
	var picked []scoped
	for _, chunk := range pk.all {
		for _, s := range chunk {
			if w, ok := worst[s.sc.ServiceScope()]; ok {
				s.worst = w
				picked = append(picked, s)
			}
		}
	}
	picked = smallest(picked, pk.limit, func(a, b scoped) int {
		if c := cmp.Compare(a.worst, b.worst); c != 0 {
			return c
		}
		pk.ka = scopekey.AppendKey(pk.ka[:0], &[5]string{a.sc.Provider, a.sc.Account, a.sc.Region, a.sc.Service, ""})
		pk.kb = scopekey.AppendKey(pk.kb[:0], &[5]string{b.sc.Provider, b.sc.Account, b.sc.Region, b.sc.Service, ""})
		if c := bytes.Compare(pk.ka, pk.kb); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.st, b.st), pk.compareKeys(a.sc, b.sc))
	})
	rows := make([]row, len(picked))
	for i, s := range picked {
		var snap state.ScopeSnapshot
		st := s.st
		if j, ok := snaps[s.sc]; ok {
			snap = pk.top[j].snap
		} else {
			snap = reread(s.sc)
			st = statusOf(snap)
		}
		svc := s.sc.ServiceScope()
		rows[i] = row{
			Scope: s.sc, Key: s.sc.Key(), Status: st, Reason: reasonOf(snap),
			Queued: queuedFor(snap), QueuedOn: queuedOn(snap), PausedOn: pausedOn(snap), State: snap, service: svc.Key(),
		}
	}
	return rows
}

// accountOf returns the account of sc as its snapshot shows it.
func accountOf(sc resilience.Scope, s state.ScopeSnapshot) account {
	a := account{
		Provider: sc.Provider, Account: sc.Account, Scopes: 1,
		InFlight: s.InFlight, MaxInFlight: s.MaxInFlight, Waiting: s.Waiting,
		Status: statusOK,
	}
	if s.Account.Ceiling > 0 {
		b := s.Account
		a.Bucket = &b
		a.Queued = b.Queued()
	}
	a.Paused = s.Account.Paused // zero without an account bucket
	if n := s.Provider.Queued(); n > a.Queued {
		a.Queued, a.QueuedOn = n, onProvider
	}
	if d := s.Provider.Paused; d > a.Paused {
		a.Paused, a.PausedOn = d, onProvider
	}
	switch {
	case a.Paused > 0:
		a.Status = statusPaused
	case a.Bucket != nil && a.Bucket.Rate < a.Bucket.Ceiling:
		a.Status = statusSlowed
	case a.Waiting > 0 || a.Queued > 0:
		a.Status = statusQueued
	}
	return a
}

// MarshalJSON writes the account as its fields say, with Paused as
// paused_seconds.
func (a account) MarshalJSON() ([]byte, error) {
	type plain account
	return jsonsec.Marshal(plain(a), "paused_seconds", a.Paused)
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
