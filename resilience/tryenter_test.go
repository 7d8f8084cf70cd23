//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// openBreaker opens ec2Subnets' breaker: five calls that fail after their
// one attempt.
func openBreaker(t *testing.T, g *Governor) {
	t.Helper()
	n := 0
	for range 5 {
		Do(context.Background(), ec2Subnets, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
	}
	if g.Inspect(ec2Subnets).Breaker.State.String() != "open" {
		t.Fatal("the breaker did not open")
	}
}

// retryOpenBreakerRefuses opens ec2Subnets' breaker (openBreaker) and
// returns the refusal TryEnter gives gd's retry: the test fails if it is
// not a *CircuitOpenError.
func retryOpenBreakerRefuses(t *testing.T, g *Governor, gd *Guard) error {
	t.Helper()
	openBreaker(t, g)
	err := gd.TryEnter()
	var coe *CircuitOpenError
	if !errors.As(err, &coe) {
		t.Fatalf("TryEnter on an open breaker: %v", err)
	}
	return err
}

// A TryEnter that finds no token against a half-open breaker does not take
// the probe's lease: the next caller is the probe, and closes the breaker.
// (It used to take the lease and give back only the tokens, so that the
// next caller was refused for a whole cooldown.)
func TestTryEnterTakesNoProbeLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		openBreaker(t, g)
		time.Sleep(60 * time.Second) // the cooldown: the next caller is the probe
		pause, _ := g.Begin(context.Background(), ec2Subnets)
		pause.Pause(time.Second) // no token for a second, breaker untouched
		pause.End(nil)

		gd, _ := g.Begin(context.Background(), ec2Subnets)
		err := gd.TryEnter()
		if !errors.Is(err, ErrNoToken) {
			t.Fatalf("TryEnter during the pause: %v, want no token", err)
		}
		if st := g.Inspect(ec2Subnets).Breaker.State.String(); st != "open" {
			t.Fatalf("the refused TryEnter moved the breaker to %s", st)
		}
		gd.End(err)

		time.Sleep(time.Second)
		if err := Do(context.Background(), ec2Subnets, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
			t.Fatalf("the probe after the pause: %v", err)
		}
		if st := g.Inspect(ec2Subnets).Breaker.State.String(); st != "closed" {
			t.Fatalf("breaker %s after the probe succeeded", st)
		}
	})
}

// TryEnter against an open breaker records nothing: a polling loop does not
// count rejections or skipped calls, and takes no token or slot.
func TestTryEnterOnAnOpenBreakerRecordsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		openBreaker(t, g)
		time.Sleep(10 * time.Second) // tokens again, the breaker still open
		ctx, ledger := WithLedger(context.Background(), "ec2")
		ctx, stats := WithStats(ctx)
		before := g.Inspect(ec2Subnets)
		gd, _ := g.Begin(ctx, ec2Subnets)
		for range 10 {
			var coe *CircuitOpenError
			if err := gd.TryEnter(); !errors.As(err, &coe) || coe.Wait != 50*time.Second {
				t.Fatalf("TryEnter on an open breaker: %v", err)
			}
		}
		after := g.Inspect(ec2Subnets)
		if tot := g.Summary(stats).Totals; tot.Rejected != 0 || tot.Calls != 0 {
			t.Fatalf("polling counted %d rejected, %d calls", tot.Rejected, tot.Calls)
		}
		if _, sk := ledger.Counts(); sk != 0 {
			t.Fatalf("polling skipped %d calls in the ledger", sk)
		}
		if after.Leaf.Tokens != before.Leaf.Tokens || after.InFlight != 0 {
			t.Fatalf("tokens %v -> %v, in flight %d", before.Leaf.Tokens, after.Leaf.Tokens, after.InFlight)
		}
	})
}

// TryEnter reports the breaker, not the token it would also wait for, when
// the breaker is open: its wait is the one that binds.
func TestTryEnterReportsTheOpenBreakerFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		openBreaker(t, g) // the throttles drained the leaf: no token either
		gd, _ := g.Begin(context.Background(), ec2Subnets)
		var coe *CircuitOpenError
		if err := gd.TryEnter(); !errors.As(err, &coe) || coe.Wait != 60*time.Second {
			t.Fatalf("TryEnter on an open breaker without tokens: %v", err)
		}
		gd.End(nil)
	})
}

// TryEnter's refusals say which check refused: the breaker, no token, or
// no slot; none of them is a context's deadline.
func TestTryEnterSaysWhichCheckRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1,
			Services: map[string]ServiceConfig{"iam": {MaxRPS: 1, Burst: 1}}}})
		holder, _ := g.Begin(context.Background(), ec2Vpcs)
		if err := holder.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		before := g.Inspect(ec2Subnets).Leaf.Tokens
		gd, _ := g.Begin(context.Background(), ec2Subnets)
		err := gd.TryEnter()
		var ww *WouldWaitError
		if !errors.As(err, &ww) || !errors.Is(err, ErrNoSlot) || errors.Is(err, ErrNoToken) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cap full: %v", err)
		}
		if tk := g.Inspect(ec2Subnets).Leaf.Tokens; tk != before {
			t.Fatalf("the refused TryEnter kept a token: %v left of %v", tk, before)
		}
		holder.End(nil)
		gd.End(err)

		iam, _ := g.Begin(context.Background(), iamUsers)
		if err := iam.TryEnter(); err != nil {
			t.Fatal(err)
		}
		iam.End(nil)
		iam, _ = g.Begin(context.Background(), iamUsers)
		err = iam.TryEnter()
		if !errors.As(err, &ww) || !errors.Is(err, ErrNoToken) || ww.RetryAfter() != time.Second || Classify(err) != Throttled {
			t.Fatalf("no token: %v", err)
		}
		if in := g.Inspect(iamUsers).InFlight; in != 0 {
			t.Fatalf("the refused TryEnter kept a slot: %d in flight", in)
		}
		iam.End(err)
	})
}

// TryEnter's refusal of a retry wraps the answer it would have retried,
// as WouldWaitError says of a retry's (Last), for no token and no slot
// alike; it used to carry none, so that errors.Is and errors.As did not
// find the provider's answer.
func TestTryEnterRetryRefusalWrapsTheAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1,
			Services: map[string]ServiceConfig{"iam": {MaxRPS: 1, Burst: 1}}}})
		answer := transientErr()
		gd, _ := g.Begin(context.Background(), iamUsers)
		if err := gd.TryEnter(); err != nil {
			t.Fatal(err)
		}
		gd.After(answer)
		gd.Release()
		if _, err := gd.Retry(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		err := gd.TryEnter() // the retry's wait is not over
		var ww *WouldWaitError
		if !errors.As(err, &ww) || !errors.Is(err, ErrNoToken) || ww.Last != answer || !errors.Is(err, answer) {
			t.Fatalf("no token for the retry: %v, last %v; want it to wrap %v", err, ww.Last, answer)
		}
		time.Sleep(5 * time.Second)
		holder, _ := g.Begin(context.Background(), ec2Vpcs)
		if err := holder.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		err = gd.TryEnter() // the cap is full
		if !errors.As(err, &ww) || !errors.Is(err, ErrNoSlot) || ww.Last != answer || !errors.Is(err, answer) {
			t.Fatalf("no slot for the retry: %v, last %v; want it to wrap %v", err, ww.Last, answer)
		}
		holder.End(nil)
		if err := gd.TryEnter(); err != nil {
			t.Fatal(err)
		}
		gd.After(nil)
		gd.End(nil)
	})
}

// TryEnter is Enter without waiting: a scope found dead without a new
// answer (every answer throttled for breaker_dead_seconds, from five
// calls), whose next Enter opens the breaker and is refused, is refused by
// TryEnter too, with the wait Enter's refusal gives and Delay reports,
// nothing sent, taken or recorded, and the breaker left as it was (a
// refusal of TryEnter changes nothing).
func TestTryEnterRefusesADeadScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		endStreak := throttledStreak(t, g, iamUsers)
		time.Sleep(4 * time.Second) // 10 s after the first throttle, 4 s after the last
		d, why := g.Delay(iamUsers)
		if !errors.Is(why, ErrCircuitOpen) {
			t.Fatalf("Delay: %v, %v; want ErrCircuitOpen (the scope is dead)", d, why)
		}
		ctx, ledger := WithLedger(context.Background(), "iam")
		ctx, stats := WithStats(ctx)
		before := g.Inspect(iamUsers)
		gd, _ := g.Begin(ctx, iamUsers)
		var coe *CircuitOpenError
		if err := gd.TryEnter(); !errors.As(err, &coe) || coe.Wait != d {
			t.Fatalf("TryEnter on a dead scope: %v; want a *CircuitOpenError with the wait Delay said, %v", err, d)
		}
		gd.End(nil)
		after := g.Inspect(iamUsers)
		if after.Breaker.State != before.Breaker.State || after.Leaf.Tokens != before.Leaf.Tokens || after.InFlight != 0 {
			t.Fatalf("breaker %v -> %v, tokens %v -> %v, in flight %d: TryEnter's refusal changed something",
				before.Breaker.State, after.Breaker.State, before.Leaf.Tokens, after.Leaf.Tokens, after.InFlight)
		}
		if tot := g.Summary(stats).Totals; tot.Calls != 0 || tot.Rejected != 0 || ledger.Lost() != 0 {
			t.Fatalf("TryEnter's refusal counted %d calls, %d rejected, %d lost", tot.Calls, tot.Rejected, ledger.Lost())
		}
		endStreak()
	})
}
