//go:build go1.25

package resilience

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A scope's line says the rate it was slowed to as it is: GCP's Cloud
// Asset ListAssets, throttled down to its provider's floor of 0.05 rps,
// reads "slowed to 0.05 rps", not 0.1 (twice the rate it runs at), and a
// floor set lower reads as what it is, not 0.0 (a scope that stopped).
func TestASlowedScopesLineSaysItsRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		assets := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
		ctx, stats := WithStats(context.Background())
		for range 6 { // 1.5 rps halved to its floor, a congestion event a second
			gd, err := g.Begin(ctx, assets)
			if err != nil {
				t.Fatal(err)
			}
			gd.After(throttle())
			gd.End(throttle())
			time.Sleep(1100 * time.Millisecond)
		}
		if r := rate(g, assets); r != 0.05 {
			t.Fatalf("ListAssets runs at %v rps after six throttles, want gcp's floor 0.05", r)
		}
		lines := stats.Messages()
		if len(lines) != 1 || !strings.Contains(lines[0], ", slowed to 0.05 rps,") {
			t.Errorf("the run's lines %q; want ListAssets's to say it was slowed to 0.05 rps", lines)
		}
	})
}

// Counters' line says a rate of 1 rps or more with one decimal, as the
// spec's worked example has it ("slowed to 5.0 rps"), and a rate under 1
// rps, where one decimal would be a third or more off (0.165 read as
// 0.2, 0.149 as 0.1) or 0.0, with two significant digits.
func TestASlowedRateUnderATenthIsNotRoundedAway(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want string
	}{
		{5, "slowed to 5.0 rps"}, // the spec's worked example
		{20, "slowed to 20.0 rps"},
		{1.25, "slowed to 1.2 rps"},
		{1, "slowed to 1.0 rps"},
		{0.996, "slowed to 1.0 rps"},
		{0.165, "slowed to 0.17 rps"}, // azure storage's 0.33 halved
		{0.149, "slowed to 0.15 rps"},
		{0.5, "slowed to 0.5 rps"},
		{0.2, "slowed to 0.2 rps"},
		{0.1, "slowed to 0.1 rps"},
		{0.09375, "slowed to 0.094 rps"},
		{0.0125, "slowed to 0.013 rps"},
		{0.002, "slowed to 0.002 rps"},
	} {
		if got := (Counters{Throttled: 1, MinRate: c.rate}).message("x"); got != "x: throttled 1x, "+c.want {
			t.Errorf("slowed to %v rps: %q, want %q", c.rate, got, "x: throttled 1x, "+c.want)
		}
	}
}
