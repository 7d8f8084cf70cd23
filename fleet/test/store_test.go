package test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// The fleet.Store itself: its keys in Redis, its connection from a URL, every
// operation of its buckets, breakers and budgets, and what it lets go.

func TestKeysAreNamespacedAndExpire(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		p := newProcess(t, be, prefix, resilience.Config{}, fleet.WithKeyTTL(time.Minute))
		p.do(t, vpcs, throttl, once)
		gd := p.begin(t)
		for range 3 { // the third retry spends from the budget
			failAndRetry(gd)
		}
		gd.End(transient)
		// A GCP account holds a '/', which the governor's key escapes.
		gcp := resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
		p.do(t, gcp, ok)
		keys := keys(t, p.rdb, prefix+"*")
		want := map[string]bool{
			prefix + ":{" + vpcsKey + "}:bucket":                           false,
			prefix + ":{" + vpcsKey + "}:breaker":                          false,
			prefix + ":{gcp/projects%2Fp1/*/cloudasset/ListAssets}:bucket": false,
			prefix + ":{budget:aws}":                                       false,
			prefix + ":procs":                                              false,
		}
		for _, k := range keys {
			if _, ok := want[k]; ok {
				want[k] = true
			}
			// The TTL counts from when the key's state stops mattering: a
			// bucket's, once its balance is full again (seconds here).
			ttl := p.rdb.PTTL(context.Background(), k).Val()
			if ttl <= 0 || ttl > time.Minute+10*time.Second {
				t.Errorf("key %s has TTL %v", k, ttl)
			}
		}
		for k, seen := range want {
			if !seen {
				t.Errorf("key %s missing among %v", k, keys)
			}
		}
	})
}

// Against a Redis that requires a user and password, the URL's credentials
// authenticate; wrong ones fall back to local limits without failing a
// call.
func TestOpenAuthenticatesWithTheURLsCredentials(t *testing.T) {
	mr := miniredis.RunT(t)
	mr.RequireUserAuth("alice", "s3cret")
	s2, err := fleet.Open("redis://alice:s3cret@"+mr.Addr()+"/0", fleet.WithLogger(quiet), fleet.WithPrefix(uniquePrefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	g, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(s2))
	resilience.Do(context.Background(), vpcs, throttl, resilience.WithGovernor(g), once)
	if st := s2.Stats(); st.Degraded || st.RedisErrors != 0 {
		t.Fatalf("authenticated store: %+v", st)
	}
	s3, _ := fleet.Open("redis://alice:wrong@"+mr.Addr()+"/0", fleet.WithLogger(quiet))
	defer s3.Close()
	g3, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(s3))
	if err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g3)); err != nil {
		t.Fatalf("a call failed because Redis refused the credentials: %v", err)
	}
	if !s3.Stats().Degraded {
		t.Fatal("wrong credentials did not switch to local limits")
	}
}

// TestEveryOperationAnswers runs each bucket, breaker and budget operation
// once against Redis: none may be mistaken for Redis failing.
func TestEveryOperationAnswers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		p := newProcess(t, be, uniquePrefix(t), resilience.Config{})
		s := p.store
		spec := state.BucketSpec{Rate: 10, Burst: 10, Floor: 0.5, Adaptive: true}
		b := s.Bucket(vpcsKey, spec, 0)
		b.Reserve(0)
		b.TryReserve(0)
		b.Cancel(0)
		b.Pause(0, time.Second)
		b.Throttle(0, 0)
		b.Success(0)
		if snap := b.Snapshot(0); snap.Rate != 5 || snap.Ceiling != 10 || snap.Paused <= 0 {
			t.Fatalf("bucket snapshot %+v", snap)
		}
		br := s.Breaker(vpcsKey, state.BreakerSpec{Threshold: 1, Cooldown: time.Minute, MaxCooldown: 10 * time.Minute})
		br.Allow(0)
		br.Failure(0)
		br.Success()
		if snap := br.Snapshot(0); snap.State != state.Open || snap.Cooldown != time.Minute {
			t.Fatalf("breaker snapshot %+v", snap)
		}
		bu := s.Budget("aws", 2)
		bu.Take()
		bu.Succeed()
		bu.Remaining()
		if st := s.Stats(); st.Degraded || st.RedisErrors != 0 {
			t.Fatalf("an operation failed against a healthy Redis: %+v", st)
		}
	})
}

// A bucket used once holds an expired lease; it is idle all the same (the
// core may drop it).
func TestABucketWithAnExpiredLeaseIsIdle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		p := newProcess(t, be, uniquePrefix(t), resilience.Config{})
		b := p.store.Bucket(vpcsKey, state.BucketSpec{Rate: 20, Burst: 40, Floor: 0.2, Adaptive: true}, 0)
		b.Reserve(0)
		if !b.Idle(time.Hour, time.Minute) {
			t.Fatal("a bucket whose lease expired an hour ago is not idle")
		}
	})
}

// The shared rate recovers as the in-process bucket's does: after
// bucket.IncreaseInterval without a throttle, by bucket.IncreaseStep of
// the ceiling, at most once per bucket.IncreaseInterval for the fleet.
func TestSharedRateRecoversAdditively(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		p := newProcess(t, be, prefix, resilience.Config{})
		b := p.store.Bucket(vpcsKey, state.BucketSpec{Rate: 10, Burst: 10, Floor: 0.5, Adaptive: true}, 0)
		if r, _ := b.Throttle(0, 0); r != 5 {
			t.Fatalf("rate %v after a throttle, want 5", r)
		}
		if r, up := b.Success(time.Second); up || r != 5 {
			t.Fatalf("rate %v (increased %v) right after the throttle, want 5", r, up)
		}
		// Redis's clock is real: move the last throttle and increase into
		// the past instead of waiting for them.
		key := prefix + ":{" + vpcsKey + "}:bucket"
		if err := p.rdb.HSet(context.Background(), key, "lthr", 0, "linc", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if r, up := b.Success(3 * time.Second); !up || r != 5.5 {
			t.Fatalf("rate %v (increased %v) after a quiet interval, want 5.5", r, up)
		}
		if r, up := b.Success(5 * time.Second); up || r != 5.5 {
			t.Fatalf("rate %v (increased %v) within the increase interval, want 5.5", r, up)
		}
	})
}

// The shared rate's recovery ends at the ceiling itself, as the
// in-process bucket's does: 1.5 rps halved once is back after ten steps
// of 0.075, where the steps added up in floating point left it at
// 1.4999999999999996, slowed until an eleventh success after another
// quiet.
func TestSharedRateRecoveryEndsAtTheCeiling(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		p := newProcess(t, be, prefix, resilience.Config{})
		b := p.store.Bucket(vpcsKey, state.BucketSpec{Rate: 1.5, Burst: 3, Floor: 0.01, Adaptive: true}, 0)
		if r, _ := b.Throttle(0, 0); r != 0.75 {
			t.Fatalf("rate %v after a throttle, want 0.75", r)
		}
		key := prefix + ":{" + vpcsKey + "}:bucket"
		var r float64
		for i := range 10 {
			// Redis's clock is real: move the last throttle and increase
			// into the past instead of waiting for them.
			if err := p.rdb.HSet(context.Background(), key, "lthr", 0, "linc", 0).Err(); err != nil {
				t.Fatal(err)
			}
			var up bool
			if r, up = b.Success(time.Duration(i+1) * time.Second); !up {
				t.Fatalf("step %d: rate %v, no increase", i+1, r)
			}
		}
		if s := b.Snapshot(11 * time.Second); r != 1.5 || s.Rate != 1.5 {
			t.Fatalf("rate %v (snapshot %v) after ten steps, want 1.5", r, s.Rate)
		}
	})
}

// Reconfiguring or resetting the governor makes its budgets anew: the
// store keeps one per provider, so that a heartbeat's Redis calls do not
// grow with every Reset and Configure.
func TestResetsAndReconfigurationsDoNotPileUpBudgets(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		cfg := resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: new(3)}}
		p := newProcess(t, be, uniquePrefix(t), cfg)
		p.do(t, vpcs, ok)
		perBeat := func() float64 {
			before, start := p.store.Stats().RedisCalls, time.Now()
			time.Sleep(time.Second)
			return float64(p.store.Stats().RedisCalls-before) / (float64(time.Since(start)) / float64(100*time.Millisecond))
		}
		base := perBeat()
		other := resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: new(4)}}
		for i := range 1000 {
			p.gov.Reset()
			c := cfg
			if i%2 == 0 {
				c = other
			}
			if err := p.gov.Configure(c); err != nil {
				t.Fatal(err)
			}
		}
		p.do(t, vpcs, ok)
		after := perBeat()
		if after > base+1 {
			t.Fatalf("%.1f Redis calls per heartbeat after 1,000 Resets and Configures, %.1f before", after, base)
		}
		t.Logf("%s: %.1f Redis calls per heartbeat before, %.1f after", be.name, base, after)
	})
}

// An option given a duration of zero or less keeps the value it had (the
// default): WithHeartbeat(0) does not stop the program (a ticker of no
// interval panics), WithKeyTTL(0) does not give every key a TTL of 0
// (PEXPIRE key 0 deletes it: nothing shared), and WithTimeout(0) does not
// time out every operation.
func TestOutOfRangeDurationsKeepTheDefaults(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		a := newProcess(t, be, prefix, resilience.Config{}, fleet.WithHeartbeat(0), fleet.WithKeyTTL(0), fleet.WithTimeout(0))
		b := newProcess(t, be, prefix, resilience.Config{}, fleet.WithHeartbeat(-time.Second), fleet.WithKeyTTL(-time.Minute), fleet.WithTimeout(-time.Second))
		a.do(t, vpcs, throttl, once)
		if r := b.gov.Inspect(vpcs).Leaf.Rate; r != 10 {
			t.Fatalf("process B sees %v rps after A was throttled, want 10: the rate is not shared", r)
		}
		key := prefix + ":{" + vpcsKey + "}:bucket"
		// From when the bucket is full again, seconds after the throttle.
		if ttl := a.rdb.PTTL(context.Background(), key).Val(); ttl < 14*time.Minute || ttl > 15*time.Minute+10*time.Second {
			t.Fatalf("the bucket's key has TTL %v, want the default 15 minutes", ttl)
		}
		time.Sleep(250 * time.Millisecond) // heartbeats
		for _, p := range []*process{a, b} {
			if st := p.store.Stats(); st.Degraded || st.RedisErrors != 0 || st.Processes != 2 {
				t.Fatalf("store stats %+v, want 2 processes, no error", st)
			}
		}
	})
}

// WithLeaseWindow of zero or less keeps the default window, as the other
// durations' options keep theirs: a process given it borrows tokens ahead
// as one with the default does, rather than going to Redis for each call
// (a lease of no token, and the bucket's pause read again every call).
func TestALeaseWindowOfZeroOrLessKeepsTheDefault(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		calls := func(opts ...fleet.Option) int64 {
			p := newProcess(t, be, uniquePrefix(t), leasedConfig, opts...)
			before := p.store.Stats().RedisCalls
			for range 20 {
				if err := p.do(t, vpcs, ok); err != nil {
					t.Fatal(err)
				}
			}
			return p.store.Stats().RedisCalls - before
		}
		base := calls()
		for _, d := range []time.Duration{0, -time.Second} {
			if n := calls(fleet.WithLeaseWindow(d)); n > base+2 {
				t.Errorf("WithLeaseWindow(%v): 20 calls made %d Redis calls; with the default window, %d", d, n, base)
			}
		}
	})
}
