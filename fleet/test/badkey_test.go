package test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// A key of the wrong type (a string where a hash belongs) is one scope's
// problem: it is repaired, and the rest of the process stays on the shared
// state.
func TestAWrongTypedKeyIsRepairedAndConfined(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// It waits 2 s for Redis, not the default 250 ms: a Redis slow to
		// answer under load is no outage here, and one operation past
		// 250 ms put it on local limits (2 CPU hogs, miniredis).
		p := newProcess(t, be, prefix, resilience.Config{}, fleet.WithTimeout(2*time.Second))
		subnets := vpcs
		subnets.Operation = "DescribeSubnets"
		ctx := context.Background()
		bad := prefix + ":{" + vpcsKey + "}:bucket"
		if err := p.rdb.Set(ctx, bad, "not a bucket", 0).Err(); err != nil {
			t.Fatal(err)
		}
		var failed atomic.Int64
		stop := time.Now().Add(500 * time.Millisecond)
		var wg sync.WaitGroup
		for _, sc := range []resilience.Scope{vpcs, subnets} {
			wg.Go(func() {
				for time.Now().Before(stop) {
					if err := p.do(t, sc, ok); err != nil {
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if st := p.store.Stats(); st.Degraded || st.Fallbacks != 0 || failed.Load() != 0 {
			t.Fatalf("a string at one scope's bucket: %+v, %d calls failed", st, failed.Load())
		}
		if typ := p.rdb.Type(ctx, bad).Val(); typ != "hash" {
			t.Fatalf("the bucket's key is a %s, want it repaired to a hash", typ)
		}

		// The live processes' set.
		procs := prefix + ":procs"
		if err := p.rdb.Set(ctx, procs, "not a set", 0).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(350 * time.Millisecond) // three heartbeats
		if err := p.do(t, vpcs, ok); err != nil {
			t.Fatal(err)
		}
		if st := p.store.Stats(); st.Degraded || st.Fallbacks != 0 || st.Processes != 1 {
			t.Fatalf("a string at the processes' set: %+v", st)
		}
		if typ := p.rdb.Type(ctx, procs).Val(); typ != "zset" {
			t.Fatalf("the processes' key is a %s, want it repaired to a sorted set", typ)
		}
	})
}
