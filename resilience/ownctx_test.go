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
				if used, waiting := g.provider("aws").scopes.accountBulkhead(ec2Vpcs.Account).InUse(); used != 0 || waiting != 0 {
					t.Fatalf("bulkhead %d used, %d waiting after the calls; want 0, 0", used, waiting)
				}
			})
		})
	}
}
