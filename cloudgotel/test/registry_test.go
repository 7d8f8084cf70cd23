package test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"weak"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

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

// counting is a meter provider that gives one meter, m's, and counts the
// callbacks registered on it that are not unregistered. A callback
// unregistered twice is counted in twice.
type counting struct {
	metric.MeterProvider
	meter *countingMeter
}

type countingMeter struct {
	metric.Meter
	live, twice atomic.Int64
	// register, when set, is called before each callback is registered;
	// unregister's error is what each Unregister returns.
	register   func()
	unregister error
}

type countingReg struct {
	metric.Registration
	m    *countingMeter
	done atomic.Bool
}

func newCounting(m meter) *counting {
	return &counting{m.MeterProvider, &countingMeter{Meter: m.Meter("github.com/cloudg/cloudg/cloudgotel")}}
}

func (c *counting) Meter(string, ...metric.MeterOption) metric.Meter { return c.meter }

func (m *countingMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	if m.register != nil {
		m.register()
	}
	reg, err := m.Meter.RegisterCallback(f, insts...)
	if err != nil {
		return nil, err
	}
	m.live.Add(1)
	return &countingReg{Registration: reg, m: m}, nil
}

func (r *countingReg) Unregister() error {
	if r.done.Swap(true) {
		r.m.twice.Add(1)
		return nil
	}
	r.m.live.Add(-1)
	if err := r.Registration.Unregister(); err != nil {
		return err
	}
	return r.m.unregister
}

// Observers made and unregistered on one meter provider from many
// goroutines at once, each unregistered twice at once, while it is
// collected, lose none of the Observers kept: one callback reads their
// governors, which add up, none is unregistered twice, and none is left
// once the last Observer is unregistered.
func TestObserversMadeAndUnregisteredAtOnceShareOneCallback(t *testing.T) {
	m := newMeter()
	c := newCounting(m)
	const keep, churn, rounds = 4, 8, 40
	kept := make([]*cloudgotel.Observer, keep)
	stop := make(chan struct{})
	var collecting sync.WaitGroup
	collecting.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				var rm metricdata.ResourceMetrics
				if err := m.reader.Collect(context.Background(), &rm); err != nil {
					t.Error(err)
				}
			}
		}
	})
	var wg sync.WaitGroup
	for i := range keep {
		wg.Go(func() {
			o, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(c))
			if err != nil {
				t.Error(err)
				return
			}
			kept[i] = o
		})
	}
	for range churn {
		wg.Go(func() {
			for range rounds {
				o, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(c))
				if err != nil {
					t.Error(err)
					return
				}
				var twice sync.WaitGroup
				for range 2 {
					twice.Go(func() {
						if err := o.Unregister(); err != nil {
							t.Error(err)
						}
					})
				}
				twice.Wait()
			}
		})
	}
	wg.Wait()
	close(stop)
	collecting.Wait()
	if t.Failed() {
		return
	}
	if n, twice := c.meter.live.Load(), c.meter.twice.Load(); n != 1 || twice != 0 {
		t.Errorf("%d Observers kept of %d made: %d callbacks registered, %d unregistered twice; want 1 and none", keep, keep+churn*rounds, n, twice)
	}
	if msg := addsUp(t, m, kept...); msg != "" {
		t.Errorf("the %d Observers kept: %s", keep, msg)
	}
	for _, o := range kept {
		if err := o.Unregister(); err != nil {
			t.Error(err)
		}
	}
	if n := c.meter.live.Load(); n != 0 {
		t.Errorf("every Observer unregistered: %d callbacks registered, want none", n)
	}
}

// An Instrument that fails leaves nothing behind: when two Observers'
// gauges are made on one meter provider at once, the one that finds the
// other's registered gives its own callback back, and when the provider
// refuses that, Instrument fails, its gauges no member of the other's,
// which the other Observer's Unregister then removes.
func TestAFailedInstrumentLeavesNoMemberBehind(t *testing.T) {
	m := newMeter()
	c := newCounting(m)
	c.meter.unregister = errors.New("refused")
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	c.meter.register = func() {
		if calls.Add(1) == 1 {
			close(started)
			<-release
		}
	}
	failed := make(chan error)
	go func() {
		_, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(c))
		failed <- err
	}()
	<-started
	other, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(c))
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-failed; err == nil {
		t.Fatal("Instrument succeeded, its own callback not given back")
	}
	other.Unregister()
	if n := c.meter.live.Load(); n != 0 {
		t.Errorf("the failed Instrument's gauges joined another Observer's, which is unregistered: %d callbacks left registered, want none", n)
	}
}

// The gauges of RegisterGauges, the deprecated second phase, on a meter
// provider where Instrument Observers' are (a program moving to
// Instrument one governor at a time), or another RegisterGauges's (the
// two phases for each governor), are read by their one callback: their
// governors add up, and the registration's Unregister stops reading its
// governor alone.
func TestRegisterGaugesBesideInstrumentAddUp(t *testing.T) {
	m := newMeter()
	o, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(m))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Unregister()
	var regs []metric.Registration
	for i := range 3 {
		g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(o))
		if err != nil {
			t.Fatal(err)
		}
		resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g))
		if i == 0 {
			continue // the Observer's
		}
		o.Detach(g) // RegisterGauges's
		reg, err := cloudgotel.RegisterGauges(g, cloudgotel.WithMeterProvider(m))
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
		regs = append(regs, reg)
	}
	read := func() (rate, budget float64) {
		all := m.collect(t)
		return gauge[float64](t, all["cloudg.rate"])[key(scopeKV(vpcs)...)],
			gauge[float64](t, all["cloudg.retry_budget"])[key(attribute.String("cloud.provider", "aws"))]
	}
	if rate, budget := read(); rate != 60 || budget != 1500 {
		t.Errorf("an Instrument Observer's governor and two of RegisterGauges: cloudg.rate %v, cloudg.retry_budget{aws} %v; want 60 and 1500", rate, budget)
	}
	if err := regs[0].Unregister(); err != nil {
		t.Fatal(err)
	}
	if rate, budget := read(); rate != 40 || budget != 1000 {
		t.Errorf("one RegisterGauges unregistered: cloudg.rate %v, cloudg.retry_budget{aws} %v; want 40 and 1000", rate, budget)
	}
}

// A program that lets go of a meter provider without unregistering the
// Observers of Instrument on it (one made for a job, shut down at its
// end) lets go of their governors with it, as it would of gauges
// registered on the provider alone: the callback the Observers share is
// not kept for the life of the process.
func TestAMeterProviderLetGoOfLetsItsGovernorsGo(t *testing.T) {
	job := func() weak.Pointer[resilience.Governor] {
		m := newMeter()
		o, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(m))
		if err != nil {
			t.Fatal(err)
		}
		g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(o))
		if err != nil {
			t.Fatal(err)
		}
		resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g))
		m.collect(t)
		if err := m.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		return weak.Make(g)
	}
	gone := job()
	for range 5 {
		runtime.GC()
		if gone.Value() == nil {
			return
		}
	}
	t.Error("a job's meter provider, shut down and let go of with its Observer, its governor and its reader: the governor is still reachable after 5 collections of garbage")
}
