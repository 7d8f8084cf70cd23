package cloudgotel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
)

// An Option configures what Instrument makes (or NewObserver and
// RegisterGauges). An Option is a value that changes nothing once made:
// any number of goroutines may give the same one to Instrument at once.
// A nil Option is ignored.
type Option interface{ apply(*config) }

type config struct {
	provider    metric.MeterProvider // nil: the global one
	noAccount   bool
	noOperation bool
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.provider == nil {
		c.provider = otel.GetMeterProvider()
	}
	return c
}

// WithMeterProvider records to mp instead of the global meter provider
// (otel.GetMeterProvider, looked up when the Observer or the gauges are
// made); a nil mp is the global one.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.provider = mp })
}

// WithoutAccount leaves cloud.account.id off every measurement, so that
// the number of series does not grow with the accounts of an estate, and
// off the events added to the calls' spans, which carry the measurements'
// attributes.
func WithoutAccount() Option { return optionFunc(func(c *config) { c.noAccount = true }) }

// WithoutOperation leaves rpc.method off every measurement, so that the
// number of series does not grow with the operations a program calls, and
// off the events added to the calls' spans.
func WithoutOperation() Option { return optionFunc(func(c *config) { c.noOperation = true }) }

// meterName is the instrumentation scope of the instruments.
const meterName = "github.com/cloudg/cloudg/cloudgotel"

func (c *config) meter() metric.Meter { return c.provider.Meter(meterName) }
