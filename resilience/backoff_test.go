//go:build go1.25

package resilience

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// The sleeps before retries are counted as the call's backoff, apart from
// its waits for the rate limit: Call and Do's own, and an SDK's that
// drives a Guard and calls Pace before each retry.
func TestBackoffIsCountedApartFromWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// base = cap: every backoff is exactly 2 s.
		g := newGov(t, Config{AWS: ProviderConfig{BaseDelaySeconds: 2, MaxBackoffSeconds: 2}})
		ctx, stats := WithStats(context.Background())
		n := 0
		if err := Do(ctx, iamUsers, failing(&n, transientErr(), transientErr()), WithGovernor(g)); err != nil || n != 3 {
			t.Fatalf("Do: %v after %d attempts", err, n)
		}

		// An SDK's loop: it sleeps on its own between Retry and Pace.
		gd, err := g.Begin(ctx, ec2Vpcs)
		if err != nil {
			t.Fatal(err)
		}
		if err := gd.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		gd.After(transientErr())
		if _, err := gd.Retry(0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second) // the SDK's backoff
		if err := gd.Pace(ctx); err != nil {
			t.Fatal(err)
		}
		gd.After(nil)
		// The request succeeded: no retry is open, the SDK's is refused,
		// and nothing more is counted.
		if err := gd.Pace(ctx); !errors.Is(err, ErrCallEnded) {
			t.Fatalf("Pace after the success: %v, want ErrCallEnded", err)
		}
		gd.End(nil)

		sum := g.Summary(stats)
		iam, ec2 := sum.Scopes[serviceScope(iamUsers)], sum.Scopes[serviceScope(ec2Vpcs)]
		if iam.Backoff != 4*time.Second || iam.Wait != 0 || iam.Retries != 2 {
			t.Errorf("Do's scope: backoff %v, wait %v, %d retries; want 4s, 0, 2", iam.Backoff, iam.Wait, iam.Retries)
		}
		if ec2.Backoff != 3*time.Second || ec2.Wait != 0 {
			t.Errorf("the SDK's scope: backoff %v, wait %v; want 3s, 0", ec2.Backoff, ec2.Wait)
		}
		if sum.Totals.Backoff != 7*time.Second {
			t.Errorf("totals: backoff %v, want 7s", sum.Totals.Backoff)
		}
		// The governor's lifetime counts them too.
		if life := g.Summary(nil).Totals.Backoff; life != 7*time.Second {
			t.Errorf("lifetime backoff %v, want 7s", life)
		}
		b, err := json.Marshal(sum)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Scopes map[string]map[string]any `json:"scopes"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if got := m.Scopes[serviceScope(iamUsers).Key()]["backoff_seconds"]; got != 4.0 {
			t.Errorf("backoff_seconds %v in %s", got, b)
		}
	})
}

// A throttled retry's token wait is a wait, not backoff: the backoff ends
// where the retry asks for its token.
func TestBackoffEndsWhereTheTokenWaitBegins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxRPS: 1, Burst: 1}})
		ctx, stats := WithStats(context.Background())
		gd, err := g.Begin(ctx, iamUsers)
		if err != nil {
			t.Fatal(err)
		}
		if err := gd.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		gd.After(throttleAfter(5 * time.Second)) // paused for 5 s
		if _, err := gd.Retry(0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // the SDK's backoff, shorter than the pause
		start := time.Now()
		if err := gd.Pace(ctx); err != nil {
			t.Fatal(err)
		}
		waited := time.Since(start)
		gd.After(nil)
		gd.End(nil)
		c := g.Summary(stats).Scopes[serviceScope(iamUsers)]
		if c.Backoff != time.Second || c.Wait != waited || waited < 4*time.Second {
			t.Errorf("backoff %v, wait %v (Pace waited %v); want 1s and the rest as a wait", c.Backoff, c.Wait, waited)
		}
	})
}

// A max_backoff_seconds below the default base delay (0.5 s), with
// base_delay_seconds unset, is accepted (Validate does not compare an
// unset base delay) and caps every backoff: each is the cap.
func TestMaxBackoffBelowTheDefaultBaseDelayCapsEveryBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{AWS: ProviderConfig{MaxBackoffSeconds: 0.1}}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		g := newGov(t, cfg)
		ctx, stats := WithStats(context.Background())
		n := 0
		if err := Do(ctx, iamUsers, failing(&n, transientErr(), transientErr(), transientErr()), WithGovernor(g)); err != nil || n != 4 {
			t.Fatalf("Do: %v after %d attempts", err, n)
		}
		if b := g.Summary(stats).Totals.Backoff; b != 300*time.Millisecond {
			t.Fatalf("backoff %v after 3 retries, want 300ms (3 x 0.1 s)", b)
		}
	})
}
