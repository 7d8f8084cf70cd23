package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cloudg/cloudg/cloudgotel"
	"github.com/cloudg/cloudg/resilience"
)

// addsUp makes a governor with each Observer, calls vpcs with each, and
// reports whether m's gauges add them up, as its counters do: n times
// 20 rps and n times 500 tokens, for n calls.
func addsUp(t *testing.T, m meter, obs ...*cloudgotel.Observer) string {
	t.Helper()
	for _, o := range obs {
		g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(o))
		if err != nil {
			t.Fatal(err)
		}
		resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g))
	}
	all := m.collect(t)
	calls := sums(t, all["cloudg.calls"])[key(scopeKV(vpcs)...)]
	rate := gauge[float64](t, all["cloudg.rate"])[key(scopeKV(vpcs)...)]
	budget := gauge[float64](t, all["cloudg.retry_budget"])[key(attribute.String("cloud.provider", "aws"))]
	if n := float64(len(obs)); float64(calls) != n || rate != 20*n || budget != 500*n {
		return fmt.Sprintf("cloudg.calls %d, cloudg.rate %v, cloudg.retry_budget{aws} %v; want %v, %v and %v",
			calls, rate, budget, n, 20*n, 500*n)
	}
	return ""
}

// Observers of Instrument that record to one meter provider add their
// gauges up however the program reaches it: through a value wrapping it
// (here meter, a struct holding it and its reader), or the provider
// itself. Their gauges read the governors of all of them, as their
// counters count the calls of all of them.
func TestObserversOnOneMeterProviderAddUpThroughAWrapper(t *testing.T) {
	m := newMeter()
	var obs []*cloudgotel.Observer
	for _, mp := range []metric.MeterProvider{m, m.MeterProvider} {
		o, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(mp))
		if err != nil {
			t.Fatal(err)
		}
		defer o.Unregister()
		obs = append(obs, o)
	}
	if msg := addsUp(t, m, obs...); msg != "" {
		t.Errorf("an Observer on the meter provider's wrapper, another on the provider: %s", msg)
	}
}

// An Observer of Instrument made without WithMeterProvider before the
// program sets the global meter provider records to the one set then
// (the global provider of before, otel.GetMeterProvider's, forwards to
// it), and one made after records to it as well: their gauges add up.
// The global provider is set once in a process, so the test runs in one
// of its own.
func TestObserversOnTheGlobalMeterProviderBeforeAndAfterItIsSetAddUp(t *testing.T) {
	if os.Getenv("CLOUDGOTEL_GLOBAL_CHILD") == "" {
		out, err := child(t).CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	m := newMeter()
	before, err := cloudgotel.Instrument()
	if err != nil {
		t.Fatal(err)
	}
	defer before.Unregister()
	otel.SetMeterProvider(m.MeterProvider)
	after, err := cloudgotel.Instrument()
	if err != nil {
		t.Fatal(err)
	}
	defer after.Unregister()
	if msg := addsUp(t, m, before, after); msg != "" {
		t.Errorf("an Observer made before otel.SetMeterProvider, another after: %s", msg)
	}
}

// child is the command that runs the test t alone in a process of its
// own, CLOUDGOTEL_GLOBAL_CHILD set.
func child(t *testing.T) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CLOUDGOTEL_GLOBAL_CHILD=1")
	return cmd
}
