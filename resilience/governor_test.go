//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/sleep"
)

func TestConfigureIsIdempotentPerProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{GCP: ProviderConfig{MaxConcurrency: 4}}
		g := newGov(t, cfg)
		pol := WithPolicy(RetryPolicy{MaxAttempts: 1})
		azure := Scope{Provider: "azure", Account: "sub", Service: "network"}
		n := 0
		Do(context.Background(), ec2Vpcs, always(&n, throttle()), WithGovernor(g), pol)
		Do(context.Background(), azure, always(&n, throttle()), WithGovernor(g), pol)
		awsBefore, azBefore := g.provider("aws"), g.provider("azure")

		// The same configuration again: nothing is rebuilt.
		if err := g.Configure(cfg); err != nil {
			t.Fatal(err)
		}
		if g.provider("aws") != awsBefore || rate(g, ec2Vpcs) != 10 {
			t.Fatal("re-applying the same config reset AWS")
		}

		// Azure's cap changes: AWS is untouched, and Azure keeps its learned
		// rate and breaker (only the bucket or breaker settings drop them).
		cfg.Azure.MaxConcurrency = 8
		g.Configure(cfg)
		if g.provider("aws") != awsBefore || rate(g, ec2Vpcs) != 10 {
			t.Fatal("changing Azure reset AWS's learned rate")
		}
		if g.provider("azure") == azBefore || rate(g, azure) != 15 || g.Inspect(azure).MaxInFlight != 8 {
			t.Fatal("a new cap was not applied, or it dropped the learned rate")
		}
		cfg.Azure.MaxRPS = 12
		cfg.Azure.Services = map[string]ServiceConfig{"network": {MaxRPS: 40}}
		g.Configure(cfg)
		if rate(g, azure) != 40 {
			t.Fatal("changed bucket settings were not applied")
		}

		// Only AWS's retry settings change: buckets kept, budget renewed.
		awsBefore.budget.Take()
		cfg.AWS.MaxRetries = new(3)
		g.Configure(cfg)
		after := g.provider("aws")
		if after.scopes != awsBefore.scopes || rate(g, ec2Vpcs) != 10 {
			t.Fatal("a retry-only change rebuilt the buckets")
		}
		if after.budget == awsBefore.budget || after.budget.Remaining() != 500 {
			t.Fatal("a retry change kept the old budget")
		}
		// Only AWS's rates change: budget kept.
		after.budget.Take()
		cfg.AWS.MaxRPS = 25
		g.Configure(cfg)
		if g.provider("aws").budget != after.budget || g.provider("aws").scopes == after.scopes {
			t.Fatal("a rate change renewed the budget or kept the buckets")
		}
	})
}

func TestConfigureKeepsHeldSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{GCP: ProviderConfig{MaxConcurrency: 1}}
		g := newGov(t, cfg)
		sc := Scope{Provider: "gcp", Account: "projects/p", Service: "cloudasset"}
		hold := make(chan struct{})
		go Do(context.Background(), sc, func(context.Context) error { <-hold; return nil }, WithGovernor(g))
		synctest.Wait()
		g.Configure(cfg) // same settings: the held slot still counts
		started := false
		go Do(context.Background(), sc, func(context.Context) error { started = true; return nil }, WithGovernor(g))
		synctest.Wait()
		if started {
			t.Fatal("second call ran while the first held the only slot")
		}
		close(hold)
		synctest.Wait()
		if !started {
			t.Fatal("second call never ran")
		}
	})
}

func TestResetForgetsLearnedStateKeepsConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxRetries: new(0)}})
		n := 0
		Do(context.Background(), ec2Vpcs, always(&n, throttle()), WithGovernor(g))
		if rate(g, ec2Vpcs) != 10 || g.Summary(nil).Totals.Calls != 1 {
			t.Fatal("setup")
		}
		g.Reset()
		if rate(g, ec2Vpcs) != 20 {
			t.Fatal("Reset kept the learned rate")
		}
		if g.Summary(nil).Totals.Calls != 0 {
			t.Fatal("Reset kept the lifetime stats")
		}
		if *g.Config().AWS.MaxRetries != 0 {
			t.Fatal("Reset dropped the configuration")
		}
	})
}

// Generation moves with each replacement of the governor's state (Configure,
// Reset), and not with calls, throttles or reads: a scheduler keeps a
// refusal's wait while it holds, and asks again when it moves.
func TestGenerationMovesWithConfigureAndResetOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxRetries: new(0)}})
		g0 := g.Generation()
		n := 0
		Do(context.Background(), ec2Vpcs, always(&n, throttle()), WithGovernor(g))
		Do(context.Background(), ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g))
		g.Delay(ec2Vpcs)
		g.Inspect(ec2Vpcs)
		g.Summary(nil)
		if got := g.Generation(); got != g0 {
			t.Fatalf("Generation moved from %d to %d with calls and reads", g0, got)
		}
		g.Reset()
		g1 := g.Generation()
		if g1 == g0 {
			t.Fatal("Generation did not move with Reset")
		}
		if err := g.Configure(g.Config()); err != nil {
			t.Fatal(err)
		}
		if g.Generation() == g1 {
			t.Fatal("Generation did not move with Configure")
		}
		g2 := g.Generation()
		if err := g.Configure(Config{AWS: ProviderConfig{MaxRPS: -1}}); err == nil || g.Generation() != g2 {
			t.Fatalf("an invalid configuration: %v, Generation %d (want an error, and %d)", err, g.Generation(), g2)
		}
	})
}

// Generation starts at 0, as its godoc says, whichever way the governor
// was made: NewGovernor's and the zero Governor (Default's is one).
// The configuration a governor is made with replaces no state a caller
// could have read.
func TestGenerationStartsAtZero(t *testing.T) {
	g, err := NewGovernor(Config{AWS: ProviderConfig{MaxRPS: 5}})
	if err != nil {
		t.Fatal(err)
	}
	var zero Governor
	for _, c := range []struct {
		name string
		g    *Governor
	}{{"NewGovernor's", g}, {"the zero Governor", &zero}} {
		if got := c.g.Generation(); got != 0 {
			t.Errorf("%s Generation is %d as it is made, want 0", c.name, got)
		}
	}
	if err := g.Configure(Config{}); err != nil {
		t.Fatal(err)
	}
	if got := g.Generation(); got != 1 {
		t.Errorf("Generation is %d after the first Configure of NewGovernor's governor, want 1", got)
	}
}

// SetDefault(nil) replaces the process governor with a fresh one at the
// built-in defaults (the original's reset_governor).
func TestSetDefaultNilReplacesTheProcessGovernor(t *testing.T) {
	before := Default()
	Configure(Config{AWS: ProviderConfig{MaxRPS: 3}})
	SetDefault(nil)
	if Default() == before || Default().Config().AWS.MaxRPS != 0 {
		t.Fatal("SetDefault(nil) kept the old governor")
	}
	g := newGov(t, Config{})
	SetDefault(g)
	if Default() != g {
		t.Fatal("SetDefault(g) did not install g")
	}
	SetDefault(nil)
}

func TestZeroGovernorWorks(t *testing.T) {
	var g Governor
	if err := Do(context.Background(), iamUsers, func(context.Context) error { return nil }, WithGovernor(&g)); err != nil {
		t.Fatal(err)
	}
	if g.Summary(nil).Totals.Calls != 1 {
		t.Fatal("zero governor did not count")
	}
}

// TestIdleScopesAreReclaimed runs 1,000 accounts x 20 regions x 5 services
// (100,000 scopes) over virtual hours: the table keeps only recent or
// learned scopes, and a slowed scope survives every sweep.
func TestIdleScopesAreReclaimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ok := func(context.Context) error { return nil }
		n := 0
		Do(context.Background(), ec2Vpcs, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		peak := 0
		for acct := range 1000 {
			for region := range 20 {
				for _, svc := range []string{"iam", "sts", "lambda", "s3", "sqs"} {
					sc := Scope{Provider: "aws", Account: fmt.Sprint(acct), Region: fmt.Sprint("r", region), Service: svc}
					Do(context.Background(), sc, ok, WithGovernor(g))
				}
			}
			time.Sleep(time.Second) // each account's sweep takes a second
			if acct%10 == 9 {
				peak = max(peak, g.liveScopes())
			}
		}
		// At 100 new scopes a second, a minute of idleness keeps about
		// 6,000 scopes (and the table sweeps when it doubles).
		if peak > 16000 {
			t.Fatalf("peak %d live scopes for 100,000 used", peak)
		}
		if rate(g, ec2Vpcs) != 10 {
			t.Fatal("the slowed scope was reclaimed and forgot its rate")
		}
		s := g.Summary(nil)
		if s.Totals.Calls != 100001 {
			t.Fatalf("lifetime calls %d, want 100,001 (folded scopes still count)", s.Totals.Calls)
		}
		if len(g.provider("aws").scopes.accounts) > 200 {
			t.Fatalf("%d accounts kept", len(g.provider("aws").scopes.accounts))
		}
	})
}

func TestReclaimedScopeBehavesAsBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 1, Burst: 1}}}}, WithReclaimAfter(time.Second))
		ok := func(context.Context) error { return nil }
		Do(context.Background(), iamUsers, ok, WithGovernor(g))
		time.Sleep(2 * time.Second)
		g.provider("aws").scopes.sweep(g.now(), 0, 1<<20, time.Now().Add(time.Hour), nil)
		if g.liveScopes() != 0 {
			t.Fatal("idle scope not reclaimed")
		}
		start := time.Now()
		Do(context.Background(), iamUsers, ok, WithGovernor(g))
		Do(context.Background(), iamUsers, ok, WithGovernor(g))
		if time.Since(start) != time.Second {
			t.Fatalf("recreated scope paced at %v, want 1 s between calls", time.Since(start))
		}
	})
}

func TestScaledClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newScaledClock(10)
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 1, Burst: 1}}}}, WithClock(c))
		ok := func(context.Context) error { return nil }
		start := time.Now()
		for range 11 {
			Do(context.Background(), iamUsers, ok, WithGovernor(g))
		}
		// 10 s of clock time at 1 rps is 1 s of wall time.
		if el := time.Since(start); el < 999*time.Millisecond || el > 1001*time.Millisecond {
			t.Fatalf("took %v of wall time, want 1s", el)
		}
		if c.RealDuration(time.Minute) != 6*time.Second {
			t.Fatal("RealDuration")
		}
		// A context deadline of 0.5 s of wall time is 5 s of clock time: a
		// 1 s token wait fits, a 10 s one does not.
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		if err := Do(ctx, iamUsers, ok, WithGovernor(g)); err != nil {
			t.Fatalf("1 s of clock time within 5: %v", err)
		}
	})
}

func TestWithLoggerLogsBreakerChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{}, WithLogger(buf.logger()))
		n := 0
		for range 5 {
			Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		}
		if !buf.contains("circuit breaker open") || !buf.contains("aws/123456789012/*/iam") {
			t.Fatalf("log: %s", buf.String())
		}
	})
}

// TestCallHoldingAReclaimedEntry: a call looked its entry up, then a sweep
// reclaimed the entry and its account. The call's slot must come from the
// live account (so the cap holds) and its throttle must reach the live
// leaf (so the lesson is not lost).
func TestCallHoldingAReclaimedEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}}, WithReclaimAfter(time.Second))
		ps := g.provider("aws")
		var tr Guard
		tr.begin(context.Background(), g, iamUsers, nil)
		defer tr.End(nil)
		stale := tr.e
		time.Sleep(time.Minute)
		l := ps.scopes
		l.sweep(g.now(), 0, 1<<20, time.Now().Add(time.Hour), nil)
		l.mu.Lock()
		nAccounts := len(l.accounts)
		l.mu.Unlock()
		if !stale.flags.dead() || nAccounts != 0 {
			t.Fatalf("sweep: dead %v, %d accounts left", stale.flags.dead(), nAccounts)
		}
		// Another call creates the live entry and holds the only slot.
		hold := make(chan struct{})
		go Do(context.Background(), iamUsers, func(context.Context) error { <-hold; return nil }, WithGovernor(g))
		synctest.Wait()
		acquired := false
		go func() {
			tr.acquire(context.Background())
			acquired = true
		}()
		synctest.Wait()
		if acquired {
			t.Fatal("the stale call took a slot of the reclaimed account: two calls in flight with a cap of 1")
		}
		close(hold)
		synctest.Wait()
		if !acquired || tr.slot != l.lookup(iamUsers).acct.bulkhead {
			t.Fatal("the stale call did not get a slot of the live account")
		}
		tr.After(throttle())
		if rate(g, iamUsers) != 5 {
			t.Fatalf("live rate %v: the throttle went to the reclaimed entry", rate(g, iamUsers))
		}
	})
}

func TestClockAccessor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if _, ok := newGov(t, Config{}).Clock().(systemClock); !ok {
			t.Fatal("default clock is not the time package")
		}
		c := newScaledClock(4)
		g := newGov(t, Config{}, WithClock(c))
		if g.Clock() != Clock(c) {
			t.Fatal("WithClock's clock not returned")
		}
		start := time.Now()
		g.Clock().Sleep(context.Background(), 4*time.Second)
		if time.Since(start) != time.Second {
			t.Fatalf("slept %v of wall time for 4 s of a 4x clock", time.Since(start))
		}
	})
}

func TestLongTimesDoNotOverflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := ParseConfig([]byte("aws: {max_backoff_seconds: 1e10, breaker_cooldown_seconds: 600, breaker_max_cooldown_seconds: 1e10, deadline_seconds: 1152921504.606846976, base_delay_seconds: 1e10}\n"))
		if err != nil {
			t.Fatal(err)
		}
		g := newGov(t, cfg)
		r := g.Policy("aws")
		if r.MaxBackoff <= 0 || r.Deadline <= 0 || r.BaseDelay <= 0 {
			t.Fatalf("%+v", r)
		}
		// A throttled call backs off (for a very long time) instead of
		// retrying at once or not at all.
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		n := 0
		Do(ctx, iamUsers, always(&n, throttle()), WithGovernor(g))
		if n != 1 {
			t.Fatalf("%d attempts within an hour, want 1 (the next backoff is years away)", n)
		}
		// A breaker's cooldown is at most 600 s, but failed probes double it
		// up to its maximum, here very long: it grows, and never wraps to
		// none.
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		for range 5 {
			Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), once)
		}
		var coe *CircuitOpenError
		for probe := 0; ; probe++ {
			if err := Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g)); !errors.As(err, &coe) || coe.Wait <= 0 {
				t.Fatalf("after %d failed probes: %v", probe, err)
			}
			if coe.Wait >= 24*time.Hour {
				break
			}
			if probe == 20 {
				t.Fatalf("after %d failed probes the breaker opens for %v", probe, coe.Wait)
			}
			time.Sleep(coe.Wait + time.Second)
			Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), once) // the probe fails
		}
		// An explicit endless deadline keeps its retries.
		g2 := newGov(t, Config{})
		n = 0
		Do(context.Background(), iamUsers, failing(&n, throttle()), WithGovernor(g2), WithPolicy(RetryPolicy{Deadline: math.MaxInt64}))
		if n != 2 {
			t.Fatalf("%d attempts with a MaxInt64 deadline, want 2", n)
		}
	})
}

func TestOperationOverrideStartsFromItsService(t *testing.T) {
	g, _ := NewGovernor(Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{
		"iam": {MaxRPS: 3}, "iam.ListUsers": {MinRPS: 0.1}, "sts.GetCallerIdentity": {Burst: 5},
		"lambda.Invoke": {MaxRPS: 2},
	}}})
	set := g.provider("aws").set
	for _, c := range []struct {
		sc                 Scope
		rate, burst, floor float64
	}{
		{Scope{Service: "iam", Operation: "ListUsers"}, 3, 6, 0.1},
		{Scope{Service: "sts", Operation: "GetCallerIdentity"}, 50, 5, 0.2},
		{Scope{Service: "lambda", Operation: "Invoke"}, 2, 4, 0.2},
		{Scope{Service: "iam", Operation: "ListRoles"}, 3, 6, 0.2},
	} {
		sp := set.leafSpec(set.leafKey(c.sc))
		if sp.Rate != c.rate || sp.Capacity() != c.burst || sp.Floor != c.floor {
			t.Errorf("%v: %+v, want %v/%v floor %v", c.sc, sp, c.rate, c.burst, c.floor)
		}
	}
}

// Idle scopes are reclaimed by the calls that follow, a bounded step each,
// without any new scope: 6,000 scopes, two idle minutes, then 100 calls to
// one of them.
func TestIdleScopesAreReclaimedWithoutNewScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ok := func(context.Context) error { return nil }
		for i := range 6000 {
			Do(context.Background(), Scope{Provider: "aws", Account: fmt.Sprint(i), Service: "iam"}, ok, WithGovernor(g))
		}
		time.Sleep(2 * time.Minute)
		for range 100 {
			Do(context.Background(), Scope{Provider: "aws", Account: "0", Service: "iam"}, ok, WithGovernor(g))
		}
		if n := g.liveScopes(); n != 1 {
			t.Fatalf("%d live scopes two idle minutes later, want only the one in use", n)
		}
		if c := g.Summary(nil).Totals.Calls; c != 6100 {
			t.Fatalf("lifetime calls %d, want 6,100", c)
		}
	})
}

// scaledClock runs scale times faster than the wall clock, as a
// simulator's clock does; it has the RealDuration method the governor uses
// to compare its waits with a context's (wall-clock) deadline.
type scaledClock struct {
	scale float64
	start time.Time
}

func newScaledClock(scale float64) *scaledClock { return &scaledClock{scale: scale, start: time.Now()} }

func (c *scaledClock) Now() time.Time {
	return c.start.Add(time.Duration(float64(time.Since(c.start)) * c.scale))
}

func (c *scaledClock) Sleep(ctx context.Context, d time.Duration) error {
	return sleep.For(ctx, c.RealDuration(d))
}

func (c *scaledClock) RealDuration(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.scale)
}

// A new provider name costs the same whatever the number already known:
// adding one does not copy every other (20,000 names, then 1,000 more).
func TestManyProviderNamesDoNotCopyPerName(t *testing.T) {
	g := newGov(t, Config{})
	for i := range 20000 {
		g.provider(fmt.Sprintf("p%d", i))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 1000 {
		g.provider(fmt.Sprintf("q%d", i))
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 1000; per > 64<<10 {
		t.Fatalf("%d bytes allocated per new provider name at 20,000 names", per)
	}
}

// Inspect reads its time after it finds (or makes) the scope: a new
// scope shows its whole burst, not a burst minus what it earns before
// it was made.
func TestInspectOfANewScopeShowsItsWholeBurst(t *testing.T) {
	g := newGov(t, Config{}, WithClock(&tickingClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}))
	s := g.Inspect(Scope{Provider: "github", Account: "a", Service: "rest"})
	if s.Leaf.Tokens != s.Leaf.Ceiling*2 {
		t.Fatalf("a new scope shows %v tokens, want its burst of %v", s.Leaf.Tokens, s.Leaf.Ceiling*2)
	}
}

// A context's deadline far away bounds nothing a call waits: on a clock
// 1,000 times faster than the wall clock, 200 days of wall time are more
// than any configured time, and so are 300 years on a clock that keeps
// the wall clock's pace. The conversion to the governor's time saturates
// instead of wrapping to a deadline already past.
func TestFarContextDeadlinesDoNotOverflow(t *testing.T) {
	for _, c := range []struct {
		name  string
		scale float64
		far   func(time.Time) time.Time
	}{
		{"a 1000x clock, 200 days", 1000, func(now time.Time) time.Time { return now.Add(200 * 24 * time.Hour) }},
		{"a 1x clock, 300 years", 1, func(now time.Time) time.Time { return now.AddDate(300, 0, 0) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 1, Burst: 1}}}}
				g := newGov(t, cfg, WithClock(newScaledClock(c.scale)))
				ctx, cancel := context.WithDeadline(context.Background(), c.far(time.Now()))
				defer cancel()
				ok := func(context.Context) error { return nil }
				for i := range 3 { // the second and third wait a second of clock time for their token
					if err := Do(ctx, iamUsers, ok, WithGovernor(g)); err != nil {
						t.Fatalf("%s: call %d: %v", c.name, i+1, err)
					}
				}
			})
		})
	}
}

// Inspect of a scope no call has used, in an account whose bucket holds
// queued calls (a paused subscription), counts them in Queued, as it does
// for the account's scopes in use and as its Account snapshot shows: it
// said 0 beside an account balance of -5.
func TestInspectOfANewScopeCountsItsAccountsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		network := Scope{Provider: "azure", Account: "sub-1", Service: "network"}
		compute := Scope{Provider: "azure", Account: "sub-1", Service: "compute"}
		gd, _ := g.Begin(context.Background(), network)
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		gd.PauseAccount(10 * time.Second)
		gd.End(nil)
		for range 5 {
			go func() {
				n := 0
				Do(context.Background(), network, always(&n, nil), WithGovernor(g))
			}()
		}
		synctest.Wait()
		used, unused := g.Inspect(network), g.Inspect(compute)
		if used.Queued != 5 || unused.Account.Queued() != 5 || unused.Queued != 5 {
			t.Errorf("queued: %d in the scope in use, %d in the unused one (its account's bucket shows %d); want 5 each",
				used.Queued, unused.Queued, unused.Account.Queued())
		}
		time.Sleep(time.Minute)
	})
}
