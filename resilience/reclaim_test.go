//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// Idle scopes are gone within twice the reclaim interval, though no new
// scope arrives: the calls to the one scope still in use reclaim the
// others a bounded step at a time.
func TestIdleScopesGoWithinTwiceTheInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ok := func(context.Context) error { return nil }
		for i := range 10000 {
			Do(context.Background(), Scope{Provider: "aws", Account: fmt.Sprint(i), Service: "iam"}, ok, WithGovernor(g))
		}
		hot := Scope{Provider: "aws", Account: "hot", Service: "iam"}
		for range 120 { // a call a second for two minutes
			time.Sleep(time.Second)
			Do(context.Background(), hot, ok, WithGovernor(g))
		}
		if n := g.liveScopes(); n != 1 {
			t.Fatalf("%d live scopes after two intervals, want the one in use", n)
		}
		if c := g.Summary(nil).Totals.Calls; c != 10120 {
			t.Fatalf("lifetime calls %d, want 10,120", c)
		}
	})
}

// One call's share of a pass is bounded: it visits at most reclaimStep
// slots, however many scopes are idle.
func TestAReclaimStepIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ok := func(context.Context) error { return nil }
		for i := range 20000 {
			Do(context.Background(), Scope{Provider: "aws", Account: fmt.Sprint(i), Service: "iam"}, ok, WithGovernor(g))
		}
		time.Sleep(2 * time.Minute)
		before := g.liveScopes()
		Do(context.Background(), Scope{Provider: "aws", Account: "0", Service: "iam"}, ok, WithGovernor(g))
		if gone := before - g.liveScopes(); gone < 1 || gone > reclaimStep {
			t.Fatalf("one call reclaimed %d scopes, want between 1 and %d", gone, reclaimStep)
		}
	})
}

// A scope stored by one call is found by the next without the table's
// lock: after at most one miss, every key is on the lock-free path.
func TestEveryKeyIsLockFreeAfterOneMiss(t *testing.T) {
	g := newGov(t, Config{})
	tab := g.provider("aws").scopes
	for i := range 5000 {
		sc := Scope{Provider: "aws", Account: fmt.Sprint(i), Region: "r", Service: "ec2", Operation: "DescribeVpcs"}
		if e := tab.index.load(sc, hashScope(sc)); e != nil {
			t.Fatalf("%v found before it was made", sc)
		}
		e := tab.lookup(sc) // the one miss
		if got := tab.index.load(sc, hashScope(sc)); got != e {
			t.Fatalf("%v: not on the lock-free path after its miss", sc)
		}
	}
}

// Provider names used once are forgotten as idle scopes are: a program
// that calls many provider names does not keep each one.
func TestIdleProvidersAreForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ok := func(context.Context) error { return nil }
		for i := range 100 {
			Do(context.Background(), Scope{Provider: fmt.Sprint("p", i), Service: "rest"}, ok, WithGovernor(g))
		}
		for range 120 {
			time.Sleep(time.Second)
			Do(context.Background(), iamUsers, ok, WithGovernor(g))
		}
		if n := len(g.providers()) - 3; n != 0 {
			t.Fatalf("%d idle providers kept", n)
		}
		// A forgotten name works again, at its defaults.
		if err := Do(context.Background(), Scope{Provider: "p1", Service: "rest"}, ok, WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if c := g.Summary(nil).Totals.Calls; c != 221 {
			t.Fatalf("lifetime calls %d, want 221", c)
		}
	})
}

// When most accounts are gone the pass rebuilds the accounts map from the
// few left (ranging over the old map would cost its whole capacity): the
// account in use, and the account of a call in flight, whose slot keeps
// counting against the cap.
func TestAPassKeepsTheAccountsStillInUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 1}})
		ok := func(context.Context) error { return nil }
		for i := range 10000 {
			Do(context.Background(), Scope{Provider: "aws", Account: fmt.Sprint(i), Service: "iam"}, ok, WithGovernor(g))
		}
		busy := Scope{Provider: "aws", Account: "busy", Service: "iam"}
		held, err := g.Begin(context.Background(), busy)
		if err != nil {
			t.Fatal(err)
		}
		if err := held.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		hot := Scope{Provider: "aws", Account: "hot", Service: "iam"}
		for range 120 {
			time.Sleep(time.Second)
			Do(context.Background(), hot, ok, WithGovernor(g))
		}
		tab := g.provider("aws").scopes
		tab.mu.Lock()
		names := make([]string, 0, len(tab.accounts))
		for name := range tab.accounts {
			names = append(names, name)
		}
		peak := tab.accountsPeak
		tab.mu.Unlock()
		if len(names) != 2 || peak > 2 {
			t.Fatalf("accounts %v (peak %d) after the pass, want hot and busy", names, peak)
		}
		other, err := g.Begin(context.Background(), busy)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.TryEnter(); err == nil {
			t.Fatal("a second call of the busy account got a slot past its cap of 1")
		}
		other.End(nil)
		held.End(nil)
	})
}

// A call in flight keeps its scope however long it takes to answer (a
// large upload, a slow listing page): the scope's bucket is full again
// long before, but Scopes (a status page, in-flight gauges) lists it, with
// the call in flight, until the call gives its slot back, and then it is
// reclaimed as any idle scope. The same holds when a Reset or a Configure
// retires the scope's state while the call is in flight. Before, the
// scope was reclaimed a minute after its token and vanished from Scopes
// with the call still in flight.
func TestACallInFlightKeepsItsScope(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(g *Governor)
	}{
		{"alone", func(*Governor) {}},
		{"across a Reset", (*Governor).Reset},
		{"across a Configure keeping its buckets", func(g *Governor) {
			if err := g.Configure(Config{AWS: ProviderConfig{BreakerThreshold: 7}}); err != nil {
				panic(err)
			}
		}},
		{"across a Configure changing its buckets and breakers", func(g *Governor) {
			if err := g.Configure(Config{AWS: ProviderConfig{MaxRPS: 3, BreakerThreshold: 7}}); err != nil {
				panic(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{}, WithReclaimAfter(time.Second))
				ok := func(context.Context) error { return nil }
				step := func(seconds int) { // another scope's calls take the reclaimer's steps
					for range seconds {
						time.Sleep(time.Second)
						Do(context.Background(), ec2Subnets, ok, WithGovernor(g))
					}
				}
				listed := func() (bool, int) {
					for sc, s := range g.Scopes() {
						if sc == ec2Vpcs {
							return true, s.InFlight
						}
					}
					return false, 0
				}
				gd, err := g.Begin(context.Background(), ec2Vpcs)
				if err != nil {
					t.Fatal(err)
				}
				if err := gd.Enter(context.Background()); err != nil {
					t.Fatal(err)
				}
				step(5)
				c.change(g)
				step(10)
				if ok, n := listed(); !ok || n != 1 {
					t.Fatalf("15s into a call in flight: listed %v with %d in flight; want listed, 1 in flight", ok, n)
				}
				gd.Release()
				gd.End(nil)
				step(10)
				if ok, _ := listed(); ok {
					t.Fatal("10s after the call ended: still listed; an idle scope goes within twice the interval")
				}
			})
		})
	}
}

// A guard dropped without End while it held its slot uncounts itself from
// its scope when the collector gives the slot back, so that the scope is
// not kept for good. Real time, as TestDroppedGuardReleasesItsSlotWhenCollected.
func TestADroppedGuardLetsItsScopeGo(t *testing.T) {
	var buf logBuffer
	g := newGov(t, Config{}, WithLogger(buf.logger()))
	func() {
		gd, _ := g.Begin(context.Background(), ec2Vpcs)
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
	}()
	for i := 0; g.Inspect(ec2Vpcs).InFlight != 0; i++ {
		if i == 1000 {
			t.Fatalf("%d slots still held after %d collections", g.Inspect(ec2Vpcs).InFlight, i)
		}
		runtime.GC()
	}
	_, e := g.resolve(ec2Vpcs)
	if n := e.flags.busyCalls(); n != 0 {
		t.Fatalf("the scope counts %d calls in flight after the dropped guard's slot was given back, want 0", n)
	}
}

// A scope whose answers fail in a streak, its calls retrying (between
// attempts, they hold no slot) and none ended, holds what it learned: the
// streak, which makes the scope dead once it spans breaker_dead_seconds.
// The reclaimer keeps it, as it keeps a breaker that counted failures
// (dropping a scope changes no behaviour, WithReclaimAfter says): the
// scope is found dead as it is without a reclaimer, and its next call
// refused.
func TestTheReclaimerKeepsAScopesStreakOfFailures(t *testing.T) {
	for _, reclaim := range []time.Duration{time.Hour, time.Second} {
		t.Run(fmt.Sprint("reclaim after ", reclaim), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, Config{}, WithReclaimAfter(reclaim))
				gds := failingStreak(t, g)
				if s := g.Inspect(iamUsers); s.Dead != "down" {
					t.Fatalf("Inspect: Dead %q, breaker %v; want the scope found dead (\"down\")", s.Dead, s.Breaker.State)
				}
				sent := 0
				var coe *CircuitOpenError
				if err := Do(context.Background(), iamUsers, always(&sent, nil), WithGovernor(g)); !errors.As(err, &coe) || sent != 0 {
					t.Fatalf("the next call: %v, %d sent; want it refused, the scope dead", err, sent)
				}
				for _, gd := range gds {
					gd.End(transientErr())
				}
			})
		})
	}
}

// A Configure that turns breaker_dead_seconds on (from 0 to 10 s, the
// only setting it changes, so that the scopes are kept) makes the
// reclaimer keep a scope's streak of failures from then on, as a governor
// configured so from the start does (TestTheReclaimerKeepsAScopesStreakOfFailures):
// the reclaimer reads the settings in force, not those the scopes were
// made with, and the scope is found dead once its streak spans 10 s.
func TestTheReclaimerKeepsAStreakOnceConfigureTurnsDeadScopesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A cap of its own, so that the governor's first scope table is
		// made with breaker_dead_seconds 0, not with the defaults that
		// NewGovernor starts from.
		off, on := 0.0, 10.0
		g := newGov(t, Config{AWS: ProviderConfig{MaxConcurrency: 7, BreakerDeadSeconds: &off}}, WithReclaimAfter(time.Second))
		other := Scope{Provider: "aws", Account: "999", Service: "iam"}
		Do(context.Background(), other, func(context.Context) error { return nil }, WithGovernor(g))
		if err := g.Configure(Config{AWS: ProviderConfig{MaxConcurrency: 7, BreakerDeadSeconds: &on}}); err != nil {
			t.Fatal(err)
		}
		gds := failingStreak(t, g)
		defer func() {
			for _, gd := range gds {
				gd.End(transientErr())
			}
		}()
		if s := g.Inspect(iamUsers); s.Dead != "down" {
			t.Fatalf("Inspect: Dead %q, breaker %v; want the scope found dead (\"down\"): the reclaimer forgot its streak, reading breaker_dead_seconds 0 of the settings before Configure", s.Dead, s.Breaker.State)
		}
	})
}

// failingStreak makes five calls of iamUsers fail with transient errors,
// 2.5 s apart, each left waiting for its retry a minute away, while calls
// of another scope every 0.5 s take the reclaimer's steps; it returns 0.5
// s after the last failure, 10.5 s after the first, with the calls' Guards
// for the caller to end.
func failingStreak(t *testing.T, g *Governor) []*Guard {
	t.Helper()
	other := Scope{Provider: "aws", Account: "999", Service: "iam"}
	var gds []*Guard
	for i := range 5 {
		if i > 0 {
			for range 5 { // calls elsewhere take the reclaimer's steps
				time.Sleep(500 * time.Millisecond)
				Do(context.Background(), other, func(context.Context) error { return nil }, WithGovernor(g))
			}
		}
		gd, _ := g.Begin(context.Background(), iamUsers)
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		gd.Release()
		gd.After(transientErr())
		if _, err := gd.Retry(time.Minute); err != nil {
			t.Fatalf("call %d's retry: %v", i, err)
		}
		gds = append(gds, gd)
	}
	time.Sleep(500 * time.Millisecond) // 10.5 s after the first failure, 0.5 s after the last
	return gds
}
