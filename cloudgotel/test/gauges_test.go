package test

import (
	"context"
	"testing"
	"testing/synctest"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cloudg/cloudg/cloudgotel"
	"github.com/cloudg/cloudg/resilience"
)

// gauge returns a gauge's points by their attributes' encoding.
func gauge[N int64 | float64](t *testing.T, mt metricdata.Metrics) map[string]N {
	t.Helper()
	g, isGauge := mt.Data.(metricdata.Gauge[N])
	if !isGauge {
		t.Fatalf("%s is %T", mt.Name, mt.Data)
	}
	out := map[string]N{}
	for _, p := range g.DataPoints {
		if _, dup := out[p.Attributes.Encoded(attribute.DefaultEncoder())]; dup {
			t.Errorf("%s: two points for %v", mt.Name, attrs(p.Attributes))
		}
		out[p.Attributes.Encoded(attribute.DefaultEncoder())] = p.Value
	}
	return out
}

// gaugeEstate makes scopes whose gauges differ: DescribeVpcs of account
// 111 slowed to half its ceiling with its breaker open, DescribeSubnets of
// the same account at its ceiling with a call holding a slot, DescribeVpcs
// of account 222 at its ceiling, and a GCP scope. It returns the governor
// and the guard holding the slot.
func gaugeEstate(t *testing.T, m meter) (*resilience.Governor, *resilience.Guard) {
	t.Helper()
	g := governed(t, m, resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1}})
	ctx := context.Background()
	gov := resilience.WithGovernor(g)
	resilience.Do(ctx, vpcs, fail(throttled), gov, once)
	other := vpcs
	other.Account = "222222222222"
	resilience.Do(ctx, other, ok, gov)
	resilience.Do(ctx, assets, ok, gov)
	subnets := vpcs
	subnets.Operation = "DescribeSubnets"
	held, _ := g.Begin(ctx, subnets)
	if err := held.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	return g, held
}

// The gauges read each live scope's rate, ceiling and breaker, each
// account's calls in flight and each provider's retry budget, with the
// attributes of what they belong to.
func TestGauges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		g, held := gaugeEstate(t, m)
		defer held.End(nil)
		reg, err := cloudgotel.RegisterGauges(g, cloudgotel.WithMeterProvider(m))
		if err != nil {
			t.Fatal(err)
		}
		got := m.collect(t)
		for name, unit := range map[string]string{"cloudg.rate": "{request}/s", "cloudg.rate.ceiling": "{request}/s",
			"cloudg.breaker.state": "", "cloudg.inflight": "{call}", "cloudg.retry_budget": "{token}"} {
			if got[name].Unit != unit {
				t.Errorf("%s: unit %q, want %q", name, got[name].Unit, unit)
			}
		}
		other := vpcs
		other.Account = "222222222222"
		subnets := vpcs
		subnets.Operation = "DescribeSubnets"
		assetsLeaf := assets // the GCP leaf is per operation for cloudasset
		rates := gauge[float64](t, got["cloudg.rate"])
		ceilings := gauge[float64](t, got["cloudg.rate.ceiling"])
		breakers := gauge[int64](t, got["cloudg.breaker.state"])
		for sc, want := range map[resilience.Scope]struct {
			rate, ceiling float64
			breaker       int64
		}{vpcs: {10, 20, 2}, other: {20, 20, 0}, subnets: {20, 20, 0}, assetsLeaf: {1.5, 1.5, 0}} {
			k := key(scopeKV(sc)...)
			if rates[k] != want.rate || ceilings[k] != want.ceiling || breakers[k] != want.breaker {
				t.Errorf("%v: rate %v of %v, breaker %v; want %+v", sc, rates[k], ceilings[k], breakers[k], want)
			}
		}
		if len(rates) != 4 {
			t.Errorf("rate series %v", rates)
		}
		inflight := gauge[int64](t, got["cloudg.inflight"])
		acct := func(p, a string) string {
			return key(attribute.String("cloud.provider", p), attribute.String("cloud.account.id", a))
		}
		if len(inflight) != 3 || inflight[acct("aws", "111111111111")] != 1 || inflight[acct("aws", "222222222222")] != 0 || inflight[acct("gcp", "projects/p1")] != 0 {
			t.Errorf("in flight %v", inflight)
		}
		budget := gauge[float64](t, got["cloudg.retry_budget"])
		prov := func(p string) string { return key(attribute.String("cloud.provider", p)) }
		if len(budget) != 2 || budget[prov("aws")] != 500 || budget[prov("gcp")] != 500 {
			t.Errorf("retry budget %v", budget)
		}

		// Unregistered, the gauges read the governor no more.
		if err := reg.Unregister(); err != nil {
			t.Fatal(err)
		}
		if mt, has := m.collect(t)["cloudg.rate"]; has && len(mt.Data.(metricdata.Gauge[float64]).DataPoints) != 0 {
			t.Errorf("after Unregister: %+v", mt.Data)
		}
	})
}

// Without the account, the scopes that differ only by account are one
// series: rates and ceilings added up, the worst breaker, the calls in
// flight of every account added up.
func TestGaugesWithoutAccount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		g, held := gaugeEstate(t, m)
		defer held.End(nil)
		if _, err := cloudgotel.RegisterGauges(g, cloudgotel.WithMeterProvider(m), cloudgotel.WithoutAccount()); err != nil {
			t.Fatal(err)
		}
		got := m.collect(t)
		anyVpcs := vpcs
		anyVpcs.Account = ""
		k := key(scopeKV(anyVpcs)...)
		if r, c, b := gauge[float64](t, got["cloudg.rate"])[k], gauge[float64](t, got["cloudg.rate.ceiling"])[k], gauge[int64](t, got["cloudg.breaker.state"])[k]; r != 30 || c != 40 || b != 2 {
			t.Errorf("DescribeVpcs of every account: rate %v of %v, breaker %v", r, c, b)
		}
		inflight := gauge[int64](t, got["cloudg.inflight"])
		if len(inflight) != 2 || inflight[key(attribute.String("cloud.provider", "aws"))] != 1 {
			t.Errorf("in flight %v", inflight)
		}
	})
}
