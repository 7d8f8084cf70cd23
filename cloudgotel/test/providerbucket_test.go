package test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// A provider's provider-wide bucket (global_max_rps) is in the gauges:
// cloudg.queued counts the callers it holds in each scope of the
// provider, whose next call waits behind them, as it counts an
// account's, and cloudg.provider.rate, cloudg.provider.rate.ceiling and
// cloudg.provider.queued show the bucket, per cloud.provider. Before,
// with AWS at global_max_rps 1 and 3 callers queued on it, every scope's
// cloudg.queued was 0 and nothing showed the bucket.
func TestGaugesShowTheProviderBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		one := 1.0
		g := governed(t, m, resilience.Config{AWS: resilience.ProviderConfig{GlobalMaxRPS: &one, GlobalBurst: 1}})
		ctx, cancel := context.WithCancel(context.Background())
		gov := resilience.WithGovernor(g)
		ok := func(context.Context) error { return nil }
		users := resilience.Scope{Provider: "aws", Account: "222222222222", Region: "us-east-1", Service: "iam"}
		resilience.Do(ctx, users, ok, gov) // the bucket's one token
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { resilience.Do(ctx, vpcs, ok, gov) })
		}
		synctest.Wait()
		defer func() { cancel(); wg.Wait() }()

		got := m.collect(t)
		queued := gauge[int64](t, got["cloudg.queued"])
		for _, sc := range []resilience.Scope{vpcs, users} {
			if q := queued[key(scopeKV(sc)...)]; q != 3 {
				t.Errorf("cloudg.queued of %v is %d, want the 3 callers queued on the provider bucket", sc, q)
			}
		}
		aws := key(scopeKV(resilience.Scope{Provider: "aws"})...)
		for name, want := range map[string]float64{"cloudg.provider.rate": 1, "cloudg.provider.rate.ceiling": 1} {
			if mt, has := got[name]; !has {
				t.Errorf("no %s", name)
			} else if v, has := gauge[float64](t, mt)[aws]; !has || v != want {
				t.Errorf("%s of aws is %v (reported: %v), want %v", name, v, has, want)
			}
		}
		if mt, has := got["cloudg.provider.queued"]; !has {
			t.Errorf("no cloudg.provider.queued")
		} else if q := gauge[int64](t, mt); len(q) != 1 || q[aws] != 3 {
			t.Errorf("cloudg.provider.queued is %v, want aws's 3 alone (azure and gcp have no provider bucket)", q)
		}
		for _, name := range []string{"cloudg.provider.rate", "cloudg.provider.rate.ceiling", "cloudg.provider.queued"} {
			if k := kindOf(got[name]); k != "up-down counter" {
				t.Errorf("%s is a %s: the providers' values add up (TestAdditiveGaugesAddUpUnderAView)", name, k)
			}
		}
		time.Sleep(time.Minute)
	})
}
