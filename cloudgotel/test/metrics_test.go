package test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

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
			"cloudg.lost": "{call}", "cloudg.wait.duration": "s",
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
			"cloudg.breaker.trips": {key(scopeKV(assets, attribute.String("cloudg.reason", "errors"))...): 1},
			"cloudg.lost": {
				key(scopeKV(iam, attribute.String("cloudg.loss", "gave_up"))...):    1,
				key(scopeKV(assets, attribute.String("cloudg.loss", "failed"))...):  1,
				key(scopeKV(assets, attribute.String("cloudg.loss", "skipped"))...): 1,
			},
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

// WithoutAccount and WithoutOperation leave those attributes off, the
// measurements' and the span events'.
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
			rec := tracetest.NewSpanRecorder()
			ctx, span := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test").Start(context.Background(), "DescribeVpcs")
			resilience.Do(ctx, other, failing(throttled), resilience.WithGovernor(g))
			span.End()
			events := rec.Ended()[0].Events()
			if len(events) == 0 {
				t.Errorf("without %s: no span event", c.drop)
			}
			for _, ev := range events {
				for _, kv := range ev.Attributes {
					if string(kv.Key) == c.drop {
						t.Errorf("%s kept on span event %s", c.drop, ev.Name)
					}
				}
			}
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

// Every call lost is counted once in cloudg.lost, by the ledger's kind:
// given up after throttling, skipped by an open breaker, failed after
// transient errors, refused because its wait would pass its deadline, and
// cancelled by its context. A breaker's trip says why it opened.
func TestLostCallsByKindAndTripsByReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		g := governed(t, m, resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1}})
		ctx := context.Background()
		gov := resilience.WithGovernor(g)
		resilience.Do(ctx, iam, fail(throttled), gov, once) // gave up; the breaker opens for throttling
		resilience.Do(ctx, iam, ok, gov)                    // skipped
		subnets := vpcs
		subnets.Operation = "DescribeSubnets"
		resilience.Do(ctx, subnets, fail(transient), gov, once) // failed; the breaker opens for errors
		paused := &apiErr{code: "RESOURCE_EXHAUSTED", status: 429, header: http.Header{"Retry-After": {"60"}}}
		resilience.Do(ctx, assets, fail(paused), gov, once) // gave up, and paused 60 s (GCP's breaker counts to 5)
		short, cancel := context.WithTimeout(ctx, time.Second)
		resilience.Do(short, assets, ok, gov) // refused
		cancel()
		gone, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(time.Second); cancel() }()
		resilience.Do(gone, assets, ok, gov, resilience.WithPolicy(resilience.RetryPolicy{Deadline: time.Hour})) // cancelled
		lost := sums(t, m.collect(t)["cloudg.lost"])
		loss := func(sc resilience.Scope, kind string) string {
			return key(scopeKV(sc, attribute.String("cloudg.loss", kind))...)
		}
		want := map[string]int64{
			loss(iam, "gave_up"): 1, loss(iam, "skipped"): 1, loss(subnets, "failed"): 1,
			loss(assets, "gave_up"): 1, loss(assets, "refused"): 1, loss(assets, "cancelled"): 1,
		}
		if len(lost) != len(want) {
			t.Errorf("cloudg.lost %v, want %v", lost, want)
		}
		for k, v := range want {
			if lost[k] != v {
				t.Errorf("cloudg.lost{%s} = %d, want %d", k, lost[k], v)
			}
		}
		trips := sums(t, m.collect(t)["cloudg.breaker.trips"])
		for sc, reason := range map[resilience.Scope]string{iam: "throttling", subnets: "errors"} {
			if k := key(scopeKV(sc, attribute.String("cloudg.reason", reason))...); trips[k] != 1 {
				t.Errorf("trips %v: no %s for %v", trips, reason, sc)
			}
		}
	})
}
