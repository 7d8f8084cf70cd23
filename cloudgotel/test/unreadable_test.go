package test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cloudg/cloudg/resilience"
)

// throttleOverNil is a provider's throttle whose error wraps a nil
// *apiErr: its code reads, its message (which reads the one it wraps)
// panics.
type throttleOverNil struct{ inner *apiErr }

func (e *throttleOverNil) Error() string     { return "Throttling: " + e.inner.Error() }
func (e *throttleOverNil) ErrorCode() string { return "Throttling" }
func (e *throttleOverNil) Unwrap() error     { return e.inner }

// A throttle the governor reads from an outer error's code over an error
// whose methods panic (resilience.Classify: Throttled) gives its span a
// cloudg.throttle event as any throttle does; its cloudg.error says that
// the error could not be read, since its Error method panics: the
// observer does not call it bare, and loses no event to it.
func TestAThrottleWhoseMessagePanicsIsASpanEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		g := governed(t, newMeter(), resilience.Config{})
		ctx, span := tp.Tracer("test").Start(context.Background(), "DescribeVpcs")
		if err := resilience.Do(ctx, vpcs, failing(&throttleOverNil{}), resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		span.End()
		var names []string
		var said string
		for _, ev := range rec.Ended()[0].Events() {
			names = append(names, ev.Name)
			if ev.Name == "cloudg.throttle" {
				for _, kv := range ev.Attributes {
					if kv.Key == "cloudg.error" {
						said = kv.Value.Emit()
					}
				}
			}
		}
		if len(names) == 0 || names[0] != "cloudg.throttle" || !strings.Contains(said, "unreadable error") || !strings.Contains(said, "panicked") {
			t.Errorf("span events %v, the throttle's cloudg.error %q; want a cloudg.throttle first, its error saying a method panicked", names, said)
		}
	})
}
