package test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cloudg/cloudg/cloudgotel"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// scrape GETs url and parses Prometheus's text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// labels returns a metric's labels as a map.
func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// promGoverned returns a governor of cfg instrumented with opts, as
// instrumented does, on a meter provider read by the OpenTelemetry
// Prometheus exporter (made with expOpts), its Observer, and the URL of
// the exporter's registry served over HTTP on 127.0.0.1 (its /metrics);
// the test's cleanup closes the server, unregisters the Observer and
// shuts the meter provider down.
func promGoverned(t *testing.T, cfg resilience.Config, expOpts []otelprom.Option, opts ...cloudgotel.Option) (*resilience.Governor, *cloudgotel.Observer, string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(append([]otelprom.Option{otelprom.WithRegisterer(reg)}, expOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	g, obs := instrumented(t, meter{MeterProvider: mp}, cfg, opts...)
	t.Cleanup(func() { obs.Unregister() })
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return g, obs, srv.URL + "/metrics"
}

// Through the OpenTelemetry Prometheus exporter, scraped over HTTP on
// 127.0.0.1, the instruments read as Prometheus names with the scope's
// attributes as labels.
func TestPrometheusScrape(t *testing.T) {
	g, _, url := promGoverned(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerThreshold: 1}}, nil)

	ctx := context.Background()
	gov := resilience.WithGovernor(g)
	quick := resilience.WithPolicy(resilience.RetryPolicy{BaseDelay: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if err := resilience.Do(ctx, vpcs, failing(throttled), gov, quick); err != nil { // throttled, halved, waits, retried
		t.Fatal(err)
	}
	resilience.Do(ctx, iam, fail(throttled), gov, once)    // gave up
	resilience.Do(ctx, assets, fail(transient), gov, once) // the breaker trips
	resilience.Do(ctx, assets, ok, gov)                    // rejected

	fams := scrape(t, url)
	var names []string
	for name := range fams {
		names = append(names, name)
	}
	slices.Sort(names)
	t.Logf("scraped %v", names)

	for name, typ := range map[string]dto.MetricType{
		"cloudg_calls_total":             dto.MetricType_COUNTER,
		"cloudg_throttles_total":         dto.MetricType_COUNTER,
		"cloudg_retries_total":           dto.MetricType_COUNTER,
		"cloudg_gave_up_total":           dto.MetricType_COUNTER,
		"cloudg_rejected_total":          dto.MetricType_COUNTER,
		"cloudg_breaker_trips_total":     dto.MetricType_COUNTER,
		"cloudg_lost_total":              dto.MetricType_COUNTER,
		"cloudg_queued":                  dto.MetricType_GAUGE,
		"cloudg_pause_remaining_seconds": dto.MetricType_GAUGE,
		"cloudg_waiting":                 dto.MetricType_GAUGE,
		"cloudg_wait_duration_seconds":   dto.MetricType_HISTOGRAM,
		"cloudg_rate_per_second":         dto.MetricType_GAUGE,
		"cloudg_rate_ceiling_per_second": dto.MetricType_GAUGE,
		"cloudg_breaker_state":           dto.MetricType_GAUGE,
		"cloudg_inflight":                dto.MetricType_GAUGE,
		"cloudg_retry_budget":            dto.MetricType_GAUGE,
	} {
		f, has := fams[name]
		if !has {
			t.Errorf("no %s in %v", name, names)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is a %v, want %v", name, f.GetType(), typ)
		}
	}

	// The DescribeVpcs calls, with the semantic conventions' labels.
	var vpcCalls float64
	for _, m := range fams["cloudg_calls_total"].GetMetric() {
		l := labels(m)
		if l["rpc_method"] == "DescribeVpcs" {
			if l["cloud_provider"] != "aws" || l["cloud_account_id"] != vpcs.Account || l["cloud_region"] != "eu-west-1" || l["rpc_service"] != "ec2" {
				t.Errorf("labels %v", l)
			}
			vpcCalls = m.GetCounter().GetValue()
		}
	}
	if vpcCalls != 2 {
		t.Errorf("cloudg_calls_total{rpc_method=DescribeVpcs} = %v, want 2", vpcCalls)
	}
	for _, m := range fams["cloudg_breaker_state"].GetMetric() {
		if l := labels(m); l["cloud_provider"] == "gcp" && m.GetGauge().GetValue() != 2 {
			t.Errorf("the GCP breaker reads %v, want 2 (open)", m.GetGauge().GetValue())
		}
	}
	if gu := fams["cloudg_gave_up_total"].GetMetric(); len(gu) != 1 || labels(gu[0])["cloudg_reason"] != "retries" {
		t.Errorf("gave up %v", gu)
	}
}

// series counts the cloudg_ series of a scrape of url, by family: the
// sample lines of Prometheus's text format (a histogram's buckets, sum
// and count each a line).
func series(t *testing.T, url string) map[string]int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "cloudg_") {
			out[l[:strings.IndexAny(l, "{ ")]]++
		}
	}
	return out
}

// The series are what the README says: per live scope (leaf) five gauges,
// per account two, per provider one and three more for a provider with a
// provider-wide bucket (global_max_rps), and per operation called one
// cloudg_calls_total (with a series more per operation for each other
// event it had, and nineteen per operation and bucket level that
// waited). WithoutOperation makes the operations of a service one scope:
// here 3 accounts x 3 regions of EC2 (four operations, each its own
// leaf), Secrets Manager and DynamoDB (two operations each, one leaf per
// service).
func TestSeriesPerLiveScope(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []cloudgotel.Option
		// leaves, accounts, providers, operations, providers with a
		// provider-wide bucket
		l, a, p, o, b int
	}{
		{"default", nil, 9 * 6, 3, 1, 9 * 8, 0},
		{"WithoutOperation", []cloudgotel.Option{cloudgotel.WithoutOperation()}, 9 * 3, 3, 1, 9 * 3, 0},
		{"a provider bucket", nil, 9 * 6, 3, 1, 9 * 8, 1},
		{"a provider bucket WithoutOperation", []cloudgotel.Option{cloudgotel.WithoutOperation()}, 9 * 3, 3, 1, 9 * 3, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cfg resilience.Config
			if c.b > 0 {
				rps := 1000.0 // no call waits
				cfg.AWS.GlobalMaxRPS, cfg.AWS.GlobalBurst = &rps, 1000
			}
			g, _, url := promGoverned(t, cfg, []otelprom.Option{otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo()}, c.opts...)
			ops := map[string][]string{
				"ec2":            {"DescribeInstances", "DescribeVpcs", "DescribeSubnets", "DescribeSecurityGroups"},
				"secretsmanager": {"ListSecrets", "DescribeSecret"},
				"dynamodb":       {"ListTables", "DescribeTable"},
			}
			for _, acct := range []string{"111111111111", "222222222222", "333333333333"} {
				for _, region := range []string{"us-east-1", "eu-west-1", "ap-southeast-2"} {
					for svc, names := range ops {
						for _, op := range names {
							sc := resilience.Scope{Provider: "aws", Account: acct, Region: region, Service: svc, Operation: op}
							if err := resilience.Do(context.Background(), sc, ok, resilience.WithGovernor(g)); err != nil {
								t.Fatal(err)
							}
						}
					}
				}
			}
			live := 0
			for range g.Scopes() {
				live++
			}
			if live != 9*6 {
				t.Fatalf("%d live scopes, want 54", live)
			}
			got := series(t, url)
			total := 0
			for _, n := range got {
				total += n
			}
			if want := 5*c.l + 2*c.a + c.p + c.o + 3*c.b; total != want {
				t.Errorf("%d series, want 5 x %d leaves + 2 x %d accounts + %d provider + %d operations + 3 x %d provider buckets = %d: %v", total, c.l, c.a, c.p, c.o, c.b, want, got)
			}
		})
	}
}

// A scope's parts are caller data, and may hold any bytes (an account id
// read from a file, a header): the attributes are valid UTF-8, which the
// OpenTelemetry attribute values and the exporters' formats require, with
// U+FFFD for each run of bytes that is not, so that one such scope does
// not fail the scrape of every metric (before, Prometheus's registry
// refused the whole scrape, 500, "label value \"\xff\xfe\" is not valid
// UTF-8") and its calls are counted; so are the attributes of the
// events added to a call's span, an answer's text among them.
func TestAScopeOfInvalidUTF8DoesNotFailTheScrape(t *testing.T) {
	g, obs, url := promGoverned(t, resilience.Config{}, nil)
	bad := vpcs
	bad.Account, bad.Operation = "\xff\xfe12", "Describe\xc3"
	for _, sc := range []resilience.Scope{vpcs, bad} {
		if err := resilience.Do(context.Background(), sc, ok, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, first, _ := strings.Cut(string(body), "\n* ")
		first, _, _ = strings.Cut(first, "\n")
		if i := strings.Index(first, "}}: "); i >= 0 {
			first = first[i+4:] // the error, after the metric's description
		}
		t.Fatalf("a scope of account %q and operation %q: the scrape is %s, the first of its errors: %s", bad.Account, bad.Operation, resp.Status, first)
	}
	fams := scrape(t, url)
	found := false
	for _, m := range fams["cloudg_calls_total"].GetMetric() {
		if l := labels(m); l["cloud_account_id"] == "\uFFFD12" && l["rpc_method"] == "Describe\uFFFD" {
			found = true
		}
	}
	if !found {
		t.Errorf("cloudg_calls_total has no series of account \"\\uFFFD12\" and operation \"Describe\\uFFFD\": %v", fams["cloudg_calls_total"].GetMetric())
	}

	// A throttle's event on a recording span: its attributes, the
	// answer's text among them, are valid UTF-8 too.
	rec := tracetest.NewSpanRecorder()
	ctx, span := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test").Start(context.Background(), "call")
	obs.Observe(observe.Event{Kind: observe.Throttle, Scope: bad, Context: ctx, Err: errors.New("Throttling: rate of \xff exceeded")})
	span.End()
	for _, ev := range rec.Ended()[0].Events() {
		for _, kv := range ev.Attributes {
			if v := kv.Value.Emit(); !utf8.ValidString(v) {
				t.Errorf("span event %s: %s is %q, not valid UTF-8", ev.Name, kv.Key, v)
			}
		}
	}
}

// The up-down counters observe levels, as the gauges did (the README's
// "Changed since v0.1.0"): through the Prometheus exporter cloudg.rate is
// still a gauge, a scope's rate halved by a throttle reads half, and a
// scope that is gone (the governor Reset) leaves no series behind, its
// last level, of a sum, reported after it.
func TestAnUpDownCounterFallsAndEndsInTheScrape(t *testing.T) {
	g, _, url := promGoverned(t, resilience.Config{}, nil)
	rates := func() (dto.MetricType, []float64) {
		f, has := scrape(t, url)["cloudg_rate_per_second"]
		if !has {
			return dto.MetricType_GAUGE, nil
		}
		var out []float64
		for _, m := range f.GetMetric() {
			out = append(out, m.GetGauge().GetValue())
		}
		return f.GetType(), out
	}

	ctx, gov := context.Background(), resilience.WithGovernor(g)
	if err := resilience.Do(ctx, vpcs, ok, gov); err != nil {
		t.Fatal(err)
	}
	typ, before := rates()
	if typ != dto.MetricType_GAUGE || len(before) != 1 || before[0] <= 0 {
		t.Fatalf("a scope called once: cloudg_rate_per_second is a %v of %v; want a gauge of one rate", typ, before)
	}
	quick := resilience.WithPolicy(resilience.RetryPolicy{BaseDelay: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if err := resilience.Do(ctx, vpcs, failing(throttled), gov, quick); err != nil {
		t.Fatal(err)
	}
	if typ, after := rates(); typ != dto.MetricType_GAUGE || len(after) != 1 || after[0] != before[0]/2 {
		t.Errorf("the scope throttled once, its rate halved from %v: cloudg_rate_per_second is a %v of %v; want a gauge of %v", before[0], typ, after, before[0]/2)
	}
	g.Reset()
	if _, gone := rates(); len(gone) != 0 {
		t.Errorf("the governor Reset, no scope live: cloudg_rate_per_second %v; want no series", gone)
	}
}
