package resilience

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/clocktest"
	"github.com/cloudg/cloudg/state"
)

// foreverStore is the memory store whose buckets report a pause as long
// as a Duration holds, as a Store of the user's may for a scope it holds
// for good.
type foreverStore struct{ state.Store }

func (s foreverStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return foreverBucket{s.Store.Bucket(key, spec, now)}
}

type foreverBucket struct{ state.Bucket }

func (b foreverBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	s := b.Bucket.Snapshot(now)
	s.Paused = math.MaxInt64
	return s
}

// A scope paused as long as a Duration holds is paused until after now,
// as Inspect, a Survey and Scopes read it, a scope a call used and one
// none did: PausedUntil is the end of the pause on the governor's clock,
// never a time before now (the epoch's reading plus the pause, wrapped
// around).
func TestAScopePausedForeverIsPausedUntilAfterNow(t *testing.T) {
	clock := clocktest.Start(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	g, err := NewGovernor(Config{}, WithStateStore(foreverStore{MemoryStore()}), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	if err := Do(context.Background(), iamUsers, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	now := clock.Now()
	check := func(how string, s state.ScopeSnapshot) {
		t.Helper()
		if s.Leaf.Paused != math.MaxInt64 {
			t.Fatalf("%s: leaf paused %v, want the store's pause", how, s.Leaf.Paused)
		}
		if !s.PausedUntil.After(now) {
			t.Errorf("%s of %v: paused until %v, before now (%v)", how, s.Scope, s.PausedUntil, now)
		}
	}
	for _, sc := range []Scope{iamUsers, ec2Vpcs} {
		check("Inspect", g.Inspect(sc))
		check("Survey.Look", g.Survey().Look(sc).Snapshot)
	}
	n := 0
	for _, s := range g.Scopes() {
		check("Scopes", s)
		n++
	}
	if n != 1 {
		t.Fatalf("Scopes yielded %d scopes, want the one used", n)
	}
}
