//go:build go1.25

package sim

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cloudg/cloudg/resilience"
)

func testSpec() *ProviderSpec {
	return &ProviderSpec{
		Service: "ec2", Rate: 10, Burst: 20,
		LatencyMedian: time.Millisecond, LatencyP99: time.Millisecond,
	}
}

// send makes n requests to action at once and returns the outcomes.
func send(t *testing.T, p *Provider, action string, n, call int) (ok, throttled, failed int, last error) {
	t.Helper()
	for i := 0; i < n; i++ {
		err := p.Request(context.Background(), action, call+i, 0)
		var ae *APIError
		switch {
		case err == nil:
			ok++
		case IsThrottle(err):
			throttled++
			last = err
		case errors.As(err, &ae):
			failed++
			last = err
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	return
}

func TestProviderBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		p := newProvider(testSpec(), []string{"A", "B"}, SystemClock{}, time.Now(), 1, rec)
		// The burst, then nothing: each request takes 1 ms, in which the
		// bucket refills a hundredth of a token.
		ok, th, _, _ := send(t, p, "A", 30, 0)
		if ok < 20 || ok > 21 || th != 30-ok {
			t.Fatalf("burst 20 at 10 rps over 30 ms: %d ok, %d throttled", ok, th)
		}
		// Each action has its own bucket.
		if ok, _, _, _ := send(t, p, "B", 20, 100); ok != 20 {
			t.Fatalf("action B: %d of its burst of 20 ok", ok)
		}
		// After 10 s the bucket is full again, not fuller.
		time.Sleep(10 * time.Second)
		start := time.Now()
		var served int
		for time.Since(start) < 10*time.Second {
			o, _, _, _ := send(t, p, "A", 1, 1000+served)
			served += o
		}
		// 20 burst + 10 s at 10 rps.
		if served < 115 || served > 125 {
			t.Fatalf("served %d in 10 s after a refill, want about 120", served)
		}
		if rec.samples[0].Sent == 0 || rec.samples[0].Throttled == 0 {
			t.Fatalf("recorder missed the first second: %+v", rec.samples[0])
		}
	})
}

// What the provider's buckets did not serve: the tokens they hold, and
// the refill they lost while full. Bucket A (10 rps, burst 20) gives its
// burst (its 20 requests take 20 ms), then sits 5 s refilling: 20 tokens
// in 2 s, about 30 lost to being full in the 3 s after; B, never asked,
// about 50. Neither count moves when asked twice.
func TestProviderLeftUnusedAndOverflowed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := newProvider(testSpec(), []string{"A", "B"}, SystemClock{}, start, 1, &recorder{})
		if ok, _, _, _ := send(t, p, "A", 20, 0); ok != 20 {
			t.Fatalf("%d of the burst of 20 ok", ok)
		}
		at := time.Since(start) + 5*time.Second // each request took 1 ms
		time.Sleep(5 * time.Second)
		for range 2 {
			unused, overflowed := p.left(at)
			if math.Abs(unused-40) > 1e-9 {
				t.Errorf("unused %v, want 40 (A's 20 and B's 20, both full)", unused)
			}
			if math.Abs(overflowed-80) > 0.5 {
				t.Errorf("overflowed %v, want about 80 (A lost 30 after 2 s of refill, B 50)", overflowed)
			}
		}
	})
}

// The provider's view accounts for a run's goodput: every token it ever
// had (Capacity: its bursts and its refill net of the second tenant) was
// either taken by a success, still in a bucket when the run ended, or lost
// to a full bucket, in a scenario without outages, pauses or transient
// errors. Checked on default and tenant, for the adaptive mode and the
// goodput controller.
func TestUnusedAndOverflowedAccountForTheCapacity(t *testing.T) {
	for _, name := range []string{ScenarioDefault, ScenarioTenant} {
		sc, _ := Builtin(name)
		sc.Seed = 7
		for _, strategy := range []string{AWSAdaptive, CloudgGoodput} {
			r := runVirtualOne(t, sc, strategy)
			if r.Lost != 0 {
				t.Fatalf("%s %s lost %d calls", name, strategy, r.Lost)
			}
			// Capacity counts the refill on a 10 ms grid (Scenario.fluid),
			// so it leaves out up to 10 ms of the last refill.
			left := r.Capacity - float64(r.Succeeded)
			if d := r.Unused + r.Overflowed - left; d < -1e-6 || d > sc.TrueRate(r.Makespan)*0.010+1e-6 {
				t.Errorf("%s %s: capacity %.3f - succeeded %d = %.3f, but unused %.3f + overflowed %.3f = %.3f",
					name, strategy, r.Capacity, r.Succeeded, left, r.Unused, r.Overflowed, r.Unused+r.Overflowed)
			}
			t.Logf("%s %s: makespan %v, unused %.1f, overflowed %.1f", name, strategy, r.Makespan, r.Unused, r.Overflowed)
		}
	}
}

// A change that shrinks a bucket's burst throws away the tokens above the
// new burst: refill lost to a full bucket, which Overflowed counts, or the
// identity Capacity - Succeeded = Unused + Overflowed would not hold.
// Bucket A (10 rps, burst 100), never asked, shrinks to a burst of 5 at
// 20 s: over 60 s the provider could have served 100 + 600 calls, and all
// of them are unused (5) or overflowed (695).
func TestProviderOverflowedCountsAShrunkBurst(t *testing.T) {
	sc, _ := Builtin(ScenarioDefault)
	sc.Workload.Actions = []string{"A"}
	sc.Provider.Rate, sc.Provider.Burst = 10, 100
	sc.Provider.Changes = []Change{{At: 20 * time.Second, Rate: 10, Burst: 5}}
	p := newProvider(&sc.Provider, sc.Workload.Actions, SystemClock{}, time.Now(), sc.Seed, &recorder{})
	unused, overflowed := p.left(time.Minute)
	if c := sc.Capacity(time.Minute); math.Abs(unused+overflowed-c) > 1e-6 {
		t.Errorf("capacity %.1f, but unused %.1f + overflowed %.1f = %.1f", c, unused, overflowed, unused+overflowed)
	}
}

// The identity of TestUnusedAndOverflowedAccountForTheCapacity over
// several seeds and every built-in scenario it holds in (no outages,
// pauses, dead operations or transient errors), estates included, and a
// scenario with per-action limits, a burst that shrinks and a tenant that
// takes a share of one action's limit for a while.
func TestUnusedAndOverflowedAccountForTheCapacityOverSeeds(t *testing.T) {
	mixed := func() *Scenario {
		sc, _ := Builtin(ScenarioDefault)
		sc.Name = "mixed"
		sc.Workload.Actions = []string{"A", "B", "C"}
		sc.Provider.Per = map[string]Limit{"B": {Rate: 5, Burst: 30}}
		sc.Provider.Changes = []Change{{At: 30 * time.Second, Action: "A", Rate: 6, Burst: 20}, {At: 50 * time.Second, Rate: 8}}
		sc.Provider.Tenant = &Tenant{Share: 0.5, Action: "C", From: 10 * time.Second, Until: 70 * time.Second}
		return sc
	}
	var scenarios []*Scenario
	for _, name := range []string{ScenarioDefault, ScenarioDrop, ScenarioTenant, ScenarioModel10, ScenarioModelDrop, ScenarioEstateUniform, ScenarioEstateTenant} {
		sc, _ := Builtin(name)
		scenarios = append(scenarios, sc)
	}
	scenarios = append(scenarios, mixed())
	for _, base := range scenarios {
		strategies := []string{CloudgGoodput, CloudgAIMD}
		if base.Estate != nil {
			strategies = []string{PoolGoodput, Plain}
		}
		for seed := uint64(1); seed <= 3; seed++ {
			sc := *base
			sc.Seed = seed
			for _, strategy := range strategies {
				r := runVirtualOne(t, &sc, strategy)
				if r.Aborted {
					t.Fatalf("%s seed %d %s: aborted", sc.Name, seed, strategy)
				}
				left := r.Capacity - float64(r.Succeeded)
				if d := r.Unused + r.Overflowed - left; d < -1e-6 || d > sc.TrueRate(r.Makespan)*0.010+1e-6 {
					t.Errorf("%s seed %d %s: capacity %.3f - succeeded %d = %.3f, but unused %.3f + overflowed %.3f = %.3f",
						sc.Name, seed, strategy, r.Capacity, r.Succeeded, left, r.Unused, r.Overflowed, r.Unused+r.Overflowed)
				}
			}
		}
	}
}

// A workload may name an action twice, to give it twice the calls; the
// provider still has one bucket of it, so the true rate counts it once:
// 10 rps for A and 10 for B, not 30.
func TestTrueRateCountsARepeatedActionOnce(t *testing.T) {
	sc, _ := Builtin(ScenarioDefault)
	sc.Workload.Actions = []string{"A", "A", "B"}
	if r := sc.TrueRate(0); r != 20 {
		t.Fatalf("true rate %v of [A A B] at 10 rps per action, want 20", r)
	}
}

// The second tenant takes its rate out of the refill (Tenant, netRate): a
// tenant taking more than the refill leaves the bucket no refill, and
// does not drain the tokens it holds, or the provider would serve fewer
// calls than Capacity counts. Bucket A (10 rps, burst 100) with a tenant
// of 30 rps, never asked: after 10 s it holds its burst, all of the
// capacity.
func TestProviderTenantTakesOnlyTheRefill(t *testing.T) {
	sc, _ := Builtin(ScenarioDefault)
	sc.Workload.Actions = []string{"A"}
	sc.Provider.Rate, sc.Provider.Burst = 10, 100
	sc.Provider.Tenant = &Tenant{Rate: 30}
	p := newProvider(&sc.Provider, sc.Workload.Actions, SystemClock{}, time.Now(), sc.Seed, &recorder{})
	unused, overflowed := p.left(10 * time.Second)
	if c := sc.Capacity(10 * time.Second); math.Abs(unused+overflowed-c) > 1e-6 || unused != 100 {
		t.Errorf("capacity %.1f, but unused %.1f + overflowed %.1f = %.1f", c, unused, overflowed, unused+overflowed)
	}
}

// Capacity counts the bucket of every action of the workload, as the
// provider has them and TrueRate counts them, an action that the
// workload's calls do not reach (3 calls over 4 actions) included.
func TestCapacityCountsEveryActionsBucket(t *testing.T) {
	sc, _ := Builtin(ScenarioDefault)
	sc.Workload.Calls = 3
	sc.Workload.Actions = []string{"A", "B", "C", "D"}
	sc.Provider.Rate, sc.Provider.Burst = 10, 100
	p := newProvider(&sc.Provider, sc.Workload.Actions, SystemClock{}, time.Now(), sc.Seed, &recorder{})
	unused, overflowed := p.left(10 * time.Second)
	if c := sc.Capacity(10 * time.Second); math.Abs(unused+overflowed-c) > 1e-6 || math.Abs(c-800) > 1e-6 {
		t.Errorf("capacity %.1f (want 800: 4 x (100 + 10 s x 10 rps)), but unused %.1f + overflowed %.1f = %.1f", c, unused, overflowed, unused+overflowed)
	}
}

func TestProviderChangeTenantOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := testSpec()
		spec.Changes = []Change{{At: 20 * time.Second, Rate: 2, Burst: 5}}
		spec.Tenant = &Tenant{Rate: 4, From: 40 * time.Second}
		spec.Outages = []Window{{From: 60 * time.Second, To: 70 * time.Second}}
		spec.RetryAfter = true
		start := time.Now()
		p := newProvider(spec, []string{"A"}, SystemClock{}, start, 1, &recorder{})
		// Until 20 s: 10 rps. Drain, then count what 10 s give.
		count := func(from, to time.Duration) (served int, last error) {
			time.Sleep(time.Until(start.Add(from)))
			send(t, p, "A", 40, 0) // drain
			for time.Since(start) < to {
				o, _, _, err := send(t, p, "A", 1, 1)
				served += o
				if err != nil {
					last = err
				}
			}
			return
		}
		if n, _ := count(5*time.Second, 15*time.Second); n < 90 || n > 110 {
			t.Fatalf("10 rps: %d in ~10 s", n)
		}
		n, last := count(25*time.Second, 35*time.Second)
		if n < 15 || n > 25 {
			t.Fatalf("after the change to 2 rps: %d in ~10 s", n)
		}
		// The hint: time until the next token, in both headers.
		var ae *APIError
		if !errors.As(last, &ae) || ae.Header().Get("X-Amz-Retry-After") == "" || ae.Header().Get("Retry-After") == "" {
			t.Fatalf("throttle without hints: %v", last)
		}
		// The tenant takes 4 of 10... of 2: nothing is left for us.
		if n, _ := count(45*time.Second, 55*time.Second); n > 2 {
			t.Fatalf("with the tenant taking more than the refill: %d served", n)
		}
		time.Sleep(time.Until(start.Add(65 * time.Second)))
		_, th, failed, err := send(t, p, "A", 5, 0)
		if th != 0 || failed != 5 || err.(*APIError).HTTPStatusCode() != 503 || err.(*APIError).ErrorCode() != "ServiceUnavailable" {
			t.Fatalf("outage: %d throttled, %d failed, last %v", th, failed, err)
		}
	})
}

func TestProviderTransientAndLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := testSpec()
		spec.Rate, spec.Burst = 1e6, 1e6
		spec.TransientRate = 0.1
		spec.LatencyMedian, spec.LatencyP99 = 50*time.Millisecond, 200*time.Millisecond
		p := newProvider(spec, []string{"A"}, SystemClock{}, time.Now(), 7, &recorder{})
		var lats []float64
		failed := 0
		for i := 0; i < 4000; i++ {
			t0 := time.Now()
			err := p.Request(context.Background(), "A", i, 0)
			lats = append(lats, time.Since(t0).Seconds())
			if err != nil {
				if resilience.Classify(err) != resilience.Transient {
					t.Fatalf("500 InternalError classified %v", resilience.Classify(err))
				}
				failed++
			}
		}
		if failed < 320 || failed > 480 {
			t.Fatalf("%d of 4000 failed, want about 10%%", failed)
		}
		below := func(x float64) float64 {
			n := 0
			for _, l := range lats {
				if l <= x {
					n++
				}
			}
			return float64(n) / float64(len(lats))
		}
		if f := below(0.050); math.Abs(f-0.5) > 0.04 {
			t.Fatalf("%.2f of latencies <= the median", f)
		}
		if f := below(0.200); math.Abs(f-0.99) > 0.01 {
			t.Fatalf("%.3f of latencies <= the p99", f)
		}
		// The same call and attempt draw the same latency and outcome.
		a := p.latency(newDraw(7, 3, 1).float(), 0.3)
		b := p.latency(newDraw(7, 3, 1).float(), 0.3)
		if a != b {
			t.Fatalf("draws differ: %v %v", a, b)
		}
	})
}

// The provider's answers have the shapes of a real EC2 answer: the SDK's
// retryers and the governor classify them as they would one.
func TestAnswerShapes(t *testing.T) {
	h := http.Header{}
	h.Set("X-Amz-Retry-After", "1500")
	throttle := newAPIError(503, "RequestLimitExceeded", "Request limit exceeded.", h)
	internal := newAPIError(500, "InternalError", "internal", nil)
	outage := newAPIError(503, "ServiceUnavailable", "unavailable", nil)

	std := retry.NewStandard()
	for _, err := range []error{throttle, internal, outage} {
		if !std.IsErrorRetryable(err) {
			t.Errorf("SDK: %v not retryable", err)
		}
	}
	if !retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(throttle).Bool() {
		t.Error("SDK: RequestLimitExceeded is not a throttle")
	}
	var re *smithyhttp.ResponseError
	if !errors.As(throttle, &re) || re.HTTPStatusCode() != 503 {
		t.Error("no *smithyhttp.ResponseError in the chain")
	}
	if k := resilience.Classify(throttle); k != resilience.Throttled {
		t.Errorf("governor: throttle classified %v", k)
	}
	if d, ok := resilience.RetryAfter(throttle); !ok || d != 1500*time.Millisecond {
		t.Errorf("governor: RetryAfter = %v, %v", d, ok)
	}
	if k := resilience.Classify(outage); k != resilience.Transient {
		t.Errorf("governor: ServiceUnavailable classified %v", k)
	}
	if !retryable(throttle) || !retryable(internal) || retryable(errors.New("x")) {
		t.Error("retryable")
	}
}

func TestIdealAndCapacity(t *testing.T) {
	for _, c := range []struct {
		name  string
		ideal time.Duration
	}{
		{ScenarioDefault, 110 * time.Second},      // (1200-100)/10 per action
		{ScenarioDrop, 197500 * time.Millisecond}, // 100+60*20 by 60 s, 1100 more at 8
		{ScenarioModel10, 230 * time.Second},
	} {
		sc, _ := Builtin(c.name)
		if got := sc.IdealMakespan(); got < c.ideal-20*time.Millisecond || got > c.ideal+20*time.Millisecond {
			t.Errorf("%s: ideal %v, want %v", c.name, got, c.ideal)
		}
		// At the ideal makespan the capacity is the work.
		if got := sc.Capacity(sc.IdealMakespan()); math.Abs(got-float64(sc.Workload.Calls)) > 2 {
			t.Errorf("%s: capacity at the ideal %.1f, want %d", c.name, got, sc.Workload.Calls)
		}
	}
	// A tenant whose walk stays put takes its level of its rate all along:
	// 8 of 16 from a start of 0.5, leaving 12 of 20 rps.
	tn, _ := Builtin(ScenarioTenant)
	tn.Provider.Tenant.Walk.Step, tn.Provider.Tenant.Walk.Start = 0, 0.5
	if got, want := tn.IdealMakespan(), 91667*time.Millisecond; got < want-20*time.Millisecond || got > want+20*time.Millisecond {
		t.Errorf("tenant at a fixed 8 rps: ideal %v, want %v", got, want)
	}
	// Its walk moves the limit, and the ideal with it, from seed to seed.
	tn, _ = Builtin(ScenarioTenant)
	if a, b := tn.IdealMakespan(), func() time.Duration { tn.Seed = 2; return tn.IdealMakespan() }(); a == b {
		t.Errorf("tenant: the same ideal %v for seeds 1 and 2", a)
	}
	sc, _ := Builtin(ScenarioOutage)
	// 30 s of outage, and 2% of the tokens spent on failures.
	if got, min := sc.IdealMakespan(), 110*time.Second; got < min+10*time.Second {
		t.Errorf("outage: ideal %v, want well over %v", got, min)
	}
	sc, _ = Builtin(ScenarioDefault)
	if got := sc.Capacity(10 * time.Second); math.Abs(got-400) > 1 {
		t.Errorf("capacity over 10 s: %.1f, want 2*(100+10*10)", got)
	}
	if got := sc.TrueRate(0); got != 20 {
		t.Errorf("true rate %v", got)
	}
	d, _ := Builtin(ScenarioDrop)
	if d.TrueRate(59*time.Second) != 40 || d.TrueRate(61*time.Second) != 16 {
		t.Errorf("drop: true rate %v then %v", d.TrueRate(59*time.Second), d.TrueRate(61*time.Second))
	}
}

// The ideal makespan is when the work could be done, whether or not it
// fits the time limit: default's 2,400 calls take 110 s at 10 rps per
// action (burst 100) under a 60 s limit too, not the 60 s at which a run is
// cut. An action that never refills (a tenant taking all of it) makes the
// ideal a day past the limit, at once, and leaves the capacity alone.
func TestIdealIsNotCutByTheTimeLimit(t *testing.T) {
	sc, _ := Builtin(ScenarioDefault)
	sc.TimeLimit = time.Minute
	if got := sc.IdealMakespan(); got != 110*time.Second {
		t.Errorf("ideal makespan under a 60 s limit %v, want 1m50s", got)
	}
	if got := sc.Capacity(time.Minute); math.Abs(got-1400) > 1e-6 {
		t.Errorf("capacity over 60 s %v, want 1400 (two bursts of 100 and 60 s at 10 rps each)", got)
	}
	sc.Provider.Tenant = &Tenant{Rate: 10, Action: "DescribeVolumes"}
	if got := sc.IdealMakespan(); got != time.Minute+24*time.Hour {
		t.Errorf("ideal makespan with an action never refilled %v, want a day past the 60 s limit", got)
	}
}

// A client that takes every token the moment it exists is served the
// whole refill, whatever the burst: a bucket of burst 1 refilled at 1,000
// rps serves 1,000 calls in about a second (its token at 0, then 999 at
// 1,000 rps), and 1,001 in its first second, not the one token per 10 ms
// step that capping the refill at the burst between steps gives.
func TestIdealAndCapacityOfARefillFasterThanTheBurst(t *testing.T) {
	sc := base()
	sc.Workload.Actions = []string{"DescribeInstances"}
	sc.Workload.Calls = 1000
	sc.Provider.Rate, sc.Provider.Burst = 1000, 1
	if got, want := sc.IdealMakespan(), 999*time.Millisecond; got < want-20*time.Millisecond || got > want+20*time.Millisecond {
		t.Errorf("1,000 calls at 1,000 rps, burst 1: ideal makespan %v, want %v", got, want)
	}
	if got := sc.Capacity(time.Second); math.Abs(got-1001) > 11 {
		t.Errorf("capacity over 1 s at 1,000 rps, burst 1: %.1f, want 1001", got)
	}
	// A pause keeps the burst, and no more, for the end of it.
	sc.Provider.Pauses = []Pause{{Action: "DescribeInstances", From: 0, To: time.Second}}
	if got := sc.Capacity(time.Second); math.Abs(got-1) > 11 {
		t.Errorf("capacity over 1 s paused from 0 to 1 s: %.1f, want the burst, 1", got)
	}
}

// A change due at the start of the run is the bucket's limit from its
// first request: a burst cut from 20 to 1 at 0 s admits one request of
// five made at once, as Capacity and the ideal count it, not the first
// from the burst of 20 and the next from the burst of 1.
func TestProviderChangeAtTheStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := testSpec()
		spec.Changes = []Change{{At: 0, Rate: 10, Burst: 1}}
		p := newProvider(spec, []string{"A"}, SystemClock{}, time.Now(), 1, &recorder{})
		if ok, th, _, _ := send(t, p, "A", 5, 0); ok != 1 {
			t.Errorf("burst cut to 1 at 0 s, five requests at once (1 ms each): %d ok, %d throttled; want 1 ok", ok, th)
		}
	})
}

// A throttle's hint is the time until the bucket holds a token again,
// however far off: a bucket of 1 rps of which a tenant takes all but
// 1e-12 refills a token in some 31,700 years, and its hint says so, not a
// millisecond (the time overflowed a Duration and wrapped negative).
func TestProviderHintOfASlowRefill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := testSpec()
		spec.Rate, spec.Burst, spec.RetryAfter = 1, 1, true
		spec.Tenant = &Tenant{Rate: 1 - 1e-12}
		p := newProvider(spec, []string{"A"}, SystemClock{}, time.Now(), 1, &recorder{})
		_, _, _, last := send(t, p, "A", 2, 0)
		var ae *APIError
		if !errors.As(last, &ae) {
			t.Fatalf("the second request: %v, want a throttle", last)
		}
		if ms, err := strconv.ParseInt(ae.Header().Get("X-Amz-Retry-After"), 10, 64); err != nil || ms < int64(365*24*time.Hour/time.Millisecond) {
			t.Errorf("X-Amz-Retry-After %q (Retry-After %q) for a token some 31,700 years off; want at least a year", ae.Header().Get("X-Amz-Retry-After"), ae.Header().Get("Retry-After"))
		}
	})
}
