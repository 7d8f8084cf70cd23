//go:build go1.26

package resilience

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Providers other than aws, azure and gcp ("github", which cloudghttp
// uses, or any name) are reset, disabled, enabled and reclaimed exactly
// like the built-in ones, however often they were called before: a
// lookup after the change finds the provider the change made, never the
// one it retired (whose scope table sends a call back to the provider in
// force, which, were it still the retired one, would recurse until the
// stack overflows).

var githubRest = Scope{Provider: "github", Account: "octo", Service: "rest", Operation: "repos"}

// generic returns the provider state the governor holds for name, one
// other than aws, azure and gcp, or nil.
func generic(g *Governor, name string) *provider {
	for _, p := range g.providers()[3:] {
		if p.set.name == name {
			return p
		}
	}
	return nil
}

// A generic provider called twice (often enough for any read cache to
// answer it without a lock), then Reset, answers its next call from the
// fresh state: the rate it learned is forgotten.
func TestGenericProviderAfterReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ceiling := rate(g, githubRest)
		n := 0
		Do(context.Background(), githubRest, failing(&n, throttle()), WithGovernor(g))
		Do(context.Background(), githubRest, failing(&n), WithGovernor(g))
		if r := rate(g, githubRest); r >= ceiling {
			t.Fatalf("setup: rate %v after a throttle, ceiling %v", r, ceiling)
		}
		old := generic(g, "github")
		g.Reset()
		if err := Do(context.Background(), githubRest, failing(&n), WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if r := rate(g, githubRest); r != ceiling {
			t.Fatalf("rate %v after Reset, want the ceiling %v", r, ceiling)
		}
		p := g.provider("github")
		if p == old || p != generic(g, "github") || p.scopes.retired {
			t.Fatal("the call after Reset used the retired provider")
		}
		if c := g.Summary(nil).Totals.Calls; c != 1 {
			t.Fatalf("%d lifetime calls after Reset and one call, want 1", c)
		}
	})
}

// Configure(enabled: false) disables a generic provider already called,
// and enabling it again governs it again, from the state in force.
func TestGenericProviderFollowsEnabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		n := 0
		for range 3 {
			Do(context.Background(), githubRest, failing(&n), WithGovernor(g))
		}
		if !g.Enabled("github") {
			t.Fatal("setup: github not enabled")
		}
		for _, on := range []bool{false, true, false, true} {
			if err := g.Configure(Config{Enabled: new(on)}); err != nil {
				t.Fatal(err)
			}
			if got := g.Enabled("github"); got != on {
				t.Fatalf("Enabled(github) = %v after Configure(enabled: %v)", got, on)
			}
			calls := g.Summary(nil).Totals.Calls
			if err := Do(context.Background(), githubRest, failing(&n), WithGovernor(g)); err != nil {
				t.Fatal(err)
			}
			// A governed call is counted; an ungoverned one is not.
			if counted := g.Summary(nil).Totals.Calls - calls; counted != map[bool]int64{false: 0, true: 1}[on] {
				t.Fatalf("enabled %v: the call was counted %d times", on, counted)
			}
			if p := g.provider("github"); p.scopes.retired || p.set.enabled != on {
				t.Fatalf("enabled %v: the call used a retired provider (enabled %v)", on, p.set.enabled)
			}
		}
		// A Bound follows it too.
		b, _ := g.Bind(githubRest)
		b.Do(context.Background(), failing(&n))
		g.Configure(Config{Enabled: new(false)})
		calls := g.Summary(nil).Totals.Calls
		b.Do(context.Background(), failing(&n))
		if g.Summary(nil).Totals.Calls != calls {
			t.Fatal("a Bound of a disabled generic provider was governed")
		}
	})
}

// A generic provider called twice, then forgotten by the reclaimer after
// idle minutes, is made afresh by its next call, which uses the new one.
func TestGenericProviderAfterItIsReclaimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		n := 0
		Do(context.Background(), githubRest, failing(&n), WithGovernor(g))
		Do(context.Background(), githubRest, failing(&n), WithGovernor(g))
		old := generic(g, "github")
		if old == nil {
			t.Fatal("setup: github not held")
		}
		for range 180 { // calls to aws take the reclaimer's steps
			time.Sleep(time.Second)
			Do(context.Background(), iamUsers, failing(&n), WithGovernor(g))
		}
		if generic(g, "github") != nil || !old.scopes.retired {
			t.Fatal("setup: github not reclaimed after three idle minutes")
		}
		if err := Do(context.Background(), githubRest, failing(&n), WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		p := generic(g, "github")
		if p == nil || p == old || p.scopes.retired || len(p.scopes.live()) != 1 {
			t.Fatal("the call after the reclamation did not make and use a new provider")
		}
		if !g.Enabled("github") {
			t.Fatal("github disabled after its reclamation")
		}
	})
}

// Providers lists the providers the governor holds: aws, azure and gcp
// from the start, a generic provider from its first call (a read, such
// as Enabled, Budget or Inspect, makes none), still while it is
// disabled, and no more once the reclaimer forgot it; a Configure that
// drops its settings keeps it, as the governor does, with the generic
// defaults.
func TestProvidersListsWhatTheGovernorHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		budget := 7
		g := newGov(t, Config{Providers: map[string]ProviderConfig{"github": {RetryBudget: &budget}}})
		check := func(when string, want ...string) {
			t.Helper()
			if got := g.Providers(); !slices.Equal(got, want) {
				t.Errorf("%s: Providers() = %q, want %q", when, got, want)
			}
		}
		check("at the start", "aws", "azure", "gcp")
		g.Enabled("slack")
		g.Budget("slack")
		g.Inspect(Scope{Provider: "slack", Service: "chat"})
		check("after reads of slack", "aws", "azure", "gcp")
		n := 0
		Do(context.Background(), githubRest, failing(&n), WithGovernor(g))
		check("after a call to github", "aws", "azure", "gcp", "github")
		if err := g.Configure(Config{Enabled: new(false)}); err != nil {
			t.Fatal(err)
		}
		check("after a Configure that disabled every provider and dropped github's settings", "aws", "azure", "gcp", "github")
		if err := g.Configure(Config{}); err != nil {
			t.Fatal(err)
		}
		if got := g.Budget("github"); got != 500 {
			t.Fatalf("setup: github's budget %v after a Configure that dropped its settings, want the generic 500", got)
		}
		for range 180 { // calls to aws take the reclaimer's steps
			time.Sleep(time.Second)
			Do(context.Background(), iamUsers, failing(&n), WithGovernor(g))
		}
		if generic(g, "github") != nil {
			t.Fatal("setup: github not reclaimed after three idle minutes")
		}
		check("after the reclaimer forgot github", "aws", "azure", "gcp")
	})
}

// Many goroutines calling generic and built-in providers while others
// Reset and Configure the governor, and the reclaimer drops idle scopes
// and providers, all finish, and leave no goroutine behind.
func TestProvidersUnderResetAndConfigureChurn(t *testing.T) {
	before := runtime.NumGoroutine()
	// Time moves a millisecond at every reading, so that buckets refill
	// and the reclaimer finds scopes and providers idle.
	g := newGov(t, Config{}, WithClock(&tickingClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}), WithReclaimAfter(20*time.Millisecond))
	const workers, churns = 32, 300
	// The names after the fifth are called seldom, so that the reclaimer
	// finds them idle and drops them between calls.
	names := []string{"github", "slack", "aws", "azure", "gcp", "p0", "p1", "p2", "p3"}
	once := WithPolicy(RetryPolicy{MaxAttempts: 1})
	var working sync.WaitGroup
	var stop atomic.Bool
	var calls atomic.Int64
	for w := range workers {
		working.Go(func() {
			b, _ := g.Bind(Scope{Provider: names[w%len(names)], Account: "bound", Service: "s"})
			for i := 0; !stop.Load(); i++ {
				name := names[(w+i)%5]
				if i%10 == 0 {
					name = names[5+(w+i/10)%4]
				}
				sc := Scope{Provider: name, Account: fmt.Sprint(w % 4), Service: "s", Operation: fmt.Sprint(i % 8)}
				fn := func(context.Context) error { return nil }
				if i%5 == 0 {
					fn = func(context.Context) error { return throttle() }
				}
				Do(context.Background(), sc, fn, WithGovernor(g), once)
				b.Do(context.Background(), fn, once)
				g.Enabled(sc.Provider)
				g.Inspect(sc)
				calls.Add(1)
				time.Sleep(50 * time.Microsecond)
			}
		})
	}
	// The governor changes while the calls run: Resets, Configures that
	// flip enabled and that change the aws cap, and (the clock ticking)
	// the reclaimer's drops of idle scopes and providers.
	// At least churns of them, and on until the reclaimer has dropped an
	// idle provider (the generation counts each Reset, Configure and
	// drop, from 0), so that a slow run (-race) still drops one.
	churned := make(chan struct{})
	var churnsDone uint64
	go func() {
		defer close(churned)
		for i := 0; i < churns || g.gen.Load() == uint64(i) && i < 20*churns; i++ {
			churnsDone = uint64(i) + 1
			switch i % 3 {
			case 0:
				g.Reset()
			case 1:
				g.Configure(Config{Enabled: new(i%2 == 0)})
			case 2:
				g.Configure(Config{AWS: ProviderConfig{MaxConcurrency: 1 + i%4}})
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	done := make(chan struct{})
	go func() {
		<-churned
		stop.Store(true)
		working.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		var buf bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&buf, 1)
		t.Fatalf("calls still running after a minute:\n%s", buf.String())
	}
	drops := g.gen.Load() - churnsDone // Reset and Configure count one each
	t.Logf("%d calls, %d drops of idle providers during %d resets and configures", calls.Load(), drops, churnsDone)
	if n := calls.Load(); n < workers*10 || drops == 0 {
		t.Fatalf("only %d calls and %d drops of idle providers during %d resets and configures", n, drops, churnsDone)
	}
	if err := g.Configure(Config{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if !g.Enabled(name) {
			t.Fatalf("%s disabled after the last Configure enabled every provider", name)
		}
	}
	// Every goroutine the test started is gone (the orphan watchers of
	// Guards included), none spinning.
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			pprof.Lookup("goroutine").WriteTo(&buf, 1)
			t.Fatalf("%d goroutines left, %d before:\n%s", runtime.NumGoroutine(), before, buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Finding a generic provider already made does not allocate (the call
// path of cloudghttp's GitHub client looks "github" up on every call).
func TestGenericProviderLookupDoesNotAllocate(t *testing.T) {
	g := newGov(t, Config{})
	name := string([]byte("github")) // not a constant: its conversion to a key is the cost
	p := g.provider(name)
	if n := testing.AllocsPerRun(1000, func() {
		if g.provider(name) != p {
			t.Fatal("another provider")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per lookup of a generic provider", n)
	}
}

// Enabled and Policy are reads: they answer for a provider no call has
// used as its first call would find it, and make nothing (no provider,
// not even one named "").
func TestEnabledAndPolicyMakeNoProvider(t *testing.T) {
	cfg := Config{Providers: map[string]ProviderConfig{
		"github": {Enabled: new(false)},
		"gitlab": {MaxRetries: new(2)},
	}}
	g := newGov(t, cfg)
	if g.Enabled("github") || !g.Enabled("gitlab") || !g.Enabled("bitbucket") || g.Enabled("") {
		t.Fatalf("Enabled: github %v, gitlab %v, bitbucket %v, \"\" %v; want false, true, true, false",
			g.Enabled("github"), g.Enabled("gitlab"), g.Enabled("bitbucket"), g.Enabled(""))
	}
	if p := g.Policy("gitlab"); p.MaxAttempts != 3 {
		t.Fatalf("Policy(gitlab) %+v, want 3 attempts", p)
	}
	if p := g.Policy("bitbucket"); p.MaxAttempts != defaultMaxRetries+1 {
		t.Fatalf("Policy(bitbucket) %+v, want the defaults", p)
	}
	g.Policy("")
	if n := len(g.providers()); n != 3 {
		t.Fatalf("%d providers after reads only, want aws, azure and gcp", n)
	}
	// Once a call made one, they read it.
	n := 0
	Do(context.Background(), Scope{Provider: "gitlab", Service: "rest"}, failing(&n), WithGovernor(g))
	if len(g.providers()) != 4 || !g.Enabled("gitlab") || g.Policy("gitlab").MaxAttempts != 3 {
		t.Fatal("after a call to gitlab: its provider not made, or read wrong")
	}
}
