package test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// The state in Redis is not trusted: anyone with access to the keys, an
// older version, or a bug may have written anything. What the scripts read
// is validated; invalid state counts as absent (rebuilt from the local
// settings), and every key expires.

// slowLeaf is 10 rps with a burst of 1: 0.5 s of calls let about 6 through.
var slowLeaf = resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 10, Burst: 1}}}}

// callsIn counts the calls to sc that complete within d, from 4 callers.
func callsIn(p *process, sc resilience.Scope, d time.Duration) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var n atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := resilience.Do(ctx, sc, ok, resilience.WithGovernor(p.gov)); err == nil {
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return n.Load()
}

func TestInvalidBucketStateCountsAsAbsent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, c := range []struct{ field, value string }{
			{"rate", "0"}, {"rate", "-1"}, {"rate", "nan"}, {"rate", "inf"}, {"rate", "1e-300"}, {"rate", "junk"},
			{"t0", "1e300"}, {"t0", "-inf"}, {"paused", "1e300"}, {"paused", "nan"},
			{"ldec", "1e300"}, {"lthr", "1e300"}, {"linc", "1e300"},
		} {
			t.Run(c.field+"="+c.value, func(t *testing.T) {
				t.Parallel() // each its own keys; a paced 0.5 s each
				prefix := uniquePrefix(t)
				// It waits 2 s for Redis, not the default 250 ms: with 13
				// cases in parallel under load (2 CPU hogs, miniredis) an
				// operation past 250 ms put one on local limits, which
				// read no invalid state.
				p := newProcess(t, be, prefix, slowLeaf, fleet.WithTimeout(2*time.Second))
				// The bucket's hash exists, halved: only a bucket rebuilt
				// from the local settings is back at its ceiling.
				p.do(t, vpcs, throttl, once)
				if r := p.gov.Inspect(vpcs).Leaf.Rate; r != 5 {
					t.Fatalf("rate %v after a throttle, want 5", r)
				}
				key := prefix + ":{" + vpcsKey + "}:bucket"
				if err := p.rdb.HSet(context.Background(), key, c.field, c.value).Err(); err != nil {
					t.Fatal(err)
				}
				// A fresh bucket: its burst of 1 and 0.5 s at 10 rps.
				if n := callsIn(p, vpcs, 500*time.Millisecond); n > 8 || n < 2 {
					t.Fatalf("%d calls in 0.5 s at 10 rps with a burst of 1 (a fresh bucket lets about 6 through)", n)
				}
				r := p.gov.Inspect(vpcs).Leaf.Rate
				if r != 10 {
					t.Fatalf("rate %v after the invalid state, want the ceiling 10 (rebuilt; the throttle left 5)", r)
				}
			})
		}
		// An invalid decrease or throttle time must not stop the rate from
		// adapting: the next throttle halves it.
		t.Run("adapts after invalid times", func(t *testing.T) {
			prefix := uniquePrefix(t)
			p := newProcess(t, be, prefix, resilience.Config{})
			p.do(t, vpcs, ok)
			key := prefix + ":{" + vpcsKey + "}:bucket"
			p.rdb.HSet(context.Background(), key, "ldec", "9999999999999999", "lthr", "9999999999999999")
			p.do(t, vpcs, throttl, once)
			if r := p.gov.Inspect(vpcs).Leaf.Rate; r != 10 {
				t.Fatalf("rate %v after a throttle, want 10", r)
			}
		})
	})
}

// The goodput controller's counts are validated too: a count below zero
// or not a number, a time past now, a window that has not begun. Invalid
// counts make the bucket count as absent: it starts afresh at its ceiling
// (this one was halved), and adapts again.
func TestInvalidGoodputCountsCountAsAbsent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, c := range []struct{ field, value string }{
			{"born", "1e300"}, {"born", "junk"}, {"gfrom", "-1"}, {"gfrom", "1e300"},
			{"gn", "-1"}, {"gn", "nan"}, {"gk", "-1"}, {"gk", "0.5"}, {"gk", "1e12"},
			{"gcur", "-1"}, {"gprev", "inf"}, {"glast", "1e300"},
			{"gcl", "-1"}, {"gcl", "0.5"}, {"gcl", "junk"}, {"gcl", "inf"},
		} {
			t.Run(c.field+"="+c.value, func(t *testing.T) {
				prefix := uniquePrefix(t)
				p := newProcess(t, be, prefix, resilience.Config{})
				b := p.store.Bucket(vpcsKey, goodputSpec, 0)
				if r, _ := b.Throttle(0, 0); r != goodputSpec.Rate*bucket.DecreaseFactor {
					t.Fatalf("rate %v after a throttle with nothing served", r)
				}
				key := prefix + ":{" + vpcsKey + "}:bucket"
				if err := p.rdb.HSet(context.Background(), key, c.field, c.value).Err(); err != nil {
					t.Fatal(err)
				}
				if r := b.Snapshot(0).Rate; r != goodputSpec.Rate {
					t.Fatalf("rate %v after the invalid count, want the ceiling %v", r, goodputSpec.Rate)
				}
				if r, dec := b.Throttle(0, 0); !dec || r != goodputSpec.Rate*bucket.DecreaseFactor {
					t.Fatalf("rate %v (decreased %v) after a throttle of the rebuilt bucket", r, dec)
				}
			})
		}
		// Counts that are absent (a bucket an AIMD process wrote, or one
		// written before the climbs were kept) are those of counting that
		// starts now and of no climb yet: the bucket keeps its learned
		// rate.
		t.Run("absent", func(t *testing.T) {
			prefix := uniquePrefix(t)
			p := newProcess(t, be, prefix, resilience.Config{})
			b := p.store.Bucket(vpcsKey, goodputSpec, 0)
			b.Throttle(0, 0)
			key := prefix + ":{" + vpcsKey + "}:bucket"
			if err := p.rdb.HDel(context.Background(), key, "born", "gfrom", "gn", "gk", "gcur", "gprev", "glast", "gcl").Err(); err != nil {
				t.Fatal(err)
			}
			if r := b.Snapshot(0).Rate; r != goodputSpec.Rate*bucket.DecreaseFactor {
				t.Fatalf("rate %v with the counts absent, want the learned %v", r, goodputSpec.Rate*bucket.DecreaseFactor)
			}
		})
	})
}

// A breaker written as open until the far future, with no TTL, is invalid
// (its wait is past the longest cooldown): calls go through, and the key
// expires. A closed breaker whose cooldown is past the longest is invalid
// too: rebuilt closed, it opens after the threshold's failures for the
// base cooldown, rejects calls for that long, and closes after a probe.
func TestInvalidBreakerStateCountsAsAbsent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, c := range [][]any{
			{"state", "open", "until", "1e300", "cooldown", "30000000", "failures", "0"},
			{"state", "open", "until", "99999999999999999", "cooldown", "30000000", "failures", "0"},
			{"state", "half_open", "until", "nan", "cooldown", "30000000", "failures", "0"},
			{"state", "open", "until", "1", "cooldown", "1e300", "failures", "0"},
			{"state", "ajar", "until", "0", "cooldown", "30000000", "failures", "0"},
		} {
			t.Run(c[1].(string)+" "+c[3].(string)+" "+c[5].(string), func(t *testing.T) {
				prefix := uniquePrefix(t)
				p := newProcess(t, be, prefix, resilience.Config{})
				key := prefix + ":{" + vpcsKey + "}:breaker"
				if err := p.rdb.HSet(context.Background(), key, c...).Err(); err != nil {
					t.Fatal(err)
				}
				var coe *resilience.CircuitOpenError
				if err := p.do(t, vpcs, ok); errors.As(err, &coe) || err != nil {
					t.Fatalf("a call through an invalid breaker: %v", err)
				}
				if st := p.gov.Inspect(vpcs).Breaker; st.Wait > 0 {
					t.Fatalf("breaker %+v", st)
				}
				if ttl := p.rdb.PTTL(context.Background(), key).Val(); ttl == -1 {
					t.Fatalf("the breaker's key has no TTL")
				}
			})
		}
		t.Run("closed cooldown 1e300", func(t *testing.T) {
			prefix := uniquePrefix(t)
			cfg := resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 3, BreakerCooldownSeconds: 1, BreakerMaxCooldownSeconds: 4}}
			p := newProcess(t, be, prefix, cfg)
			key := prefix + ":{" + vpcsKey + "}:breaker"
			if err := p.rdb.HSet(context.Background(), key, "state", "closed", "failures", "0", "cooldown", "1e300", "until", "0").Err(); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				p.do(t, vpcs, throttl, once)
			}
			st := p.gov.Inspect(vpcs).Breaker
			if st.State != state.Open || st.Wait <= 0 || st.Wait > time.Second || st.Cooldown != time.Second {
				t.Fatalf("breaker %+v after the threshold's 3 failures, want open for the base cooldown of 1 s", st)
			}
			var coe *resilience.CircuitOpenError
			if err := p.do(t, vpcs, ok); !errors.As(err, &coe) {
				t.Fatalf("a call through the breaker just opened: %v, want rejected", err)
			}
			time.Sleep(1100 * time.Millisecond)
			if err := p.do(t, vpcs, ok); err != nil {
				t.Fatalf("the probe after the cooldown: %v", err)
			}
			if st := p.gov.Inspect(vpcs).Breaker; st.State != state.Closed || st.Cooldown != time.Second {
				t.Fatalf("breaker %+v after a successful probe, want closed", st)
			}
		})
	})
}

// A budget below zero is invalid: the budget counts as full.
func TestInvalidBudgetCountsAsAbsent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, v := range []string{"-1000000", "nan", "junk"} {
			t.Run(v, func(t *testing.T) {
				prefix := uniquePrefix(t)
				cfg := resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: new(3)}}
				p := newProcess(t, be, prefix, cfg)
				if err := p.rdb.Set(context.Background(), prefix+":{budget:aws}", v, 0).Err(); err != nil {
					t.Fatal(err)
				}
				gd := p.begin(t)
				defer gd.End(transient)
				for i := range 3 { // 2 free, the third paid
					if err := failAndRetry(gd); err != nil {
						t.Fatalf("retry %d with the budget at %s: %v", i+1, v, err)
					}
				}
			})
		}
	})
}

// Every key the store writes expires, even one someone made persistent:
// the fleet's next write of it gives it its TTL again (an open breaker's,
// the probe at the end of its cooldown). A read does not: it changes
// nothing in Redis (TestAReadChangesNothingInRedis).
func TestEveryKeyExpires(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{BreakerCooldownSeconds: 1, BreakerMaxCooldownSeconds: 1}}
		p := newProcess(t, be, prefix, cfg, fleet.WithKeyTTL(time.Minute))
		for range 5 { // the breaker opens
			p.do(t, vpcs, throttl, once)
		}
		time.Sleep(250 * time.Millisecond) // a heartbeat sends the budget
		ctx := context.Background()
		ks := keys(t, p.rdb, prefix+"*")
		if len(ks) < 4 {
			t.Fatalf("keys %v, want a bucket, a breaker, budgets and the processes", ks)
		}
		for _, k := range ks {
			p.rdb.Persist(ctx, k)
		}
		time.Sleep(1100 * time.Millisecond) // the cooldown ends; heartbeats
		if err := p.do(t, vpcs, ok); err != nil {
			t.Fatalf("the probe at the end of the cooldown: %v", err)
		}
		time.Sleep(250 * time.Millisecond) // a heartbeat
		for _, k := range ks {
			// The TTL counts from when the key's state stops mattering: a
			// bucket's once it is full again (seconds here).
			if ttl := p.rdb.PTTL(ctx, k).Val(); ttl <= 0 || ttl > time.Minute+10*time.Second {
				t.Errorf("key %s has TTL %v after the fleet's next writes", k, ttl)
			}
		}
	})
}
