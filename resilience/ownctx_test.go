//go:build go1.25

package resilience

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/nestgate"
)

// An integration readies a retry or a resend with its attempt's context
// (cloudgaws's Finalize context), which answers Value(gov) with the
// call's own Guard. A call that borrowed its caller's slot and lent it on
// to a call nested in its attempt that goes on gives its loan back as its
// next attempt is readied (kept for the nested call), and borrows the
// caller's slot again once it comes back: the walk up the enclosing calls
// goes past the call's own Guard to the call that made it. With
// max_concurrency 1, the retry or resend goes as the nested call's 5 s
// are over.
func TestARetryReadiedWithItsOwnAttemptContextBorrowsTheEnclosingSlot(t *testing.T) {
	for _, verb := range []string{"readyResend", "Pace", "Admit"} {
		t.Run(verb, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
				var fl flights
				start := time.Now()
				err := Do(context.Background(), ec2Vpcs, func(ctx context.Context) error {
					gd, err := g.Begin(ctx, ec2Subnets)
					if err != nil {
						return err
					}
					var gate nestgate.Gate
					nestgate.Attach(gd, &gate)
					actx := &loopCtx{Context: ctx, gd: gd} // the attempt's context, as cloudgaws's
					if err := gd.Enter(ctx); err != nil {
						t.Fatalf("the nested call's Enter: %v", err)
					}
					gate.SetOpen(true)
					nested := make(chan error, 1)
					go func() { nested <- Do(actx, iamUsers, fl.work(5*time.Second), WithGovernor(g)) }()
					synctest.Wait() // the innermost call borrows the loan, and goes on
					gate.SetOpen(false)
					rctx, cancel := context.WithTimeout(actx, time.Minute)
					defer cancel()
					switch verb {
					case "readyResend": // its request failed before it was sent
						err = gd.readyResend(rctx)
					default:
						gd.After(transientErr())
						if _, err := gd.Retry(0); err != nil {
							t.Fatal(err)
						}
						if verb == "Pace" {
							err = gd.Pace(rctx)
						} else {
							err = gd.Admit(rctx)
						}
					}
					if took := time.Since(start); err != nil || took != 5*time.Second {
						t.Errorf("%s with the call's own attempt context: %v after %v; want <nil> after 5s, as the innermost call gives the loan back", verb, err, took)
					}
					if err == nil {
						fl.work(time.Second)(ctx) // the next attempt
						gd.After(nil)
					}
					gd.End(nil)
					if err := <-nested; err != nil {
						t.Errorf("the innermost call: %v", err)
					}
					return nil
				}, WithGovernor(g), WithNestedCalls())
				if err != nil {
					t.Fatal(err)
				}
				if fl.most() != 1 {
					t.Errorf("%d calls in flight at once, want 1: the account's cap is 1", fl.most())
				}
				checkSlotsBack(t, g)
			})
		})
	}
}

// So does a call's resend readied with its own attempt context find the
// probe of the call it is nested in: a call nested in an attempt, let
// through before the breaker opened, that readies its resend (its
// request failed before it was sent) while its caller's next attempt is
// the half-open breaker's probe borrows that probe, as it does when
// readied with the context it began with.
func TestAResendReadiedWithItsOwnAttemptContextBorrowsTheEnclosingProbe(t *testing.T) {
	for _, own := range []bool{false, true} {
		with := map[bool]string{false: "the context it began with", true: "its own attempt context"}[own]
		t.Run(with, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				ctx := context.Background()
				outer, _ := g.Begin(ctx, ec2Vpcs)
				if err := outer.Enter(ctx); err != nil {
					t.Fatal(err)
				}
				attempt := context.WithValue(ctx, g, outer)
				inner, _ := g.Begin(attempt, ec2Vpcs)
				if err := inner.Enter(attempt); err != nil {
					t.Fatal(err)
				}
				for range 5 { // other calls' throttles open the breaker
					sdkLoop(context.Background(), g, ec2Vpcs, 1, func() error { return throttle() })
				}
				outer.After(transientErr())
				if _, err := outer.Retry(0); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Minute) // the cooldown: the caller's retry is the probe
				if err := outer.Enter(ctx); err != nil || outer.lease != leaseProbe {
					t.Fatalf("the caller's retry: %v, lease %v; want the probe", err, outer.lease)
				}
				rctx := context.Context(attempt)
				if own {
					rctx = &loopCtx{Context: attempt, gd: inner}
				}
				if err := inner.readyResend(rctx); err != nil || inner.lease != leaseProbe {
					t.Errorf("the nested call's resend readied with %s: %v, lease %v; want it let through as the probe its caller's attempt lends", with, err, inner.lease)
				}
				inner.After(nil)
				inner.End(nil)
				outer.After(nil)
				outer.End(nil)
			})
		})
	}
}
