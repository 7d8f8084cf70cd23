package observe

import "testing"

// Every kind has its snake_case name, which metrics and logs use as a
// label value; an unknown kind says what it is.
func TestKindNames(t *testing.T) {
	want := map[Kind]string{
		Call: "call", Wait: "wait", Throttle: "throttle", RateChange: "rate_change", Pause: "pause",
		BreakerChange: "breaker_change", Retry: "retry", GaveUp: "gave_up", Rejected: "rejected",
		BudgetExhausted: "budget_exhausted", Lost: "lost", 0: "observe.Kind(0)", Lost + 1: "observe.Kind(12)",
	}
	for k, name := range want {
		if got := k.String(); got != name {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(k), got, name)
		}
	}
}

// Func is an Observer.
func TestFuncObserves(t *testing.T) {
	var got []Kind
	var o Observer = Func(func(e Event) { got = append(got, e.Kind) })
	o.Observe(Event{Kind: Throttle})
	o.Observe(Event{Kind: Retry})
	if len(got) != 2 || got[0] != Throttle || got[1] != Retry {
		t.Fatalf("observed %v", got)
	}
}
