//go:build go1.25

package resilience

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
)

// A call records one success for each of its counted calls that succeeds
// (a page of a listing is one), and never more: a call on a borrowed slot
// (an integration's Guard nested in another call's attempt, whose slot
// was the last) records each page's success as it comes, as a call that
// gives its slot back after each page does, each refunding the retry
// budget 0.1; the enclosing call's success is its own call's, refunded
// too. Only a call that holds a slot of its own across its pages records
// its success once, at End (so that a probe holds its lease until the
// call is over): 0.1 for three pages. No success is recorded twice, and
// the budget's refunds never exceed the calls the run counted.
func TestABorrowerRecordsOneSuccessPerCountedCall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cap     int
		release bool    // the nested listing gives its slot back after each page
		inner   float64 // the nested listing's refunds, in tokens
	}{
		{"borrowed, held across the pages", 1, false, 0.3},
		{"a slot of its own, given back after each page", 2, true, 0.3},
		{"a slot of its own, held across the pages", 2, false, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				size := 10
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: tc.cap, RetryBudget: &size}})
				b := g.provider("aws").budget
				for range 5 {
					b.Take() // room for the refunds
				}
				ctx, stats := WithStats(context.Background())
				outer, _ := g.Begin(ctx, ec2Vpcs)
				if err := outer.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				attempt := context.WithValue(ctx, g, outer)
				inner, _ := g.Begin(attempt, ec2Subnets)
				for page := range 3 {
					if err := inner.Enter(attempt); err != nil {
						t.Fatalf("page %d of the nested listing: %v", page+1, err)
					}
					if borrowed := inner.loan == outer.lends(); borrowed != (tc.cap == 1) {
						t.Fatalf("page %d of the nested listing: on the caller's slot %v, want %v", page+1, borrowed, tc.cap == 1)
					}
					if tc.release {
						inner.Release()
					}
					inner.After(nil)
				}
				inner.End(nil)
				refunds := func() float64 { return math.Round((b.Remaining()-5)*10) / 10 }
				calls := g.Summary(stats).Totals.Calls
				if got := refunds(); got != tc.inner || calls != 4 {
					t.Errorf("the nested listing of three pages refunded %.1f, the run counting %d calls; want %.1f, 4", got, calls, tc.inner)
				}
				outer.After(nil)
				outer.End(nil)
				if got, want := refunds(), tc.inner+0.1; math.Abs(got-want) > 1e-9 || got > float64(calls)/10 {
					t.Errorf("with the enclosing call's success the budget got %.1f back for %d counted calls; want %.1f", got, calls, want)
				}
				if in := g.Inspect(ec2Vpcs).InFlight; in != 0 {
					t.Fatalf("%d slots held after the calls", in)
				}
			})
		})
	}
}
