package resilience

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
)

// recordingStore wraps the memory store and records what the governor
// asks of it.
type recordingStore struct {
	mu       sync.Mutex
	buckets  map[Scope]BucketSpec
	breakers map[Scope]BreakerSpec
	budgets  map[string]int
}

func (s *recordingStore) Bucket(key Scope, spec BucketSpec, now int64) Bucket {
	s.mu.Lock()
	s.buckets[key] = spec
	s.mu.Unlock()
	return MemoryStore().Bucket(key, spec, now)
}

func (s *recordingStore) Breaker(key Scope, spec BreakerSpec) Breaker {
	s.mu.Lock()
	s.breakers[key] = spec
	s.mu.Unlock()
	return MemoryStore().Breaker(key, spec)
}

func (s *recordingStore) Budget(provider string, size int) Budget {
	s.mu.Lock()
	s.budgets[provider] = size
	s.mu.Unlock()
	return MemoryStore().Budget(provider, size)
}

func TestStateStoreReceivesKeysAndSpecs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &recordingStore{buckets: map[Scope]BucketSpec{}, breakers: map[Scope]BreakerSpec{}, budgets: map[string]int{}}
		g := newGov(t, Config{Azure: ProviderConfig{GlobalMaxRPS: new(100.0), RetryBudget: new(7)}}, WithStateStore(st))
		sc := Scope{Provider: "azure", Account: "sub", Service: "network"}
		if err := Do(context.Background(), sc, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		if sp := st.buckets[sc]; sp.Rate != 30 || sp.Burst != 200 || sp.Floor != 0.1 || !sp.Adaptive {
			t.Fatalf("leaf spec %+v", sp)
		}
		if sp := st.buckets[sc.AccountScope()]; sp.Rate != 20 || sp.Burst != 200 || sp.Adaptive {
			t.Fatalf("account spec %+v", sp)
		}
		if sp := st.buckets[Scope{Provider: "azure"}]; sp.Rate != 100 {
			t.Fatalf("provider spec %+v", sp)
		}
		if sp := st.breakers[sc]; sp.Threshold != 5 || sp.Cooldown.Seconds() != 60 || sp.MaxCooldown.Seconds() != 600 {
			t.Fatalf("breaker spec %+v", sp)
		}
		if st.budgets["azure"] != 7 || st.budgets["aws"] != 500 {
			t.Fatalf("budgets %v", st.budgets)
		}
	})
}
