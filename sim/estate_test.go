//go:build go1.25

package sim

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// The tenant's walk: a level in [0, 1] a step, moving by at most Step,
// the same for a seed and not for another; the provider's refill is the
// limit less the tenant's level of its rate, step by step.
func TestTenantWalk(t *testing.T) {
	tn := &Tenant{Rate: 8, Walk: &Walk{Every: 10 * time.Second, Step: 0.25, Start: 0.5}}
	spec := &ProviderSpec{Tenant: tn}
	a, b, c := spec.tenantFor(1), spec.tenantFor(1), spec.tenantFor(2)
	differ := false
	prev := 0.5
	for k := range 360 {
		at := time.Duration(k)*10*time.Second + 5*time.Second
		l := a.level(at)
		if l < 0 || l > 1 || math.Abs(l-prev) > 0.25+1e-12 || (k == 0 && l != 0.5) {
			t.Fatalf("step %d: level %v after %v", k, l, prev)
		}
		if b.level(at) != l {
			t.Fatalf("step %d: seed 1 drew %v, then %v", k, l, b.level(at))
		}
		differ = differ || c.level(at) != l
		if got := a.rate("A", 20, at); got != 8*l {
			t.Fatalf("step %d: the tenant takes %v, want %v", k, got, 8*l)
		}
		prev = l
	}
	if !differ {
		t.Fatal("seeds 1 and 2 drew the same walk")
	}
	// The next change: the window's edges and the walk's steps.
	if got := a.next(12*time.Second, time.Minute); got != 20*time.Second {
		t.Fatalf("next change after 12 s: %v", got)
	}
	// Share of the limit, and only the actions named.
	shared := &ProviderSpec{Tenant: &Tenant{Share: 0.5, Actions: []string{"A"}}}
	d := shared.tenantFor(1)
	if d.rate("A", 6, 0) != 3 || d.rate("B", 6, 0) != 0 {
		t.Fatalf("share: %v of A, %v of B", d.rate("A", 6, 0), d.rate("B", 6, 0))
	}

	synctest.Test(t, func(t *testing.T) {
		spec := testSpec()
		spec.Rate, spec.Burst = 20, 2
		spec.Tenant = tn
		start := time.Now()
		p := newProvider(spec, []string{"A"}, SystemClock{}, start, 3, &recorder{})
		walk := spec.tenantFor(3)
		// Over each of the first 12 steps, what is served to a request
		// every 10 ms is the refill less the tenant's share then.
		call := 0
		for k := range 12 {
			time.Sleep(time.Until(start.Add(time.Duration(k) * 10 * time.Second)))
			send(t, p, "A", 5, call) // drain
			call += 5
			served := 0
			for time.Since(start) < time.Duration(k+1)*10*time.Second-time.Second {
				o, _, _, _ := send(t, p, "A", 1, call)
				served += o
				call++
				time.Sleep(9 * time.Millisecond)
			}
			want := (20 - walk.rate("A", 20, time.Duration(k)*10*time.Second)) * 9
			if math.Abs(float64(served)-want) > 1.5 {
				t.Fatalf("step %d: served %d in 9 s, want %.1f", k, served, want)
			}
		}
	})
}

// A paused action is throttled with the time left as Retry-After, in
// seconds and milliseconds, whatever RetryAfter says, from its first
// request with AtFirst; its bucket refills meanwhile. A dead action is
// throttled for good.
func TestProviderPauseAndDead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := testSpec()
		spec.Pauses = []Pause{{Action: "P", To: 60 * time.Second, AtFirst: true}, {Action: "W", From: 10 * time.Second, To: 20 * time.Second}}
		spec.Dead = []string{"D"}
		start := time.Now()
		p := newProvider(spec, []string{"P", "W", "D"}, SystemClock{}, start, 1, &recorder{})
		time.Sleep(5 * time.Second)
		_, th, _, err := send(t, p, "P", 1, 0) // its first request, at 5 s: paused until 65 s
		var ae *APIError
		if th != 1 || !errors.As(err, &ae) || ae.Header().Get("Retry-After") != "60" || ae.Header().Get("X-Amz-Retry-After") != "60000" {
			t.Fatalf("first request of a paused action: %v", err)
		}
		time.Sleep(30 * time.Second)
		if _, _, _, err := send(t, p, "P", 1, 1); !errors.As(err, &ae) || ae.Header().Get("Retry-After") != "30" {
			t.Fatalf("halfway through the pause: %v", err)
		}
		// W's window is in run time: 10 s to 20 s, passed.
		if ok, _, _, err := send(t, p, "W", 1, 2); ok != 1 {
			t.Fatalf("after its window: %v", err)
		}
		time.Sleep(time.Until(start.Add(65 * time.Second)))
		// The bucket refilled to its burst during the pause.
		if ok, th, _, _ := send(t, p, "P", 25, 3); ok != 20 || th != 5 {
			t.Fatalf("after the pause: %d served, %d throttled, want the burst of 20", ok, th)
		}
		if ok, th, _, err := send(t, p, "D", 10, 100); ok != 0 || th != 10 || !IsThrottle(err) {
			t.Fatalf("dead action: %d served", ok)
		}
	})
	// The ideal: nothing served during the pause (from the start), the
	// burst kept.
	sc := &Scenario{
		TimeLimit: time.Hour,
		Workload:  Workload{Workers: 1, Calls: 220, Actions: []string{"P"}},
		Provider:  ProviderSpec{Rate: 10, Burst: 20, Pauses: []Pause{{Action: "P", To: 60 * time.Second, AtFirst: true}}},
	}
	if got, want := sc.IdealMakespan(), 80*time.Second; got < want-20*time.Millisecond || got > want+20*time.Millisecond {
		t.Fatalf("ideal with a 60 s pause: %v, want %v (20 at 60 s, 200 more at 10 rps)", got, want)
	}
	sc.Provider.Dead = []string{"P"}
	if got := sc.IdealMakespan(); got != 0 {
		t.Fatalf("ideal of a dead action's calls: %v, want 0 (left out)", got)
	}
}

// The estate: its listings and calls, their keys and scopes, its ideal
// makespans (the largest scope's calls over its limit, after its burst and
// pause), and the variants' affected scopes.
func TestEstateShape(t *testing.T) {
	sc, _ := Builtin(ScenarioEstateUniform)
	e := sc.Estate
	ls := e.listings()
	if len(ls) != 24 || len(sc.Workload.Actions) != 48 || sc.Workload.Workers != 16 {
		t.Fatalf("%d listings, %d scopes, %d workers", len(ls), len(sc.Workload.Actions), sc.Workload.Workers)
	}
	// Call indices: each listing's pages then its items, dense.
	next, items := 0, 0
	for _, l := range ls {
		if l.id0 != next || l.pages != max(1, (l.items+l.pageSize-1)/l.pageSize) {
			t.Fatalf("listing %s: first call %d (want %d), %d pages of %d for %d items", l.key, l.id0, next, l.pages, l.pageSize, l.items)
		}
		next += l.pages + l.items
		items += l.items
	}
	if next != sc.Workload.Calls || items != 2304 {
		t.Fatalf("%d calls (workload %d), %d items", next, sc.Workload.Calls, items)
	}
	first := ls[0]
	if first.key != "111111111111/us-east-1/ec2/DescribeInstances" || first.items != 300 || first.pages != 6 ||
		first.detailScope != (resilience.Scope{Provider: "aws", Account: "111111111111", Region: "us-east-1", Service: "ec2", Operation: "DescribeInstanceAttribute"}) {
		t.Fatalf("first listing %+v", first)
	}
	if l := sc.Provider.limitOf(first.detail); l != (Limit{Rate: 5, Burst: 25}) {
		t.Fatalf("limit of %s: %+v", first.detail, l)
	}
	// The three detail scopes of the largest pair hold 60 s each at their
	// limits, the first 5 s in their burst: 55 s.
	for _, c := range []struct {
		name  string
		ideal time.Duration
	}{
		{ScenarioEstateUniform, 55 * time.Second},
		{ScenarioEstatePaused, 85 * time.Second}, // 60 s, then its burst of 25 and 125 at 5 rps
		{ScenarioEstateDead, 55 * time.Second},   // the dead scope left out
	} {
		sc, _ := Builtin(c.name)
		if got := sc.IdealMakespan(); got < c.ideal-20*time.Millisecond || got > c.ideal+20*time.Millisecond {
			t.Errorf("%s: ideal %v, want %v", c.name, got, c.ideal)
		}
		if err := sc.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	dead, _ := Builtin(ScenarioEstateDead)
	if k := dead.Estate.Affected; !slices.Equal(dead.Provider.Dead, []string{k}) || dead.workPer()[k] != 72 {
		t.Fatalf("dead scope %s: %d calls", k, dead.workPer()[k])
	}
	// The tenant's share moves the ideal from seed to seed, and only up.
	tn, _ := Builtin(ScenarioEstateTenant)
	seen := map[time.Duration]bool{}
	for seed := uint64(1); seed <= 5; seed++ {
		tn.Seed = seed
		got := tn.IdealMakespan()
		if got < 55*time.Second {
			t.Fatalf("tenant, seed %d: ideal %v under the estate's own", seed, got)
		}
		seen[got] = true
	}
	if len(seen) < 3 {
		t.Fatalf("the tenant's ideal does not move with the seed: %v", seen)
	}
}

// The queue schedulers' orders, one worker: first in first out (plain),
// newest first (shuffle's depth first), and a seeded random draw
// (random-queue).
func TestQueueSchedulerOrders(t *testing.T) {
	for _, c := range []struct {
		take take
		want func([]int) bool
	}{
		{takeOldest, func(o []int) bool { return slices.Equal(o, []int{0, 1, 2, 3, 4, 5, 6, 7, 100, 101}) }},
		{takeNewest, func(o []int) bool { return slices.Equal(o, []int{7, 101, 100, 6, 5, 4, 3, 2, 1, 0}) }},
		{takeRandom, func(o []int) bool {
			s := slices.Sorted(slices.Values(o))
			return len(o) == 10 && slices.Equal(s, []int{0, 1, 2, 3, 4, 5, 6, 7, 100, 101}) && !slices.Equal(o, s)
		}},
	} {
		synctest.Test(t, func(t *testing.T) {
			var order []int
			s := newQueueScheduler(context.Background(), SystemClock{}, 1, c.take, rand.New(rand.NewPCG(1, 2)))
			for i := range 8 {
				s.Go(context.Background(), resilience.Scope{}, func(context.Context) error {
					order = append(order, i)
					if i == 7 { // a task that queues two more
						for j := range 2 {
							s.Go(context.Background(), resilience.Scope{}, func(context.Context) error {
								order = append(order, 100+j)
								return nil
							})
						}
					}
					return nil
				})
			}
			s.Wait()
			if !c.want(order) {
				t.Errorf("take %d: order %v", c.take, order)
			}
		})
	}
}

// A small estate, every strategy, in virtual time: every call is made and
// counted once (the pool's deferred first calls are not calls), each
// scope's end is recorded, and with a dead detail operation exactly its
// calls are lost, each in the ledger for the governed strategies.
func TestEstateRunCountsEveryCall(t *testing.T) {
	small := func(dead bool) *Scenario {
		s := estateScenario("small", "")
		e := &Estate{
			Accounts: []string{"111111111111"},
			Regions:  []string{"us-east-1", "eu-west-1"},
			Services: []EstateService{
				{Name: "ec2", List: "DescribeInstances", ListRate: 20, PageSize: 10, Detail: "DescribeInstanceAttribute", DetailRate: 5, Items: 30},
				{Name: "lambda", List: "ListFunctions", ListRate: 4, PageSize: 5, Detail: "GetFunctionConcurrency", DetailRate: 1, Items: 8},
			},
		}
		e.apply(s)
		if dead {
			e.Affected = EstateKey("111111111111", "eu-west-1", "ec2", "DescribeInstanceAttribute")
			s.Provider.Dead = []string{e.Affected}
		}
		return s
	}
	for _, dead := range []bool{false, true} {
		for _, name := range EstateStrategyNames {
			sc := small(dead)
			r := runVirtualOne(t, sc, name)
			calls := 2*(3+2) + 2*(30+8) // pages, 3 and 2 per region; items
			if r.Calls != calls || sc.Workload.Calls != calls || len(r.ScopeDone) != 8 || r.Aborted {
				t.Fatalf("%s: %d calls (want %d), %d scopes done, aborted %v", name, r.Calls, calls, len(r.ScopeDone), r.Aborted)
			}
			governed := name != PlainAdaptive
			switch {
			case !dead && (r.Lost != 0 || r.InLedger != 0):
				t.Errorf("%s: %d lost, %d in the ledger", name, r.Lost, r.InLedger)
			case dead && (r.LostAffected != 30 || (governed && (r.Lost != 30 || r.InLedger != 30))):
				t.Errorf("%s with a dead scope: %d lost, %d of it, %d in the ledger; want its 30", name, r.Lost, r.LostAffected, r.InLedger)
			}
			if r.Makespan < r.Ideal || r.Unaffected() > r.Makespan {
				t.Errorf("%s: makespan %v, ideal %v, unaffected done %v", name, r.Makespan, r.Ideal, r.Unaffected())
			}
		}
	}
}

// LostAffected counts every lost call of the affected scope, those the
// run never started included: estate-paused cut at 30 s, inside its
// scope's 60 s pause, loses all 150 calls of that scope, whether a worker
// had taken them up or they were still queued.
func TestLostAffectedCountsTheCallsNeverStarted(t *testing.T) {
	sc, _ := Builtin(ScenarioEstatePaused)
	sc.TimeLimit = 30 * time.Second
	want := sc.workPer()[sc.Estate.Affected]
	for _, strategy := range []string{Plain, PoolAIMD} {
		r := runVirtualOne(t, sc, strategy)
		if r.LostAffected != want {
			t.Errorf("%s: %d calls lost, %d of them counted in the paused scope, want %d", strategy, r.Lost, r.LostAffected, want)
		}
	}
}

// A scan that ends on its own is not aborted, whatever its scheduler: a
// dead listing loses the calls of the items it never lists, which no
// worker makes, but package pool's context, which the pool cancels when
// its Wait returns, is not the run's time limit. Its makespan is its last
// call's end, under the pool as under the plain queue.
func TestEstateRunEndingWithCallsNeverMadeIsNotAborted(t *testing.T) {
	sc, err := Parse([]byte("base: estate-uniform\nprovider: {dead: [111111111111/us-east-1/ec2/DescribeInstances]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, strategy := range []string{Plain, PoolAIMD} {
		r := runVirtualOne(t, sc, strategy)
		if r.Lost == 0 {
			t.Fatalf("%s: no call lost; the test needs a listing that never lists its items", strategy)
		}
		if r.Aborted || r.Makespan != r.DoneExcept("") {
			t.Errorf("%s: %d calls lost, aborted %v, makespan %v, last call ended at %v", strategy, r.Lost, r.Aborted, r.Makespan, r.DoneExcept(""))
		}
	}
}

// A run the time limit cuts before the scopes a pause does not touch are
// done says so: estate-paused cut at 30 s leaves most calls of the other
// scopes unmade, and its table gives their "unaffected done" as the cut,
// >30.0s, as it gives the makespan, not the end of the last call made
// before it, which reads as the time they were all done.
func TestUnaffectedDoneOfACutRunIsTheCut(t *testing.T) {
	sc, _ := Builtin(ScenarioEstatePaused)
	sc.TimeLimit = 30 * time.Second
	sc.Strategies = []string{Plain}
	r := runVirtualOne(t, sc, Plain)
	if r.Lost-r.LostAffected == 0 {
		t.Fatal("no call lost outside the paused scope; the test needs a run cut before the other scopes are done")
	}
	if !r.UnaffectedCut || r.Unaffected() != r.Makespan {
		t.Errorf("cut at 30 s with %d calls lost elsewhere: UnaffectedCut %v, Unaffected %v, makespan %v; want true, the cut", r.Lost-r.LostAffected, r.UnaffectedCut, r.Unaffected(), r.Makespan)
	}
	var b strings.Builder
	if err := WriteTable(&b, sc, []*Result{r}); err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), Plain+" ") {
			row = l
		}
	}
	if f := strings.Fields(row); len(f) < 4 || f[3] != ">30.0s" {
		t.Errorf("the table's row %q: want an unaffected done of >30.0s", row)
	}
	// A run that ends on its own has every scope it does not pause done.
	sc.TimeLimit = time.Hour
	if r := runVirtualOne(t, sc, Plain); r.Aborted || r.UnaffectedCut || r.Unaffected() != r.DoneExcept(r.Affected) {
		t.Errorf("a run done on its own: aborted %v, UnaffectedCut %v, unaffected done %v, the other scopes' last call ended %v", r.Aborted, r.UnaffectedCut, r.Unaffected(), r.DoneExcept(r.Affected))
	}
}
