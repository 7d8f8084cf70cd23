//go:build go1.25

package resilience

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/internal/errread"
)

// askCap is how many asks for its cause a cycleLink answers: past it,
// it has none, so that a read that is not bounded ends all the same (in
// a stack overflow, which no recover stops, without it), for its test to
// fail and say how far it went.
const askCap = 5000

// cycleLink is an error of a user's that wraps next, counting in asks
// the calls of its Unwrap.
type cycleLink struct {
	next error
	asks *atomic.Int64
}

func (c *cycleLink) Error() string { return "wrapped" }

func (c *cycleLink) Unwrap() error {
	if c.asks.Add(1) > askCap {
		return nil
	}
	return c.next
}

// A chain that cycles through a *RetryBudgetExhaustedError (the budget's
// refusal wrapping an error of the caller's that wraps the refusal) is
// read as any cycle is: a bounded part of it, by every reader of the
// classifier, the refusal's own RetryAfter and a governed call that ends
// with it. Before, the walk asked the refusal for its RetryAfter, which
// is RetryAfter of its cause, a walk of its own that met the refusal
// again and asked it again, without end: the goroutine's stack overflowed,
// a fatal error that ends the process, which no recover stops.
func TestAChainThatCyclesThroughABudgetRefusalIsReadBounded(t *testing.T) {
	const most = 10 * errread.MaxNodes
	asks := new(atomic.Int64)
	refusal := &RetryBudgetExhaustedError{Scope: iamUsers}
	refusal.Err = &cycleLink{next: refusal, asks: asks}
	reads := map[string]func(){
		"Classify":                 func() { Classify(refusal) },
		"ClassifyStrict":           func() { ClassifyStrict(refusal) },
		"RetryAfter":               func() { RetryAfter(refusal) },
		"DescribeError":            func() { DescribeError(refusal) },
		"IsProviderAnswer":         func() { IsProviderAnswer(refusal) },
		"the refusal's RetryAfter": func() { refusal.RetryAfter() },
		"a governed call": func() {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				n := 0
				if err := Do(context.Background(), iamUsers, always(&n, refusal), WithGovernor(g)); err != refusal {
					t.Errorf("Do returned %v, want the refusal", err)
				}
			})
		},
	}
	for name, read := range reads {
		asks.Store(0)
		read()
		if n := asks.Load(); n > most {
			t.Errorf("%s: the chain's errors were asked for their causes %d times; want at most %d", name, n, most)
		}
	}
	if k := Classify(refusal); k != Throttled {
		t.Errorf("Classify = %v, want THROTTLED (the budget's refusal)", k)
	}
}
