package resilience

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

// watchedStore is the memory store whose buckets, breakers and budgets
// report every call of a method that is not a read (anything but
// Snapshot, Idle, Recovering, Pristine and Remaining) to writes.
type watchedStore struct {
	mu     sync.Mutex
	writes []string
}

func (s *watchedStore) wrote(what string) {
	s.mu.Lock()
	s.writes = append(s.writes, what)
	s.mu.Unlock()
}

func (s *watchedStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return watchedBucket{MemoryStore().Bucket(key, spec, now), s, key}
}

func (s *watchedStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return watchedBreaker{MemoryStore().Breaker(key, spec), s, key}
}

func (s *watchedStore) Budget(provider string, size int) state.Budget {
	return watchedBudget{MemoryStore().Budget(provider, size), s, provider}
}

type watchedBucket struct {
	state.Bucket
	s   *watchedStore
	key string
}

func (b watchedBucket) Reserve(now time.Duration) time.Duration {
	b.s.wrote("Reserve " + b.key)
	return b.Bucket.Reserve(now)
}

func (b watchedBucket) TryReserve(now time.Duration) bool {
	b.s.wrote("TryReserve " + b.key)
	return b.Bucket.TryReserve(now)
}

func (b watchedBucket) Cancel(now time.Duration) {
	b.s.wrote("Cancel " + b.key)
	b.Bucket.Cancel(now)
}

func (b watchedBucket) Throttle(now, pause time.Duration) (float64, bool) {
	b.s.wrote("Throttle " + b.key)
	return b.Bucket.Throttle(now, pause)
}

func (b watchedBucket) Pause(now, pause time.Duration) {
	b.s.wrote("Pause " + b.key)
	b.Bucket.Pause(now, pause)
}

func (b watchedBucket) Success(now time.Duration) (float64, bool) {
	b.s.wrote("Success " + b.key)
	return b.Bucket.Success(now)
}

type watchedBreaker struct {
	state.Breaker
	s   *watchedStore
	key string
}

func (b watchedBreaker) Allow(now time.Duration) (time.Duration, bool, bool) {
	b.s.wrote("Allow " + b.key)
	return b.Breaker.Allow(now)
}

func (b watchedBreaker) AllowProbe(now time.Duration) (time.Duration, bool) {
	b.s.wrote("AllowProbe " + b.key)
	return b.Breaker.AllowProbe(now)
}

func (b watchedBreaker) Success() bool {
	b.s.wrote("breaker Success " + b.key)
	return b.Breaker.Success()
}

func (b watchedBreaker) Failure(now time.Duration) bool {
	b.s.wrote("Failure " + b.key)
	return b.Breaker.Failure(now)
}

type watchedBudget struct {
	state.Budget
	s        *watchedStore
	provider string
}

func (b watchedBudget) Take() bool {
	b.s.wrote("Take " + b.provider)
	return b.Budget.Take()
}

func (b watchedBudget) Succeed() {
	b.s.wrote("Succeed " + b.provider)
	b.Budget.Succeed()
}

// oddScopes are scopes no call used, of known providers, of a provider
// nobody configured, of a disabled one, and with parts a hostile caller
// writes: '/', '*', '%', a newline, a byte that is not UTF-8, a long part.
func oddScopes() []Scope {
	long := strings.Repeat("x", 1<<16)
	var out []Scope
	for _, p := range []string{"aws", "azure", "gcp", "github", "nobody", "off", "a/b", "*", "%2F", "\n", "\xff"} {
		for _, a := range []string{"", "123456789012", "projects/p1", "*", "\r\n", "\xfe\xff", long} {
			for _, svc := range []string{"", "ec2", "iam", "resources", "x/y"} {
				out = append(out, Scope{Provider: p, Account: a, Region: "us-east-1", Service: svc, Operation: "DescribeVpcs"},
					Scope{Provider: p, Account: a, Service: svc})
			}
		}
	}
	return append(out, Scope{}, Scope{Account: "123456789012", Service: "ec2"})
}

// Every read of the governor is a read: asked of thousands of scopes no
// call has used (odd parts included, providers nobody configured, a
// disabled one), Inspect, Delay, a Survey's Look and Inspect, Scopes,
// Summary, Lifetime, the budgets' reads, Policy, Enabled, Providers and
// Config make no scope, no provider, no lifetime counters, and call no
// method of the store's state that changes it, in process and with a
// shared store (which Inspect asks for the scopes' state).
func TestReadsOfScopesNoCallUsedMakeNothing(t *testing.T) {
	off, fifty, hundred, ten := false, 50.0, 100.0, 10.0
	cfg := Config{
		AWS:       ProviderConfig{AccountMaxRPS: &fifty, GlobalMaxRPS: &hundred},
		Providers: map[string]ProviderConfig{"off": {Enabled: &off}, "github": {AccountMaxRPS: &ten}},
	}
	for _, shared := range []bool{false, true} {
		ws := &watchedStore{}
		var opts []GovernorOption
		if shared {
			opts = append(opts, WithStateStore(ws))
		}
		g, err := NewGovernor(cfg, opts...)
		if err != nil {
			t.Fatal(err)
		}
		providers, gen := g.Providers(), g.Generation()
		sv := g.Survey()
		for _, sc := range oddScopes() {
			g.Inspect(sc)
			g.Delay(sc)
			sv.Look(sc)
			sv.Inspect(sc)
			g.Lifetime(sc)
			g.Budget(sc.Provider)
			g.BudgetSize(sc.Provider)
			g.BudgetAndSize(sc.Provider)
			g.Policy(sc.Provider)
			g.Enabled(sc.Provider)
		}
		for range g.Scopes() {
			t.Fatal("Scopes yields a scope no call used")
		}
		g.Summary(nil)
		g.Summary(new(Stats))
		g.Config()
		if n := g.liveScopes(); n != 0 {
			t.Errorf("shared store %v: the reads made %d scopes", shared, n)
		}
		if got := g.Providers(); strings.Join(got, ",") != strings.Join(providers, ",") {
			t.Errorf("shared store %v: the reads made providers: %v, before %v", shared, got, providers)
		}
		if life := g.life.snapshot(); len(life) != 0 {
			t.Errorf("shared store %v: the reads made lifetime counters: %v", shared, life)
		}
		if g.Generation() != gen {
			t.Errorf("shared store %v: the reads moved the generation from %d to %d", shared, gen, g.Generation())
		}
		if len(ws.writes) != 0 {
			t.Errorf("shared store %v: the reads changed the store's state: %q", shared, ws.writes[:min(len(ws.writes), 5)])
		}
		if tot := g.Summary(nil).Totals; tot.Calls != 0 {
			t.Errorf("shared store %v: the reads counted %d calls", shared, tot.Calls)
		}
	}
}
