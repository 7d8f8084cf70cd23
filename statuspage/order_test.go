package statuspage

import (
	"slices"
	"testing"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// Within a status, the scopes that lost calls come first, then the most
// throttled, then the slowest against their ceiling, then the longest
// queue, then by key.
func TestWorseFirstWithinAStatus(t *testing.T) {
	at := func(rate float64) state.ScopeSnapshot {
		return state.ScopeSnapshot{Leaf: state.BucketSnapshot{Rate: rate, Ceiling: 10}}
	}
	mk := func(acct string, snap state.ScopeSnapshot, c resilience.Counters) row {
		sc := resilience.Scope{Provider: "aws", Account: acct, Service: "iam"}
		return row{Scope: sc, Key: sc.Key(), Status: statusOf(snap), State: snap, Counters: c}
	}
	queue := at(10)
	queue.Waiting = 3
	rows := []row{
		mk("h-key-b", at(10), resilience.Counters{}),
		mk("g-key-a", at(10), resilience.Counters{}),
		mk("f-queue", queue, resilience.Counters{}),
		mk("e-slowest", at(1), resilience.Counters{}),
		mk("d-slow", at(5), resilience.Counters{}),
		mk("c-throttled", at(5), resilience.Counters{Throttled: 9}),
		mk("b-skipped", at(5), resilience.Counters{Rejected: 1}),
		mk("a-gave-up", at(5), resilience.Counters{GaveUp: 2}),
	}
	slices.SortFunc(rows, worseFirst)
	var got []string
	for _, r := range rows {
		got = append(got, r.Scope.Account)
	}
	want := []string{"a-gave-up", "b-skipped", "c-throttled", "e-slowest", "d-slow", "f-queue", "g-key-a", "h-key-b"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v\nwant  %v", got, want)
	}
}

// A scope's status is the worst thing about it now.
func TestStatusOf(t *testing.T) {
	full := state.BucketSnapshot{Rate: 10, Ceiling: 10}
	for _, c := range []struct {
		snap state.ScopeSnapshot
		want status
	}{
		{state.ScopeSnapshot{Leaf: state.BucketSnapshot{Rate: 1, Ceiling: 10, Paused: 1}, Breaker: state.BreakerSnapshot{State: state.Open}}, statusOpen},
		{state.ScopeSnapshot{Leaf: full, Breaker: state.BreakerSnapshot{State: state.HalfOpen}}, statusHalfOpen},
		{state.ScopeSnapshot{Leaf: state.BucketSnapshot{Rate: 1, Ceiling: 10, Paused: 1}}, statusPaused},
		{state.ScopeSnapshot{Leaf: full, Account: state.BucketSnapshot{Paused: 1}}, statusPaused},
		{state.ScopeSnapshot{Leaf: state.BucketSnapshot{Rate: 9, Ceiling: 10}, Waiting: 1}, statusSlowed},
		{state.ScopeSnapshot{Leaf: full, Waiting: 1}, statusQueued},
		{state.ScopeSnapshot{Leaf: full, InFlight: 5, MaxInFlight: 5}, statusOK},
	} {
		if got := statusOf(c.snap); got != c.want {
			t.Errorf("%+v: %v, want %v", c.snap, got, c.want)
		}
	}
}
