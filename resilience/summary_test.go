//go:build go1.26

package resilience

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/state"
)

// The spec: summary["slowed_buckets"] lists buckets below their ceiling or
// paused, of every level: an account paused by PauseAccount holds every
// call of the account, and the report says so. Its key is the account
// bucket's own, provider/account, which no leaf's key (four or five parts)
// can be: not even that of a call scoped to the account alone.
func TestSummaryListsPausedAccountBuckets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &keptStore{buckets: map[string]state.Bucket{}}
		g := newGov(t, Config{Azure: ProviderConfig{GlobalMaxRPS: new(100.0)}, GCP: ProviderConfig{AccountMaxRPS: new(5.0)}}, WithStateStore(st))
		net1 := Scope{Provider: "azure", Account: "sub-1", Service: "network"}
		gd, _ := g.Begin(context.Background(), net1)
		gd.PauseAccount(3 * time.Second)
		gd.End(nil)
		gd, _ = g.Begin(context.Background(), Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset"})
		gd.PauseAccount(2 * time.Second)
		gd.End(nil)
		// Nothing in the governor pauses a provider's bucket, but the store's
		// bucket is the state: another process sharing it may have.
		st.bucket("azure").Pause(g.now(), time.Second)
		// A call scoped to the account alone has a leaf of its own,
		// azure/sub-1/*/*, here throttled: both are listed, apart.
		gd, _ = g.Begin(context.Background(), Scope{Provider: "azure", Account: "sub-1"})
		gd.After(throttle())
		gd.End(nil)

		b, err := json.Marshal(g.Summary(nil))
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Slowed map[string]map[string]float64 `json:"slowed_buckets"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		sum := g.Summary(nil)
		if a := sum.SlowedAccounts[Scope{Provider: "azure", Account: "sub-1"}]; a.Paused != 3*time.Second || a.Rate != 20 {
			t.Errorf("SlowedAccounts %v, want azure/sub-1 paused 3s", sum.SlowedAccounts)
		}
		if a := sum.SlowedAccounts[Scope{Provider: "gcp", Account: "projects/p1"}]; a.Paused != 2*time.Second || a.Rate != 5 {
			t.Errorf("SlowedAccounts %v, want gcp/projects/p1 paused 2s", sum.SlowedAccounts)
		}
		if p := sum.SlowedProviders["azure"]; p.Paused != time.Second || p.Rate != 100 || len(sum.SlowedProviders) != 1 {
			t.Errorf("SlowedProviders %v, want azure paused 1s", sum.SlowedProviders)
		}
		if len(sum.SlowedAccounts) != 2 || len(sum.SlowedBuckets) != 1 {
			t.Errorf("SlowedAccounts %v, SlowedBuckets %v, want 2 accounts and the one leaf", sum.SlowedAccounts, sum.SlowedBuckets)
		}
		want := map[string]map[string]float64{
			"azure/sub-1":       {"rate_rps": 20, "ceiling_rps": 20, "paused_seconds": 3},
			"gcp/projects%2Fp1": {"rate_rps": 5, "ceiling_rps": 5, "paused_seconds": 2},
			"azure":             {"rate_rps": 100, "ceiling_rps": 100, "paused_seconds": 1},
			"azure/sub-1/*/*":   {"rate_rps": 7.5, "ceiling_rps": 15, "paused_seconds": 0},
		}
		for k, w := range want {
			got, ok := m.Slowed[k]
			if !ok {
				t.Errorf("slowed_buckets has no %q: %s", k, b)
				continue
			}
			for f, v := range w {
				if got[f] != v {
					t.Errorf("slowed_buckets[%q].%s = %v, want %v", k, f, got[f], v)
				}
			}
		}
		if len(m.Slowed) != len(want) {
			t.Errorf("slowed_buckets %v, want %d buckets", m.Slowed, len(want))
		}

		// Once the pause is over the account is no longer slowed.
		time.Sleep(3 * time.Second)
		b, _ = json.Marshal(g.Summary(nil))
		m.Slowed = nil
		json.Unmarshal(b, &m)
		if _, ok := m.Slowed["azure/sub-1/*/*"]; !ok || len(m.Slowed) != 1 {
			t.Errorf("after the pause: slowed_buckets %v", m.Slowed)
		}
	})
}

// keptStore is the memory store keeping the buckets it makes by key, as a
// shared store holds them where others can change them.
type keptStore struct {
	mu      sync.Mutex
	buckets map[string]state.Bucket
}

func (s *keptStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	b := MemoryStore().Bucket(key, spec, now)
	s.mu.Lock()
	s.buckets[key] = b
	s.mu.Unlock()
	return b
}

func (s *keptStore) bucket(key string) state.Bucket {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buckets[key]
}

func (s *keptStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return MemoryStore().Breaker(key, spec)
}

func (s *keptStore) Budget(provider string, size int) state.Budget {
	return MemoryStore().Budget(provider, size)
}

// Lifetime is the totals and the service scopes' counters of
// Summary(nil), without the rest: the counters of the service scopes
// asked for, in their order (a leaf asks for its service's), zero with
// the scope set for one nothing was counted for; and it reads no bucket
// or breaker from the store.
func TestLifetimeIsSummarysTotalsAndCounters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &countingStore{Store: MemoryStore()}
		g := newGov(t, Config{}, WithStateStore(st))
		ctx := context.Background()
		vpcs := Scope{Provider: "aws", Account: "1", Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcs"}
		subnets := vpcs
		subnets.Operation = "DescribeSubnets"
		iam := Scope{Provider: "aws", Account: "1", Service: "iam"}
		for _, sc := range []Scope{vpcs, vpcs, subnets, iam} {
			Do(ctx, sc, func(context.Context) error { return nil }, WithGovernor(g))
		}
		Do(ctx, iam, func(context.Context) error { return throttle() }, WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		sum := g.Summary(nil)

		before := st.reads.Load()
		none := Scope{Provider: "gcp", Account: "p", Service: "cloudasset"}
		totals, got := g.Lifetime(subnets, iam, none, vpcs.ServiceScope())
		if n := st.reads.Load() - before; n != 0 {
			t.Errorf("Lifetime read %d snapshots from the store", n)
		}
		if totals != sum.Totals {
			t.Errorf("totals %+v, want Summary's %+v", totals, sum.Totals)
		}
		want := []Counters{sum.Scopes[vpcs.ServiceScope()], sum.Scopes[iam], {Scope: none}, sum.Scopes[vpcs.ServiceScope()]}
		if len(got) != len(want) {
			t.Fatalf("%d counters, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("counters %d: %+v, want %+v", i, got[i], want[i])
			}
		}
		if got[0].Calls != 3 || got[1].Calls != 2 || got[1].GaveUp != 1 {
			t.Errorf("ec2 %d calls, iam %d calls and %d gave up; want 3, 2 and 1", got[0].Calls, got[1].Calls, got[1].GaveUp)
		}
	})
}

// countingStore counts the snapshots read from its buckets and breakers.
type countingStore struct {
	state.Store
	reads atomic.Int64
}

func (s *countingStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return countingBucket{s.Store.Bucket(key, spec, now), &s.reads}
}

func (s *countingStore) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	return countingBreaker{s.Store.Breaker(key, spec), &s.reads}
}

type countingBucket struct {
	state.Bucket
	reads *atomic.Int64
}

func (b countingBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	b.reads.Add(1)
	return b.Bucket.Snapshot(now)
}

type countingBreaker struct {
	state.Breaker
	reads *atomic.Int64
}

func (b countingBreaker) Snapshot(now time.Duration) state.BreakerSnapshot {
	b.reads.Add(1)
	return b.Breaker.Snapshot(now)
}

// A scope found dead while its breaker is still closed (five calls
// throttled over six seconds, their outcomes open, so that the breaker
// counted no failure) is one whose next call is refused: Delay says
// ErrCircuitOpen and Inspect and Scopes say Dead. Summary's Breakers, the
// governor's unhealthy breakers, list it too, its breaker as it stands
// (closed: the read opens nothing).
func TestSummaryListsTheBreakerOfADeadScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		endStreak := throttledStreak(t, g, iamUsers)
		time.Sleep(4 * time.Second) // 10 s after the first throttle, 4 s after the last
		if _, why := g.Delay(iamUsers); !errors.Is(why, ErrCircuitOpen) {
			t.Fatalf("Delay: %v, want ErrCircuitOpen (the scope is dead)", why)
		}
		dead := 0
		for sc, s := range g.Scopes() {
			if s.Dead == "" {
				continue
			}
			dead++
			br, ok := g.Summary(nil).Breakers[sc]
			if !ok {
				t.Fatalf("Scopes and Inspect say %v dead (%q) and Delay ErrCircuitOpen; Summary's Breakers do not list it: %v", sc, s.Dead, g.Summary(nil).Breakers)
			}
			if br != s.Breaker || br.State != state.Closed {
				t.Fatalf("Summary's breaker of %v: %+v, Inspect's %+v; want the same, closed (a read opens nothing)", sc, br, s.Breaker)
			}
		}
		if dead != 1 {
			t.Fatalf("%d scopes dead, want 1", dead)
		}
		endStreak()
	})
}

// Inspect says a scope is dead only when Delay does and its next call is
// refused. In fleet mode another process's probe may close the shared
// breaker, which this process's streak of failures did not open as dead
// (the breaker was open by its threshold when the streak came to span
// breaker_dead_seconds): the streak, which only this process's answers
// end, spans the ten seconds but its last failure is long past, so that
// the next call's admission does not find the scope dead (a burst of
// throttling followed by quiet is not a dead scope), Delay says it can go
// and the call is sent. Inspect and Scopes said Dead "throttled for good"
// of it. The other process's probe is played here on the breaker itself.
func TestInspectSaysDeadOnlyWhatDelaySays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		var gds []*Guard
		for range 6 {
			gd, _ := g.Begin(context.Background(), iamUsers)
			if err := gd.Enter(context.Background()); err != nil {
				t.Fatal(err)
			}
			gd.Release()
			gds = append(gds, gd)
		}
		for _, gd := range gds[:5] {
			gd.After(throttle())
			gd.End(throttle())
		}
		if st := g.Inspect(iamUsers).Breaker.State; st != state.Open {
			t.Fatalf("setup: breaker %v after five failures, want open", st)
		}
		time.Sleep(10500 * time.Millisecond)
		gds[5].After(throttle()) // the streak spans 10.5 s now, the breaker open already
		gds[5].End(throttle())
		time.Sleep(61 * time.Second) // the cooldown
		e, _ := g.provider("aws").scopes.peek(iamUsers)
		if _, ok, probe := e.breaker.Allow(g.now()); !ok || !probe {
			t.Fatal("setup: no probe after the cooldown")
		}
		e.breaker.Success() // another process's probe succeeded
		_, why := g.Delay(iamUsers)
		in := g.Inspect(iamUsers)
		if errors.Is(why, ErrCircuitOpen) != (in.Dead != "") {
			t.Fatalf("Delay says %v, Inspect says Dead %q (breaker %v): they disagree", why, in.Dead, in.Breaker.State)
		}
		sent := 0
		err := Do(context.Background(), iamUsers, func(context.Context) error { sent++; return nil }, WithGovernor(g))
		if (err != nil) != (in.Dead != "") {
			t.Fatalf("the next call: %v, sent %d; Inspect said Dead %q before", err, sent, in.Dead)
		}
	})
}
