//go:build go1.25

package resilience

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// With a shared store, where each read of a bucket is a round trip, Scopes
// reads an account's bucket once per accountReuse for all the account's
// scopes, not once per scope, and each scope is given what is left of the
// account's pause. Before, 40 scopes of one Azure subscription read its
// bucket 40 times.
func TestScopesReadAnAccountOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &countingStore{Store: MemoryStore()} // shared, to the governor
		g := newGov(t, Config{}, WithStateStore(store))
		ok := func(context.Context) error { return nil }
		const n = 40
		for i := range n {
			if err := Do(context.Background(), Scope{Provider: "azure", Account: "sub-1", Service: fmt.Sprint("svc", i)}, ok, WithGovernor(g)); err != nil {
				t.Fatal(err)
			}
		}
		p := g.provider("azure")
		p.scopes.mu.Lock()
		acct := p.scopes.accounts["sub-1"]
		p.scopes.mu.Unlock()
		if acct == nil || acct.bucket == nil {
			t.Fatal("setup: the subscription has no bucket")
		}
		acct.bucket.Pause(g.now(), 10*time.Second)
		store.reads.Store(0)
		seen := 0
		for sc, s := range g.Scopes() {
			// Each scope 10 ms after the one before: 4 reads of the
			// subscription's bucket over the 40 scopes' 400 ms.
			want := 10*time.Second - time.Duration(seen)*10*time.Millisecond
			if s.Account.Paused != want {
				t.Errorf("%v, %v into the iteration: the account's pause has %v left, want %v", sc, time.Duration(seen)*10*time.Millisecond, s.Account.Paused, want)
			}
			seen++
			time.Sleep(10 * time.Millisecond)
		}
		if seen != n {
			t.Fatalf("setup: %d scopes listed, want %d", seen, n)
		}
		// Each scope's leaf and breaker, and the subscription's bucket
		// once per accountReuse.
		accountReads := int64(n * 10 * time.Millisecond / accountReuse)
		if r := store.reads.Load() - 2*n; r != accountReads {
			t.Errorf("the subscription's bucket was read %d times for %d scopes over %v, want %d (once per %v)", r, n, n*10*time.Millisecond, accountReads, accountReuse)
		}
	})
}

// With a shared store, Scopes reads a provider's provider-wide bucket
// (global_max_rps) once per accountReuse for all the provider's scopes,
// as it reads an account's, and each scope is given the callers queued
// on it. 40 scopes of AWS in 40 accounts (no account bucket) read each
// scope's leaf and breaker, and the provider bucket 4 times in the
// iteration's 400 ms, not 40.
func TestScopesReadAProviderBucketOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rps := 1000.0
		store := &countingStore{Store: MemoryStore()} // shared, to the governor
		g := newGov(t, Config{AWS: ProviderConfig{GlobalMaxRPS: &rps, GlobalBurst: 1000}}, WithStateStore(store))
		ok := func(context.Context) error { return nil }
		const n = 40
		for i := range n {
			if err := Do(context.Background(), Scope{Provider: "aws", Account: fmt.Sprint(100000000000 + i), Service: fmt.Sprint("svc", i)}, ok, WithGovernor(g)); err != nil {
				t.Fatal(err)
			}
		}
		store.reads.Store(0)
		seen := 0
		for sc, s := range g.Scopes() {
			if s.Provider.Ceiling != rps {
				t.Errorf("%v: its provider bucket reads %+v, want its ceiling %v", sc, s.Provider, rps)
			}
			seen++
			time.Sleep(10 * time.Millisecond)
		}
		if seen != n {
			t.Fatalf("setup: %d scopes listed, want %d", seen, n)
		}
		providerReads := int64(n * 10 * time.Millisecond / accountReuse)
		if r := store.reads.Load() - 2*n; r != providerReads {
			t.Errorf("the provider bucket was read %d times for %d scopes over %v, want %d (once per %v)", r, n, n*10*time.Millisecond, providerReads, accountReuse)
		}
	})
}
