//go:build go1.25

package resilience

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// A call nested in another's attempt goes on the slot of that attempt,
// which it borrowed: however the loans go between attempts, the running
// attempts of an account go on no more slots than its cap, and no more
// than its bulkhead counts taken. With max_concurrency 2: A holds a slot,
// lent to E, a call nested in its attempt that goes on; B, nested in A's
// attempt, takes the other slot, and holds it across an SDK's retries
// (Admit); C, nested in B's attempt, borrows B's slot and holds the loan
// across its own attempts (a listing's pages). B's first attempt fails,
// then C's, and C enters its second at 1 s; B's retry is readied at 12 s.
//
//   - C lent its loan on to D, a call nested in C's first attempt that
//     goes on until 10 s (the sequence TestSlotLendingWaitingModel saved):
//     C's second attempt keeps that loan for D and waits for a slot, and
//     B's retry, the slot it holds lent to no call once D ends at 10 s,
//     goes on it at 12 s, where C, nested in that retry, borrows it anew
//     (the same lend). Two slots: A's (A, E) and B's (B's retry, C).
//   - C lent nothing on: it goes on its loan at once, and B's retry, the
//     slot it holds lent to C, keeps it for C and waits for another,
//     which it borrows of A as E ends at 30 s. Two slots: A's (A, E, B's
//     retry) and the one B kept for C.
func TestABorrowersNextAttemptGoesOnASlotOfItsLender(t *testing.T) {
	for _, lentOn := range []bool{true, false} {
		t.Run(map[bool]string{true: "its loan lent on", false: "its loan held"}[lentOn], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 2}})
				ctx := context.Background()
				start := time.Now()
				var fl flights
				work := fl.work
				a, agate, actxA := enterGated(t, g, ctx, ec2Vpcs)
				b, bgate, actxB := enterGated(t, g, actxA, ec2Vpcs) // the other slot
				e := make(chan error, 1)
				go func() { e <- Do(actxA, ec2Subnets, work(30*time.Second), WithGovernor(g)) }()
				c, cgate, actxC := enterGated(t, g, actxB, ec2Vpcs) // B's, borrowed
				d := make(chan error, 1)
				if lentOn {
					go func() { d <- Do(actxC, ec2Subnets, work(10*time.Second), WithGovernor(g)) }()
				}
				synctest.Wait()
				// B's attempt fails, then C's.
				bgate.SetOpen(false)
				b.After(transientErr())
				bDelay, err := b.Retry(0)
				if err != nil {
					t.Fatal(err)
				}
				cgate.SetOpen(false)
				c.After(transientErr())
				cDelay, err := c.Retry(0)
				if err != nil {
					t.Fatal(err)
				}
				if bDelay > 12*time.Second || cDelay > time.Second {
					t.Fatalf("backoffs of %v (B) and %v (C), longer than the test gives them (12s, 1s)", bDelay, cDelay)
				}
				cerr, cAt := make(chan error, 1), make(chan time.Duration, 1)
				go func() {
					time.Sleep(time.Second - time.Since(start))
					err := c.Enter(actxB)
					cAt <- time.Since(start)
					cerr <- err
				}()
				berr, bAt := make(chan error, 1), make(chan time.Duration, 1)
				go func() {
					time.Sleep(12*time.Second - time.Since(start))
					err := b.Admit(actxB)
					if err == nil {
						bgate.SetOpen(true)
					}
					bAt <- time.Since(start)
					berr <- err
				}()
				for _, err := range []error{<-berr, <-cerr} {
					if err != nil {
						t.Fatal(err)
					}
				}
				cgate.SetOpen(true)
				synctest.Wait()
				bWent, cWent := <-bAt, <-cAt
				wantB, wantC := 12*time.Second, 12*time.Second
				if !lentOn {
					wantB, wantC = 30*time.Second, time.Second
				}
				if bWent != wantB || cWent != wantC {
					t.Errorf("B's retry went at %v, C's second attempt at %v; want %v and %v", bWent, cWent, wantB, wantC)
				}
				// The slot each running attempt goes on: its own, or
				// the slot its loan is of (the slot of the running
				// attempt that lends it, or the one kept for it).
				running := map[string]*Guard{"A": a, "B": b, "C": c}
				var slotOfLend func(l *slotLend) string
				slotOf := func(name string) string {
					if gd := running[name]; gd.loan != nil {
						return slotOfLend(gd.loan)
					}
					return name
				}
				slotOfLend = func(l *slotLend) string {
					for name, gd := range running {
						if gd.lends() == l {
							return slotOf(name)
						}
					}
					if l.st.Load()&lendKept != 0 {
						if k := l.kept; k.of != nil {
							return slotOfLend(k.of)
						}
					}
					return fmt.Sprintf("kept %p", l)
				}
				slots := map[string]string{}
				for name := range running {
					slots[name] = slotOf(name)
				}
				want := map[string]string{"A": "A", "B": "B", "C": "B"}
				if !lentOn {
					want = map[string]string{"A": "A", "B": "A", "C": fmt.Sprintf("kept %p", c.loan)}
				}
				if fmt.Sprint(slots) != fmt.Sprint(want) {
					t.Errorf("the running attempts go on the slots %v; want %v", slots, want)
				}
				taken := map[string]bool{}
				for _, s := range slots {
					taken[s] = true
				}
				if used, _ := g.provider("aws").scopes.accountBulkhead(ec2Vpcs.Account).InUse(); len(taken) > 2 || len(taken) > used {
					t.Errorf("the running attempts go on %d slots (%v), the bulkhead counts %d taken, the cap is 2", len(taken), slots, used)
				}
				if lentOn {
					if err := <-d; err != nil {
						t.Fatalf("D: %v", err)
					}
				}
				cgate.SetOpen(false)
				c.After(nil)
				c.End(nil)
				bgate.SetOpen(false)
				b.After(nil)
				b.End(nil)
				if err := <-e; err != nil {
					t.Fatalf("E: %v", err)
				}
				agate.SetOpen(false)
				a.After(nil)
				a.End(nil)
				checkSlotsBack(t, g)
			})
		})
	}
}
