package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
)

// A fleet's retry budget is one for every process: a governor's Reset, or
// a Configure that resizes it, asks the store for it again, which keeps
// the tokens Redis holds instead of a full new budget as in process, so
// that one process's Reset (or each process of a rolling deploy, resizing
// it) does not hand the whole fleet a full budget of retries. A budget
// grown keeps what it held, refilled by the successes' refunds up to its
// new size; one shrunk holds at most its new size.
func TestASharedBudgetAskedAgainKeepsItsTokens(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		a := openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour))
		b := a.Budget("aws", 10)
		for range 4 {
			if !b.Take() {
				t.Fatal("a budget of 10: a retry refused")
			}
		}
		for _, c := range []struct {
			what string
			size int
			want float64
		}{
			{"asked again at its size (a Reset)", 10, 5},
			{"grown to 20 (a Configure)", 20, 4},
			{"shrunk to 2", 2, 1},
		} {
			b = a.Budget("aws", c.size)
			if !b.Take() {
				t.Fatalf("the budget %s: a retry refused", c.what)
			}
			if got := b.Remaining(); got != c.want {
				t.Errorf("the budget %s, a retry taken: %v tokens left, want %v (the fleet's, kept)", c.what, got, c.want)
			}
		}
	})
}
