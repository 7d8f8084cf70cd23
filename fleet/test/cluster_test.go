package test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// clusterOnly returns the Redis Cluster ./scripts/test starts.
func clusterOnly(t *testing.T) backend {
	be, ok := redisCluster()
	if !ok {
		t.Skip("needs a Redis Cluster (CLOUDG_REDIS_CLUSTER_ADDRS); ./scripts/test starts one")
	}
	return be
}

// fleet.Open takes go-redis's cluster URL (the nodes as addr=): the
// scopes' keys spread over the cluster's masters, each scope's bucket and
// breaker in one slot (one hash tag), and no operation is refused.
func TestOpenAClusterURL(t *testing.T) {
	be := clusterOnly(t)
	prefix := uniquePrefix(t)
	store, err := fleet.Open(be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gov, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(store))
	for i := range 30 {
		sc := vpcs
		sc.Account = fmt.Sprintf("1234567890%02d", i)
		if err := resilience.Do(context.Background(), sc, ok, resilience.WithGovernor(gov)); err != nil {
			t.Fatal(err)
		}
		resilience.Do(context.Background(), sc, throttl, resilience.WithGovernor(gov), once)
	}
	if st := store.Stats(); st.RedisErrors != 0 || st.Fallbacks != 0 {
		t.Fatalf("on the cluster: %+v", st)
	}
	admin := be.client().(*redis.ClusterClient)
	defer admin.Close()
	var mu sync.Mutex
	nodes := map[string]int{}
	admin.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		n := len(c.Keys(ctx, prefix+"*").Val())
		mu.Lock()
		nodes[c.Options().Addr] = n
		mu.Unlock()
		return nil
	})
	used := 0
	for _, n := range nodes {
		if n > 0 {
			used++
		}
	}
	if used < 2 {
		t.Fatalf("the keys of 30 scopes on %d of the cluster's masters: %v", used, nodes)
	}
}

// A single-server URL that names one node of a cluster cannot reach the
// keys other nodes hold: the store goes on with local limits, no call
// fails, and the log says to use the cluster's form.
func TestASingleServerURLOfAClusterNodeSaysSo(t *testing.T) {
	be := clusterOnly(t)
	admin := be.client().(*redis.ClusterClient)
	defer admin.Close()
	// A prefix whose heartbeat key another node holds.
	var prefix string
	for i := 0; ; i++ {
		prefix = fmt.Sprintf("%s-%d", uniquePrefix(t), i)
		c, err := admin.MasterForKey(context.Background(), prefix+":procs")
		if err != nil {
			t.Fatal(err)
		}
		if c.Options().Addr != be.addr() {
			break
		}
	}
	var logs syncBuffer
	store, err := fleet.Open("redis://"+be.addr()+"/0", fleet.WithPrefix(prefix), fleet.WithTimeout(time.Second),
		fleet.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	gov, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(store))
	if err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(gov)); err != nil {
		t.Fatal(err)
	}
	if !store.Stats().Degraded || !strings.Contains(logs.String(), "addr= parameters") {
		t.Fatalf("%+v; logged:\n%s", store.Stats(), logs.String())
	}
}
