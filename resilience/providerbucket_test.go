//go:build go1.25

package resilience

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// A provider's provider-wide bucket (global_max_rps) is shown by Inspect
// and Scopes as an account's bucket is: in the snapshot's Provider, and
// in Queued, which counts the callers waiting for its tokens, for the
// scopes in use and for a scope no call has used, in an account no call
// has used. Before, with AWS at global_max_rps 1 and 5 callers queued on
// it, every scope read Queued 0.
func TestInspectShowsTheProviderBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		one := 1.0
		g := newGov(t, Config{AWS: ProviderConfig{GlobalMaxRPS: &one, GlobalBurst: 1}})
		ec2 := Scope{Provider: "aws", Account: "111", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
		unused := Scope{Provider: "aws", Account: "222", Region: "eu-west-1", Service: "iam", Operation: "ListUsers"}
		if s := g.Inspect(unused); s.Provider.Rate != 1 || s.Provider.Ceiling != 1 || s.Provider.Tokens != 1 {
			t.Errorf("before any call, the provider bucket reads %+v; want rate 1, ceiling 1, 1 token", s.Provider)
		}
		if s := g.Inspect(Scope{Provider: "azure", Account: "sub-1", Service: "compute"}); s.Provider != (state.BucketSnapshot{}) {
			t.Errorf("azure, which has no provider bucket, reads %+v; want the zero snapshot", s.Provider)
		}
		ok := func(context.Context) error { return nil }
		for range 6 { // the first takes the one token, five queue for theirs
			go Do(context.Background(), ec2, ok, WithGovernor(g))
		}
		synctest.Wait()
		for _, c := range []struct {
			name string
			sc   Scope
		}{{"the scope in use", ec2}, {"a scope of an account no call has used", unused}} {
			s := g.Inspect(c.sc)
			if s.Provider.Queued() != 5 || s.Queued != 5 {
				t.Errorf("Inspect of %s: Queued %d, its provider bucket %+v (%d queued); want 5 queued on the provider bucket",
					c.name, s.Queued, s.Provider, s.Provider.Queued())
			}
		}
		for sc, s := range g.Scopes() {
			if s.Provider.Queued() != 5 || s.Queued != 5 {
				t.Errorf("Scopes: %v: Queued %d, its provider bucket %+v; want 5 queued on the provider bucket", sc, s.Queued, s.Provider)
			}
		}
		time.Sleep(time.Minute)
	})
}

// With a shared store (fleet mode), a process that has not used the
// provider reads the provider bucket the store holds, which another
// process's callers queue on: Inspect counts them, as it counts an
// account's. Before, it read Queued 0. AWS is a provider the governor
// always holds (its table's bucket is read); a provider known by name
// only, which no call of the process has used, has none (a handle made
// for the read is).
func TestInspectReadsTheStoredProviderBucket(t *testing.T) {
	for _, name := range []string{"aws", "oci"} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				one := 1.0
				pc := ProviderConfig{GlobalMaxRPS: &one, GlobalBurst: 1}
				cfg := Config{AWS: pc, Providers: map[string]ProviderConfig{"oci": pc}}
				store := &sharingStore{buckets: map[string]state.Bucket{}}
				busy, idle := newGov(t, cfg, WithStateStore(store)), newGov(t, cfg, WithStateStore(store))
				sc := Scope{Provider: name, Account: "111", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
				ok := func(context.Context) error { return nil }
				for range 6 {
					go Do(context.Background(), sc, ok, WithGovernor(busy))
				}
				synctest.Wait()
				if s := idle.Inspect(sc); s.Provider.Queued() != 5 || s.Queued != 5 {
					t.Errorf("Inspect by a process that has not used %s: Queued %d, its provider bucket %+v; want 5 queued on the provider bucket", name, s.Queued, s.Provider)
				}
				if name != "aws" && idle.existing(name) != nil {
					t.Errorf("Inspect made the state of %s, which no call of the process used", name)
				}
				time.Sleep(time.Minute)
			})
		})
	}
}

// sharingStore is the memory store sharing its buckets by key between the
// governors that use it, as a fleet's store shares them between processes.
type sharingStore struct {
	mu      sync.Mutex
	buckets map[string]state.Bucket
}

func (s *sharingStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.buckets[key]; ok {
		return b
	}
	b := MemoryStore().Bucket(key, spec, now)
	s.buckets[key] = b
	return b
}

func (s *sharingStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return MemoryStore().Breaker(key, spec)
}

func (s *sharingStore) Budget(provider string, size int) state.Budget {
	return MemoryStore().Budget(provider, size)
}
