package test

import (
	"context"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/state"
)

// The README's ACL line (aclUser reads it) covers the write-backs too: their
// scripts read and prune the record of the write-backs Redis applied
// (HGET, HGETALL, HDEL). Before, the line lacked those three, and a fleet
// whose Redis user had exactly it had every write-back refused (NOPERM):
// a throttle Redis did not run, or what a local breaker learned during an
// outage, never reached the fleet.
func TestAnACLUserWritesBackAThrottle(t *testing.T) {
	be, ok := redisServer(t)
	if !ok {
		t.Skip("needs a real redis-server (CLOUDG_REDIS_URL); ./scripts/test starts one")
	}
	ctx := context.Background()
	admin := be.client()
	user, pw, prefix := "cloudg-test-"+randomHex(4), randomHex(16), uniquePrefix(t)
	if err := admin.Do(ctx, aclUser(t, user, pw, prefix)...).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Do(ctx, "ACL", "DELUSER", user)
		admin.Close()
	})
	px, err := redisproxy.Start(be.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	a, err := fleet.Open("redis://"+user+":"+pw+"@"+px.Addr()+"/0", fleet.WithPrefix(prefix), fleet.WithLogger(quiet),
		fleet.WithHeartbeat(time.Hour), fleet.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	o := openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour))
	spec := state.BucketSpec{Rate: 100, Burst: 10, Adaptive: true}
	ab, ob := a.Bucket(vpcsKey, spec, 0), o.Bucket(vpcsKey, spec, 0)
	ab.Reserve(0)
	px.RefuseNext([]byte("-ERR refused by the test\r\n"))
	if _, dec := ab.Throttle(0, 0); !dec {
		t.Fatal("the local limits did not slow")
	}
	a.Close() // writes the throttle back
	if got := ob.Snapshot(0).Rate; got != 50 {
		t.Errorf("a throttle Redis refused, written back by a Redis user with the README's ACL: the fleet's rate %v rps, want 50", got)
	}
}
