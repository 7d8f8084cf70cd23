//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/nestgate"
)

// pacedOnALentSlot begins a call of ec2Vpcs on g with ctx, holding its
// slot across the SDK's retries, and lends that slot to a call nested in
// its first attempt (on a context of its own, which never ends) that goes
// on for 10 s once the attempt is over. The attempt gets answer at 1 s,
// and the SDK sleeps the delay Retry gives: the Guard is ready for its
// retry (Pace or Admit), which finds its slot lent. It returns the Guard
// and the nested call's outcome.
func pacedOnALentSlot(t *testing.T, g *Governor, ctx context.Context, answer error) (*Guard, <-chan error) {
	t.Helper()
	gd, err := g.Begin(ctx, ec2Vpcs)
	if err != nil {
		t.Fatal(err)
	}
	var gate nestgate.Gate
	nestgate.Attach(gd, &gate)
	if err := gd.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	gate.SetOpen(true)
	nested := make(chan error, 1)
	actx := &loopCtx{Context: context.Background(), gd: gd}
	go func() {
		nested <- Do(actx, ec2Subnets, func(context.Context) error { time.Sleep(10 * time.Second); return nil }, WithGovernor(g))
	}()
	time.Sleep(time.Second) // the nested call borrows the slot, and goes on
	gate.SetOpen(false)
	gd.After(answer) // the SDK retries, holding the slot
	delay, err := gd.Retry(0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay)
	return gd, nested
}

// A retry an SDK readies with Pace or Admit whose held slot is lent to a
// call that goes on waits for another; one whose slot comes back at its
// context's deadline, the timer due then not run yet, is not sent, as
// Enter's attempt is not (TestARetryPacedAtItsDeadlineIsNotSent for a
// retry readied at the deadline): it ends the call with the deadline's
// error joined to the last answer, recorded as cancelled.
func TestARetryWhoseSlotComesBackAtItsDeadlineIsNotSent(t *testing.T) {
	for _, verb := range []string{"Pace", "Admit"} {
		t.Run(verb, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
				start := time.Now()
				// The nested call gives the slot back at 10 s.
				ctx, led := WithLedger(deadlineAt{context.Background(), start.Add(10 * time.Second), make(chan struct{})}, "task")
				gd, nested := pacedOnALentSlot(t, g, ctx, transientErr())
				ready := gd.Pace
				if verb == "Admit" {
					ready = gd.Admit
				}
				err := ready(ctx)
				var ae *apiErr
				if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ae) {
					t.Errorf("%s, the slot back at the context's deadline (10s) after %v: %v; want the deadline's error with the last answer, nothing sent", verb, time.Since(start), err)
				}
				gd.End(err)
				if err := <-nested; err != nil {
					t.Fatalf("the nested call: %v", err)
				}
				if led.Lost() != 1 || led.Count(LossCancelled) != 1 {
					t.Errorf("the ledger lost %d calls (%d cancelled): %q; want 1, cancelled", led.Lost(), led.Count(LossCancelled), led.Describe())
				}
				checkSlotsBack(t, g)
			})
		})
	}
}

// A retry Pace readies after a throttled answer takes a fresh token
// before it waits for a slot (its held slot lent to a call that goes on).
// A scope paused meanwhile (another call's throttle with a Retry-After,
// or PauseAccount) holds it as it holds Enter's attempt
// (TestACallWaitingForItsSlotIsHeldByAPause): the token, due before the
// pause began, does not know of it, and the retry, its slot back at
// 10 s, waits for tokens again, which the pause (from 3 s, for 60 s)
// holds.
func TestARetryWaitingForItsSlotIsHeldByAPause(t *testing.T) {
	for _, how := range []string{"Retry-After", "PauseAccount"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
				start := time.Now()
				ctx := context.Background()
				gd, nested := pacedOnALentSlot(t, g, ctx, throttle())
				go func() {
					time.Sleep(3*time.Second - time.Since(start))
					// Another call of the scope, whose answer End
					// records (the slot is taken: it is sent on none).
					other, _ := g.Begin(ctx, ec2Vpcs)
					if how == "PauseAccount" {
						other.PauseAccount(60 * time.Second)
						other.End(nil)
						return
					}
					other.End(throttleAfter(60 * time.Second))
				}()
				err := gd.Pace(ctx)
				if sent := time.Since(start); err != nil || sent < 63*time.Second {
					t.Errorf("Pace after a throttle, its slot back at 10s and the scope paused from 3s for 60s: sent at %v (%v), want after the pause", sent, err)
				}
				gd.After(nil)
				gd.End(nil)
				if err := <-nested; err != nil {
					t.Fatalf("the nested call: %v", err)
				}
				checkSlotsBack(t, g)
			})
		})
	}
}

// A retry Admit readies takes a token only when it waited for the
// breaker's verdict (breaker_wait), as the calls the verdict lets through
// do; when its held slot is lent to a call that goes on and no other slot
// comes within the call's max wait (or its context ends while it waits),
// the retry is not sent, and that token goes back to the scope's buckets,
// as TestARetryRefusedForWantOfASlotGivesItsTokenBack has it for Pace.
// The account's rate is slow, so that what its bucket earns meanwhile is
// a small part of a token.
func TestARetryAdmittedByAVerdictAndRefusedForWantOfASlotGivesItsTokenBack(t *testing.T) {
	for _, how := range []string{"max wait", "context ends"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				slow := 0.01
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1, AccountMaxRPS: &slow, AccountBurst: 5,
					BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 2}})
				start := time.Now()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if how == "max wait" {
					ctx = WithMaxWait(ctx, 5*time.Second)
				}
				gd, nested := pacedOnALentSlot(t, g, ctx, transientErr())
				// Another call of the scope fails: the breaker (threshold
				// 1) opens for 2 s, and the retry waits for its verdict.
				other, _ := g.Begin(context.Background(), ec2Vpcs)
				other.End(transientErr())
				if s := g.Inspect(ec2Vpcs).Breaker.State.String(); s != "open" {
					t.Fatalf("breaker %s, want open", s)
				}
				before := g.Inspect(ec2Vpcs).Account.Tokens
				if how == "context ends" {
					time.AfterFunc(8*time.Second, cancel)
				}
				err := gd.Admit(ctx)
				if how == "max wait" && !errors.Is(err, ErrNoSlot) || how == "context ends" && !errors.Is(err, context.Canceled) {
					t.Fatalf("Admit, the breaker open for 2s and the slot lent to a call going on until 10s: %v after %v", err, time.Since(start))
				}
				if after := g.Inspect(ec2Vpcs).Account.Tokens; after < before {
					t.Errorf("the account's bucket holds %.3f tokens after the retry was refused at %v, %.3f before it was readied: the retry that was not sent kept its token", after, time.Since(start), before)
				}
				gd.End(err)
				if err := <-nested; err != nil {
					t.Fatalf("the nested call: %v", err)
				}
			})
		})
	}
}
