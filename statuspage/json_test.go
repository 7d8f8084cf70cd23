//go:build go1.25

package statuspage

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// The JSON at ?format=json holds every scope with its parts as fields,
// where it stands and its service's counters, the most troubled first.
func TestJSONListsEveryScopeWorstFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := estate(t)
		start := g.Clock().Now()
		s := decode(t, get(t, New(WithGovernor(g), WithRefresh(5*time.Second)), http.MethodGet, "/debug/cloudg?format=json"))
		want := []struct {
			sc     resilience.Scope
			status string
		}{{open, "open"}, {halfOpen, "half_open"}, {paused, "paused"}, {slowed, "slowed"}, {queued, "queued"}, {fine, "ok"}}
		if len(s.Scopes) != len(want) || s.Live != len(want) {
			t.Fatalf("%d rows of %d live: %+v", len(s.Scopes), s.Live, s.Scopes)
		}
		for i, w := range want {
			if r := s.Scopes[i]; r.Scope != w.sc || r.Status != w.status || r.Key != w.sc.Key() {
				t.Errorf("row %d: %v %s (key %s), want %v %s", i, r.Scope, r.Status, r.Key, w.sc, w.status)
			}
		}
		for _, st := range []string{"open", "half_open", "paused", "slowed", "queued", "ok"} {
			if s.Statuses[st] != 1 {
				t.Errorf("statuses %v", s.Statuses)
			}
		}
		if !s.Time.Equal(start) || s.RefreshSeconds != 5 {
			t.Errorf("time %v (want %v), refresh %v", s.Time, start, s.RefreshSeconds)
		}

		op, ho, pa, sl, qu := s.Scopes[0], s.Scopes[1], s.Scopes[2], s.Scopes[3], s.Scopes[4]
		if op.State.Breaker.State != "open" || op.State.Breaker.RetryIn != 60 || op.Counters.Rejected != 1 {
			t.Errorf("open %+v", op)
		}
		if ho.State.Breaker.State != "half_open" || ho.State.InFlight != 1 || ho.State.MaxInFlight != 128 {
			t.Errorf("half-open %+v", ho)
		}
		if pa.State.Leaf.Paused != 90 || !pa.State.PausedUntil.Equal(start.Add(90*time.Second)) || pa.State.Leaf.Rate != pa.State.Leaf.Ceiling {
			t.Errorf("paused %+v", pa)
		}
		if sl.State.Leaf.Rate != 3 || sl.State.Leaf.Ceiling != 6 || sl.Counters.GaveUp != 1 || sl.Counters.Throttled != 1 || sl.State.RetryBudget != 500 {
			t.Errorf("slowed %+v", sl)
		}
		if qu.State.InFlight != 1 || qu.State.Waiting != 2 || qu.State.MaxInFlight != 1 {
			t.Errorf("queued %+v", qu)
		}
		// The counters are the service's, and say so.
		if svc := (resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "ec2"}); op.Counters.Scope != svc || ho.Counters.Scope != svc {
			t.Errorf("counters of %v and %v", op.Counters.Scope, ho.Counters.Scope)
		}
		if s.Totals.GaveUp != 1 || s.Totals.Rejected != 1 {
			t.Errorf("totals %+v", s.Totals)
		}
	})
}

// WithLimit keeps the most troubled rows; the counts cover every scope.
func TestJSONLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := estate(t)
		s := decode(t, get(t, New(WithGovernor(g), WithLimit(2)), http.MethodGet, "/?format=json"))
		if len(s.Scopes) != 2 || s.Live != 6 || s.Scopes[0].Scope != open || s.Scopes[1].Scope != halfOpen || s.Statuses["ok"] != 1 {
			t.Fatalf("%d rows of %d: %+v, statuses %v", len(s.Scopes), s.Live, s.Scopes, s.Statuses)
		}
	})
}

// A governor with no scope yet serves an empty list, not null.
func TestJSONOfAnEmptyGovernor(t *testing.T) {
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := get(t, New(WithGovernor(g)), http.MethodGet, "/?format=json")
	if s := decode(t, w); s.Scopes == nil || len(s.Scopes) != 0 || s.Live != 0 {
		t.Fatalf("%s", w.Body)
	}
}
