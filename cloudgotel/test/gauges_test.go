package test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/cloudg/cloudg/cloudgotel"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// gauge returns the points of a gauge, or of an up-down counter (the
// gauges of values that add up, TestAdditiveGaugesAddUpUnderAView), by
// their attributes' encoding.
func gauge[N int64 | float64](t *testing.T, mt metricdata.Metrics) map[string]N {
	t.Helper()
	var pts []metricdata.DataPoint[N]
	switch d := mt.Data.(type) {
	case metricdata.Gauge[N]:
		pts = d.DataPoints
	case metricdata.Sum[N]:
		if d.IsMonotonic {
			t.Fatalf("%s is a counter", mt.Name)
		}
		pts = d.DataPoints
	default:
		t.Fatalf("%s is %T", mt.Name, mt.Data)
	}
	out := map[string]N{}
	for _, p := range pts {
		if _, dup := out[p.Attributes.Encoded(attribute.DefaultEncoder())]; dup {
			t.Errorf("%s: two points for %v", mt.Name, attrs(p.Attributes))
		}
		out[p.Attributes.Encoded(attribute.DefaultEncoder())] = p.Value
	}
	return out
}

// readings returns the points of a gauge or an up-down counter by their
// attributes' encoding, as float64.
func readings(t *testing.T, mt metricdata.Metrics) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	eachPoint(t, mt, func(a attribute.Set, v float64) { out[a.Encoded(attribute.DefaultEncoder())] += v })
	return out
}

// eachPoint calls f with the attributes and the value, as float64, of
// each point of mt, a gauge or a sum of float64 or of int64.
func eachPoint(t *testing.T, mt metricdata.Metrics, f func(attribute.Set, float64)) {
	t.Helper()
	switch d := mt.Data.(type) {
	case metricdata.Gauge[float64]:
		eachOf(d.DataPoints, f)
	case metricdata.Gauge[int64]:
		eachOf(d.DataPoints, f)
	case metricdata.Sum[float64]:
		eachOf(d.DataPoints, f)
	case metricdata.Sum[int64]:
		eachOf(d.DataPoints, f)
	default:
		t.Fatalf("%s is %T", mt.Name, mt.Data)
	}
}

// eachOf calls f with the attributes and the value, as float64, of each
// of pts.
func eachOf[N int64 | float64](pts []metricdata.DataPoint[N], f func(attribute.Set, float64)) {
	for _, p := range pts {
		f(p.Attributes, float64(p.Value))
	}
}

// kindOf names the kind of instrument mt was recorded by: "gauge",
// "up-down counter", "counter", or its data's type.
func kindOf(mt metricdata.Metrics) string {
	switch d := mt.Data.(type) {
	case metricdata.Gauge[float64], metricdata.Gauge[int64]:
		return "gauge"
	case metricdata.Sum[float64]:
		if !d.IsMonotonic {
			return "up-down counter"
		}
		return "counter"
	case metricdata.Sum[int64]:
		if !d.IsMonotonic {
			return "up-down counter"
		}
		return "counter"
	}
	return fmt.Sprintf("%T", mt.Data)
}

// gaugeEstate makes scopes whose gauges differ: DescribeVpcs of account
// 111 slowed to half its ceiling with its breaker open, DescribeSubnets of
// the same account at its ceiling with a call holding a slot, DescribeVpcs
// of account 222 at its ceiling, and a GCP scope. It returns the governor
// (instrumented on m with opts), its Observer and the guard holding the
// slot.
func gaugeEstate(t *testing.T, m meter, opts ...cloudgotel.Option) (*resilience.Governor, *cloudgotel.Observer, *resilience.Guard) {
	t.Helper()
	g, obs := instrumented(t, m, resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1}}, opts...)
	ctx := context.Background()
	gov := resilience.WithGovernor(g)
	resilience.Do(ctx, vpcs, fail(throttled), gov, once)
	other := vpcs
	other.Account = "222222222222"
	resilience.Do(ctx, other, ok, gov)
	resilience.Do(ctx, assets, ok, gov)
	subnets := vpcs
	subnets.Operation = "DescribeSubnets"
	held, _ := g.Begin(ctx, subnets)
	if err := held.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	return g, obs, held
}

// The gauges read each live scope's rate, ceiling, breaker, callers queued
// and pause, each account's calls in flight and waiting, and each
// provider's retry budget, with the attributes of what they belong to.
func TestGauges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		_, obs, held := gaugeEstate(t, m)
		defer held.End(nil)
		got := m.collect(t)
		for name, unit := range map[string]string{"cloudg.rate": "{request}/s", "cloudg.rate.ceiling": "{request}/s",
			"cloudg.breaker.state": "", "cloudg.queued": "{call}", "cloudg.pause.remaining": "s",
			"cloudg.inflight": "{call}", "cloudg.waiting": "{call}", "cloudg.retry_budget": "{token}"} {
			if got[name].Unit != unit {
				t.Errorf("%s: unit %q, want %q", name, got[name].Unit, unit)
			}
		}
		other := vpcs
		other.Account = "222222222222"
		subnets := vpcs
		subnets.Operation = "DescribeSubnets"
		assetsLeaf := assets // the GCP leaf is per operation for cloudasset
		rates := gauge[float64](t, got["cloudg.rate"])
		ceilings := gauge[float64](t, got["cloudg.rate.ceiling"])
		breakers := gauge[int64](t, got["cloudg.breaker.state"])
		queued := gauge[int64](t, got["cloudg.queued"])
		paused := gauge[float64](t, got["cloudg.pause.remaining"])
		for sc, want := range map[resilience.Scope]struct {
			rate, ceiling float64
			breaker       int64
		}{vpcs: {10, 20, 2}, other: {20, 20, 0}, subnets: {20, 20, 0}, assetsLeaf: {1.5, 1.5, 0}} {
			k := key(scopeKV(sc)...)
			if rates[k] != want.rate || ceilings[k] != want.ceiling || breakers[k] != want.breaker {
				t.Errorf("%v: rate %v of %v, breaker %v; want %+v", sc, rates[k], ceilings[k], breakers[k], want)
			}
			if q, has := queued[k]; !has || q != 0 {
				t.Errorf("%v: %v queued (%v)", sc, q, has)
			}
			if p, has := paused[k]; !has || p != 0 {
				t.Errorf("%v: paused %v (%v)", sc, p, has)
			}
		}
		if len(rates) != 4 || len(queued) != 4 || len(paused) != 4 {
			t.Errorf("rate series %v, queued %v, paused %v", rates, queued, paused)
		}
		inflight := gauge[int64](t, got["cloudg.inflight"])
		waiting := gauge[int64](t, got["cloudg.waiting"])
		acct := func(p, a string) string {
			return key(attribute.String("cloud.provider", p), attribute.String("cloud.account.id", a))
		}
		if len(inflight) != 3 || inflight[acct("aws", "111111111111")] != 1 || inflight[acct("aws", "222222222222")] != 0 || inflight[acct("gcp", "p1")] != 0 {
			t.Errorf("in flight %v", inflight)
		}
		if len(waiting) != 3 || waiting[acct("aws", "111111111111")] != 0 {
			t.Errorf("waiting %v", waiting)
		}
		budget := gauge[float64](t, got["cloudg.retry_budget"])
		prov := func(p string) string { return key(attribute.String("cloud.provider", p)) }
		if len(budget) != 2 || budget[prov("aws")] != 500 || budget[prov("gcp")] != 500 {
			t.Errorf("retry budget %v", budget)
		}

		// Unregistered, the gauges read the governor no more.
		if err := obs.Unregister(); err != nil {
			t.Fatal(err)
		}
		if mt, has := m.collect(t)["cloudg.rate"]; has && len(gauge[float64](t, mt)) != 0 {
			t.Errorf("after Unregister: %+v", mt.Data)
		}
	})
}

// Without the account, the scopes that differ only by account are one
// series: rates and ceilings added up, the worst breaker, the calls in
// flight of every account added up.
func TestGaugesWithoutAccount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		_, _, held := gaugeEstate(t, m, cloudgotel.WithoutAccount())
		defer held.End(nil)
		got := m.collect(t)
		anyVpcs := vpcs
		anyVpcs.Account = ""
		k := key(scopeKV(anyVpcs)...)
		if r, c, b := gauge[float64](t, got["cloudg.rate"])[k], gauge[float64](t, got["cloudg.rate.ceiling"])[k], gauge[int64](t, got["cloudg.breaker.state"])[k]; r != 30 || c != 40 || b != 2 {
			t.Errorf("DescribeVpcs of every account: rate %v of %v, breaker %v", r, c, b)
		}
		inflight := gauge[int64](t, got["cloudg.inflight"])
		if len(inflight) != 2 || inflight[key(attribute.String("cloud.provider", "aws"))] != 1 {
			t.Errorf("in flight %v", inflight)
		}
	})
}

// A paused scope's gauges say the callers queued for its tokens and the
// time left of its pause; an account's, the callers waiting for a slot.
func TestGaugesOfQueuedAndPausedScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		g := governed(t, m, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}})
		ctx := context.Background()
		gov := resilience.WithGovernor(g)
		hinted := &apiErr{code: "Throttling", status: 400, header: http.Header{"Retry-After": {"60"}}}
		resilience.Do(ctx, vpcs, fail(hinted), gov, once) // paused 60 s
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { resilience.Do(ctx, vpcs, ok, gov) })
		}
		iamHeld, _ := g.Begin(ctx, iam) // another account's slot
		if err := iamHeld.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		other := iam
		other.Operation = "ListRoles"
		for range 2 {
			wg.Go(func() { resilience.Do(ctx, other, ok, gov) }) // waiting for its slot
		}
		time.Sleep(15 * time.Second)
		synctest.Wait()
		got := m.collect(t)
		k := key(scopeKV(vpcs)...)
		if q := gauge[int64](t, got["cloudg.queued"])[k]; q != 3 {
			t.Errorf("%d queued for the paused scope, want 3", q)
		}
		if p := gauge[float64](t, got["cloudg.pause.remaining"])[k]; p != 45 {
			t.Errorf("the pause has %v s left, want 45", p)
		}
		acct := key(attribute.String("cloud.provider", "aws"), attribute.String("cloud.account.id", iam.Account))
		if w := gauge[int64](t, got["cloudg.waiting"])[acct]; w != 2 {
			t.Errorf("%d waiting for a slot of account %s, want 2", w, iam.Account)
		}
		iamHeld.End(nil)
		wg.Wait()
	})
}

// Instrument wires the events and the gauges in one call: a governor made
// with its Observer is read by the gauges with nothing more to call, and
// so is a second one (their scopes alike added up); Unregister stops the
// gauges and leaves the counters.
func TestInstrumentWiresEventsAndGaugesInOneCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		obs, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(m))
		if err != nil {
			t.Fatal(err)
		}
		got := m.collect(t)
		if mt, has := got["cloudg.rate"]; has && len(gauge[float64](t, mt)) != 0 {
			t.Fatalf("gauges before any governor: %+v", mt.Data)
		}
		var govs []*resilience.Governor
		for range 2 {
			g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(obs))
			if err != nil {
				t.Fatal(err)
			}
			resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g))
			govs = append(govs, g)
		}
		got = m.collect(t)
		k := key(scopeKV(vpcs)...)
		if r := gauge[float64](t, got["cloudg.rate"])[k]; r != 40 {
			t.Errorf("rate %v, want the two governors' 20 + 20", r)
		}
		if c := sums(t, got["cloudg.calls"])[k]; c != 2 {
			t.Errorf("calls %v, want 2", c)
		}
		if err := obs.Unregister(); err != nil {
			t.Fatal(err)
		}
		resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(govs[0]))
		got = m.collect(t)
		if mt, has := got["cloudg.rate"]; has && len(gauge[float64](t, mt)) != 0 {
			t.Errorf("gauges after Unregister: %+v", mt.Data)
		}
		if c := sums(t, got["cloudg.calls"])[k]; c != 3 {
			t.Errorf("calls after Unregister %v, want 3", c)
		}
	})
}

// The deprecated wiring in two phases, NewObserver before the governor and
// RegisterGauges after it, still records what Instrument does.
func TestTheTwoPhaseWiringStillWorks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		one, two := newMeter(), newMeter()
		g1, _ := instrumented(t, one, resilience.Config{})
		obs, err := cloudgotel.NewObserver(cloudgotel.WithMeterProvider(two))
		if err != nil {
			t.Fatal(err)
		}
		g2, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(obs))
		if err != nil {
			t.Fatal(err)
		}
		reg, err := cloudgotel.RegisterGauges(g2, cloudgotel.WithMeterProvider(two))
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
		for _, g := range []*resilience.Governor{g1, g2} {
			resilience.Do(context.Background(), vpcs, fail(throttled), resilience.WithGovernor(g), once)
		}
		a, b := one.collect(t), two.collect(t)
		if len(a) != len(b) {
			t.Errorf("Instrument recorded %d instruments, the two phases %d", len(a), len(b))
		}
		for name, mt := range a {
			if _, has := b[name]; !has {
				t.Errorf("the two phases lack %s", name)
			}
			switch d := mt.Data.(type) {
			case metricdata.Gauge[float64], metricdata.Gauge[int64], metricdata.Sum[float64]:
				if x, y := fmt.Sprint(readings(t, mt)), fmt.Sprint(readings(t, b[name])); x != y {
					t.Errorf("%s: %v against %v", name, x, y)
				}
			case metricdata.Sum[int64]:
				if !d.IsMonotonic && fmt.Sprint(readings(t, mt)) != fmt.Sprint(readings(t, b[name])) {
					t.Errorf("%s: %v against %v", name, readings(t, mt), readings(t, b[name]))
				}
			}
		}
	})
}

// Scopes that WithoutOperation or WithoutAccount make one series add up
// their callers queued, each bucket's once: three callers of one operation
// that wait for their account's token are three, not three for each
// operation of the account (each scope's own reading counts its account's
// callers), and two leaves' own callers add up.
func TestQueuedCallersOfOneAccountCountedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		one := 1.0
		g := governed(t, m, resilience.Config{AWS: resilience.ProviderConfig{AccountMaxRPS: &one, AccountBurst: 1}}, cloudgotel.WithoutOperation())
		ctx := context.Background()
		gov := resilience.WithGovernor(g)
		subnets := vpcs
		subnets.Operation = "DescribeSubnets"
		resilience.Do(ctx, subnets, ok, gov) // the account's one token
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { resilience.Do(ctx, vpcs, ok, gov) })
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		service := vpcs
		service.Operation = ""
		if q := gauge[int64](t, m.collect(t)["cloudg.queued"])[key(scopeKV(service)...)]; q != 3 {
			t.Errorf("%d callers queued for ec2, want the 3 waiting for the account", q)
		}
		wg.Wait()

		// Each leaf's own callers add up: two accounts' leaves of one service,
		// one series without the account, at 1 rps, two callers each behind
		// its first call.
		m = newMeter()
		g = governed(t, m, resilience.Config{AWS: resilience.ProviderConfig{MaxRPS: 1, Burst: 1}}, cloudgotel.WithoutAccount())
		gov = resilience.WithGovernor(g)
		acme := resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "acme"}
		for _, account := range []string{"111111111111", "222222222222"} {
			sc := acme
			sc.Account = account
			resilience.Do(ctx, sc, ok, gov)
			for range 2 {
				wg.Go(func() { resilience.Do(ctx, sc, ok, gov) })
			}
		}
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		acme.Account = ""
		if q := gauge[int64](t, m.collect(t)["cloudg.queued"])[key(scopeKV(acme)...)]; q != 4 {
			t.Errorf("%d callers queued for acme, want 2 + 2", q)
		}
		wg.Wait()
	})
}

// RegisterGauges of a nil governor reads the process governor
// (resilience.Default, looked up at each collection), as a nil governor
// means everywhere else in cloudg; before, every collection panicked.
func TestRegisterGaugesOfNilReadsTheProcessGovernor(t *testing.T) {
	t.Cleanup(func() { resilience.SetDefault(nil) })
	m := newMeter()
	reg, err := cloudgotel.RegisterGauges(nil, cloudgotel.WithMeterProvider(m))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	for _, gov := range []string{"the first", "the one set since"} {
		g, err := resilience.NewGovernor(resilience.Config{})
		if err != nil {
			t.Fatal(err)
		}
		resilience.SetDefault(g)
		sc := vpcs
		sc.Operation = gov
		if err := resilience.Do(context.Background(), sc, ok); err != nil {
			t.Fatal(err)
		}
		rates := gauge[float64](t, m.collect(t)["cloudg.rate"])
		if len(rates) != 1 || rates[key(scopeKV(sc)...)] != 20 {
			t.Errorf("%s process governor: rates %v, want its one scope at 20", gov, rates)
		}
	}
}

// A nil *Observer, what Instrument returns with its error, records
// nothing: a program that ignores the error runs, unobserved. Before,
// NewGovernor panicked in Attach, and Observe and Unregister on it.
func TestANilObserverRecordsNothing(t *testing.T) {
	var obs *cloudgotel.Observer
	g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	if err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g)); err != nil {
		t.Fatal(err)
	}
	obs.Observe(observe.Event{Kind: observe.Call, Scope: vpcs})
	if err := obs.Unregister(); err != nil {
		t.Fatal(err)
	}
}

// spentThenReclaimed spends AWS's retry budget of 10 with throttled
// retries on a governor instrumented on m, then lets the scope that spent
// it recover and be reclaimed (a GCP scope is called meanwhile), and
// returns the tokens left, fewer than 10: only successes refund a budget.
// live, when set, is called once while the AWS scope is live, with its
// budget spent.
func spentThenReclaimed(t *testing.T, m meter, live func()) float64 {
	t.Helper()
	g := governed(t, m, resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: new(10)}})
	ctx := context.Background()
	gov := resilience.WithGovernor(g)
	for range 12 { // every retry after the first two costs a token
		resilience.Do(ctx, vpcs, failing(throttled, throttled, throttled), gov)
	}
	if live != nil {
		live()
	}
	for range 40 { // the leaf recovers its rate, a success each 6 s
		time.Sleep(6 * time.Second)
		resilience.Do(ctx, vpcs, ok, gov)
	}
	for range 4 { // the AWS scope is reclaimed; a GCP scope is called
		time.Sleep(5 * time.Minute)
		resilience.Do(ctx, assets, ok, gov)
	}
	for sc := range g.Scopes() {
		if sc.Provider == "aws" {
			t.Fatalf("%v still live", sc)
		}
	}
	left := g.Budget("aws")
	if left >= 10 {
		t.Fatalf("the AWS budget is full (%v)", left)
	}
	return left
}

// A provider's retry budget is read as long as the governor holds it
// spent, not only while the provider has live scopes: a budget spent by
// throttled retries stays spent (only successes refund it) after the
// scopes that spent it recovered and were reclaimed, and its gauge still
// says so.
func TestRetryBudgetGaugeOutlivesTheScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		// A scrape while the scope is live reads the budget it spent.
		left := spentThenReclaimed(t, m, func() { m.collect(t) })
		budget := gauge[float64](t, m.collect(t)["cloudg.retry_budget"])
		if b, has := budget[key(attribute.String("cloud.provider", "aws"))]; !has || b != left {
			t.Errorf("cloudg.retry_budget{aws} = %v (%v), want the %v tokens left", b, has, left)
		}
	})
}

// The gauges report the retry budgets the governor holds spent, whatever
// they read before: with no collection while the scopes that spent AWS's
// budget were live (a reader's interval longer than their life, an
// exporter started late), cloudg.retry_budget{aws} still reads what is
// left. A budget the governor holds full, of a provider without live
// scopes (aws, azure and gcp, which it always holds), is what a first
// call would find, and has no series.
func TestASpentBudgetIsReportedWithoutAnEarlierCollection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		left := spentThenReclaimed(t, m, nil)
		var got []string
		for k, v := range gauge[float64](t, m.collect(t)["cloudg.retry_budget"]) {
			got = append(got, fmt.Sprintf("%s %v", strings.TrimPrefix(k, "cloud.provider="), v))
		}
		slices.Sort(got)
		if want := []string{fmt.Sprintf("aws %v", left), "gcp 500"}; !slices.Equal(got, want) {
			t.Errorf("the first collection after AWS's scopes were reclaimed: cloudg.retry_budget %q; want %q", got, want)
		}
	})
}

// A provider the governor forgot has no cloudg.retry_budget series: a
// provider other than aws, azure and gcp, whose scopes were all
// reclaimed and whose retry budget is full, is dropped by the governor,
// and the gauges, which read its budget while it was live, no longer
// report a budget the governor does not hold (nor read it again at every
// collection, for each name the program ever called). Before, github's
// series stayed, at its full budget, for as long as the gauges read the
// governor.
func TestAForgottenProvidersBudgetIsNotReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMeter()
		g := governed(t, m, resilience.Config{})
		ctx := context.Background()
		gov := resilience.WithGovernor(g)
		github := resilience.Scope{Provider: "github", Account: "octo", Service: "rest"}
		if err := resilience.Do(ctx, github, ok, gov); err != nil {
			t.Fatal(err)
		}
		series := func() []string {
			var out []string
			for k := range gauge[float64](t, m.collect(t)["cloudg.retry_budget"]) {
				out = append(out, strings.TrimPrefix(k, "cloud.provider="))
			}
			slices.Sort(out)
			return out
		}
		if got := series(); !slices.Contains(got, "github") {
			t.Fatalf("setup: cloudg.retry_budget has %q, no github, live", got)
		}
		gen := g.Generation()
		for range 180 { // calls to aws take the reclaimer's steps
			time.Sleep(time.Second)
			resilience.Do(ctx, vpcs, ok, gov)
		}
		// Nothing but the reclaimer changes the governor's state as a
		// whole here: a new generation is its forgetting github.
		if g.Generation() == gen {
			t.Fatal("setup: github not forgotten after three idle minutes")
		}
		if got := series(); !slices.Equal(got, []string{"aws"}) {
			t.Errorf("after the governor forgot github, cloudg.retry_budget has the series of %q; want [aws]", got)
		}
	})
}

// A governor its program is done with is detached from the Observer,
// and read no more: its scopes are not added to those of a live governor
// with the same attributes (two governors' 20 rps read as 40). Attach
// reads it again. A governor attached stays read, whether or not its
// program still refers to it: the gauges keep it, so that what they
// report does not hang on the garbage collector.
func TestADetachedGovernorIsNotRead(t *testing.T) {
	m := newMeter()
	obs, err := cloudgotel.Instrument(cloudgotel.WithMeterProvider(m))
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Unregister()
	k := key(scopeKV(vpcs)...)
	rate := func() float64 { return gauge[float64](t, m.collect(t)["cloudg.rate"])[k] }
	govern := func() *resilience.Governor {
		g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(obs))
		if err != nil {
			t.Fatal(err)
		}
		resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g))
		return g
	}
	old := govern()
	govern() // dropped by the test at once
	runtime.GC()
	if r := rate(); r != 40 {
		t.Errorf("rate %v, want the two governors' 20 + 20, the one no longer referred to included", r)
	}
	obs.Detach(old)
	if r := rate(); r != 20 {
		t.Errorf("rate %v once the first governor is detached, want the other's 20 alone", r)
	}
	obs.Attach(old)
	if r := rate(); r != 40 {
		t.Errorf("rate %v attached again, want 40", r)
	}
}

// A provider a Configure disabled is not governed: its calls go straight
// through, with no pacing, no breaker and no retries. The governor keeps
// what its scopes learned, for the day it is enabled again, but the
// gauges do not report that as where they stand (an open breaker, a rate
// halved, the slots of an account, a budget no call draws), as the status
// page does not: an alert on cloudg.breaker.state would fire for a scope
// whose calls are sent. The gauges read the providers still governed.
func TestADisabledProvidersScopesAreNotReadAsGoverned(t *testing.T) {
	m := newMeter()
	g, obs, held := gaugeEstate(t, m)
	defer obs.Unregister()
	defer held.End(nil)
	budgetOf := func() map[string]float64 { return gauge[float64](t, m.collect(t)["cloudg.retry_budget"]) }
	if _, read := budgetOf()[key(attribute.String("cloud.provider", "aws"))]; !read {
		t.Fatal("no retry budget read for aws while it is governed")
	}
	cfg := g.Config()
	off := false
	cfg.AWS.Enabled = &off
	if err := g.Configure(cfg); err != nil {
		t.Fatal(err)
	}
	if sc := (func() resilience.Scope {
		for sc := range g.Scopes() {
			if sc.Provider == "aws" {
				return sc
			}
		}
		return resilience.Scope{}
	})(); sc.Provider == "" {
		t.Fatal("the governor keeps no AWS scope once AWS is disabled: the test shows nothing")
	}
	got := m.collect(t)
	for _, name := range []string{"cloudg.rate", "cloudg.rate.ceiling", "cloudg.pause.remaining", "cloudg.retry_budget", "cloudg.breaker.state", "cloudg.queued", "cloudg.inflight", "cloudg.waiting"} {
		mt, has := got[name]
		if !has {
			t.Errorf("no %s", name)
			continue
		}
		var points []attribute.Set
		eachPoint(t, mt, func(a attribute.Set, _ float64) { points = append(points, a) })
		gcp := false
		for _, set := range points {
			switch p, _ := set.Value("cloud.provider"); p.AsString() {
			case "aws":
				t.Errorf("%s reads %v, whose provider is disabled", name, attrs(set))
			case "gcp":
				gcp = true
			}
		}
		if !gcp {
			t.Errorf("%s no longer reads GCP, still governed", name)
		}
	}
}

// Observers of Instrument on one meter provider (a program that
// instruments each governor it makes, on the global meter provider)
// report their governors' gauges as one Observer given every governor
// does: the rates of scopes alike added up, 20 + 20 rps, and a provider's
// retry budgets, 500 tokens each, whatever the options of each (the third
// here leaves the account off), and a governor attached to two of them
// alike once. Unregistering one leaves the others' governors read;
// unregistering all leaves no gauge.
func TestObserversOnOneMeterProviderAddUp(t *testing.T) {
	m := newMeter()
	var obs []*cloudgotel.Observer
	var govs []*resilience.Governor
	for _, opts := range [][]cloudgotel.Option{nil, nil, {cloudgotel.WithoutAccount()}} {
		o, err := cloudgotel.Instrument(append(opts, cloudgotel.WithMeterProvider(m))...)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Unregister()
		g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(o))
		if err != nil {
			t.Fatal(err)
		}
		resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g))
		obs, govs = append(obs, o), append(govs, g)
	}
	noAccount := vpcs
	noAccount.Account = ""
	withAccount, withoutAccount := key(scopeKV(vpcs)...), key(scopeKV(noAccount)...)
	aws := key(attribute.String("cloud.provider", "aws"))
	read := func() (rates, budgets map[string]float64) {
		all := m.collect(t)
		rates, budgets = map[string]float64{}, map[string]float64{}
		if mt, has := all["cloudg.rate"]; has {
			rates = gauge[float64](t, mt)
		}
		if mt, has := all["cloudg.retry_budget"]; has {
			budgets = gauge[float64](t, mt)
		}
		return rates, budgets
	}
	if rates, budgets := read(); len(rates) != 2 || rates[withAccount] != 40 || rates[withoutAccount] != 20 || budgets[aws] != 1500 {
		t.Errorf("three Observers on one meter provider, each with a governor: cloudg.rate %v, cloudg.retry_budget{aws} %v; want 40 with the account (two governors), 20 without, and the budgets added up, 1500", rates, budgets[aws])
	}
	obs[1].Attach(govs[0])
	if rates, budgets := read(); len(rates) != 2 || rates[withAccount] != 40 || rates[withoutAccount] != 20 || budgets[aws] != 1500 {
		t.Errorf("the first governor attached to the second Observer too: cloudg.rate %v, cloudg.retry_budget{aws} %v; want it read once: 40, 20, 1500", rates, budgets[aws])
	}
	obs[1].Detach(govs[0])
	if err := obs[0].Unregister(); err != nil {
		t.Fatal(err)
	}
	if rates, budgets := read(); len(rates) != 2 || rates[withAccount] != 20 || rates[withoutAccount] != 20 || budgets[aws] != 1000 {
		t.Errorf("the first Observer unregistered: cloudg.rate %v, cloudg.retry_budget{aws} %v; want the others' governors': 20 with the account, 20 without, 1000", rates, budgets[aws])
	}
	obs[1].Unregister()
	obs[2].Unregister()
	if rates, budgets := read(); len(rates) != 0 || len(budgets) != 0 {
		t.Errorf("every Observer unregistered: cloudg.rate %v, cloudg.retry_budget %v; want no gauge", rates, budgets)
	}
}

// The gauges of values that add up across series (a scope's rate and
// ceiling, an account's calls in flight and waiting for a slot, a
// provider's retry budget and its provider-wide bucket's rate, ceiling
// and callers) are up-down counters, so that an OpenTelemetry view that
// drops an attribute (sdkmetric.Stream's AttributeFilter, as a program
// trims its series after the fact) adds up the series it merges, as
// WithoutAccount does, rather than keeping one of them: a gauge's series
// merged keep the last value observed. Those that give their series'
// worst (the breaker's state, the pause left) or that count one queue in
// each scope it holds (callers queued) stay gauges.
func TestAdditiveGaugesAddUpUnderAView(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		noAccount := sdkmetric.NewView(sdkmetric.Instrument{Name: "cloudg.*"},
			sdkmetric.Stream{AttributeFilter: attribute.NewDenyKeysFilter("cloud.account.id")})
		r := sdkmetric.NewManualReader()
		viewed := meter{sdkmetric.NewMeterProvider(sdkmetric.WithReader(r), sdkmetric.WithView(noAccount)), r}
		m := newMeter()
		// Two accounts with a call in flight each, in the view's governor
		// and in WithoutAccount's.
		other := vpcs
		other.Account = "222222222222"
		for _, mt := range []meter{viewed, m} {
			var opts []cloudgotel.Option
			if mt == m {
				opts = append(opts, cloudgotel.WithoutAccount())
			}
			g, _, held := gaugeEstate(t, mt, opts...)
			defer held.End(nil)
			held2, _ := g.Begin(context.Background(), other)
			if err := held2.Enter(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer held2.End(nil)
		}

		got, want := viewed.collect(t), m.collect(t)
		for name, additive := range map[string]bool{"cloudg.rate": true, "cloudg.rate.ceiling": true, "cloudg.inflight": true,
			"cloudg.waiting": true, "cloudg.retry_budget": true, "cloudg.breaker.state": false, "cloudg.pause.remaining": false, "cloudg.queued": false} {
			switch kind := kindOf(got[name]); {
			case kind == "up-down counter" && !additive:
				t.Errorf("%s is an up-down counter: its series give their worst, which no view adds up", name)
			case kind == "gauge" && additive:
				t.Errorf("%s is a gauge: a view that drops the account keeps one account's value of it, not their sum", name)
			case kind != "gauge" && kind != "up-down counter":
				t.Errorf("%s is a %s", name, kind)
			}
			if !additive {
				continue
			}
			if g, w := fmt.Sprint(readings(t, got[name])), fmt.Sprint(readings(t, want[name])); g != w {
				t.Errorf("%s with a view that drops the account: %s; WithoutAccount reads %s", name, g, w)
			}
		}
	})
}
