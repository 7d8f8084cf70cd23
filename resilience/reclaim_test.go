//go:build go1.25

package resilience

import (
	"context"
	"fmt"
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
// account in use, and an account whose only scope was dropped while a
// call still holds its slot, which keeps counting against the cap.
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
