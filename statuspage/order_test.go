package statuspage

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
	"pgregory.net/rapid"
)

// keys returns the rows' keys in order.
func keys(rows []row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Key
	}
	return out
}

// genRows draws live scopes of a few providers, accounts, regions,
// services and operations, each with a status and counts.
func genRows(t *rapid.T) []row {
	n := rapid.IntRange(0, 24).Draw(t, "n")
	seen := map[string]bool{}
	var rows []row
	for range n {
		sc := resilience.Scope{
			Provider:  rapid.SampledFrom([]string{"aws", "gcp"}).Draw(t, "provider"),
			Account:   rapid.SampledFrom([]string{"1", "2"}).Draw(t, "account"),
			Region:    rapid.SampledFrom([]string{"", "eu-west-1"}).Draw(t, "region"),
			Service:   rapid.SampledFrom([]string{"ec2", "iam"}).Draw(t, "service"),
			Operation: rapid.SampledFrom([]string{"", "DescribeVpcs", "DescribeSubnets"}).Draw(t, "operation"),
		}
		if seen[sc.Key()] {
			continue
		}
		seen[sc.Key()] = true
		svc := sc
		svc.Operation = ""
		rows = append(rows, row{
			Scope: sc, Key: sc.Key(), service: svc.Key(),
			Status:   status(rapid.IntRange(0, int(numStatuses)-1).Draw(t, "status")),
			Queued:   rapid.IntRange(0, 30).Draw(t, "queued"),
			Counters: resilience.Counters{Throttled: rapid.Int64Range(0, 9).Draw(t, "throttled"), Rejected: rapid.Int64Range(0, 3).Draw(t, "rejected")},
			State:    state.ScopeSnapshot{Leaf: state.BucketSnapshot{Rate: rapid.Float64Range(0, 20).Draw(t, "rate"), Ceiling: 20}},
		})
	}
	return rows
}

// The page's order puts trouble first and keeps a row where it is while
// its status holds: the rows of a service together (their counts are the
// service's, one cell for all), services by their worst status and then
// by key, a service's rows by status and then by key. The order does not
// depend on the order the governor yields its scopes in, nor on anything
// that changes at every call (counts, rates, queues); and the counts' cell
// spans each service's rows exactly.
func TestOrderIsTroubleFirstAndStable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rows := genRows(t)
		got := order(slices.Clone(rows))

		shuffled := slices.Clone(rows)
		for i := len(shuffled) - 1; i > 0; i-- {
			j := rapid.IntRange(0, i).Draw(t, "swap")
			shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
		}
		for i := range shuffled { // what changes at every call
			shuffled[i].Counters = resilience.Counters{Throttled: int64(i * 7 % 5), GaveUp: int64(i % 3)}
			shuffled[i].Queued = i % 4
			shuffled[i].State.Leaf.Rate = float64(i % 20)
		}
		if a, b := keys(got), keys(order(shuffled)); !slices.Equal(a, b) {
			t.Fatalf("the order moved with the scopes' order or counts:\n%v\n%v", a, b)
		}

		worst := map[string]status{}
		for _, r := range rows {
			if w, ok := worst[r.service]; !ok || r.Status < w {
				worst[r.service] = r.Status
			}
		}
		done := map[string]bool{}
		for i, r := range got {
			if i == 0 || got[i-1].service != r.service {
				if done[r.service] {
					t.Fatalf("the rows of %s are not together: %v", r.service, keys(got))
				}
				done[r.service] = true
				if i > 0 {
					p := got[i-1]
					if worst[p.service] > worst[r.service] || worst[p.service] == worst[r.service] && p.service > r.service {
						t.Fatalf("service %s (worst %v) after %s (worst %v)", r.service, worst[r.service], p.service, worst[p.service])
					}
				}
				continue
			}
			p := got[i-1]
			if p.Status > r.Status || p.Status == r.Status && p.Key > r.Key {
				t.Fatalf("within %s, %s (%v) after %s (%v)", r.service, r.Key, r.Status, p.Key, p.Status)
			}
		}

		spanServices(got)
		for i := 0; i < len(got); {
			n := got[i].Span
			if n < 1 || i+n > len(got) {
				t.Fatalf("row %d spans %d of %d", i, n, len(got))
			}
			for j := i + 1; j < i+n; j++ {
				if got[j].service != got[i].service || got[j].Span != 0 {
					t.Fatalf("row %d's span of %d covers row %d of %s (span %d)", i, n, j, got[j].service, got[j].Span)
				}
			}
			if i+n < len(got) && got[i+n].service == got[i].service {
				t.Fatalf("row %d's span of %d stops before the end of %s", i, n, got[i].service)
			}
			i += n
		}
	})
}

// A scope's status is the worst thing about it now, a dead scope's being
// dead whatever its breaker does; callers waiting for a slot are the
// account's, and leave the scope ok.
func TestStatusOf(t *testing.T) {
	full := state.BucketSnapshot{Rate: 10, Ceiling: 10}
	for _, c := range []struct {
		snap state.ScopeSnapshot
		want status
	}{
		{state.ScopeSnapshot{Leaf: state.BucketSnapshot{Rate: 1, Ceiling: 10, Paused: 1}, Breaker: state.BreakerSnapshot{State: state.Open}}, statusOpen},
		{state.ScopeSnapshot{Leaf: full, Breaker: state.BreakerSnapshot{State: state.Open}, Dead: "down"}, statusDead},
		{state.ScopeSnapshot{Leaf: full, Breaker: state.BreakerSnapshot{State: state.HalfOpen}, Dead: "down"}, statusDead},
		{state.ScopeSnapshot{Leaf: full, Breaker: state.BreakerSnapshot{State: state.HalfOpen}}, statusHalfOpen},
		{state.ScopeSnapshot{Leaf: state.BucketSnapshot{Rate: 1, Ceiling: 10, Paused: 1}}, statusPaused},
		{state.ScopeSnapshot{Leaf: full, Account: state.BucketSnapshot{Paused: 1}}, statusPaused},
		{state.ScopeSnapshot{Leaf: full, Dead: "down"}, statusDead},
		{state.ScopeSnapshot{Leaf: state.BucketSnapshot{Rate: 9, Ceiling: 10, Tokens: -3}}, statusSlowed},
		{state.ScopeSnapshot{Leaf: state.BucketSnapshot{Rate: 10, Ceiling: 10, Tokens: -2.5}}, statusQueued},
		{state.ScopeSnapshot{Leaf: full, Waiting: 3, InFlight: 5, MaxInFlight: 5}, statusOK},
		{state.ScopeSnapshot{Leaf: full, InFlight: 5, MaxInFlight: 5}, statusOK},
	} {
		if got := statusOf(c.snap); got != c.want {
			t.Errorf("%+v: %v, want %v", c.snap, got, c.want)
		}
	}
}

// The reason a row gives is why its breaker opened while it is open or
// half-open, and for a dead scope whether it is throttled for good or down.
func TestReasonOf(t *testing.T) {
	open := state.BreakerSnapshot{State: state.Open}
	for _, c := range []struct {
		snap state.ScopeSnapshot
		want string
	}{
		{state.ScopeSnapshot{Breaker: open, OpenReason: "throttling"}, "throttling"},
		{state.ScopeSnapshot{Breaker: state.BreakerSnapshot{State: state.HalfOpen}, OpenReason: "errors"}, "errors"},
		{state.ScopeSnapshot{OpenReason: "errors"}, ""}, // closed again: the reason is history
		{state.ScopeSnapshot{Breaker: open, Dead: "throttled for good", OpenReason: "throttled for good"}, "throttled for good"},
		{state.ScopeSnapshot{Breaker: open, Dead: "throttled for good", OpenReason: "throttling"}, "throttled for good"},
		{state.ScopeSnapshot{Breaker: open, Dead: "down", OpenReason: "down"}, "down"},
		{state.ScopeSnapshot{Breaker: open, Dead: "down", OpenReason: "errors"}, "down"},
		{state.ScopeSnapshot{Dead: "down"}, "down"},
	} {
		if got := reasonOf(c.snap); got != c.want {
			t.Errorf("%+v: %q, want %q", c.snap, got, c.want)
		}
	}
}

// The page picks its rows in one pass over the scopes, keeping the
// snapshots of a few: the rows it picks are the first limit of the
// page's order of every row, whatever the order the scopes go by in.
func TestPickerPicksThePageOrdersFirstRows(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rows := genRows(t)
		limit := rapid.IntRange(1, 30).Draw(t, "limit")
		want := keys(order(slices.Clone(rows)))
		want = want[:min(len(want), limit)]

		snaps := map[resilience.Scope]state.ScopeSnapshot{}
		pk := picker{limit: limit}
		for _, r := range rows {
			snaps[r.Scope] = r.State
			pk.add(r.Scope, r.State, r.Status)
		}
		got := pk.rows(func(sc resilience.Scope) state.ScopeSnapshot {
			s, ok := snaps[sc]
			if !ok {
				t.Fatalf("reread %v, which is no live scope", sc)
			}
			return s
		})
		if !slices.Equal(keys(got), want) {
			t.Fatalf("picked %v\nwant   %v", keys(got), want)
		}
	})
}

// The keys the picker compares without writing them order scopes as
// their Key forms do, escapes and empty parts included.
func TestPickerComparesKeys(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		part := rapid.SampledFrom([]string{"", "a", "a-b", "a/b", "a%", "a*", "*", "%2F", "ab", "a.b", "a b"})
		gen := func(name string) resilience.Scope {
			return resilience.Scope{Provider: part.Draw(t, name+"p"), Account: part.Draw(t, name+"a"), Region: part.Draw(t, name+"r"),
				Service: part.Draw(t, name+"s"), Operation: part.Draw(t, name+"o")}
		}
		a, b := gen("a"), gen("b")
		var pk picker
		want := cmp.Or(strings.Compare(a.ServiceScope().Key(), b.ServiceScope().Key()), strings.Compare(a.Key(), b.Key()))
		if got := pk.compareKeys(a, b); got != want {
			t.Fatalf("%q against %q: %d, want %d", a.Key(), b.Key(), got, want)
		}
	})
}
