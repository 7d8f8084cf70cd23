package test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cloudg/cloudg/cloudgotel"
	"github.com/cloudg/cloudg/resilience"
)

// apiErr is an SDK-shaped error the governor reads by its method sets.
type apiErr struct {
	code   string
	status int
	header http.Header
}

func (e *apiErr) Error() string       { return e.code }
func (e *apiErr) ErrorCode() string   { return e.code }
func (e *apiErr) HTTPStatusCode() int { return e.status }
func (e *apiErr) Header() http.Header { return e.header }

var (
	throttled = &apiErr{code: "Throttling", status: 400}
	transient = &apiErr{code: "InternalError", status: 500}
	ok        = func(context.Context) error { return nil }
	once      = resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1})

	vpcs = resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcs"}
)

func fail(err error) func(context.Context) error {
	return func(context.Context) error { return err }
}

// failing returns a fn that fails with errs in turn, then succeeds.
func failing(errs ...error) func(context.Context) error {
	n := 0
	return func(context.Context) error {
		n++
		if n <= len(errs) {
			return errs[n-1]
		}
		return nil
	}
}

// meter is a meter provider read by a manual reader.
type meter struct {
	*sdkmetric.MeterProvider
	reader *sdkmetric.ManualReader
}

func newMeter() meter {
	r := sdkmetric.NewManualReader()
	return meter{sdkmetric.NewMeterProvider(sdkmetric.WithReader(r)), r}
}

// governed returns a governor instrumented on m, with opts.
func governed(t *testing.T, m meter, cfg resilience.Config, opts ...cloudgotel.Option) *resilience.Governor {
	t.Helper()
	g, _ := instrumented(t, m, cfg, opts...)
	return g
}

// instrumented returns a governor instrumented on m, with opts, in the one
// call the package documents, and its Observer.
func instrumented(t *testing.T, m meter, cfg resilience.Config, opts ...cloudgotel.Option) (*resilience.Governor, *cloudgotel.Observer) {
	t.Helper()
	obs, err := cloudgotel.Instrument(append([]cloudgotel.Option{cloudgotel.WithMeterProvider(m)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	g, err := resilience.NewGovernor(cfg, resilience.WithObserver(obs), resilience.WithRandom(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return g, obs
}

// collect reads every metric of m by name.
func (m meter) collect(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/cloudg/cloudg/cloudgotel" {
			t.Errorf("instrumentation scope %q", sm.Scope.Name)
		}
		for _, mt := range sm.Metrics {
			out[mt.Name] = mt
		}
	}
	return out
}

// attrs renders a set as a map, for comparing.
func attrs(s attribute.Set) map[string]string {
	m := map[string]string{}
	for _, kv := range s.ToSlice() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// sums returns a counter's points by their attributes' encoding.
func sums(t *testing.T, mt metricdata.Metrics) map[string]int64 {
	t.Helper()
	s, isSum := mt.Data.(metricdata.Sum[int64])
	if !isSum || !s.IsMonotonic {
		t.Fatalf("%s is %T, not a monotonic sum", mt.Name, mt.Data)
	}
	out := map[string]int64{}
	for _, p := range s.DataPoints {
		out[p.Attributes.Encoded(attribute.DefaultEncoder())] += p.Value
	}
	return out
}

// key encodes kv as the SDK encodes a point's attributes.
func key(kv ...attribute.KeyValue) string {
	s := attribute.NewSet(kv...)
	return s.Encoded(attribute.DefaultEncoder())
}

// scopeKV returns the attributes the Observer gives sc, with extra.
func scopeKV(sc resilience.Scope, extra ...attribute.KeyValue) []attribute.KeyValue {
	kv := []attribute.KeyValue{attribute.String("cloud.provider", sc.Provider)}
	if sc.Account != "" {
		a := sc.Account
		if sc.Provider == "gcp" {
			a = strings.TrimPrefix(a, "projects/") // a project's bare id, as OpenTelemetry's GCP detectors write it
		}
		kv = append(kv, attribute.String("cloud.account.id", a))
	}
	if sc.Region != "" {
		kv = append(kv, attribute.String("cloud.region", sc.Region))
	}
	if sc.Service != "" {
		kv = append(kv, attribute.String("rpc.service", sc.Service))
	}
	if sc.Operation != "" {
		kv = append(kv, attribute.String("rpc.method", sc.Operation))
	}
	return append(kv, extra...)
}
