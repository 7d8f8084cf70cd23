//go:build go1.25

package statuspage

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// pausableStore is a state store whose buckets a test can pause at the
// governor's time: it keeps the bucket of each key with the last time
// a call reserved a token of it, as a shared store's bucket that another
// process paused would be.
type pausableStore struct {
	state.Store
	mu      sync.Mutex
	buckets map[string]*pausableBucket
}

type pausableBucket struct {
	state.Bucket
	mu  sync.Mutex
	now time.Duration // the last reservation's time
}

func (b *pausableBucket) Reserve(now time.Duration) time.Duration {
	b.mu.Lock()
	b.now = now
	b.mu.Unlock()
	return b.Bucket.Reserve(now)
}

func (b *pausableBucket) TryReserve(now time.Duration) bool {
	b.mu.Lock()
	b.now = now
	b.mu.Unlock()
	return b.Bucket.TryReserve(now)
}

func (s *pausableStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.buckets[key]; ok {
		return b
	}
	if s.buckets == nil {
		s.buckets = map[string]*pausableBucket{}
	}
	b := &pausableBucket{Bucket: s.Store.Bucket(key, spec, now), now: now}
	s.buckets[key] = b
	return b
}

// pause pauses the bucket of key for d, from the last reservation of a
// token of it; it fails the test when no call made the bucket.
func (s *pausableStore) pause(t *testing.T, key string, d time.Duration) {
	t.Helper()
	s.mu.Lock()
	b := s.buckets[key]
	s.mu.Unlock()
	if b == nil {
		t.Fatalf("no bucket %q", key)
	}
	b.mu.Lock()
	now := b.now
	b.mu.Unlock()
	b.Pause(now, d)
}

// A pause of the provider's provider-wide bucket (global_max_rps), which
// holds every call of the provider, is marked as the provider's (prov)
// where it is the longest pause holding a scope, as a queue on it is:
// not as the account's (acct), which the scope of an account paused for
// less read, nor as the scope's own, without a mark, which the others
// read; and it holds every account, which reads paused with the
// provider's mark, as a queue on the provider's bucket makes the account
// queued. A scope whose account's own pause is the longest keeps that
// mark (acct).
func TestAProviderBucketsPauseIsMarkedAsTheProviders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := pausedEstate(t)
		compute, network, graph := pausedScopes[0], pausedScopes[1], pausedScopes[2]
		body := get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String()
		until := func(d time.Duration) string {
			return g.Clock().Now().Add(d).UTC().Format("2006-01-02 15:04:05 UTC")
		}
		rows := map[string]string{}
		for _, r := range rowsOf(body, "scopes") {
			for _, sc := range []resilience.Scope{compute, network, graph} {
				if strings.Contains(r, `data-scope="`+sc.Key()+`"`) {
					rows[sc.Account] = r
				}
			}
		}
		for acct, want := range map[string]string{
			"sub-1": `<td class="num hot paused" data-label="paused" title="every call held until ` + until(30*time.Second) + ` by its provider&#39;s pause (global_max_rps)">30s <span class="dim">prov</span></td>`,
			"sub-2": `<td class="num hot paused" data-label="paused" title="every call held until ` + until(30*time.Second) + ` by its provider&#39;s pause (global_max_rps)">30s <span class="dim">prov</span></td>`,
			"sub-3": `<td class="num hot paused" data-label="paused" title="every call held until ` + until(time.Minute) + ` by its account&#39;s pause">1m0s <span class="dim">acct</span></td>`,
		} {
			r, found := rows[acct]
			if !found {
				t.Fatalf("no row of %s:\n%s", acct, body)
			}
			if !strings.Contains(r, want) {
				_, cell, _ := strings.Cut(r, `data-label="paused"`)
				cell, _, _ = strings.Cut(cell, "</td>")
				t.Errorf("the scope of %s, whose longest pause is its %s's, has the paused cell %s; want %s", acct,
					map[string]string{"sub-1": "provider", "sub-2": "provider", "sub-3": "account"}[acct], cell, want)
			}
		}
		accounts := map[string]string{}
		for _, r := range rowsOf(body, "accounts") {
			for _, a := range []string{"sub-1", "sub-2", "sub-3"} {
				if strings.Contains(r, `data-account="azure/`+a+`"`) {
					accounts[a] = r
				}
			}
		}
		for acct, want := range map[string]string{
			"sub-1": `<td class="num hot paused" data-label="paused">30s <span class="dim">prov</span></td>`,
			"sub-2": `<td class="num hot paused" data-label="paused">30s <span class="dim">prov</span></td>`,
			"sub-3": `<td class="num hot paused" data-label="paused">1m0s</td>`,
		} {
			r := accounts[acct]
			_, cell, _ := strings.Cut(r, `data-label="paused"`)
			cell, _, _ = strings.Cut(cell, "</td>")
			if !strings.Contains(r, `data-status="paused"`) || !strings.Contains(r, want) {
				t.Errorf("the account %s, held by a pause: %s, its paused cell %s; want paused, and %s", acct, statusIn(r), cell, want)
			}
		}
	})
}

// The scopes of pausedEstate: one in each of three accounts of azure.
var pausedScopes = [3]resilience.Scope{
	{Provider: "azure", Account: "sub-1", Service: "compute"},
	{Provider: "azure", Account: "sub-2", Service: "network"},
	{Provider: "azure", Account: "sub-3", Service: "resourcegraph"},
}

// pausedEstate makes a governor, in the caller's synctest bubble, of
// azure with a provider-wide bucket (global_max_rps) paused for 30 s,
// and a scope in each of three accounts (pausedScopes): sub-1's not
// paused, sub-2's paused for 10 s (Guard.PauseAccount), sub-3's for a
// minute.
func pausedEstate(t *testing.T) *resilience.Governor {
	t.Helper()
	rps := 100.0
	st := &pausableStore{Store: resilience.MemoryStore()}
	g, err := resilience.NewGovernor(resilience.Config{Azure: resilience.ProviderConfig{GlobalMaxRPS: &rps, GlobalBurst: 100}},
		resilience.WithStateStore(st))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := resilience.Do(ctx, pausedScopes[0], func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
		t.Fatal(err)
	}
	for i, d := range []time.Duration{10 * time.Second, time.Minute} {
		gd, err := g.Begin(ctx, pausedScopes[i+1])
		if err != nil {
			t.Fatal(err)
		}
		if err := gd.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		gd.PauseAccount(d)
		gd.End(nil)
	}
	st.pause(t, "azure", 30*time.Second) // the provider's bucket
	return g
}

// statusIn is the data-status of a row of the page.
func statusIn(r string) string {
	_, s, _ := strings.Cut(r, `data-status="`)
	s, _, _ = strings.Cut(s, `"`)
	return s
}
