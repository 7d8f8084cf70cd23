//go:build go1.25

package statuspage

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// The JSON at ?format=json holds every scope with its parts as fields,
// where it stands and why, the callers queued for its tokens and its
// service's counters, in the page's order; every account once; and every
// provider's retry budget once.
func TestJSONListsEveryScopeTroubleFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := estate(t)
		start := g.Clock().Now()
		s := decode(t, get(t, New(WithGovernor(g), WithRefresh(5*time.Second)), http.MethodGet, "/debug/cloudg?format=json"))
		want := []struct {
			sc     resilience.Scope
			status string
			reason string
		}{
			{open, "open", "errors"}, {halfOpen, "half_open", "errors"}, {paused, "paused", ""}, {dead, "dead", "throttled for good"},
			{slowed, "slowed", ""}, {queued, "queued", ""}, {slots, "ok", ""}, {fine, "ok", ""},
		}
		if len(s.Scopes) != len(want) || s.Live != len(want) {
			t.Fatalf("%d rows of %d live: %+v", len(s.Scopes), s.Live, s.Scopes)
		}
		for i, w := range want {
			if r := s.Scopes[i]; r.Scope != w.sc || r.Status != w.status || r.Key != w.sc.Key() || r.Reason != w.reason {
				t.Errorf("row %d: %v %s %q (key %s), want %v %s %q", i, r.Scope, r.Status, r.Reason, r.Key, w.sc, w.status, w.reason)
			}
		}
		for _, st := range []string{"open", "half_open", "paused", "dead", "slowed", "queued"} {
			if s.Statuses[st] != 1 || s.Statuses["ok"] != 2 {
				t.Errorf("statuses %v", s.Statuses)
			}
		}
		if !s.Time.Equal(start) || s.RefreshSeconds != 5 {
			t.Errorf("time %v (want %v), refresh %v", s.Time, start, s.RefreshSeconds)
		}

		op, ho, pa, de, sl, qu := s.Scopes[0], s.Scopes[1], s.Scopes[2], s.Scopes[3], s.Scopes[4], s.Scopes[5]
		if op.State.Breaker.State != "open" || op.State.Breaker.RetryIn != 60 || op.Counters.Rejected != 1 || op.State.OpenReason != "errors" {
			t.Errorf("open %+v", op)
		}
		if ho.State.Breaker.State != "half_open" || ho.State.InFlight != 1 || ho.State.MaxInFlight != 128 {
			t.Errorf("half-open %+v", ho)
		}
		if pa.State.Leaf.Paused != 90 || !pa.State.PausedUntil.Equal(start.Add(90*time.Second)) || pa.Queued != 3 || pa.State.Queued != 3 {
			t.Errorf("paused %+v", pa)
		}
		if de.State.Dead != "throttled for good" || de.State.OpenReason != "throttled for good" || de.Counters.GaveUp != 4 {
			t.Errorf("dead %+v", de)
		}
		if sl.State.Leaf.Rate != 3 || sl.State.Leaf.Ceiling != 6 || sl.Counters.GaveUp != 1 || sl.Counters.Throttled != 1 || sl.State.RetryBudget != 500 {
			t.Errorf("slowed %+v", sl)
		}
		if qu.Queued != 4 || qu.State.Leaf.Rate != qu.State.Leaf.Ceiling {
			t.Errorf("queued %+v", qu)
		}
		// The counters are the service's, and say so.
		if svc := (resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "ec2"}); op.Counters.Scope != svc || ho.Counters.Scope != svc {
			t.Errorf("counters of %v and %v", op.Counters.Scope, ho.Counters.Scope)
		}
		if s.Totals.GaveUp != 5 || s.Totals.Rejected != 1 {
			t.Errorf("totals %+v", s.Totals)
		}

		if len(s.Accounts) != 7 || s.LiveAccounts != 7 {
			t.Fatalf("%d accounts of %d: %+v", len(s.Accounts), s.LiveAccounts, s.Accounts)
		}
		a := s.Accounts[1] // azure's first: the one with callers waiting for its slot
		if a.Provider != "azure" || a.Account != "sub-1" || a.Status != "queued" || a.InFlight != 1 || a.MaxInFlight != 1 || a.Waiting != 2 ||
			a.Bucket == nil || a.Bucket.Ceiling != 20 || a.Scopes != 1 {
			t.Errorf("the account with its slot taken: %+v", a)
		}
		if aws := s.Accounts[0]; aws.Account != "111111111111" || aws.Scopes != 2 || aws.Bucket != nil || aws.Status != "ok" {
			t.Errorf("the AWS account: %+v", aws)
		}
		if len(s.Providers) != 3 || s.Providers[0].Name != "aws" || s.Providers[0].RetryBudget != 500 || s.Providers[1].Name != "azure" {
			t.Errorf("providers %+v", s.Providers)
		}
	})
}

// WithLimit keeps the most troubled rows; the counts cover every scope.
func TestJSONLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := estate(t)
		s := decode(t, get(t, New(WithGovernor(g), WithLimit(2)), http.MethodGet, "/?format=json"))
		if len(s.Scopes) != 2 || s.Live != 8 || s.Scopes[0].Scope != open || s.Scopes[1].Scope != halfOpen || s.Statuses["ok"] != 2 {
			t.Fatalf("%d rows of %d: %+v, statuses %v", len(s.Scopes), s.Live, s.Scopes, s.Statuses)
		}
		if len(s.Accounts) != 2 || s.LiveAccounts != 7 {
			t.Fatalf("%d accounts of %d", len(s.Accounts), s.LiveAccounts)
		}
	})
}

// WithLimit keeps the most troubled accounts, whatever their provider,
// and shows them by provider: with one account, the page shows Azure's
// sub-1, whose callers wait for its only slot, rather than AWS's first
// account, which is ok.
func TestJSONLimitKeepsTheMostTroubledAccounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := estate(t)
		for _, c := range []struct {
			limit int
			want  []string
		}{
			{1, []string{"azure/sub-1 queued"}},
			{3, []string{"aws/111111111111 ok", "azure/sub-1 queued", "azure/sub-2 ok"}},
		} {
			s := decode(t, get(t, New(WithGovernor(g), WithLimit(c.limit)), http.MethodGet, "/?format=json"))
			var got []string
			for _, a := range s.Accounts {
				got = append(got, a.Provider+"/"+a.Account+" "+a.Status)
			}
			if !slices.Equal(got, c.want) || s.LiveAccounts != 7 {
				t.Errorf("WithLimit(%d): accounts %q of %d, want %q of 7", c.limit, got, s.LiveAccounts, c.want)
			}
		}
	})
}

// A governor with no scope yet serves empty lists, not null.
func TestJSONOfAnEmptyGovernor(t *testing.T) {
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := get(t, New(WithGovernor(g)), http.MethodGet, "/?format=json")
	if s := decode(t, w); s.Scopes == nil || len(s.Scopes) != 0 || s.Live != 0 || s.Accounts == nil || s.Providers == nil {
		t.Fatalf("%s", w.Body)
	}
}

// The totals say no figure the governor does not count: Lifetime adds up
// neither the scopes' paused_seconds (each the wall-clock time its pauses
// held it) nor anything in their place, and the JSON wrote 0 seconds
// paused beside a pause of 90 s. The totals have no paused_seconds; each
// row's counters have their service's.
func TestJSONTotalsHaveNoPausedSecondsTheyDoNotCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := estate(t)
		w := get(t, New(WithGovernor(g)), http.MethodGet, "/?format=json")
		type counters struct {
			Pauses   int64    `json:"pauses"`
			Paused   *float64 `json:"paused_seconds"`
			MaxPause float64  `json:"max_pause_seconds"`
		}
		var s struct {
			Totals counters `json:"totals"`
			Scopes []struct {
				Scope    resilience.Scope `json:"scope"`
				Counters counters         `json:"counters"`
			} `json:"scopes"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		if c := s.Totals; c.Paused != nil || c.Pauses != 1 || c.MaxPause != 90 {
			t.Errorf("totals: %d pauses, the longest %vs, paused_seconds %s; want 1, 90 s and no paused_seconds", c.Pauses, c.MaxPause, seconds(c.Paused))
		}
		if r := s.Scopes[2]; r.Scope != paused || r.Counters.Pauses != 1 || seconds(r.Counters.Paused) != "90" {
			t.Errorf("the paused scope %v: %d pauses, paused_seconds %s; want 1 and 90", r.Scope, r.Counters.Pauses, seconds(r.Counters.Paused))
		}
	})
}

// seconds writes a JSON number read, or "none".
func seconds(f *float64) string {
	if f == nil {
		return "none"
	}
	return strconv.FormatFloat(*f, 'f', -1, 64)
}

// spentThenReclaimed spends AWS's retry budget of 10 with throttled
// retries, then lets the scope that spent it recover and be reclaimed
// (a GCP scope is called meanwhile), and returns the governor and the
// tokens left, fewer than 10: only successes refund a budget. live, when
// set, is called once while the AWS scope is live, with its budget spent.
func spentThenReclaimed(t *testing.T, live func(*resilience.Governor)) (*resilience.Governor, float64) {
	t.Helper()
	budget := 10
	g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: &budget}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	gov := resilience.WithGovernor(g)
	vpcs := resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "ec2"}
	assets := resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset"}
	for range 12 { // every retry after the first two costs a token
		n := 0
		resilience.Do(ctx, vpcs, func(context.Context) error {
			if n++; n <= 3 {
				return throttled
			}
			return nil
		}, gov)
	}
	if live != nil {
		live(g)
	}
	for range 40 { // the leaf recovers its rate, a success each 6 s
		time.Sleep(6 * time.Second)
		resilience.Do(ctx, vpcs, func(context.Context) error { return nil }, gov)
	}
	for range 4 { // the AWS scope is reclaimed; a GCP scope is called
		time.Sleep(5 * time.Minute)
		resilience.Do(ctx, assets, func(context.Context) error { return nil }, gov)
	}
	for sc := range g.Scopes() {
		if sc.Provider == "aws" {
			t.Fatalf("%v still live", sc)
		}
	}
	left := g.Budget("aws")
	if left >= 10 {
		t.Fatalf("the AWS budget is full (%v)", left)
	}
	return g, left
}

// A provider's retry budget is shown as long as the governor has it, not
// only while the provider has live scopes: a budget spent by throttled
// retries stays spent (only successes refund it) after the scopes that
// spent it recovered and were reclaimed, and the page still says so.
func TestRetryBudgetOutlivesTheScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h http.Handler
		_, left := spentThenReclaimed(t, func(g *resilience.Governor) {
			h = New(WithGovernor(g))
			// A look while the scope is live reads the budget it spent.
			get(t, h, http.MethodGet, "/?format=json")
		})
		s := decode(t, get(t, h, http.MethodGet, "/?format=json"))
		i := slices.IndexFunc(s.Providers, func(p provided) bool { return p.Name == "aws" })
		if i < 0 || s.Providers[i].RetryBudget != left {
			t.Errorf("providers %+v, want aws with the %v tokens left", s.Providers, left)
		}
	})
}

// The page shows the retry budgets the governor holds spent, whatever
// the handler read before: one made after the scopes that spent AWS's
// budget were reclaimed (a program that mounts its debug page late, a
// handler per request) shows it, as one made before does. A budget the
// governor holds full, of a provider without live scopes (aws, azure and
// gcp, which it always holds), is what a first call would find, and is
// not shown.
func TestAPageMadeAfterTheScopesShowsTheSpentBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, left := spentThenReclaimed(t, nil)
		s := decode(t, get(t, New(WithGovernor(g)), http.MethodGet, "/?format=json"))
		var got []string
		for _, p := range s.Providers {
			got = append(got, fmt.Sprintf("%s %v", p.Name, p.RetryBudget))
		}
		if want := []string{fmt.Sprintf("aws %v", left), "gcp 500"}; !slices.Equal(got, want) || s.LiveProviders != 2 {
			t.Errorf("a page made after AWS's scopes were reclaimed shows the budgets %q of %d providers; want %q of 2", got, s.LiveProviders, want)
		}
	})
}

// A provider the governor forgot is no longer shown: a provider other
// than aws, azure and gcp, whose scopes were all reclaimed and whose
// retry budget is full, is dropped by the governor, and the page, which
// read its budget while it was live, no longer lists it with a budget
// the governor does not hold (nor reads its budget again at every load,
// for each name the program ever called). Before, github stayed in the
// page's providers, at its full budget, for as long as the handler lived.
func TestAForgottenProviderIsNotShown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := resilience.NewGovernor(resilience.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		gov := resilience.WithGovernor(g)
		ok := func(context.Context) error { return nil }
		github := resilience.Scope{Provider: "github", Account: "octo", Service: "rest"}
		users := resilience.Scope{Provider: "aws", Account: "111111111111", Service: "iam"}
		if err := resilience.Do(ctx, github, ok, gov); err != nil {
			t.Fatal(err)
		}
		h := New(WithGovernor(g))
		names := func(s served) []string {
			var out []string
			for _, p := range s.Providers {
				out = append(out, p.Name)
			}
			return out
		}
		if s := decode(t, get(t, h, http.MethodGet, "/?format=json")); !slices.Contains(names(s), "github") {
			t.Fatalf("setup: the providers %q lack github, live", names(s))
		}
		gen := g.Generation()
		for range 180 { // calls to aws take the reclaimer's steps
			time.Sleep(time.Second)
			resilience.Do(ctx, users, ok, gov)
		}
		// Nothing but the reclaimer changes the governor's state as a
		// whole here: a new generation is its forgetting github.
		if g.Generation() == gen {
			t.Fatal("setup: github not forgotten after three idle minutes")
		}
		s := decode(t, get(t, h, http.MethodGet, "/?format=json"))
		if got := names(s); !slices.Equal(got, []string{"aws"}) || s.LiveProviders != 1 {
			t.Errorf("after the governor forgot github, the page's providers are %q of %d; want [aws] of 1", got, s.LiveProviders)
		}
	})
}

// A provider disabled while the program goes on calling it, ungoverned,
// is named among the disabled providers at every load, however often the
// reclaimer forgets it between its calls (it holds no scope, and is made
// afresh by the next call); so is one disabled from the start, which no
// call ever governed. Before, the page forgot a disabled provider for
// good at the first load that found it forgotten, and never named one it
// had not seen governed. Enabled again and called no more, they are
// forgotten.
func TestADisabledProviderStaysNamedWhileItIsCalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		off := false
		g, err := resilience.NewGovernor(resilience.Config{Providers: map[string]resilience.ProviderConfig{"slack": {Enabled: &off}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		gov := resilience.WithGovernor(g)
		ok := func(context.Context) error { return nil }
		github := resilience.Scope{Provider: "github", Account: "octo", Service: "rest"}
		slack := resilience.Scope{Provider: "slack", Account: "team", Service: "chat"}
		users := resilience.Scope{Provider: "aws", Account: "111111111111", Service: "iam"}
		if err := resilience.Do(ctx, github, ok, gov); err != nil {
			t.Fatal(err)
		}
		h := New(WithGovernor(g))
		decode(t, get(t, h, http.MethodGet, "/?format=json")) // github seen, governed
		if err := g.Configure(resilience.Config{Providers: map[string]resilience.ProviderConfig{"github": {Enabled: &off}, "slack": {Enabled: &off}}}); err != nil {
			t.Fatal(err)
		}
		for i := range 240 { // calls to aws take the reclaimer's steps
			time.Sleep(time.Second)
			resilience.Do(ctx, github, ok, gov) // ungoverned
			resilience.Do(ctx, slack, ok, gov)  // ungoverned
			resilience.Do(ctx, users, ok, gov)
			if i%2 == 0 {
				get(t, h, http.MethodGet, "/") // a browser's reloads
			}
		}
		s := decode(t, get(t, h, http.MethodGet, "/?format=json"))
		for _, name := range []string{"github", "slack"} {
			if !slices.Contains(s.Disabled, name) {
				t.Errorf("after four minutes of calls to %s, disabled, the page's disabled providers are %q; want %s among them", name, s.Disabled, name)
			}
		}
		// Enabled again and called no more, they are forgotten.
		if err := g.Configure(resilience.Config{}); err != nil {
			t.Fatal(err)
		}
		for range 240 {
			time.Sleep(time.Second)
			resilience.Do(ctx, users, ok, gov)
		}
		s = decode(t, get(t, h, http.MethodGet, "/?format=json"))
		var names []string
		for _, p := range s.Providers {
			names = append(names, p.Name)
		}
		if len(s.Disabled) != 0 || !slices.Equal(names, []string{"aws"}) {
			t.Errorf("github and slack enabled again and forgotten: the page's disabled providers are %q and its providers %q; want none and [aws]", s.Disabled, names)
		}
	})
}
