//go:build go1.26

package resilience

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// secrets is a scope paced at 1 rps with a burst of 1, so that n callers
// arriving together wait 1 s, 2 s, ... n-1 s.
var secrets = Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "secretsmanager", Operation: "DescribeSecret"}

var oneRPS = Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"secretsmanager": {MaxRPS: 1, Burst: 1}}}}

// callTogether makes n calls to scope at once under ctx and waits for them.
func callTogether(ctx context.Context, g *Governor, scope Scope, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			Do(ctx, scope, func(context.Context) error { return nil }, WithGovernor(g))
		})
	}
	wg.Wait()
}

// The summary says the wall-clock time a run waited beside the waits
// added up: 30 callers at 1 rps waited 1 + 2 + ... + 29 = 435 s in all,
// during 29 s. The scope's line and the totals' line say both, and the
// longest wait; JSON has both in the totals and in the scope's counters.
func TestSummarySaysTheWallClockTimeWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, oneRPS)
		ctx, stats := WithStats(context.Background())
		callTogether(ctx, g, secrets, 30)
		sum := g.Summary(stats)
		tot := sum.Totals
		if tot.Wait != 435*time.Second || tot.WaitElapsed != 29*time.Second || tot.MaxWait != 29*time.Second {
			t.Fatalf("waited %v in all, %v of wall-clock, %v the longest; want 435s, 29s, 29s", tot.Wait, tot.WaitElapsed, tot.MaxWait)
		}
		want := "aws/123456789012/us-east-1/secretsmanager: waited 435.0s for rate limit (summed over callers: 29.0s wall-clock, longest 29.0s)"
		if len(sum.Messages) != 1 || sum.Messages[0] != want {
			t.Errorf("messages %q\nwant %q", sum.Messages, want)
		}
		if s := tot.String(); !strings.HasSuffix(s, "wait_seconds: 435.000, wait_elapsed_seconds: 29.000, max_wait_seconds: 29.000}") {
			t.Errorf("totals %s", s)
		}
		b, err := json.Marshal(sum)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Totals map[string]float64
			Scopes map[string]map[string]any
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Totals["wait_seconds"] != 435 || m.Totals["wait_elapsed_seconds"] != 29 || m.Totals["max_wait_seconds"] != 29 {
			t.Errorf("totals %v", m.Totals)
		}
		if sc := m.Scopes[serviceScope(secrets).Key()]; sc["wait_elapsed_seconds"] != 29.0 {
			t.Errorf("scope %v", sc)
		}
		// The lifetime's summary says the same.
		if life := g.Summary(nil).Totals; life.WaitElapsed != 29*time.Second {
			t.Errorf("lifetime: waited %v of wall-clock", life.WaitElapsed)
		}
	})
}

// The run's wall-clock time waited is the union over its scopes: two
// scopes waiting at the same time count that time once, one waiting later
// adds its own. A scope's own is its callers' union.
func TestWallClockTimeWaitedIsTheUnionOverScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"secretsmanager": {MaxRPS: 1, Burst: 1}, "dynamodb": {MaxRPS: 1, Burst: 1}}}}
		g := newGov(t, cfg)
		ctx, stats := WithStats(context.Background())
		tables := Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "dynamodb", Operation: "DescribeTable"}
		var wg sync.WaitGroup
		wg.Go(func() { callTogether(ctx, g, secrets, 5) }) // waits 1..4 s, from 0
		wg.Go(func() { callTogether(ctx, g, tables, 3) })  // waits 1..2 s, from 0
		wg.Wait()
		time.Sleep(time.Minute)
		callTogether(ctx, g, tables, 4) // waits 1..3 s, a minute later
		sum := g.Summary(stats)
		if got := sum.Totals.WaitElapsed; got != 7*time.Second {
			t.Errorf("the run waited %v of wall-clock, want 4s + 3s", got)
		}
		if got := sum.Scopes[serviceScope(tables)].WaitElapsed; got != 5*time.Second {
			t.Errorf("dynamodb waited %v of wall-clock, want 2s + 3s", got)
		}
	})
}

// The worked example's line stays the spec's: its six callers' waits
// (5 s in all, during 2 s) are 2.5 times the wall-clock time and 3 s more,
// under the three times or ten seconds from which a line says the
// wall-clock time too. Waits three times the wall-clock time, or ten
// seconds more, say it.
func TestAShortOverlapKeepsTheSpecsLine(t *testing.T) {
	const scope = "aws/123456789012/eu-west-1/secretsmanager"
	c := Counters{Wait: 5 * time.Second, WaitElapsed: 2 * time.Second, MaxWait: 2 * time.Second, Waits: 4}
	if got, want := c.message(scope), scope+": waited 5.0s for rate limit"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if c.Overlapped() || strings.Contains(c.String(), "elapsed") {
		t.Errorf("totals %s", c)
	}
	for _, c := range []Counters{
		{Wait: 6 * time.Second, WaitElapsed: 2 * time.Second, MaxWait: 2 * time.Second},   // three times
		{Wait: 30 * time.Second, WaitElapsed: 20 * time.Second, MaxWait: 2 * time.Second}, // ten seconds more
	} {
		want := fmt.Sprintf("%s: waited %.1fs for rate limit (summed over callers: %.1fs wall-clock, longest 2.0s)", scope, c.Wait.Seconds(), c.WaitElapsed.Seconds())
		if got := c.message(scope); got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}

// A pause is named: the scope's line says how long it was paused (in
// wall-clock time, each instant once however many answers asked for it:
// three answers a second apart asking for 60 s paused it 62 s), and its
// counters count the pauses and the longest.
func TestSummaryNamesPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, stats := WithStats(context.Background())
		var gds []*Guard
		for range 3 { // three calls sent at once, each answered with 60 s
			gd, err := g.Begin(ctx, ec2Vpcs, WithPolicy(RetryPolicy{MaxAttempts: 1}))
			if err != nil {
				t.Fatal(err)
			}
			if err := gd.Enter(ctx); err != nil {
				t.Fatal(err)
			}
			gds = append(gds, gd)
		}
		for _, gd := range gds {
			gd.After(throttleAfter(60 * time.Second))
			time.Sleep(time.Second)
		}
		for _, gd := range gds {
			gd.End(throttleAfter(60 * time.Second))
		}
		sum := g.Summary(stats)
		sc := sum.Scopes[serviceScope(ec2Vpcs)]
		if sc.Pauses != 3 || sc.Paused != 62*time.Second || sc.MaxPause != 60*time.Second {
			t.Fatalf("pauses %d, paused %v, longest %v; want 3, 62s, 60s", sc.Pauses, sc.Paused, sc.MaxPause)
		}
		if len(sum.Messages) != 1 || !strings.Contains(sum.Messages[0], " rps, paused for 62.0s, 3 calls gave up") {
			t.Errorf("messages %q", sum.Messages)
		}
	})
}

// A proactive pause alone (a quota nearly spent, no throttling) makes a
// line of its own.
func TestAPauseAloneIsALine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, stats := WithStats(context.Background())
		gd, err := g.Begin(ctx, ec2Vpcs)
		if err != nil {
			t.Fatal(err)
		}
		gd.Pause(5 * time.Second)
		gd.End(nil)
		if m := stats.Messages(); len(m) != 1 || m[0] != "aws/123456789012/us-east-1/ec2: paused for 5.0s" {
			t.Errorf("messages %q", m)
		}
	})
}

// A scope throttled for good is named so: its line says why its breaker
// opened, and the summary's skipped reason too.
func TestSummarySaysThrottledForGood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, stats := WithStats(context.Background())
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				Do(ctx, iamUsers, func(context.Context) error { return throttle() }, WithGovernor(g))
			})
		}
		wg.Wait()
		if s := g.Inspect(iamUsers); s.OpenReason != "throttled for good" {
			t.Fatalf("the scope is not dead: %+v", s)
		}
		Do(ctx, iamUsers, func(context.Context) error { return nil }, WithGovernor(g)) // skipped
		sum := g.Summary(stats)
		key := serviceScope(iamUsers)
		sc := sum.Scopes[key]
		if sc.ThrottledForGood != 1 || sc.BreakerTrips != 1 {
			t.Fatalf("counters %+v", sc)
		}
		if len(sum.Messages) != 1 || !strings.Contains(sum.Messages[0], ", circuit opened 1x (throttled for good), ") {
			t.Errorf("messages %q", sum.Messages)
		}
		if r := sum.Skipped[key]; !strings.HasPrefix(r, "throttled for good, circuit open: ") {
			t.Errorf("skipped %q", r)
		}
	})
}
