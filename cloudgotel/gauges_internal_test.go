package cloudgotel

import (
	"testing"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/cloudg/cloudg/resilience"
)

// An Observer whose gauges were unregistered keeps no governor made with
// it afterwards: nothing reads it, and the Observer would hold it for as
// long as it lives.
func TestUnregisteredGaugesHoldNoGovernor(t *testing.T) {
	obs, err := Instrument(WithMeterProvider(noop.NewMeterProvider()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(obs)); err != nil {
		t.Fatal(err)
	}
	if err := obs.Unregister(); err != nil {
		t.Fatal(err)
	}
	if _, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(obs)); err != nil {
		t.Fatal(err)
	}
	if n := len(obs.gauges.governors()); n != 0 {
		t.Fatalf("the unregistered gauges hold %d governors, want none", n)
	}
}
