//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// inFn counts the calls inside fn and keeps the peak.
type inFn struct{ now, peak atomic.Int64 }

func (c *inFn) enter() {
	n := c.now.Add(1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (c *inFn) exit() { c.now.Add(-1) }

// held starts n calls that block inside fn until release is closed.
func held(g *Governor, sc Scope, n int, c *inFn, release chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			Do(context.Background(), sc, func(context.Context) error {
				c.enter()
				defer c.exit()
				<-release
				return nil
			}, WithGovernor(g))
		})
	}
	return &wg
}

// Raising the cap keeps the slots calls hold: from 2 to 3 with 2 inside and
// 2 waiting, exactly one more goes in.
func TestRaisingTheCapCountsHeldSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{AWS: ProviderConfig{MaxConcurrency: 2}}
		g := newGov(t, cfg)
		var c inFn
		release := make(chan struct{})
		wg := held(g, iamUsers, 4, &c, release)
		synctest.Wait()
		cfg.AWS.MaxConcurrency = 3
		g.Configure(cfg)
		synctest.Wait()
		if n := c.now.Load(); n != 3 {
			t.Fatalf("%d calls inside fn after raising the cap to 3", n)
		}
		more := held(g, iamUsers, 3, &c, release) // new calls queue too
		synctest.Wait()
		if n := c.now.Load(); n != 3 {
			t.Fatalf("%d calls inside fn with a cap of 3", n)
		}
		for range 10 { // ten flips between 2 and 3
			cfg.AWS.MaxConcurrency = 5 - cfg.AWS.MaxConcurrency
			g.Configure(cfg)
			synctest.Wait()
		}
		close(release)
		wg.Wait()
		more.Wait()
		if p := c.peak.Load(); p != 3 {
			t.Fatalf("peak %d inside fn, cap at most 3", p)
		}
	})
}

// Lowering the cap counts the slots held: 1 held, cap lowered to 1, and no
// slot is free.
func TestLoweringTheCapCountsHeldSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{AWS: ProviderConfig{MaxConcurrency: 2}}
		g := newGov(t, cfg)
		gd, _ := g.Begin(context.Background(), iamUsers)
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		cfg.AWS.MaxConcurrency = 1
		g.Configure(cfg)
		other, _ := g.Begin(context.Background(), iamUsers)
		var ww *WouldWaitError
		if err := other.TryEnter(); !errors.As(err, &ww) || !errors.Is(err, ErrNoSlot) {
			t.Fatalf("1 held, cap 1: TryEnter %v", err)
		}
		gd.End(nil)
		if err := other.TryEnter(); err != nil {
			t.Fatalf("after the release: %v", err)
		}
		other.End(nil)
	})
}

// Reset and a disable/enable keep the slots held: with cap 2, two calls in
// fn and two waiting, neither lets a third in, neither one that waited
// before nor one that starts after.
func TestResetAndDisableKeepTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{AWS: ProviderConfig{MaxConcurrency: 2}}
		g := newGov(t, cfg)
		var c inFn
		release := make(chan struct{})
		wg := held(g, iamUsers, 4, &c, release)
		synctest.Wait()
		g.Reset()
		if s := g.Inspect(iamUsers); s.InFlight != 2 || s.Waiting != 2 {
			t.Fatalf("after Reset: %d in flight, %d waiting, want the 2 and 2 of before", s.InFlight, s.Waiting)
		}
		afterReset := held(g, iamUsers, 2, &c, release)
		synctest.Wait()
		if n := c.now.Load(); n != 2 {
			t.Fatalf("%d calls inside fn after Reset, with a cap of 2", n)
		}
		off := cfg
		off.AWS.Enabled = new(false)
		g.Configure(off)
		g.Configure(cfg)
		afterEnable := held(g, iamUsers, 2, &c, release)
		synctest.Wait()
		if n := c.now.Load(); n != 2 {
			t.Fatalf("%d calls inside fn after a disable and enable, with a cap of 2", n)
		}
		close(release)
		wg.Wait()
		afterReset.Wait()
		afterEnable.Wait()
		if p := c.peak.Load(); p != 2 {
			t.Fatalf("peak %d inside fn, cap 2", p)
		}
		if s := g.Inspect(iamUsers); s.InFlight != 0 || s.Waiting != 0 {
			t.Fatalf("%d in flight, %d waiting after the calls", s.InFlight, s.Waiting)
		}
	})
}

// Reset forgets what was learned (the rate, the pause, the breaker, the
// budget) but not the slots of the calls in flight.
func TestResetForgetsLearnedStateButNotHeldSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		other := Scope{Provider: "aws", Account: "210987654321", Service: "iam"}
		inFlight, _ := g.Begin(context.Background(), other)
		if err := inFlight.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		n := 0
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		for range 5 { // five throttles open the breaker
			Do(context.Background(), ec2Vpcs, always(&n, throttleAfter(30*time.Second)), WithGovernor(g), once)
		}
		g.provider("aws").budget.Take()
		s := g.Inspect(ec2Vpcs)
		if s.Leaf.Rate >= 20 || s.Leaf.Paused == 0 || s.Breaker.State != state.Open || s.RetryBudget != 499 {
			t.Fatalf("setup: %+v", s)
		}
		g.Reset()
		s = g.Inspect(ec2Vpcs)
		if s.Leaf.Rate != 20 || s.Leaf.Paused != 0 || s.Breaker.State != state.Closed || s.Breaker.Failures != 0 || s.RetryBudget != 500 {
			t.Fatalf("after Reset: %+v", s)
		}
		if s := g.Inspect(other); s.InFlight != 1 {
			t.Fatalf("after Reset: %d in flight, want the call that holds its slot", s.InFlight)
		}
		next, _ := g.Begin(context.Background(), other)
		if err := next.TryEnter(); err == nil {
			t.Fatal("a second slot with a cap of 1 after Reset")
		}
		inFlight.End(nil)
		if err := next.TryEnter(); err != nil {
			t.Fatalf("after the release: %v", err)
		}
		next.End(nil)
	})
}

// A call that resolved its provider before a reconfiguration and looks its
// scope up after it lands in the table in force: an account made in the
// retired table would have a bulkhead of its own, outside the cap.
func TestLookupThroughARetiredTable(t *testing.T) {
	g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 2}})
	retired := g.provider("aws").scopes
	if err := g.Configure(Config{AWS: ProviderConfig{MaxConcurrency: 3}}); err != nil {
		t.Fatal(err)
	}
	sc := Scope{Provider: "aws", Account: "210987654321", Service: "iam"}
	e := retired.lookup(sc)
	cur := g.provider("aws").scopes
	if e != cur.lookup(sc) || e.acct.bulkhead != cur.accountBulkhead(sc.Account) || e.acct.bulkhead.Limit() != 3 {
		t.Fatal("a lookup through the retired table made state outside the table in force")
	}
}

// Breakers are dropped only when the breaker settings change, buckets only
// when the bucket settings do, the retry budget only when the retry
// settings do.
func TestReconfigureKeepsWhatItDoesNotChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{}
		g := newGov(t, cfg)
		once := WithPolicy(RetryPolicy{MaxAttempts: 1})
		n := 0
		for range 5 {
			Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), once)
		}
		budget := g.provider("aws").budget
		budget.Take()
		cfg.AWS.MaxConcurrency = 7
		g.Configure(cfg)
		var coe *CircuitOpenError
		if err := Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g)); !errors.As(err, &coe) {
			t.Fatalf("a new cap dropped the open breaker: %v", err)
		}
		if rate(g, iamUsers) != 5 {
			t.Fatalf("a new cap dropped the learned rate: %v", rate(g, iamUsers))
		}
		if b := g.provider("aws").budget; b != budget || b.Remaining() != 499 {
			t.Fatal("a new cap renewed the retry budget")
		}
		cfg.AWS.Services = map[string]ServiceConfig{"iam": {MaxRPS: 8}}
		g.Configure(cfg)
		if err := Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g)); !errors.As(err, &coe) {
			t.Fatalf("new bucket settings dropped the open breaker: %v", err)
		}
		if rate(g, iamUsers) != 8 || g.provider("aws").budget != budget {
			t.Fatalf("new bucket settings: rate %v (want the new 8), or the budget renewed", rate(g, iamUsers))
		}
		// The breaker is open, so the bucket learns a rate from a throttle
		// recorded on it directly.
		g.provider("aws").scopes.lookup(iamUsers).leaf.Throttle(g.now(), 0)
		cfg.AWS.MaxRetries = new(4)
		g.Configure(cfg)
		if err := Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g)); !errors.As(err, &coe) {
			t.Fatalf("new retry settings dropped the open breaker: %v", err)
		}
		if rate(g, iamUsers) != 4 || g.provider("aws").budget == budget {
			t.Fatalf("new retry settings: rate %v (want the learned 4), or the budget kept", rate(g, iamUsers))
		}
		cfg.AWS.BreakerThreshold = 9
		g.Configure(cfg)
		if err := Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g)); err != nil {
			t.Fatalf("new breaker settings kept the old breaker: %v", err)
		}
		if rate(g, iamUsers) != 4 {
			t.Fatalf("new breaker settings dropped the learned rate: %v", rate(g, iamUsers))
		}
		g.Reset()
		if rate(g, iamUsers) != 8 {
			t.Fatal("Reset kept the learned rate")
		}
	})
}

// A breaker a Configure keeps keeps why it opened: its refusals still say
// "after repeated throttling" (the message of the spec) or "throttled for
// good", and Inspect its OpenReason and Dead, after new bucket settings
// moved the scope to a new entry.
func TestAKeptBreakerKeepsWhyItOpened(t *testing.T) {
	for _, tc := range []struct {
		name    string
		callers int    // calls at once, each spending its retries
		once    bool   // one attempt each: the breaker counts 5 failed calls
		msg     string // the refusal's message
		reason  string // Inspect's OpenReason
		dead    string // and Dead
	}{
		{"after repeated throttling", 5, true, "circuit open for aws/123456789012/*/iam/ListUsers after repeated throttling; retry in 60s", "throttling", ""},
		{"throttled for good", 6, false, "circuit open for aws/123456789012/*/iam/ListUsers: throttled for good; retry in 60s", "throttled for good", "throttled for good"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{})
				opts := []CallOption{WithGovernor(g)}
				if tc.once {
					opts = append(opts, WithPolicy(RetryPolicy{MaxAttempts: 1}))
				}
				var wg sync.WaitGroup
				n := 0 // the calls that find the breaker open never run fn
				for range tc.callers {
					wg.Go(func() { Do(context.Background(), iamUsers, func(context.Context) error { return throttle() }, opts...) })
					if tc.once {
						wg.Wait()
					}
				}
				wg.Wait()
				check := func(when string) {
					t.Helper()
					var coe *CircuitOpenError
					err := Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g))
					if !errors.As(err, &coe) || err.Error() != tc.msg || coe.Reason != tc.reason {
						t.Fatalf("%s: the refusal is %v (reason %q), want %q (reason %q)", when, err, reasonOf(coe), tc.msg, tc.reason)
					}
					if s := g.Inspect(iamUsers); s.OpenReason != tc.reason || s.Dead != tc.dead {
						t.Fatalf("%s: Inspect says open reason %q, dead %q; want %q, %q", when, s.OpenReason, s.Dead, tc.reason, tc.dead)
					}
				}
				check("before the Configure")
				if err := g.Configure(Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 8}}}}); err != nil {
					t.Fatal(err)
				}
				check("after a Configure of new bucket settings, which keeps the breaker")
			})
		})
	}
}

func reasonOf(e *CircuitOpenError) string {
	if e == nil {
		return ""
	}
	return e.Reason
}

// Under concurrent Configure and Reset, the calls inside fn never exceed
// the cap in force (at most 3 here).
func TestCapHoldsUnderConcurrentReconfiguration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{AWS: ProviderConfig{MaxConcurrency: 2, Services: map[string]ServiceConfig{"iam": {MaxRPS: 1e6, Burst: 1e6}}}}
		g := newGov(t, cfg)
		var c inFn
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for range 24 {
			wg.Go(func() {
				for ctx.Err() == nil {
					Do(ctx, iamUsers, func(context.Context) error {
						c.enter()
						defer c.exit()
						time.Sleep(time.Millisecond)
						return nil
					}, WithGovernor(g))
				}
			})
		}
		configures, resets := 0, 0
		for ctx.Err() == nil {
			time.Sleep(300 * time.Microsecond)
			if configures%40 == 39 {
				g.Reset()
				resets++
			}
			cfg.AWS.MaxConcurrency = 5 - cfg.AWS.MaxConcurrency
			g.Configure(cfg)
			configures++
		}
		wg.Wait()
		if p := c.peak.Load(); p > 3 || p < 2 {
			t.Fatalf("peak %d inside fn after %d configures and %d resets, cap at most 3", p, configures, resets)
		}
		if configures < 1000 || resets < 20 {
			t.Fatalf("only %d configures and %d resets", configures, resets)
		}
	})
}

// Re-applying the same configuration keeps what was learned when the
// provider is per operation and several services are kept whole: the
// services kept whole are a set, whatever order the configuration's map
// gives them in.
func TestReapplyingPerOperationConfigKeepsTheLearnedRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		whole := func() *bool { return new(false) }
		cfg := Config{AWS: ProviderConfig{PerOperation: new(true), Services: map[string]ServiceConfig{
			"iam": {PerOperation: whole()}, "sts": {PerOperation: whole()},
			"organizations": {PerOperation: whole()}, "route53": {PerOperation: whole()},
			"lambda": {PerOperation: whole()}, "cloudformation": {PerOperation: whole()},
		}}}
		g := newGov(t, cfg)
		n := 0
		Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		learned := rate(g, iamUsers)
		if learned != 5 {
			t.Fatalf("setup: iam's rate %v after a throttle, want 5", learned)
		}
		for i := range 50 {
			if err := g.Configure(cfg); err != nil {
				t.Fatal(err)
			}
			if r := rate(g, iamUsers); r != learned {
				t.Fatalf("the same configuration applied %d times: iam's learned rate went from %v to %v", i+1, learned, r)
			}
		}
	})
}
