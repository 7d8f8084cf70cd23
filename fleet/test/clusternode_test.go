package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// A single-server URL of a cluster node stays on local limits whichever
// node holds the heartbeat's key: a node that answers the heartbeat still
// redirects the scopes the other nodes hold. Before, where the URL's node
// held the heartbeat's key, every heartbeat switched the store back to the
// shared state and the next operation on another node's key to local
// limits again: a switch, and its log lines, every heartbeat.
func TestASingleServerURLOfTheHeartbeatsNodeStaysLocal(t *testing.T) {
	be := clusterOnly(t)
	admin := be.client().(*redis.ClusterClient)
	defer admin.Close()
	ctx := context.Background()
	scopeNode, err := admin.MasterForKey(ctx, "x:{"+vpcsKey+"}:bucket")
	if err != nil {
		t.Fatal(err)
	}
	node := ""
	for _, a := range be.addrs {
		if a != scopeNode.Options().Addr {
			node = a
			break
		}
	}
	// A prefix whose heartbeat key the URL's node holds.
	var prefix string
	for i := 0; ; i++ {
		prefix = fmt.Sprintf("%s-%d", uniquePrefix(t), i)
		c, err := admin.MasterForKey(ctx, prefix+":procs")
		if err != nil {
			t.Fatal(err)
		}
		if c.Options().Addr == node {
			break
		}
	}
	store, err := fleet.Open("redis://"+node+"/0", fleet.WithPrefix(prefix), fleet.WithTimeout(time.Second),
		fleet.WithHeartbeat(50*time.Millisecond), fleet.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gov, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(store))
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if err := resilience.Do(ctx, vpcs, ok, resilience.WithGovernor(gov)); err != nil {
			t.Fatal(err)
		}
	}
	if s := store.Stats(); !s.Degraded || s.Fallbacks != 1 {
		t.Fatalf("a store on one node of a cluster, its scope's keys on another, after 20 heartbeats: Degraded %v, Fallbacks %d; want on local limits, switched once (its stats: %+v)", s.Degraded, s.Fallbacks, s)
	}
}
