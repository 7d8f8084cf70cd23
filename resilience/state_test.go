//go:build go1.26

package resilience

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// recordingStore wraps the memory store and records what the governor
// asks of it.
type recordingStore struct {
	mu       sync.Mutex
	buckets  map[string]state.BucketSpec
	breakers map[string]state.BreakerSpec
	budgets  map[string]int
}

func (s *recordingStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	s.mu.Lock()
	s.buckets[key] = spec
	s.mu.Unlock()
	return MemoryStore().Bucket(key, spec, now)
}

func (s *recordingStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	s.mu.Lock()
	s.breakers[key] = spec
	s.mu.Unlock()
	return MemoryStore().Breaker(key, spec)
}

func (s *recordingStore) Budget(provider string, size int) state.Budget {
	s.mu.Lock()
	s.budgets[provider] = size
	s.mu.Unlock()
	return MemoryStore().Budget(provider, size)
}

func TestStateStoreReceivesKeysAndSpecs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &recordingStore{buckets: map[string]state.BucketSpec{}, breakers: map[string]state.BreakerSpec{}, budgets: map[string]int{}}
		g := newGov(t, Config{Azure: ProviderConfig{GlobalMaxRPS: new(100.0), RetryBudget: new(7)}}, WithStateStore(st))
		sc := Scope{Provider: "azure", Account: "sub", Service: "network"}
		if err := Do(context.Background(), sc, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if sp := st.buckets[sc.Key()]; sp.Rate != 30 || sp.Burst != 200 || sp.Floor != 0.1 || !sp.Adaptive {
			t.Fatalf("leaf spec %+v", sp)
		}
		if sp := st.buckets["azure/sub"]; sp.Rate != 20 || sp.Burst != 200 || sp.Adaptive {
			t.Fatalf("account spec %+v", sp)
		}
		if sp := st.buckets["azure"]; sp.Rate != 100 {
			t.Fatalf("provider spec %+v", sp)
		}
		if sp := st.breakers[sc.Key()]; sp.Threshold != 5 || sp.Cooldown.Seconds() != 60 || sp.MaxCooldown.Seconds() != 600 {
			t.Fatalf("breaker spec %+v", sp)
		}
		if st.budgets["azure"] != 7 || st.budgets["aws"] != 500 {
			t.Fatalf("budgets %v", st.budgets)
		}
	})
}

// Keys are unambiguous: no two scopes share one, whatever their parts hold.
func TestStateKeysAreUnambiguous(t *testing.T) {
	scopes := []Scope{
		{Provider: "gcp", Account: "a/b", Region: "c"},
		{Provider: "gcp", Account: "a", Region: "b/c"},
		{Provider: "aws", Account: "*"},
		{Provider: "aws"},
		{Provider: "aws", Account: "%2F"},
		{Provider: "aws", Account: "/"},
		{Provider: "aws", Service: "ec2", Operation: "X"},
		{Provider: "aws", Service: "ec2/X"},
	}
	seen := map[string]Scope{}
	for _, sc := range scopes {
		k := sc.Key()
		if prev, ok := seen[k]; ok {
			t.Fatalf("%+v and %+v share the key %q", prev, sc, k)
		}
		seen[k] = sc
	}
	if k := (Scope{Provider: "azure", Account: "sub", Service: "network"}).Key(); k != "azure/sub/*/network" {
		t.Fatalf("key %q", k)
	}
}

// The buckets of an account and of a provider never share a leaf's key,
// not even the leaf of a call scoped to a provider and an account alone,
// or to a provider alone.
func TestAccountAndProviderKeysAreNotLeafKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &recordingStore{buckets: map[string]state.BucketSpec{}, breakers: map[string]state.BreakerSpec{}, budgets: map[string]int{}}
		g := newGov(t, Config{Azure: ProviderConfig{GlobalMaxRPS: new(100.0)}}, WithStateStore(st))
		for _, sc := range []Scope{{Provider: "azure", Account: "sub"}, {Provider: "azure"}} {
			if err := Do(context.Background(), sc, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
				t.Fatal(err)
			}
		}
		want := map[string]float64{
			"azure/sub/*/*": 15,  // the leaf of {azure, sub}
			"azure/*/*/*":   15,  // the leaf of {azure}
			"azure/sub":     20,  // sub's account bucket
			"azure/*":       20,  // the account bucket of {azure}'s empty account
			"azure":         100, // the provider's bucket
		}
		for k, r := range want {
			if sp, ok := st.buckets[k]; !ok || sp.Rate != r {
				t.Errorf("bucket %q: %+v (made: %v), want rate %v", k, sp, ok, r)
			}
		}
		if len(st.buckets) != len(want) {
			t.Errorf("buckets %v", st.buckets)
		}
	})
}
