package resilience

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/cloudg/cloudg/state"
)

// negativePause is the memory store whose buckets' snapshots answer a
// pause of the most negative Duration: a Store of the user's that
// answers garbage.
type negativePause struct{ state.Store }

func (s negativePause) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	return negativePauseBucket{s.Store.Bucket(key, spec, now)}
}

type negativePauseBucket struct{ state.Bucket }

func (b negativePauseBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	s := b.Bucket.Snapshot(now)
	s.Paused = math.MinInt64
	return s
}

// A bucket whose Store answers a negative pause holds no call, as every
// read of the governor says, Scopes' among them: Scopes reads an
// account's bucket once for the scopes of the account that follow within
// 100 ms, less the time since (tickingClock: a millisecond per reading), and the most negative pause less a
// millisecond wrapped around to a pause of 292 years (and a Survey's
// Look said the scope waited that long).
func TestANegativePauseHoldsNothingInEveryRead(t *testing.T) {
	rps := 100.0
	g := newGov(t, Config{AWS: ProviderConfig{AccountMaxRPS: &rps}}, WithStateStore(negativePause{MemoryStore()}),
		WithClock(&tickingClock{t: time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)}))
	for _, sc := range []Scope{ec2Vpcs, ec2Subnets, iamUsers} {
		if err := Do(context.Background(), sc, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for sc, s := range g.Scopes() {
		n++
		if s.Account.Paused > 0 || !s.PausedUntil.IsZero() {
			t.Errorf("Scopes: %v is paused %v (until %v) by its account's bucket, whose store answered %v", sc, s.Account.Paused, s.PausedUntil, time.Duration(math.MinInt64))
		}
	}
	sv := g.Survey()
	for _, sc := range []Scope{ec2Vpcs, ec2Subnets, iamUsers} {
		st := sv.Look(sc)
		if s := st.Snapshot; s.Account.Paused > 0 || !s.PausedUntil.IsZero() {
			t.Errorf("Survey: %v is paused %v (until %v) by its account's bucket", sc, s.Account.Paused, s.PausedUntil)
		}
		if st.Why != nil {
			t.Errorf("Survey: %v waits %v (%v), want it free to go", sc, st.Wait, st.Why)
		}
	}
	if n != 3 {
		t.Fatalf("Scopes yielded %d scopes, want 3", n)
	}
}
