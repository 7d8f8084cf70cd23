//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A governor fails closed: a retry an SDK readies with Pace or Admit
// after its call's request ended (the governor refused its retry, gave it
// up at its deadline, its context ended it, or it succeeded holding its
// slot) is refused with a *CallEndedError matching ErrCallEnded, which
// wraps what the call ended with (the refusal, which wraps the call's last
// answer), at once: nothing is sent, nothing waits,
// no token is taken, and nothing more is recorded, then or at End, whose
// ledger and stats count the call once. Before, Pace and Admit returned
// nil at once: an SDK that retried the governor's refusal (a retryer
// that retries by error code) sent its retry unpaced, unbreakered and
// uncounted, and a call that then succeeded stayed lost in the ledger.
func TestARetryReadiedAfterItsCallEndedIsRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		policy RetryPolicy
		// end ends the call's request on gd, begun with ctx and entered,
		// and returns the error it ended with.
		end    func(gd *Guard, cancel context.CancelFunc) error
		answer bool // the refusal wraps the provider's last answer
		lost   int  // calls the ledger holds once the call ended
	}{
		{name: "refused for its max wait", answer: true, lost: 1,
			end: func(gd *Guard, _ context.CancelFunc) error {
				gd.Release()
				gd.After(throttleAfter(19 * time.Second))
				_, err := gd.Retry(0)
				return err
			}},
		{name: "given up at its deadline", policy: RetryPolicy{Deadline: 3 * time.Second}, answer: true, lost: 1,
			end: func(gd *Guard, _ context.CancelFunc) error {
				gd.Release()
				gd.After(throttleAfter(19 * time.Second))
				_, err := gd.Retry(0)
				return err
			}},
		{name: "ended by its context", answer: true, lost: 1,
			end: func(gd *Guard, cancel context.CancelFunc) error {
				gd.Release()
				cancel()
				gd.After(throttle())
				return context.Canceled
			}},
		{name: "succeeded holding its slot",
			end: func(gd *Guard, _ context.CancelFunc) error {
				gd.After(nil)
				return nil
			}},
	} {
		for _, verb := range []string{"Pace", "Admit"} {
			t.Run(c.name+"/"+verb, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					g := newGov(t, Config{})
					ctx, stats := WithStats(context.Background())
					ctx, led := WithLedger(ctx, "task")
					ctx = WithMaxWait(ctx, 2*time.Second)
					ctx, cancel := context.WithCancel(ctx)
					defer cancel()
					var opts []CallOption
					if c.policy != (RetryPolicy{}) {
						opts = append(opts, WithPolicy(c.policy))
					}
					gd, err := g.Begin(ctx, ec2Vpcs, opts...)
					if err != nil {
						t.Fatal(err)
					}
					if err := gd.Enter(ctx); err != nil {
						t.Fatal(err)
					}
					ended := c.end(gd, cancel)
					phase := gd.phase
					before, tokens, lost := g.Summary(stats).Totals, g.Inspect(ec2Vpcs).Leaf.Tokens, led.Lost()
					if lost != c.lost {
						t.Fatalf("setup: the ledger lost %d calls, want %d: %q", lost, c.lost, led.Describe())
					}
					ready := gd.Pace
					if verb == "Admit" {
						ready = gd.Admit
					}
					start := time.Now()
					err = ready(context.Background())
					waited := time.Since(start)
					var ce *CallEndedError
					var ae *apiErr
					if !errors.Is(err, ErrCallEnded) || !errors.As(err, &ce) || ce.Scope != ec2Vpcs || errors.As(err, &ae) != c.answer || waited != 0 {
						t.Errorf("%s after the call was %s (%v, phase %v): %v after %v; want a *CallEndedError of %v matching ErrCallEnded (wrapping the last answer: %v) at once, the retry not sent",
							verb, c.name, ended, phase, err, waited, ec2Vpcs, c.answer)
					}
					if Classify(err) != Fatal || IsProviderAnswer(err) {
						t.Errorf("%v classifies as %v, a provider's answer: %v; want Fatal, cloudg's own", err, Classify(err), IsProviderAnswer(err))
					}
					if gd.phase != phase {
						t.Errorf("%s moved the Guard %v -> %v", verb, phase, gd.phase)
					}
					if after := g.Summary(stats).Totals; after != before {
						t.Errorf("%s recorded: stats %+v, were %+v", verb, after, before)
					}
					if now := g.Inspect(ec2Vpcs).Leaf.Tokens; now != tokens {
						t.Errorf("%s took a token: the leaf holds %v, held %v", verb, now, tokens)
					}
					if led.Lost() != lost {
						t.Errorf("%s recorded a loss: the ledger lost %d calls, had %d: %q", verb, led.Lost(), lost, led.Describe())
					}
					// The integration ends the call with the refusal, or
					// with what ended it: recorded once, as it was.
					gd.End(err)
					if led.Lost() != c.lost {
						t.Errorf("End(%v) after the refusal: the ledger lost %d calls, want %d: %q", err, led.Lost(), c.lost, led.Describe())
					}
					totals := g.Summary(stats).Totals
					if totals.Calls != 1 || totals.Retries != 0 {
						t.Errorf("the call counted %d calls and %d retries, want 1 and 0", totals.Calls, totals.Retries)
					}
				})
			})
		}
	}
}

// The resend of an attempt that never left the process (an integration's
// attemptctx.ReadyResend) fails closed as Pace does: on a Guard whose
// call ended (here, its retry refused for its max wait) it is refused
// with a *CallEndedError, at once, recording and taking nothing, not
// readied as a Guard with no attempt in progress is.
func TestAResendReadiedAfterItsCallEndedIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, stats := WithStats(context.Background())
		ctx, led := WithLedger(ctx, "task")
		ctx = WithMaxWait(ctx, 2*time.Second)
		gd, err := g.Begin(ctx, ec2Vpcs)
		if err != nil {
			t.Fatal(err)
		}
		if err := gd.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		gd.Release()
		gd.After(throttleAfter(19 * time.Second))
		if _, err := gd.Retry(0); err == nil {
			t.Fatal("the retry was allowed, want it refused for the max wait")
		}
		before, tokens := g.Summary(stats).Totals, g.Inspect(ec2Vpcs).Leaf.Tokens
		start := time.Now()
		err = gd.readyResend(ctx)
		if !errors.Is(err, ErrCallEnded) || time.Since(start) != 0 || gd.phase != phaseDone {
			t.Errorf("the resend of a call that ended (phase done): %v after %v, phase %v; want a *CallEndedError at once, nothing sent", err, time.Since(start), gd.phase)
		}
		if after := g.Summary(stats).Totals; after != before || g.Inspect(ec2Vpcs).Leaf.Tokens != tokens || led.Lost() != 1 {
			t.Errorf("the refused resend recorded or took something: stats %+v (were %+v), ledger %q", after, before, led.Describe())
		}
		gd.End(err)
		if led.Lost() != 1 {
			t.Errorf("End after the refused resend: the ledger lost %d calls, want 1: %q", led.Lost(), led.Describe())
		}
	})
}
