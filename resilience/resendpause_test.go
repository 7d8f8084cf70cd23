//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// unsentAttempt begins a call of ec2Vpcs with ctx and enters its attempt,
// which fails before it is sent (a credential that could not be had): the
// Guard stays in its attempt, its answer not reported, and gives its slot
// back for the integration's backoff, as cloudghttp's resend does.
func unsentAttempt(t *testing.T, g *Governor, ctx context.Context) *Guard {
	t.Helper()
	gd, err := g.Begin(ctx, ec2Vpcs)
	if err != nil {
		t.Fatal(err)
	}
	if err := gd.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	gd.Release()
	return gd
}

// A paused scope sends nothing until its pause ends, the resend of an
// attempt that failed before it was sent included: readied while another
// call's Retry-After or a PauseAccount holds the scope (its leaf, or its
// account bucket), it waits out the pause and goes at the scope's rate
// after it, as the calls the pause held do; a pause that outlasts the
// call's deadline ends it at once with the deadline's error, and one
// that outlasts its max wait with a *WouldWaitError of ErrNoToken, each
// recorded as refused (nothing was sent), and End records nothing more.
// Before, the resend went at once, into the pause.
func TestAResendIsHeldByAPause(t *testing.T) {
	acct := 20.0
	for _, how := range []string{"Retry-After", "PauseAccount"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{AccountMaxRPS: &acct}})
				start := time.Now()
				gd := unsentAttempt(t, g, context.Background())
				pauseScopeBy(g, how, 60*time.Second)
				time.Sleep(time.Second) // the integration's backoff, within the pause
				err := gd.readyResend(context.Background())
				if sent := time.Since(start); err != nil || sent < 60*time.Second || sent > 61*time.Second {
					t.Errorf("a resend, the scope paused at 0s for 60s (%s): sent at %v (%v), want within a second after the pause's end", how, sent, err)
				}
				gd.After(nil)
				gd.End(nil)

				// The deadline comes before the pause's end (a governor of
				// its own: the first pause is over).
				g = newGov(t, Config{AWS: ProviderConfig{AccountMaxRPS: &acct}})
				r := newRun(context.Background())
				ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
				defer cancel()
				gd = unsentAttempt(t, g, ctx)
				pauseScopeBy(g, how, 60*time.Second)
				time.Sleep(time.Second)
				readied := time.Now()
				err = gd.readyResend(ctx)
				var de *DeadlineExceededError
				if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) || time.Since(readied) != 0 {
					t.Errorf("a resend, the scope paused for 60s (%s) and the deadline 30s away: %v after %v; want the deadline's *DeadlineExceededError at once, nothing sent", how, err, time.Since(readied))
				}
				gd.End(err)
				r.lost(t, g, LossRefused, 1)

				// The call's max wait comes before the pause's end.
				g = newGov(t, Config{AWS: ProviderConfig{AccountMaxRPS: &acct}})
				r = newRun(context.Background())
				ctx = WithMaxWait(r.ctx, 5*time.Second)
				gd = unsentAttempt(t, g, ctx)
				pauseScopeBy(g, how, 60*time.Second)
				time.Sleep(time.Second)
				readied = time.Now()
				err = gd.readyResend(ctx)
				var ww *WouldWaitError
				if !errors.As(err, &ww) || !errors.Is(err, ErrNoToken) || time.Since(readied) != 0 {
					t.Errorf("a resend, the scope paused for 60s (%s) and a max wait of 5s: %v after %v; want a *WouldWaitError of ErrNoToken at once, nothing sent", how, err, time.Since(readied))
				}
				gd.End(err)
				r.lost(t, g, LossRefused, 1)
			})
		})
	}
}

// A resend that gets no slot within the call's max wait is refused as
// any call whose wait for a slot would pass it is, before it is sent: a
// *WouldWaitError matching ErrNoSlot, recorded as refused, and End records
// nothing more.
func TestAResendWithNoSlotWithinTheMaxWaitIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		r := newRun(context.Background())
		ctx := WithMaxWait(r.ctx, 500*time.Millisecond)
		gd := unsentAttempt(t, g, ctx)
		other, err := g.Begin(context.Background(), ec2Subnets)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		readied := time.Now()
		err = gd.readyResend(ctx)
		if !errors.Is(err, ErrNoSlot) || time.Since(readied) != 500*time.Millisecond {
			t.Errorf("a resend with the only slot held elsewhere and a max wait of 0.5s: %v after %v; want ErrNoSlot after 0.5s", err, time.Since(readied))
		}
		gd.End(err)
		other.After(nil)
		other.End(nil)
		r.lost(t, g, LossRefused, 1)
	})
}

// A resend held by a pause asks the breaker again once the pause is
// over, as a retry waiting for its token does: a breaker that opened
// meanwhile (a call sent before the pause failed at 30 s) refuses it
// with a *CircuitOpenError, recording nothing (the integration ends the
// call with the attempt's failure), and the token the pause held goes
// back. Before, the resend went through the open breaker at the pause's
// end.
func TestAResendHeldByAPauseAsksTheBreakerAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		acct := 20.0
		g := newGov(t, Config{AWS: ProviderConfig{BreakerThreshold: 1, AccountMaxRPS: &acct}})
		r := newRun(context.Background())
		start := time.Now()
		gd := unsentAttempt(t, g, r.ctx)
		other, err := g.Begin(context.Background(), ec2Vpcs)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		pauseScopeBy(g, "PauseAccount", 60*time.Second)
		go func() {
			time.Sleep(30 * time.Second)
			other.After(transientErr())
			other.End(transientErr())
		}()
		time.Sleep(time.Second)
		err = gd.readyResend(r.ctx)
		var coe *CircuitOpenError
		if !errors.As(err, &coe) {
			t.Fatalf("a resend held by a pause until %v, the breaker opened at 30s: %v; want a *CircuitOpenError, nothing sent", time.Since(start), err)
		}
		if acct := g.Inspect(ec2Vpcs).Account; acct.Tokens != 1 {
			t.Errorf("the account bucket holds %v tokens after the refusal, 50ms after the pause's end at 20/s; want 1: the token the resend took goes back", acct.Tokens)
		}
		gd.After(errors.New("token: connection refused")) // the attempt's local failure
		gd.End(err)
		r.lost(t, g, LossErrored, 1)
		if s := g.Inspect(ec2Vpcs); s.InFlight != 0 {
			t.Fatalf("%d in flight after the calls, want none", s.InFlight)
		}
	})
}

// A provider that waits for its breakers' verdicts (breaker_wait) holds
// the resend of an attempt that failed before it was sent until the
// verdict, as it holds a retry (Enter's, Pace's, Admit's): a breaker
// another call opened lets the resend through once its cooldown is over,
// as the probe, and the resend, which waited, goes at the scope's rate,
// like a new call, taking a token; a verdict that does not come by the
// call's deadline (a probe out in another call) refuses it then with a
// *CircuitOpenError, recording nothing (the integration ends the call
// with the attempt's failure, lost as errored). Before, the resend was
// refused at once, and the call lost.
func TestABreakerWaitResendWaitsForTheVerdict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{AWS: ProviderConfig{BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 60,
			Services: map[string]ServiceConfig{"ec2": {MaxRPS: 1, MinRPS: 1, Burst: 1}}}}
		g := newGov(t, cfg)
		r := newRun(context.Background())
		gd := unsentAttempt(t, g, r.ctx) // the leaf's token at 0
		// Another call of the scope fails, sent by an SDK without Enter:
		// the breaker (threshold 1) opens for 60 s.
		other, _ := g.Begin(context.Background(), ec2Vpcs)
		other.After(transientErr())
		other.End(transientErr())
		time.Sleep(time.Second) // the integration's backoff
		readied := time.Now()
		err := gd.readyResend(r.ctx)
		if waited := time.Since(readied); err != nil || waited != 59*time.Second {
			t.Fatalf("a breaker_wait resend readied 1s after its breaker opened for 60s: %v after %v; want it sent as the probe after 59s", err, waited)
		}
		if leaf := g.Inspect(ec2Vpcs).Leaf; leaf.Tokens > 0.01 {
			t.Errorf("the leaf holds %.2f tokens after the resend, at 1/s with a burst of 1; want none: a resend that waited for the verdict takes a token", leaf.Tokens)
		}
		gd.After(nil)
		gd.End(nil)
		r.lost(t, g, LossErrored, 0)
		if s := g.Inspect(ec2Vpcs).Breaker.State.String(); s != "closed" {
			t.Errorf("breaker %s after the resend's success as the probe, want closed", s)
		}

		// The breaker open again and its probe out in another call, whose
		// verdict does not come by the call's deadline, 70 s away.
		g = newGov(t, cfg)
		r = newRun(context.Background())
		ctx, cancel := context.WithTimeout(r.ctx, 70*time.Second)
		defer cancel()
		gd = unsentAttempt(t, g, ctx)
		other, _ = g.Begin(context.Background(), ec2Vpcs)
		other.After(transientErr())
		other.End(transientErr())
		time.Sleep(60 * time.Second)
		probe, _ := g.Begin(context.Background(), ec2Vpcs)
		if err := probe.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer probe.End(nil)
		readied = time.Now()
		err = gd.readyResend(ctx)
		var coe *CircuitOpenError
		if waited := time.Since(readied); !errors.As(err, &coe) || waited < 10*time.Second-time.Millisecond || waited > 10*time.Second {
			t.Errorf("a breaker_wait resend, the probe out in another call and the deadline 10s away: %v after %v; want a *CircuitOpenError at the deadline, after 10s", err, waited)
		}
		gd.After(errors.New("token: connection refused")) // the attempt's local failure
		gd.End(err)
		r.lost(t, g, LossErrored, 1)
	})
}

// A breaker_wait resend held by a pause, whose breaker opened meanwhile
// (a call sent before the pause failed at 30 s, the cooldown 60 s), waits
// at the pause's end for the verdict, as a retry waiting for its token
// does, and goes once the cooldown is over, as the probe, taking a token
// afresh. Before, it was refused at the pause's end.
func TestABreakerWaitResendHeldByAPauseWaitsForTheVerdict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		acct := 20.0
		g := newGov(t, Config{AWS: ProviderConfig{BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 60, AccountMaxRPS: &acct,
			Services: map[string]ServiceConfig{"ec2": {MaxRPS: 1, MinRPS: 1, Burst: 1}}}})
		r := newRun(context.Background())
		gd := unsentAttempt(t, g, r.ctx)
		other, err := g.Begin(context.Background(), ec2Vpcs)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		pauseScopeBy(g, "PauseAccount", 60*time.Second)
		opened := make(chan time.Time, 1)
		go func() {
			time.Sleep(30 * time.Second)
			other.After(transientErr())
			other.End(transientErr())
			opened <- time.Now()
		}()
		time.Sleep(time.Second)
		err = gd.readyResend(r.ctx)
		if sent := time.Since(<-opened); err != nil || sent < 60*time.Second || sent > 61*time.Second {
			t.Fatalf("a breaker_wait resend held by a pause of 60s, the breaker opened 30s into it for 60s: %v %v after the opening; want it sent as the probe within a second after the cooldown's end", err, sent)
		}
		if leaf := g.Inspect(ec2Vpcs).Leaf; leaf.Tokens > 0.01 {
			t.Errorf("the leaf holds %.2f tokens after the resend at the cooldown's end, at 1/s with a burst of 1; want none: the resend took a token after its wait for the verdict", leaf.Tokens)
		}
		gd.After(nil)
		gd.End(nil)
		r.lost(t, g, LossErrored, 0)
		if s := g.Inspect(ec2Vpcs); s.InFlight != 0 || s.Breaker.State.String() != "closed" {
			t.Fatalf("%d in flight, breaker %s after the calls; want none, closed", s.InFlight, s.Breaker.State)
		}
	})
}
