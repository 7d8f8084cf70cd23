//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// tokenlessRetries are the retries an SDK readies without Enter that take
// no token of their own: Admit's (after any answer) and Pace's after a
// transient answer.
var tokenlessRetries = []struct {
	name   string
	answer func() error
	ready  func(*Guard, context.Context) error
}{
	{"Admit after a throttle", throttle, (*Guard).Admit},
	{"Admit after a transient error", transientErr, (*Guard).Admit},
	{"Pace after a transient error", transientErr, (*Guard).Pace},
}

// pauseScopeBy pauses ec2Vpcs for d, at once, as another call of the
// scope does: with a throttle that carries a Retry-After, or with
// PauseAccount (ARM's remaining reads spent).
func pauseScopeBy(g *Governor, how string, d time.Duration) {
	other, _ := g.Begin(context.Background(), ec2Vpcs)
	if how == "PauseAccount" {
		other.PauseAccount(d)
		other.End(nil)
		return
	}
	other.End(throttleAfter(d))
}

// A paused scope sends nothing until its pause ends: every caller of the
// scope waits, a retry that takes no token too. A retry readied with
// Admit, or with Pace after a transient answer, while another call's
// Retry-After or a PauseAccount holds its scope (the leaf, or the account
// bucket) waits out the pause and goes at the scope's rate after it, as
// the calls the pause held do; a pause that outlasts the call's deadline
// ends the call at once, as a token wait past it ends Enter's retry: with
// the last answer, recorded as failed after its retries, nothing sent.
// Before, such a retry went at once, into the pause.
func TestATokenlessRetryIsHeldByAPause(t *testing.T) {
	acct := 20.0
	for _, tc := range tokenlessRetries {
		for _, how := range []string{"Retry-After", "PauseAccount"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					g := newGov(t, Config{AWS: ProviderConfig{AccountMaxRPS: &acct}})
					start := time.Now()
					gd, err := g.Begin(context.Background(), ec2Vpcs)
					if err != nil {
						t.Fatal(err)
					}
					if err := gd.Enter(context.Background()); err != nil {
						t.Fatal(err)
					}
					gd.Release()
					gd.After(tc.answer())
					delay, err := gd.Retry(0)
					if err != nil {
						t.Fatal(err)
					}
					pauseScopeBy(g, how, 60*time.Second)
					time.Sleep(delay) // the SDK's backoff, within the pause
					err = tc.ready(gd, context.Background())
					if sent := time.Since(start); err != nil || sent < 60*time.Second || sent > 61*time.Second {
						t.Errorf("%s, the scope paused at 0s for 60s (%s): sent at %v (%v), want within a second after the pause's end", tc.name, how, sent, err)
					}
					gd.After(nil)
					gd.End(nil)

					// The deadline comes before the pause's end (a
					// governor of its own: the first pause is over).
					g = newGov(t, Config{AWS: ProviderConfig{AccountMaxRPS: &acct}})
					r := newRun(context.Background())
					ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
					defer cancel()
					gd, err = g.Begin(ctx, ec2Vpcs)
					if err != nil {
						t.Fatal(err)
					}
					if err := gd.Enter(ctx); err != nil {
						t.Fatal(err)
					}
					gd.Release()
					gd.After(tc.answer())
					if delay, err = gd.Retry(0); err != nil {
						t.Fatal(err)
					}
					pauseScopeBy(g, how, 60*time.Second)
					time.Sleep(delay)
					readied := time.Now()
					err = tc.ready(gd, ctx)
					var ae *apiErr
					if !errors.As(err, &ae) || time.Since(readied) != 0 {
						t.Errorf("%s, the scope paused for 60s and the deadline 30s away: %v after %v; want the last answer at once, nothing sent", tc.name, err, time.Since(readied))
					}
					gd.End(err)
					kind := LossFailed
					if Classify(tc.answer()) == Throttled {
						kind = LossGaveUp
					}
					r.lost(t, g, kind, 1)
				})
			})
		}
	}
}

// So is one whose held slot is lent to a call nested in an attempt
// before, which goes on (until 10 s), and that waits for another slot
// meanwhile: the scope paused from 3 s for 60 s while it waited holds it
// when its slot comes back, as it holds a retry that takes a token
// (TestARetryWaitingForItsSlotIsHeldByAPause).
func TestATokenlessRetryWaitingForItsSlotIsHeldByAPause(t *testing.T) {
	acct := 20.0
	for _, tc := range tokenlessRetries {
		for _, how := range []string{"Retry-After", "PauseAccount"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1, AccountMaxRPS: &acct}})
					start := time.Now()
					ctx := context.Background()
					gd, nested := pacedOnALentSlot(t, g, ctx, tc.answer())
					go func() {
						time.Sleep(3*time.Second - time.Since(start))
						pauseScopeBy(g, how, 60*time.Second)
					}()
					err := tc.ready(gd, ctx)
					if sent := time.Since(start); err != nil || sent < 63*time.Second || sent > 64*time.Second {
						t.Errorf("%s, its slot back at 10s and the scope paused from 3s for 60s (%s): sent at %v (%v), want within a second after the pause's end", tc.name, how, sent, err)
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
}
