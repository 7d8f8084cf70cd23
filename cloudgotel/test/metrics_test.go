package test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cloudg/cloudg/cloudgotel"
	"github.com/cloudg/cloudg/resilience"
)

var (
	iam    = resilience.Scope{Provider: "aws", Account: "111111111111", Service: "iam", Operation: "ListUsers"}
	assets = resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
)

// The counters and the wait histogram carry the contract's names, units
// and the scope's semantic-convention attributes, and count what the
// governor did.
func TestCountersAndWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		g := governed(t, m, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1}})
		ctx := context.Background()
		gov := resilience.WithGovernor(g)
		hinted := &apiErr{code: "Throttling", status: 400, header: http.Header{"Retry-After": {"2"}}}
		if err := resilience.Do(ctx, vpcs, failing(hinted, hinted), gov); err != nil {
			t.Fatal(err)
		}
		resilience.Do(ctx, iam, fail(throttled), gov, once)
		resilience.Do(ctx, assets, fail(transient), gov, once) // the breaker opens
		resilience.Do(ctx, assets, ok, gov)                    // and refuses this one

		got := m.collect(t)
		for name, unit := range map[string]string{
			"cloudg.calls": "{call}", "cloudg.throttles": "{throttle}", "cloudg.retries": "{retry}",
			"cloudg.gave_up": "{call}", "cloudg.rejected": "{call}", "cloudg.breaker.trips": "{trip}",
			"cloudg.wait.duration": "s",
		} {
			if got[name].Unit != unit {
				t.Errorf("%s: unit %q, want %q", name, got[name].Unit, unit)
			}
		}
		want := map[string]map[string]int64{
			"cloudg.calls":         {key(scopeKV(vpcs)...): 3, key(scopeKV(iam)...): 1, key(scopeKV(assets)...): 1},
			"cloudg.throttles":     {key(scopeKV(vpcs)...): 2, key(scopeKV(iam)...): 1},
			"cloudg.retries":       {key(scopeKV(vpcs)...): 2},
			"cloudg.gave_up":       {key(scopeKV(iam, attribute.String("cloudg.reason", "retries"))...): 1},
			"cloudg.rejected":      {key(scopeKV(assets)...): 1},
			"cloudg.breaker.trips": {key(scopeKV(assets)...): 1},
		}
		for name, points := range want {
			have := sums(t, got[name])
			if len(have) != len(points) {
				t.Errorf("%s: %v, want %v", name, have, points)
			}
			for k, v := range points {
				if have[k] != v {
					t.Errorf("%s{%s} = %d, want %d", name, k, have[k], v)
				}
			}
		}

		h, isHist := got["cloudg.wait.duration"].Data.(metricdata.Histogram[float64])
		if !isHist || len(h.DataPoints) == 0 {
			t.Fatalf("wait histogram %+v", got["cloudg.wait.duration"].Data)
		}
		for _, p := range h.DataPoints {
			a := attrs(p.Attributes)
			if a["rpc.method"] != "DescribeVpcs" || a["cloudg.level"] != "leaf" || p.Count == 0 || p.Sum <= 0 {
				t.Errorf("wait point %v: %d waits, %v s", a, p.Count, p.Sum)
			}
			if len(p.Bounds) == 0 || p.Bounds[len(p.Bounds)-1] != 300 {
				t.Errorf("wait buckets %v", p.Bounds)
			}
		}
	})
}

// WithoutAccount and WithoutOperation leave those attributes off.
func TestDroppedAttributes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			opt  cloudgotel.Option
			drop string
		}{{cloudgotel.WithoutAccount(), "cloud.account.id"}, {cloudgotel.WithoutOperation(), "rpc.method"}} {
			m := newMeter()
			g := governed(t, m, resilience.Config{}, c.opt)
			other := vpcs
			other.Account, other.Operation = "222222222222", "DescribeSubnets"
			resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g))
			resilience.Do(context.Background(), other, ok, resilience.WithGovernor(g))
			s := m.collect(t)["cloudg.calls"].Data.(metricdata.Sum[int64])
			if len(s.DataPoints) != 2 {
				t.Errorf("without %s: %d points", c.drop, len(s.DataPoints))
			}
			for _, p := range s.DataPoints {
				if _, has := p.Attributes.Value(attribute.Key(c.drop)); has {
					t.Errorf("%s kept: %v", c.drop, attrs(p.Attributes))
				}
				if _, has := p.Attributes.Value("rpc.service"); !has {
					t.Errorf("rpc.service dropped too: %v", attrs(p.Attributes))
				}
			}
		}
	})
}
