package test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cloudg/cloudg/cloudgotel"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// A call whose context carries a recording span gets its waits, throttles
// and retries (with their delay) as events of that span.
func TestSpanEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		g := governed(t, newMeter(), resilience.Config{})
		ctx, span := tp.Tracer("test").Start(context.Background(), "DescribeVpcs")
		hinted := &apiErr{code: "Throttling", status: 400, header: http.Header{"Retry-After": {"3"}}}
		if err := resilience.Do(ctx, vpcs, failing(hinted), resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		span.End()
		ended := rec.Ended()
		if len(ended) != 1 {
			t.Fatalf("%d spans", len(ended))
		}
		var names []string
		byName := map[string]map[string]string{}
		for _, ev := range ended[0].Events() {
			names = append(names, ev.Name)
			a := map[string]string{}
			for _, kv := range ev.Attributes {
				a[string(kv.Key)] = kv.Value.Emit()
			}
			byName[ev.Name] = a
		}
		if len(names) != 3 || names[0] != "cloudg.throttle" || names[1] != "cloudg.wait" || names[2] != "cloudg.retry" {
			t.Fatalf("span events %v", names)
		}
		if th := byName["cloudg.throttle"]; th["cloudg.retry_after"] != "3" || th["cloudg.error"] != "Throttling" || th["rpc.method"] != "DescribeVpcs" {
			t.Errorf("throttle %v", th)
		}
		if r := byName["cloudg.retry"]; r["cloudg.retry"] != "1" || seconds(t, r["cloudg.delay"]) < 3 || r["cloud.account.id"] != vpcs.Account {
			t.Errorf("retry %v", r)
		}
		if w := byName["cloudg.wait"]; w["cloudg.level"] != "leaf" || seconds(t, w["cloudg.wait"]) <= 0 {
			t.Errorf("wait %v", w)
		}
	})
}

// A span that is not recording (not sampled) gets no event and costs the
// observer nothing: recording a throttle allocates nothing, with such a
// span as without one.
func TestNoEventsOnASpanNotRecording(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	obs, err := cloudgotel.NewObserver(cloudgotel.WithMeterProvider(newMeter()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tp.Tracer("test").Start(context.Background(), "DescribeVpcs")
	defer span.End()
	if span.IsRecording() {
		t.Fatal("the span records")
	}
	ev := observe.Event{Kind: observe.Throttle, Scope: vpcs, Err: throttled, HasHint: true}
	obs.Observe(ev) // the scope's attributes are cached from here on
	for _, c := range []context.Context{nil, ctx} {
		ev.Context = c
		if n := testing.AllocsPerRun(100, func() { obs.Observe(ev) }); n != 0 {
			t.Errorf("%v allocations per throttle (context %v)", n, c)
		}
	}
}

func seconds(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return f
}
