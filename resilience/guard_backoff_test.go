//go:build go1.25

package resilience_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

var backoffScope = resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}

type throttleAnswer struct{}

func (throttleAnswer) Error() string       { return "Throttling" }
func (throttleAnswer) ErrorCode() string   { return "Throttling" }
func (throttleAnswer) HTTPStatusCode() int { return 400 }

// retrying returns a guard of scope whose throttled attempt's retry was
// allowed: the moment an SDK sleeps its backoff.
func retryingGuard(t *testing.T, g *resilience.Governor) *resilience.Guard {
	t.Helper()
	gd, err := g.Begin(context.Background(), backoffScope)
	if err != nil {
		t.Fatal(err)
	}
	if err := gd.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	gd.Release()
	gd.After(throttleAnswer{})
	if _, err := gd.Retry(0); err != nil {
		t.Fatal(err)
	}
	return gd
}

// giveUps makes five calls of scope that give up: the breaker opens (or,
// half-open, the first is its probe, and the breaker opens again).
func giveUpsOf(g *resilience.Governor, n int) {
	for range n {
		resilience.Do(context.Background(), backoffScope, func(context.Context) error { return throttleAnswer{} },
			resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
	}
}

// Backoff sleeps its pause whole unless the breaker opens with a cooldown
// that outlasts it: then it ends as the breaker opens. A breaker whose
// cooldown ends first is slept through (and watched again after it: one
// that opens again, with its cooldown doubled past the backoff, ends it).
// A context that ends returns its error, and a zero backoff returns at once.
func TestGuardBackoff(t *testing.T) {
	cases := []struct {
		name     string
		cooldown float64 // breaker_cooldown_seconds; 0: the default, 60 s
		open     bool    // the breaker opens 1 s into the backoff
		reopen   bool    // the probe after the cooldown fails, the cooldown doubled
		cancel   bool    // the context ends 3 s into the backoff
		cut      bool
		err      error
	}{
		{name: "slept whole"},
		{name: "cut as the breaker opens", open: true, cut: true},
		{name: "a cooldown that ends first", cooldown: 5, open: true},
		{name: "cut when it opens again past the backoff", cooldown: 8, open: true, reopen: true, cut: true},
		{name: "the context ends", cancel: true, err: context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := resilience.Config{}
				if c.cooldown > 0 {
					cfg.AWS.BreakerCooldownSeconds = c.cooldown
				}
				g, err := resilience.NewGovernor(cfg)
				if err != nil {
					t.Fatal(err)
				}
				gd := retryingGuard(t, g)
				defer gd.End(nil)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				start := time.Now()
				want := 20 * time.Second // when Sleep returns
				changed := make(chan time.Duration, 1)
				switch {
				case c.open:
					go func() {
						time.Sleep(time.Second)
						giveUpsOf(g, 5)
						if c.reopen {
							time.Sleep(time.Duration(c.cooldown * float64(time.Second)))
							giveUpsOf(g, 1) // the probe fails: open again for twice the cooldown
						}
						changed <- time.Since(start)
					}()
				case c.cancel:
					time.AfterFunc(3*time.Second, cancel)
					want = 3 * time.Second
				}
				cut, err := gd.Backoff(ctx, 20*time.Second)
				at := time.Since(start)
				if c.cut {
					want = <-changed // the breaker's last opening
				}
				if cut != c.cut || at != want || !errors.Is(err, c.err) {
					t.Fatalf("cut %v at %v with %v; want cut %v at %v with %v", cut, at, err, c.cut, want, c.err)
				}
				synctest.Wait()
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		g, _ := resilience.NewGovernor(resilience.Config{})
		gd := retryingGuard(t, g)
		defer gd.End(nil)
		if cut, err := gd.Backoff(context.Background(), 0); cut || err != nil {
			t.Fatalf("a zero backoff: cut %v, %v", cut, err)
		}
	})
}
