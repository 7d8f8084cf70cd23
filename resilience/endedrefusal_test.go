//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A call the governor stopped with a refusal ends with that refusal, as
// Guard's loop has it (the attempt's error, or what stopped it): Retry
// asked again answers it again (see Retry: after a stop, the error the
// call ended with), and the *CallEndedError that Pace and Admit answer a
// retry readied after the stop wraps it, so that errors.Is finds the
// refusal's sentinel (ErrBudgetExhausted, ErrNoToken, ErrCircuitOpen,
// context.DeadlineExceeded, the context's error) and its message says why
// the call ended, while errors.As still finds the provider's answer the
// refusal wraps. A call refused at its first attempt answers Retry with
// that refusal too, not with nil, which reads as a retry allowed.
func TestAStoppedCallAnswersWithTheRefusalThatStoppedIt(t *testing.T) {
	zero, one := 0, 1
	for _, c := range []struct {
		name     string
		cfg      Config
		policy   RetryPolicy
		maxWait  time.Duration
		sentinel error
		first    bool // the call is stopped at its first attempt (stop enters it): no answer to wrap
		// stop fails gd's attempt and has the governor stop the call,
		// returning the refusal.
		stop func(t *testing.T, g *Governor, gd *Guard, ctx context.Context, cancel context.CancelFunc) error
	}{
		{name: "the retry budget ran out", cfg: Config{AWS: ProviderConfig{RetryBudget: &zero}}, sentinel: ErrBudgetExhausted,
			stop: func(t *testing.T, _ *Governor, gd *Guard, ctx context.Context, _ context.CancelFunc) error {
				for range freeRetries {
					gd.After(transientErr())
					if _, err := gd.Retry(0); err != nil {
						t.Fatalf("a free retry: %v", err)
					}
					if err := gd.Enter(ctx); err != nil {
						t.Fatal(err)
					}
				}
				gd.After(transientErr())
				_, err := gd.Retry(0)
				return err
			}},
		{name: "a hint longer than the max wait", maxWait: 2 * time.Second, sentinel: ErrNoToken,
			stop: func(_ *testing.T, _ *Governor, gd *Guard, _ context.Context, _ context.CancelFunc) error {
				gd.After(throttleAfter(19 * time.Second))
				_, err := gd.Retry(0)
				return err
			}},
		{name: "a delay past the deadline", policy: RetryPolicy{Deadline: 3 * time.Second}, sentinel: context.DeadlineExceeded,
			stop: func(_ *testing.T, _ *Governor, gd *Guard, _ context.Context, _ context.CancelFunc) error {
				gd.After(throttleAfter(19 * time.Second))
				_, err := gd.Retry(0)
				return err
			}},
		{name: "a breaker that opened before the retry", cfg: Config{AWS: ProviderConfig{BreakerThreshold: one}}, sentinel: ErrCircuitOpen,
			stop: func(t *testing.T, g *Governor, gd *Guard, ctx context.Context, _ context.CancelFunc) error {
				gd.After(transientErr())
				gd.Release()
				if _, err := gd.Retry(0); err != nil {
					t.Fatal(err)
				}
				_ = Do(context.Background(), ec2Vpcs, func(context.Context) error { return transientErr() },
					WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
				return gd.Enter(ctx)
			}},
		{name: "a breaker open before the first attempt", cfg: Config{AWS: ProviderConfig{BreakerThreshold: one}}, sentinel: ErrCircuitOpen, first: true,
			stop: func(_ *testing.T, g *Governor, gd *Guard, ctx context.Context, _ context.CancelFunc) error {
				_ = Do(context.Background(), ec2Vpcs, func(context.Context) error { return transientErr() },
					WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
				return gd.Enter(ctx)
			}},
		{name: "a context that ended before the retry", sentinel: context.Canceled,
			stop: func(t *testing.T, _ *Governor, gd *Guard, ctx context.Context, cancel context.CancelFunc) error {
				gd.After(transientErr())
				gd.Release()
				if _, err := gd.Retry(0); err != nil {
					t.Fatal(err)
				}
				cancel()
				return gd.Enter(ctx)
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, c.cfg)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if c.maxWait > 0 {
					ctx = WithMaxWait(ctx, c.maxWait)
				}
				var opts []CallOption
				if c.policy != (RetryPolicy{}) {
					opts = append(opts, WithPolicy(c.policy))
				}
				gd, err := g.Begin(ctx, ec2Vpcs, opts...)
				if err != nil {
					t.Fatal(err)
				}
				if !c.first {
					if err := gd.Enter(ctx); err != nil {
						t.Fatal(err)
					}
				}
				stopped := c.stop(t, g, gd, ctx, cancel)
				if !errors.Is(stopped, c.sentinel) {
					t.Fatalf("setup: the call stopped with %v, want a refusal matching %v", stopped, c.sentinel)
				}
				if _, again := gd.Retry(0); again != stopped {
					t.Errorf("Retry after the stop: %T %v; want the refusal that stopped the call, %T %v", again, again, stopped, stopped)
				}
				var ae *apiErr
				for _, verb := range []string{"Pace", "Admit"} {
					ready := gd.Pace
					if verb == "Admit" {
						ready = gd.Admit
					}
					err := ready(context.Background())
					if !errors.Is(err, ErrCallEnded) || !errors.Is(err, stopped) || !errors.Is(err, c.sentinel) || errors.As(err, &ae) == c.first ||
						!strings.HasSuffix(err.Error(), ": "+stopped.Error()) {
						t.Errorf("%s after the stop: %v; want a *CallEndedError wrapping the refusal %q (matching %v, and the provider's answer but at a first attempt)", verb, err, stopped, c.sentinel)
					}
				}
				gd.End(stopped)
			})
		})
	}
}
