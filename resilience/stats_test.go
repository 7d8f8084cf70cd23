//go:build go1.25

package resilience

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestSummaryMarshalsToTheSpecShape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"secretsmanager": {MaxRPS: 2, Burst: 2}}}})
		ctx, stats := WithStats(context.Background())
		n := 0
		Do(ctx, ec2Vpcs, failing(&n, throttle()), WithGovernor(g))
		sec := Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "secretsmanager"}
		for range 3 {
			Do(ctx, sec, func(context.Context) error { return nil }, WithGovernor(g))
		}
		b, err := json.Marshal(g.Summary(stats))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		totals := m["totals"].(map[string]any)
		// The spec's keys, then the longest wait and the wall-clock time
		// waited.
		want := map[string]float64{"calls": 5, "throttled": 1, "transient_errors": 0, "retries": 1, "gave_up": 0, "rejected": 0, "breaker_trips": 0, "wait_seconds": 0.5,
			"max_wait_seconds": 0.5, "wait_elapsed_seconds": 0.5}
		for k, v := range want {
			if totals[k] != v {
				t.Errorf("totals.%s = %v, want %v (%s)", k, totals[k], v, b)
			}
		}
		if len(totals) != len(want) {
			t.Errorf("totals keys %v", totals)
		}
		slowed := m["slowed_buckets"].(map[string]any)["aws/123456789012/us-east-1/ec2/DescribeVpcs"].(map[string]any)
		if slowed["rate_rps"] != 10.0 || slowed["ceiling_rps"] != 20.0 || slowed["paused_seconds"] != 0.0 {
			t.Errorf("slowed %v", slowed)
		}
		sc := m["scopes"].(map[string]any)["aws/123456789012/us-east-1/secretsmanager"].(map[string]any)
		if sc["calls"] != 3.0 || sc["waits"] != 1.0 || sc["wait_seconds"] != 0.5 || sc["max_wait_seconds"] != 0.5 {
			t.Errorf("scope %v", sc)
		}
		for _, k := range []string{"messages", "skipped", "breakers"} {
			if _, ok := m[k]; !ok {
				t.Errorf("no %s", k)
			}
		}
	})
}

func TestTotalsString(t *testing.T) {
	got := Counters{Calls: 9, Throttled: 2, Retries: 2, Wait: 4999 * time.Millisecond}.String()
	want := "{calls: 9, throttled: 2, transient_errors: 0, retries: 2, gave_up: 0, rejected: 0, breaker_trips: 0, wait_seconds: 4.999}"
	if got != want {
		t.Fatalf("%s\n%s", got, want)
	}
}

func TestMessagesFormat(t *testing.T) {
	c := new(counters)
	c.n[throttledTally].Store(3)
	c.minRate.Store(0)
	c.recordRate(2.5, true)
	c.n[transientTally].Store(1)
	c.n[retriesTally].Store(1)
	c.n[gaveUpTally].Store(2)
	c.n[rejectedTally].Store(4)
	c.n[tripsTally].Store(1)
	c.recordWait(1500 * time.Millisecond)
	got := c.snapshot().message("gcp/projects/p1/*/cloudasset")
	want := "gcp/projects/p1/*/cloudasset: throttled 3x, slowed to 2.5 rps, waited 1.5s for rate limit, 1 retry, circuit opened 1x, 4 calls skipped, 2 calls gave up"
	if got != want {
		t.Fatalf("%s\n%s", got, want)
	}
	for _, c := range []struct {
		c    Counters
		want string
	}{
		{Counters{Calls: 10, Wait: 999 * time.Millisecond}, ""},
		{Counters{Calls: 1, Wait: 100 * time.Millisecond}, ""},
		{Counters{Calls: 10, Retries: 2}, ""},
		{Counters{TransientErrors: 1, MinRate: 5}, "x: 1 transient error"}, // slowed only when throttled
		{Counters{BreakerTrips: 2}, "x: circuit opened 2x"},
		{Counters{GaveUp: 3, Retries: 1, Wait: 2 * time.Second}, "x: waited 2.0s for rate limit, 1 retry, 3 calls gave up"},
		{Counters{Wait: time.Second}, "x: waited 1.0s for rate limit"},
		{Counters{TransientErrors: 2, Retries: 2}, "x: 2 retries, 2 transient errors"},
		{Counters{Throttled: 1, TransientErrors: 2, MinRate: 10}, "x: throttled 1x, slowed to 10.0 rps"},
		{Counters{Throttled: 1}, "x: throttled 1x"},
		{Counters{Rejected: 1, GaveUp: 1}, "x: 1 call skipped, 1 call gave up"},
	} {
		if got := c.c.message("x"); got != c.want {
			t.Errorf("%+v: %q, want %q", c.c, got, c.want)
		}
	}
}

// The run's messages are one line per eventful scope, sorted by scope; a
// scope with only calls, retries or waits under a second has none.
func TestMessagesOnePerEventfulScopeSorted(t *testing.T) {
	sc := func(provider, account, service string) Scope {
		return Scope{Provider: provider, Account: account, Service: service}
	}
	table := map[Scope]Counters{
		sc("gcp", "projects/p1", "cloudasset"): {Calls: 3, TransientErrors: 3, Retries: 3},
		sc("aws", "123456789012", "iam"):       {Calls: 5, Retries: 1, Wait: 100 * time.Millisecond},
		sc("azure", "sub", "network"):          {Calls: 2, Throttled: 1, MinRate: 15, Retries: 1},
		sc("aws", "123456789012", "sts"):       {Calls: 1, Rejected: 1},
		sc("aws", "123456789012", "ec2"):       {Calls: 9, Wait: 1500 * time.Millisecond},
	}
	want := []string{
		"aws/123456789012/*/ec2: waited 1.5s for rate limit",
		"aws/123456789012/*/sts: 1 call skipped",
		"azure/sub/*/network: throttled 1x, slowed to 15.0 rps, 1 retry",
		"gcp/projects/p1/*/cloudasset: 3 retries, 3 transient errors",
	}
	for range 20 { // a map's order varies from one range to the next
		if got := messages(table); !slices.Equal(got, want) {
			t.Fatalf("messages\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestRunsKeepSeparateStatsAndTheLifetimeSeesBoth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctxA, a := WithStats(context.Background())
		ctxB, b := WithStats(context.Background())
		ok := func(context.Context) error { return nil }
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() { Do(ctxA, iamUsers, ok, WithGovernor(g)) })
			wg.Go(func() { Do(ctxB, iamUsers, ok, WithGovernor(g)) })
			wg.Go(func() { Do(ctxB, iamUsers, ok, WithGovernor(g)) })
		}
		wg.Wait()
		if g.Summary(a).Totals.Calls != 10 || g.Summary(b).Totals.Calls != 20 || g.Summary(nil).Totals.Calls != 30 {
			t.Fatal("runs mixed their stats")
		}
		// A ledger bound inside a run keeps the run's stats, and stats
		// bound inside a task keep the task's ledger.
		no := func(context.Context) error { return throttle() }
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		ctx, outer := WithStats(context.Background())
		ctx, l := WithLedger(ctx, "task")
		Do(ctx, iamUsers, no, WithGovernor(g), once)
		if g.Summary(outer).Totals.Calls != 1 || !l.Degraded() {
			t.Fatal("the ledger binding dropped the stats binding")
		}
		ctx, l2 := WithLedger(context.Background(), "task")
		ctx, inner := WithStats(ctx)
		Do(ctx, iamUsers, no, WithGovernor(g), once)
		if g.Summary(inner).Totals.Calls != 1 || !l2.Degraded() {
			t.Fatal("the stats binding dropped the ledger binding")
		}
	})
}

func TestLedgerDescribe(t *testing.T) {
	var l Ledger
	if l.Degraded() || l.Describe() != "" {
		t.Fatal("empty ledger degraded")
	}
	l.Record(LossGaveUp, iamUsers.String()+": "+DescribeError(throttle()))
	l.Record(LossSkipped, (&CircuitOpenError{Scope: ec2Subnets, Wait: 42 * time.Second, Reason: "throttling"}).Error())
	l.Record(LossSkipped, (&CircuitOpenError{Scope: ec2Subnets, Wait: 42 * time.Second, Reason: "throttling"}).Error())
	want := "throttled: 1 call(s) gave up after retries, 2 call(s) skipped (circuit open) (" +
		"aws/123456789012/*/iam/ListUsers: throttled: Throttling: Rate exceeded; " +
		"circuit open for aws/123456789012/us-east-1/ec2/DescribeSubnets after repeated throttling; retry in 42s)"
	if got := l.Describe(); got != want || !l.Degraded() {
		t.Fatalf("%s\n%s", got, want)
	}
	for i := range 10 {
		l.Record(LossGaveUp, Scope{Provider: "aws", Account: strings.Repeat("1", i+1)}.String()+": "+DescribeError(throttle()))
	}
	if len(l.Reasons()) != 5 {
		t.Fatalf("%d reasons, want at most 5", len(l.Reasons()))
	}
	var nilL *Ledger
	nilL.Record(LossGaveUp, "x")
	if nilL.Degraded() || nilL.Describe() != "" || nilL.Reasons() != nil {
		t.Fatal("nil ledger")
	}
}

func TestScopeString(t *testing.T) {
	for _, c := range []struct {
		s    Scope
		want string
	}{
		{Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2"}, "aws/123456789012/us-east-1/ec2"},
		{ec2Subnets, "aws/123456789012/us-east-1/ec2/DescribeSubnets"},
		{Scope{Provider: "azure", Service: "resourcegraph"}, "azure/*/*/resourcegraph"},
		{Scope{Provider: "gcp", Account: "organizations/1", Service: "cloudasset", Operation: "ListAssets"}, "gcp/organizations/1/*/cloudasset/ListAssets"},
		{Scope{}, "*/*/*/*"},
	} {
		if got := c.s.String(); got != c.want {
			t.Errorf("%#v: %q, want %q", c.s, got, c.want)
		}
	}
	if serviceScope(ec2Subnets) != (Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2"}) {
		t.Fatal("ServiceScope")
	}
}

// Scopes whose String forms coincide stay apart: counters and the Summary
// are keyed by the scope itself, and each entry carries its parts.
func TestSummaryKeepsScopesWithTheSameStringApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, stats := WithStats(context.Background())
		scopes := []Scope{
			{Provider: "gcp", Account: "a/b", Region: "c", Service: "s"},
			{Provider: "gcp", Account: "a", Region: "b/c", Service: "s"},
			{Provider: "aws", Account: "*", Service: "sts"},
			{Provider: "aws", Service: "sts"},
			{Provider: "x", Account: "p/q", Service: "s"},
			{Provider: "x", Account: "p", Region: "q", Service: "s"},
			{Provider: "x", Account: "p", Region: "q", Service: "s", Operation: "Op"}, // same service scope as the last
			{Provider: "x", Account: "p%2Fq", Service: "s"},
		}
		for _, sc := range scopes {
			Do(ctx, sc, func(context.Context) error { return nil }, WithGovernor(g))
		}
		sum := g.Summary(stats)
		if len(sum.Scopes) != 7 || sum.Totals.Calls != 8 {
			t.Fatalf("%d scopes, %d calls: %v", len(sum.Scopes), sum.Totals.Calls, sum.Scopes)
		}
		var calls int64
		for key, c := range sum.Scopes {
			calls += c.Calls
			if c.Scope != key {
				t.Errorf("entry %q carries the scope %+v", key, c.Scope)
			}
		}
		if calls != 8 {
			t.Fatalf("the entries hold %d of 8 calls", calls)
		}
		if c := sum.Scopes[sk("gcp/a%2Fb/c/s")]; c.Scope.Account != "a/b" || c.Calls != 1 {
			t.Fatalf("%+v", c)
		}
		// In JSON, each entry carries the scope's parts as fields.
		b, err := json.Marshal(sum)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Scopes map[string]struct {
				Scope map[string]string `json:"scope"`
			} `json:"scopes"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"provider": "gcp", "account": "a", "region": "b/c", "service": "s"}
		if got := out.Scopes["gcp/a/b%2Fc/s"].Scope; !maps.Equal(got, want) {
			t.Fatalf("JSON scope %v, want %v", got, want)
		}
	})
}

// A ledger keeps one reason for the calls an open breaker skipped over a
// minute, each told a second less to wait: a reason that differs only by
// its "retry in" is the same reason, and the others still have their place.
func TestLedgerReasonsDifferingOnlyByTheirWaitAreOne(t *testing.T) {
	var l Ledger
	for s := 60; s > 50; s-- {
		l.Record(LossSkipped, (&CircuitOpenError{Scope: ec2Subnets, Wait: time.Duration(s) * time.Second, Reason: "throttling"}).Error())
	}
	l.Record(LossGaveUp, iamUsers.String()+": "+DescribeError(throttle()))
	want := []string{
		"circuit open for aws/123456789012/us-east-1/ec2/DescribeSubnets after repeated throttling; retry in 60s",
		"aws/123456789012/*/iam/ListUsers: throttled: Throttling: Rate exceeded",
	}
	if got := l.Reasons(); !slices.Equal(got, want) {
		t.Fatalf("reasons %q, want %q", got, want)
	}
	for _, r := range []string{"retry in 5s", "x; retry in s", "x; retry in 5m", "x; retry in 1a2s"} {
		if reasonKey(r) != r {
			t.Errorf("reasonKey(%q) = %q, want it whole", r, reasonKey(r))
		}
	}
}
