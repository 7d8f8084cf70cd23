package test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/fleet"
)

// A Redis out of memory (maxmemory reached, noeviction) refuses every write
// with OOM: the store goes to local limits, divided among the processes it
// last counted, and its heartbeat's probe deletes nothing. Before, the
// scripts' helper that replaces a key of another type deleted the key at
// any error of its command: the heartbeat's ZADD refused for OOM deleted
// the fleet's set of live processes, and its ZADD again then ran (a script
// that has written is not refused for memory any more). Each process
// counted itself alone, took the whole of the limits while Redis refused
// its operations, and switched back and forth at every heartbeat.
func TestAnOutOfMemoryRedisKeepsTheProcessSet(t *testing.T) {
	srv := startServer(t, freePort(t))
	url := "redis://" + srv.addr + "/0"
	opts := []fleet.Option{fleet.WithHeartbeat(50 * time.Millisecond), fleet.WithLogger(quiet)}
	a := openStore(t, url, append(opts, fleet.WithProcessID("a"))...)
	b := openStore(t, url, append(opts, fleet.WithProcessID("b"))...)
	fallsBack(a) // Redis out of memory refuses their writes
	fallsBack(b)
	waitFor(t, 5*time.Second, "two live processes", func() bool {
		return a.Stats().Processes == 2 && b.Stats().Processes == 2
	})

	admin := redis.NewClient(&redis.Options{Addr: srv.addr})
	defer admin.Close()
	ctx := context.Background()
	if err := admin.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	defer admin.ConfigSet(ctx, "maxmemory", "0")

	deadline := time.Now().Add(3 * time.Second)
	for !a.Stats().Degraded && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // six heartbeats more, Redis still out of memory
	ids, err := admin.ZRange(ctx, "cloudg:procs", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("the set of live processes holds %q while Redis is out of memory, want both processes [a b]", ids)
	}
	if s := a.Stats(); !s.Degraded || s.Processes != 2 {
		t.Errorf("a store whose Redis refuses every write for memory: Degraded %v, Processes %d; want true, 2 (its stats: %+v)",
			s.Degraded, s.Processes, s)
	}
}
