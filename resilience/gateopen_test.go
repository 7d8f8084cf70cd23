//go:build go1.25

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A call made with an attempt's context once that attempt is over (a
// goroutine the attempt started and did not wait for) is not nested in
// it, and waits for a free slot; as the call's next attempt begins, it is
// nested in that one (the context answers with the same call), and looks
// again: it goes on that attempt's slot, lent to no call, rather than
// wait the attempt out. Here, max_concurrency 1: attempt 1 lends its slot
// to a call that goes on until 10 s, and fails; a call made at 5 s waits;
// the retry takes the slot as it comes back at 10 s and waits for what
// the waiting call fetches, up to 100 s. Found by
// TestSlotLendingWaitingModel ("stall: ... waits (waiting to enter), the
// cap full (1), while the slot of call 0 ...'s running attempt 2 is lent
// to no call").
func TestACallWaitingBetweenAttemptsBorrowsTheNextAttemptsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		start := time.Now()
		fetched := make(chan struct{})
		nested := make(chan error, 2)
		var went, retry time.Duration
		attempts := 0
		err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
			if attempts++; attempts > 1 {
				retry = time.Since(start)
				select {
				case <-fetched:
				case <-time.After(100 * time.Second):
				}
				return nil
			}
			go func() {
				nested <- Do(ctx, ec2Subnets, func(context.Context) error {
					time.Sleep(10 * time.Second)
					return nil
				}, WithGovernor(g))
			}()
			go func() {
				time.Sleep(5 * time.Second) // the attempt is over
				nested <- Do(ctx, ec2Subnets, func(context.Context) error {
					went = time.Since(start)
					close(fetched)
					return nil
				}, WithGovernor(g))
			}()
			time.Sleep(time.Second)
			return transientErr()
		}, WithGovernor(g), WithNestedCalls())
		for range 2 {
			if err := <-nested; err != nil {
				t.Fatalf("a nested call: %v", err)
			}
		}
		if err != nil || attempts != 2 {
			t.Fatalf("the enclosing call: %v after %d attempts; want a success at the retry", err, attempts)
		}
		if retry != 10*time.Second || went != retry {
			t.Errorf("the call made between the attempts went at %v, the retry at %v; want both at 10s: the call may borrow the retry's slot as the retry begins", went, retry)
		}
		checkSlotsBack(t, g)
	})
}

// So when the calls enclosing it are between their attempts, each of
// them: the call looks again as any of them begins its next attempt. Here
// with max_concurrency 2, one slot held by another call: Z holds the
// other across its attempts, and A, nested in Z's attempt, borrowed it
// and gave it back as its attempt failed; a call made with A's attempt
// context once both attempts are over waits, and goes on Z's slot as Z's
// next attempt begins (A's has not).
func TestACallWaitingBetweenAttemptsOfItsCallersBorrowsFromTheFirstToBegin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 2}})
		ctx := context.Background()
		other, err := g.Begin(ctx, iamUsers)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		z, zgate, zctx := enterGated(t, g, ctx, ec2Vpcs)
		a, agate, actx := enterGated(t, g, zctx, ec2Subnets) // borrows Z's slot
		agate.SetOpen(false)
		a.After(transientErr())
		a.Release()
		zgate.SetOpen(false)
		z.After(transientErr()) // Z holds its slot across its attempts
		entered := make(chan error, 1)
		go func() {
			w, err := g.Begin(actx, ec2Subnets)
			if err == nil {
				err = w.Enter(actx)
				w.After(nil)
				w.End(nil)
			}
			entered <- err
		}()
		synctest.Wait()
		if err := z.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		zgate.SetOpen(true)
		synctest.Wait()
		select {
		case err = <-entered:
		default:
			t.Errorf("the call made with A's attempt context, A and Z between their attempts, still waits once Z's next attempt runs on its slot, lent to no call (max_concurrency 2, both slots taken)")
			zgate.SetOpen(false)
			z.After(nil)
			z.Release() // the slot it waits for
			err = <-entered
		}
		if err != nil {
			t.Fatalf("the call made with A's attempt context: %v", err)
		}
		zgate.SetOpen(false)
		z.After(nil)
		z.End(nil)
		a.End(transientErr())
		other.After(nil)
		other.End(nil)
		checkSlotsBack(t, g)
	})
}

// The race suspected after 3516e46: a call nested in an attempt that
// waits for the attempt's slot, lent to another nested call, is woken as
// the attempt is over and the slot kept for that loan (keepLent), and
// looks again between the lender's attempts, nested in none; it then
// waits for a free slot, and looks again as the lender's next attempt
// begins, rather than wait it out. Here, max_concurrency 2: another call
// holds one slot, L holds the other across its attempts (as a listing
// does) and lends it to a call going on; L's next attempt gives it back,
// kept for that loan, and waits for a free slot, which comes as the other
// call ends.
func TestACallWokenBetweenItsLendersAttemptsBorrowsTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 2}})
		ctx := context.Background()
		other, err := g.Begin(ctx, iamUsers)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		l, lgate, lctx := enterGated(t, g, ctx, ec2Vpcs)
		first, err := g.Begin(lctx, ec2Subnets)
		if err != nil {
			t.Fatal(err)
		}
		if err := first.Enter(lctx); err != nil { // borrows L's slot, and goes on
			t.Fatal(err)
		}
		entered := make(chan error, 1)
		go func() {
			w, err := g.Begin(lctx, ec2Subnets)
			if err == nil {
				err = w.Enter(lctx) // waits for L's slot to come back
				w.After(nil)
				w.End(nil)
			}
			entered <- err
		}()
		synctest.Wait()
		lgate.SetOpen(false)
		l.After(transientErr()) // L holds its slot across its attempts
		retried := make(chan error, 1)
		go func() {
			err := l.Enter(ctx) // the slot, lent to first, kept for it; another
			if err == nil {
				lgate.SetOpen(true)
			}
			retried <- err
		}()
		synctest.Wait()
		other.After(nil)
		other.End(nil) // a slot free: L's retry takes it
		synctest.Wait()
		select {
		case err := <-retried:
			if err != nil {
				t.Fatalf("L's retry: %v", err)
			}
		default:
			t.Fatal("L's retry still waits once the other call ended")
		}
		select {
		case err = <-entered:
		default:
			t.Errorf("the call woken between L's attempts still waits once L's next attempt runs on a slot lent to no call (max_concurrency 2: the kept slot and the retry's)")
			lgate.SetOpen(false)
			l.After(nil)
			l.Release() // the slot it waits for
			lgate.SetOpen(true)
			err = <-entered
		}
		if err != nil {
			t.Fatalf("the woken call: %v", err)
		}
		lgate.SetOpen(false)
		l.After(nil)
		l.End(nil)
		first.After(nil)
		first.End(nil)
		checkSlotsBack(t, g)
	})
}

// A call nested in an attempt that waits for the attempt's slot, lent to
// another nested call, looks again as the attempt ends though its caller
// holds the slot across its attempts (an SDK retrying on a held slot, its
// loan still out): nested in no attempt of that call then, it goes on the
// slot of an enclosing call whose attempt runs, lent to no call, rather
// than wait for the loan, which its caller's next attempt keeps anyway.
// A call made then borrows that slot at once. Here, max_concurrency 2: Z
// holds one slot, L, nested in Z's attempt, the other, across its
// attempts; N1, nested in L's attempt, borrowed L's slot and goes on; N2
// waits for it; L's attempt fails, and L waits to retry.
func TestACallWaitingForALoanLooksAgainAsItsLendersAttemptEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 2}})
		ctx := context.Background()
		z, zgate, zctx := enterGated(t, g, ctx, ec2Vpcs)
		l, lgate, lctx := enterGated(t, g, zctx, ec2Subnets) // the free slot: its own
		if l.slot == nil {
			t.Fatal("L, a slot free, took none")
		}
		n1, err := g.Begin(lctx, iamUsers)
		if err != nil {
			t.Fatal(err)
		}
		if err := n1.Enter(lctx); err != nil || n1.loan == nil {
			t.Fatalf("N1: %v, loan %v; want L's slot borrowed", err, n1.loan)
		}
		entered := make(chan error, 1)
		go func() {
			w, err := g.Begin(lctx, iamUsers)
			if err == nil {
				err = w.Enter(lctx) // waits for L's slot to come back
				w.After(nil)
				w.End(nil)
			}
			entered <- err
		}()
		synctest.Wait()
		select {
		case err := <-entered:
			t.Fatalf("N2 went (%v) while N1 goes on L's slot and Z's is held", err)
		default:
		}
		lgate.SetOpen(false)
		l.After(transientErr()) // L holds its slot across its attempts, lent to N1
		synctest.Wait()
		select {
		case err = <-entered:
		default:
			t.Errorf("N2, nested in L's attempt and waiting for L's slot lent to N1, still waits once L's attempt is over, while Z's attempt runs on a slot lent to no call (max_concurrency 2)")
			n1.After(nil)
			n1.End(nil) // the loan it waits for
			n1 = nil
			err = <-entered
		}
		if err != nil {
			t.Fatalf("N2: %v", err)
		}
		if n1 != nil {
			n1.After(nil)
			n1.End(nil)
		}
		l.End(transientErr())
		zgate.SetOpen(false)
		z.After(nil)
		z.End(nil)
		checkSlotsBack(t, g)
	})
}
