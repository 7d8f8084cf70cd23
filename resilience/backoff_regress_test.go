//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// A half-open breaker whose probe is out in another call does not cut a
// retry's pause: the probe succeeds before the pause ends, and the retry
// goes. Before, the pause was cut as the probe went out, the retry
// refused, and its refusal counted a failure that reopened the breaker
// under the probe, whose success then changed nothing.
func TestBackoffIsNotCutWhileAProbeIsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{BreakerCooldownSeconds: 5}})
		release := make(chan struct{})
		n := 0
		fnA := func(context.Context) error {
			n++
			if n == 1 {
				<-release // sent while the breaker was closed
				return throttle()
			}
			return nil
		}
		pol := WithPolicy(RetryPolicy{MaxAttempts: 2, BaseDelay: 3 * time.Second, MaxBackoff: 3 * time.Second})
		done := make(chan error)
		go func() { done <- Do(context.Background(), ec2Subnets, fnA, WithGovernor(g), pol) }()
		synctest.Wait()
		openBreaker(t, g)
		time.Sleep(5 * time.Second) // cooldown over
		probeDone := make(chan error)
		go func() {
			probeDone <- Do(context.Background(), ec2Subnets, func(context.Context) error {
				time.Sleep(time.Second)
				return nil
			}, WithGovernor(g))
		}()
		synctest.Wait() // the probe is out
		if s := g.Inspect(ec2Subnets).Breaker.State; s != state.HalfOpen {
			t.Fatalf("breaker %v, want half-open", s)
		}
		start := time.Now()
		close(release) // A's attempt answers: throttled, retry allowed after 3 s
		err := <-done
		at := time.Since(start)
		if perr := <-probeDone; perr != nil {
			t.Fatalf("probe: %v", perr)
		}
		var coe *CircuitOpenError
		if errors.As(err, &coe) {
			t.Errorf("retry cut at %v and refused while the probe was out; the probe closed the breaker 1s later, the 3s backoff's retry would have succeeded", at)
		}
		if b := g.Inspect(ec2Subnets).Breaker; b.State != state.Closed {
			t.Errorf("after the probe's success the breaker is %v (wait %v): the cut retry's refusal counted a failure on the half-open breaker", b.State, b.Wait)
		}
	})
}

// A probe asleep in its backoff when another call's failure reopens its
// breaker holds nothing any more: its pause is cut when the new cooldown
// outlasts it (15 s doubled, 30 s, against the 19 s left), and otherwise
// its retry goes as any call's would, here as the new probe once the
// cooldown (5 s doubled, 10 s) is over. Before, the pause was never cut,
// and the retry was refused at its end with a wait of 0.
func TestAProbeWhoseBreakerReopenedRetriesAsAnyCall(t *testing.T) {
	for _, tc := range []struct {
		cooldown int
		cut      bool
	}{{15, true}, {5, false}} {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, Config{AWS: ProviderConfig{BreakerCooldownSeconds: float64(tc.cooldown)}})
			releaseC := make(chan struct{})
			cDone := make(chan error)
			go func() {
				cDone <- Do(context.Background(), ec2Subnets, func(context.Context) error {
					<-releaseC
					return throttle()
				}, WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
			}()
			synctest.Wait() // C is in flight, sent while closed
			openBreaker(t, g)
			time.Sleep(time.Duration(tc.cooldown) * time.Second)
			n := 0
			done := make(chan error)
			start := time.Now()
			var at time.Duration
			go func() {
				err := Do(context.Background(), ec2Subnets, always(&n, throttle()), WithGovernor(g), longBackoff)
				at = time.Since(start)
				done <- err
			}()
			synctest.Wait() // A is the probe, asleep in its 20 s backoff
			time.Sleep(time.Second)
			close(releaseC) // C fails: the half-open breaker opens again
			<-cDone
			if s := g.Inspect(ec2Subnets).Breaker.State; s != state.Open {
				t.Fatalf("breaker %v, want open", s)
			}
			err := <-done
			var coe *CircuitOpenError
			switch {
			case tc.cut && (!errors.As(err, &coe) || at != time.Second || n != 1):
				t.Errorf("cooldown %ds: %v after %d attempts at %v; want refused by the breaker at 1s, 1 attempt", tc.cooldown, err, n, at)
			case !tc.cut && (errors.As(err, &coe) || at != 20*time.Second || n != 2):
				t.Errorf("cooldown %ds: %v after %d attempts at %v; want the retry sent at 20s", tc.cooldown, err, n, at)
			}
		})
	}
}

// A Reset during a backoff retires the breaker it watched: the live one's
// opening cuts the pause, at once (the Reset wakes the watch, which then
// watches the live breaker). Before, the retired breaker was watched to
// the end of the pause; then, the live one from up to a second after the
// Reset, and an opening in that second cut the pause only at its end.
func TestBackoffWatchesTheLiveBreakerAfterAReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		n := 0
		start := time.Now()
		var at time.Duration
		done := make(chan error)
		go func() {
			err := Do(context.Background(), ec2Subnets, always(&n, throttle()), WithGovernor(g), longBackoff)
			at = time.Since(start)
			done <- err
		}()
		synctest.Wait() // asleep in its 20 s backoff
		g.Reset()
		openBreaker(t, g)
		opened := time.Since(start)
		err := <-done
		if !errors.Is(err, ErrCircuitOpen) {
			t.Errorf("the call ended with %v, want the breaker's refusal", err)
		}
		if at != opened {
			t.Errorf("the backoff was not cut when the live breaker opened at %v (ended at %v)", opened, at)
		}
	})
}
