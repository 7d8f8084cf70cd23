//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A function that joins a provider's answer and one of cloudg's refusals
// (a nested call's, for another scope) hands the governor both; the
// classifier reads a chain an error before its causes and a join's
// branches in order, and the first word decides, the hint included:
//
//   - errors.Join(answer, refusal) is the provider's answer. A throttle
//     is THROTTLED, an answer, with the answer's own hint: the call's
//     scope is slowed and paused for the provider's Retry-After, not for
//     the refusal's wait, which is another scope's; the call is retried
//     and, its attempts spent, lost as given up. A fatal answer is FATAL.
//   - errors.Join(refusal, answer) is cloudg's error, as a refusal that
//     wraps the answer it refused is: THROTTLED, no answer, the
//     refusal's wait its hint; the call ends at once and records nothing
//     (the call refused records its own loss).
func TestAJoinOfAnAnswerAndARefusalIsReadInOrder(t *testing.T) {
	const answerWait, refusalWait = 30 * time.Second, 5 * time.Second
	refusals := map[string]func() error{
		"a wait's refusal": func() error { return &WouldWaitError{Scope: ec2Vpcs, Err: ErrNoToken, Wait: refusalWait} },
		"an open breaker":  func() error { return &CircuitOpenError{Scope: ec2Vpcs, Wait: refusalWait} },
	}
	for name, refusal := range refusals {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				answerFirst := errors.Join(throttleAfter(answerWait), refusal())
				if k, answer := Classify(answerFirst), IsProviderAnswer(answerFirst); k != Throttled || !answer {
					t.Errorf("Join(throttle, refusal): %v, answer %v; want THROTTLED, the provider's answer", k, answer)
				}
				if d, ok := RetryAfter(answerFirst); !ok || d != answerWait {
					t.Errorf("Join(throttle, refusal): hint %v, %v; want the answer's %v", d, ok, answerWait)
				}
				if k := Classify(errors.Join(accessDenied(), refusal())); k != Fatal {
					t.Errorf("Join(denied, refusal): %v, want FATAL", k)
				}
				refusalFirst := errors.Join(refusal(), throttleAfter(answerWait))
				if k, answer := Classify(refusalFirst), IsProviderAnswer(refusalFirst); k != Throttled || answer {
					t.Errorf("Join(refusal, throttle): %v, answer %v; want THROTTLED, cloudg's error", k, answer)
				}
				if d, ok := RetryAfter(refusalFirst); !ok || d != refusalWait {
					t.Errorf("Join(refusal, throttle): hint %v, %v; want the refusal's %v", d, ok, refusalWait)
				}
				if k := Classify(errors.Join(refusal(), accessDenied())); k != Throttled {
					t.Errorf("Join(refusal, denied): %v, want THROTTLED, cloudg's error", k)
				}

				g := newGov(t, Config{})
				r := newRun(context.Background())
				sent := 0
				Do(r.ctx, iamUsers, always(&sent, answerFirst), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 2}))
				if sent != 2 {
					t.Errorf("Join(throttle, refusal): %d attempts, want 2 (retried as a throttle)", sent)
				}
				if p := g.Inspect(iamUsers).Leaf.Paused; p < answerWait-5*time.Second {
					t.Errorf("Join(throttle, refusal): the call's scope paused for %v; want the answer's %v, not the refusal's %v", p, answerWait, refusalWait)
				}
				r.lost(t, g, LossGaveUp, 1)

				g = newGov(t, Config{})
				r = newRun(context.Background())
				sent = 0
				Do(r.ctx, iamUsers, always(&sent, refusalFirst), WithGovernor(g))
				s := g.Inspect(iamUsers)
				if sent != 1 || s.Leaf.Paused != 0 || s.Leaf.Rate != s.Leaf.Ceiling {
					t.Errorf("Join(refusal, throttle): %d attempts, scope paused %v at %.1f of %.1f rps; want 1 attempt, the scope untouched", sent, s.Leaf.Paused, s.Leaf.Rate, s.Leaf.Ceiling)
				}
				r.lost(t, g, LossGaveUp, 0)
			})
		})
	}
}
