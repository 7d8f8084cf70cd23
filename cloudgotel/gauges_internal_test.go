package cloudgotel

import (
	"slices"
	"testing"

	"go.opentelemetry.io/otel/metric"
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

// unhashable is a meter provider whose meters' type is not comparable,
// and wrapped one whose meters' type is but whose values cannot key a
// map either.
type (
	unhashable struct {
		noop.MeterProvider
		_ map[string]int
	}
	unhashableMeter struct {
		noop.Meter
		_ map[string]int
	}
	wrapped      struct{ metric.MeterProvider }
	wrappedMeter struct{ metric.Meter }
)

func (unhashable) Meter(string, ...metric.MeterOption) metric.Meter { return unhashableMeter{} }

func (w wrapped) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return wrappedMeter{w.MeterProvider.Meter(name, opts...)}
}

// A meter provider whose meter cannot key a map (its type, or the value
// it holds, is not comparable) gets gauges of its own: Instrument neither
// panics nor fails on it, and Unregister removes them.
func TestAMeterThatCannotKeyAMapHasGaugesOfItsOwn(t *testing.T) {
	for _, mp := range []metric.MeterProvider{unhashable{}, wrapped{unhashable{}}} {
		obs, err := Instrument(WithMeterProvider(mp))
		if err != nil {
			t.Fatalf("%T: %v", mp, err)
		}
		meters.mu.Lock()
		in := slices.Contains(sharedGauges(), obs.gauges.shared)
		meters.mu.Unlock()
		if obs.gauges.shared == nil || in {
			t.Errorf("%T: gauges %+v, want their own, shared with none", mp, obs.gauges.shared)
		}
		if err := obs.Unregister(); err != nil || obs.gauges.shared.reg != nil {
			t.Errorf("%T: Unregister: %v, registration %v left", mp, err, obs.gauges.shared.reg)
		}
	}
}
