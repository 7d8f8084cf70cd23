package test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// waitFor polls cond every 50 ms for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("after %v: %s", d, what)
}

// TestSentinelFailover runs a fleet through Sentinel (a master, its
// replica and a sentinel, processes of the test's own) and kills the
// master in the middle of a run: calls go on, at local limits while the
// fleet has no master, and none fails; once Sentinel has promoted the
// replica, the store is back on the shared state on the new master, and
// what the fleet learned before (replicated) is still there.
func TestSentinelFailover(t *testing.T) {
	ctx := context.Background()
	mp, rp, sp := freePort(t), freePort(t), freePort(t)
	master := startServer(t, mp)
	replica := startServer(t, rp, "--replicaof", "127.0.0.1", strconv.Itoa(mp))
	sentinel := startSentinel(t, sp, fmt.Sprintf("sentinel monitor fleet 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds fleet 1000\nsentinel failover-timeout fleet 10000\n", mp))
	mc := redis.NewClient(&redis.Options{Addr: master.addr})
	defer mc.Close()
	sc := redis.NewClient(&redis.Options{Addr: sentinel.addr})
	defer sc.Close()
	waitFor(t, 10*time.Second, "the replica is in sync", func() bool {
		return strings.Contains(mc.Info(ctx, "replication").Val(), "state=online")
	})
	waitFor(t, 15*time.Second, "the sentinel knows the replica", func() bool {
		rs, err := sc.Do(ctx, "SENTINEL", "REPLICAS", "fleet").Slice()
		return err == nil && len(rs) == 1
	})

	prefix := uniquePrefix(t)
	store, err := fleet.Open("redis://"+sentinel.addr+"/0?master_name=fleet", fleet.WithPrefix(prefix),
		fleet.WithLogger(quiet), fleet.WithHeartbeat(100*time.Millisecond), fleet.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gov, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(store))
	if err != nil {
		t.Fatal(err)
	}
	throttled := time.Now()
	resilience.Do(ctx, vpcs, throttl, resilience.WithGovernor(gov), once)
	if r := gov.Inspect(vpcs).Leaf.Rate; r != 10 {
		t.Fatalf("rate %v after a throttle, want 10", r)
	}
	// Replication is asynchronous: a failover keeps what reached the
	// replica. WAIT on this test's own connection would not wait for the
	// store's writes (it counts the writes of the connection that sends
	// it), so the test waits until the replica holds the learned rate.
	rc := redis.NewClient(&redis.Options{Addr: replica.addr})
	defer rc.Close()
	bucketKey := ""
	waitFor(t, 5*time.Second, "the replica holds the learned rate", func() bool {
		keys, _ := rc.Keys(ctx, prefix+"*:bucket").Result()
		for _, k := range keys {
			if rc.HGet(ctx, k, "rate").Val() == "10" {
				bucketKey = k
				return true
			}
		}
		return false
	})

	var calls, failed atomic.Int64
	stop := inLoops(t, 4, func() bool {
		if err := resilience.Do(ctx, vpcs, ok, resilience.WithGovernor(gov)); err != nil {
			failed.Add(1)
		}
		calls.Add(1)
		return true
	})
	time.Sleep(300 * time.Millisecond)
	killed := time.Now()
	master.cmd.Process.Kill()
	waitFor(t, 5*time.Second, "local limits after the master died", func() bool { return store.Stats().Degraded })
	waitFor(t, 30*time.Second, "the replica is the master", func() bool {
		a, err := sc.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "fleet").StringSlice()
		return err == nil && len(a) == 2 && a[1] == strconv.Itoa(rp)
	})
	dump := func(when string) {
		keys, _ := rc.Keys(ctx, prefix+"*").Result()
		for _, k := range keys {
			if rc.Type(ctx, k).Val() == "hash" {
				t.Logf("%s, on the new master: %s %v, ttl %v", when, k, rc.HGetAll(ctx, k).Val(), rc.PTTL(ctx, k).Val())
			}
		}
	}
	if r := rc.HGet(ctx, bucketKey, "rate").Val(); r != "10" {
		dump("once promoted")
		t.Fatalf("the promoted replica holds rate %q, want the learned 10", r)
	}
	waitFor(t, 20*time.Second, "the fleet's state is written on the new master", func() bool {
		ttl := rc.PTTL(ctx, prefix+":procs").Val()
		return strings.HasPrefix(rc.Do(ctx, "ROLE").String(), "ROLE: [master") && ttl > 0 && !store.Stats().Degraded
	})
	before := store.Stats().RedisCalls
	waitFor(t, 5*time.Second, "calls on the shared state again", func() bool {
		return store.Stats().RedisCalls > before+20 && !store.Stats().Degraded
	})
	stop()
	back := time.Since(killed)
	if st := store.Stats(); st.Fallbacks != 1 {
		t.Fatalf("the store through the failover: %+v, want one switch to local limits", st)
	}
	if failed.Load() != 0 {
		t.Fatalf("%d of %d calls failed during the failover", failed.Load(), calls.Load())
	}
	// The rate is read from the new master; a read that fails while the
	// client settles on it shows the local fallback's (20) for a moment,
	// so the check waits a little. State lost in the failover would show
	// a fresh bucket's 20 for good. State kept may also have grown back
	// from 10 by the rule every bucket follows: one step (5% of the
	// ceiling of 20, so 1) per IncreaseInterval (5 s) without a throttle,
	// which a failover slowed by a loaded machine can outlast.
	var learned float64
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		learned = gov.Inspect(vpcs).Leaf.Rate
		grown := float64(int(time.Since(throttled) / (5 * time.Second)))
		if learned >= 10 && learned <= 10+grown && learned < 20 {
			break
		}
		if time.Now().After(end) {
			dump("at the end")
			t.Logf("the scope: %+v; the store: %+v", gov.Inspect(vpcs), store.Stats())
			t.Fatalf("rate %v %v after the throttle, want the rate the fleet learned before the failover (10, or at most %v grown back from it)",
				learned, time.Since(throttled).Round(time.Millisecond), grown)
		}
	}
	t.Logf("%d calls through the failover, none failed; shared state again %v after the master died; rate %v; the store: %+v",
		calls.Load(), back.Round(100*time.Millisecond), learned, store.Stats())
}
