package fleet

import "testing"

// drain spends every token of b, and reports how many it spent.
func drain(b interface{ Take() bool }) int {
	n := 0
	for b.Take() {
		n++
	}
	return n
}

// The retry budget of a closed store is a local budget that works as the
// in-process one: the successes after Close refill it, so that the
// retries of a governor that goes on after Close do not stop for good
// once it is spent. It starts from the fleet's budget as the process last
// read it, as does the local budget of an operation Redis refuses, not
// from an earlier outage's local budget, spent then. (After Close the
// successes refilled nothing, Succeed sending them toward Redis, which
// nothing sent any more; and the outage's spent local budget was reused
// after Close and for a refused operation.)
func TestTheLocalBudgetAfterAnOutageAndAfterClose(t *testing.T) {
	const size = 2
	t.Run("successes after Close", func(t *testing.T) {
		s, h := inOutage(t)
		h.down.Store(false)
		s.heartbeat()
		b := s.Budget("aws", size)
		s.Close()
		if n := drain(b); n != size {
			t.Fatalf("a closed store's budget of %d: %d retries, want %d", size, n, size)
		}
		for range 10 * size {
			b.Succeed()
		}
		if !b.Take() {
			t.Errorf("a closed store's budget of %d spent, then %d successes: no retry (Remaining %v), want the budget refilled", size, 10*size, b.Remaining())
		}
	})
	for _, c := range []string{"after Close", "an operation Redis refuses"} {
		t.Run("an outage's spent budget, then "+c, func(t *testing.T) {
			s, h := inOutage(t)
			defer s.Close()
			b := s.Budget("aws", size)
			if n := drain(b); n != size {
				t.Fatalf("a budget of %d during an outage: %d retries, want %d", size, n, size)
			}
			h.down.Store(false)
			s.heartbeat()
			if s.Stats().Degraded {
				t.Fatal("a Redis that answers the heartbeat: still on local limits")
			}
			if c == "after Close" {
				s.Close()
			}
			if !b.Take() {
				t.Errorf("a budget of %d spent during an outage, the fleet's full as far as the process knows, then %s: no retry (Remaining %v), want the fleet's budget",
					size, c, b.Remaining())
			}
		})
	}
}
