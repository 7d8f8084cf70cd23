package test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// noscripts is a Redis client's hook that counts the EVALSHAs Redis
// answers NOSCRIPT (it does not hold the script: the client then sends
// EVAL, a round trip more).
type noscripts struct{ n atomic.Int64 }

func (h *noscripts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *noscripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *noscripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "evalsha" && redis.HasErrorPrefix(err, "NOSCRIPT") {
			h.n.Add(1)
		}
		return err
	}
}

// A Redis that comes back without the store's scripts (restarted, a new
// master; here its script cache flushed during the outage) has them
// loaded by the heartbeat's probe that finds it, before anything else is
// sent: the operations after it, the write-back's and the calls', run
// with EVALSHA at once. (Each script's first operation was refused
// NOSCRIPT and sent again as EVAL: two round trips where Redis, just
// back, is most likely to be slow.)
func TestAReturningRedisGetsTheScriptsAtTheProbe(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		h := &noscripts{}
		rdb := redis.NewClient(&redis.Options{Addr: px.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		rdb.AddHook(h)
		defer rdb.Close()
		s := fleet.New(rdb, fleet.WithPrefix(uniquePrefix(t)), fleet.WithLogger(quiet),
			fleet.WithHeartbeat(100*time.Millisecond), fleet.WithTimeout(200*time.Millisecond), fleet.WithMaxLease(1))
		defer s.Close()
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1000, Burst: 1000}}}}
		gov, err := resilience.NewGovernor(cfg, resilience.WithStateStore(s))
		if err != nil {
			t.Fatal(err)
		}
		calls := func() {
			for range 5 {
				resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(gov))
				resilience.Do(context.Background(), vpcs, func(context.Context) error { return transient }, once, resilience.WithGovernor(gov))
			}
		}
		calls() // every script these calls use is in Redis's cache
		px.Down()
		waitFor(t, 5*time.Second, "local limits", func() bool { return s.Stats().Degraded })
		calls() // what the local limits learn: the write-back's
		direct := be.client()
		defer direct.Close()
		if err := direct.ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		if err := px.Up(); err != nil {
			t.Fatal(err)
		}
		before := h.n.Load()
		waitFor(t, 5*time.Second, "back on the shared state", func() bool { return !s.Stats().Degraded })
		calls()
		// The heartbeat's own script, which finds Redis, may be refused
		// once; no other.
		if n := h.n.Load() - before; n > 1 {
			t.Errorf("Redis back without the scripts: %d EVALSHAs refused NOSCRIPT after the probe that found it, want none but the probe's own (%+v)", n, s.Stats())
		}
		t.Logf("%s: %d NOSCRIPT after Redis came back; the store %+v", be.name, h.n.Load()-before, s.Stats())
	})
}
