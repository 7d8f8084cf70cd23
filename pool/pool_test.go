//go:build go1.25

package pool

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/childtest"
	"github.com/cloudg/cloudg/resilience"
)

// apiErr is an SDK-shaped error answer.
type apiErr struct {
	code   string
	status int
	header http.Header
}

func (e *apiErr) Error() string       { return e.code }
func (e *apiErr) ErrorCode() string   { return e.code }
func (e *apiErr) HTTPStatusCode() int { return e.status }
func (e *apiErr) Header() http.Header { return e.header }

func throttleAfter(d time.Duration) error {
	return &apiErr{code: "Throttling", status: 400, header: http.Header{"Retry-After": {strconv.Itoa(int(d.Seconds()))}}}
}

func scope(op string) resilience.Scope {
	return resilience.Scope{Provider: "aws", Account: "123456789012", Region: "eu-west-1", Service: "svc", Operation: op}
}

// newGov is a governor with every operation its own leaf at rate rps
// (burst 1), a fixed random source, and opts.
func newGov(t *testing.T, rps float64, cfg resilience.Config, opts ...resilience.GovernorOption) *resilience.Governor {
	t.Helper()
	if cfg.AWS.Services == nil {
		cfg.AWS.Services = map[string]resilience.ServiceConfig{}
	}
	perOp := true
	cfg.AWS.Services["svc"] = resilience.ServiceConfig{MaxRPS: rps, Burst: 1, PerOperation: &perOp}
	g, err := resilience.NewGovernor(cfg, append([]resilience.GovernorOption{resilience.WithRandom(rand.NewPCG(1, 2))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// cappedGov is newGov, at 1000 rps, with the account of the pool tests'
// scopes capped at slots calls in flight (max_concurrency) and its rate
// (account_max_rps 1000, burst 1000) keeping no call waiting, and opts.
func cappedGov(t *testing.T, slots int, opts ...resilience.GovernorOption) *resilience.Governor {
	t.Helper()
	acctRPS := 1000.0
	return newGov(t, 1000, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: slots, AccountMaxRPS: &acctRPS, AccountBurst: 1000}}, opts...)
}

// call is a task's governed call of scope s, answered after latency.
func call(g *resilience.Governor, s resilience.Scope, latency time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		return resilience.Do(ctx, s, func(ctx context.Context) error {
			time.Sleep(latency)
			return nil
		}, resilience.WithGovernor(g))
	}
}

// defaultGov is a governor with the defaults (resilience.Config{}) and
// its random source seeded with seed and stream.
func defaultGov(t *testing.T, seed, stream uint64) *resilience.Governor {
	t.Helper()
	g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithRandom(rand.NewPCG(seed, stream)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// getRole is the scope of IAM's GetRole in the pool tests' account (IAM's
// region, us-east-1).
func getRole() resilience.Scope {
	return resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "iam", Operation: "GetRole"}
}

// rationed is a provider that serves a scope one call per interval
// (every), the first at once, and throttles the others, each answer
// after 20 ms: a scope throttled but alive. It is safe for concurrent
// use; its zero value serves every call.
type rationed struct {
	every time.Duration

	mu                sync.Mutex
	lastOK            time.Time
	served, throttled int // the calls answered so
}

// answer is the provider's answer to a call of the scope.
func (r *rationed) answer() error {
	r.mu.Lock()
	ok := time.Since(r.lastOK) >= r.every
	if ok {
		r.lastOK = time.Now()
		r.served++
	} else {
		r.throttled++
	}
	r.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	if !ok {
		return &apiErr{code: "Throttling", status: 400}
	}
	return nil
}

// holdCall is a task's governed call of scope s that holds its slot (its
// call in flight) until release is closed.
func holdCall(g *resilience.Governor, s resilience.Scope, release <-chan struct{}) func(context.Context) error {
	return func(ctx context.Context) error {
		return resilience.Do(ctx, s, func(context.Context) error { <-release; return nil }, resilience.WithGovernor(g))
	}
}

// sendLog notes the calls a test's tasks send: each call's operation and
// when it was sent, in the order they were sent. It is safe for
// concurrent use; its zero value is an empty log, ready to use.
type sendLog struct {
	mu  sync.Mutex
	ops []string
	at  []time.Time
}

// call is a task's governed call of scope s, answered at once, noted in l
// as it is sent.
func (l *sendLog) call(g *resilience.Governor, s resilience.Scope) func(context.Context) error {
	return func(ctx context.Context) error {
		return resilience.Do(ctx, s, func(context.Context) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.ops = append(l.ops, s.Operation)
			l.at = append(l.at, time.Now())
			return nil
		}, resilience.WithGovernor(g))
	}
}

// order returns the operations of the calls noted, in the order they
// were sent.
func (l *sendLog) order() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ops)
}

// times returns when the calls of operation op noted were sent, in order.
func (l *sendLog) times(op string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ts []time.Time
	for i, o := range l.ops {
		if o == op {
			ts = append(ts, l.at[i])
		}
	}
	return ts
}

// last returns when the last call of operation op noted was sent, the
// zero time if none was.
func (l *sendLog) last(op string) time.Time {
	if ts := l.times(op); len(ts) > 0 {
		return ts[len(ts)-1]
	}
	return time.Time{}
}

// pause makes the provider pause s for d (a Retry-After).
func pause(t *testing.T, g *resilience.Governor, s resilience.Scope, d time.Duration) {
	t.Helper()
	resilience.Do(context.Background(), s, func(context.Context) error { return throttleAfter(d) },
		resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
}

// plainPool is the pool a user writes: W goroutines fed by a channel.
func plainPool(w int, tasks []func()) {
	ch := make(chan func())
	var wg sync.WaitGroup
	for range w {
		wg.Go(func() {
			for f := range ch {
				f()
			}
		})
	}
	for _, f := range tasks {
		ch <- f
	}
	close(ch)
	wg.Wait()
}

// With one scope paused for a minute, the pool keeps its workers on the
// other scopes, whose work ends as if nothing were paused; a plain pool
// leaves its workers waiting in the paused scope. The paused scope's
// tasks run once the pause ends, and none is lost.
func TestAPausedScopeHoldsNoWorker(t *testing.T) {
	const scopes, perScope, workers = 31, 20, 8
	for _, plain := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, 10, resilience.Config{})
			pause(t, g, scope("op0"), 60*time.Second)
			ctx, ledger := resilience.WithLedger(context.Background(), "scan")
			start := time.Now()
			var mu sync.Mutex
			lastOther, lastPaused := time.Duration(0), time.Duration(0)
			record := func(paused bool) {
				mu.Lock()
				defer mu.Unlock()
				if d := time.Since(start); paused {
					lastPaused = max(lastPaused, d)
				} else {
					lastOther = max(lastOther, d)
				}
			}
			var fns []func()
			p, pctx := New(ctx, Workers(workers), WithGovernor(g))
			// Interleaved, as a scan's listing would submit them.
			for i := range perScope {
				for s := range scopes {
					sc := scope("op" + strconv.Itoa(s))
					f := call(g, sc, 10*time.Millisecond)
					run := func(ctx context.Context) error {
						err := f(ctx)
						record(s == 0)
						return err
					}
					if plain {
						fns = append(fns, func() { run(ctx) })
					} else {
						p.Go(pctx, sc, run)
					}
					_ = i
				}
			}
			if plain {
				plainPool(workers, fns)
			}
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if ledger.Degraded() {
				t.Fatalf("lost calls: %s", ledger.Describe())
			}
			// Each other scope's 20 calls at 10 rps (burst 1): about 2 s. The
			// paused scope's run at 5 rps from the pause's end: its throttle
			// halved it.
			if plain {
				if lastOther < 55*time.Second {
					t.Fatalf("the plain pool finished the other scopes by %v; the test no longer shows head-of-line blocking", lastOther)
				}
				t.Logf("plain pool: other scopes done at %v, paused scope at %v", lastOther, lastPaused)
				return
			}
			if lastOther > 2500*time.Millisecond || lastPaused < 60*time.Second || lastPaused > 65*time.Second {
				t.Fatalf("other scopes done at %v (want about 2 s), the paused one at %v (want about 64 s)", lastOther, lastPaused)
			}
			if pr := p.Progress(); pr.Done != scopes*perScope || pr.Queued != 0 || pr.Running != 0 {
				t.Fatalf("progress %+v", pr)
			}
		})
	}
}

// Tasks may submit tasks; Wait waits for all of them and joins their
// errors; a panic is an error, and the other tasks go on.
func TestNestedTasksErrorsAndPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{})
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		var ran atomic.Int64
		boom := errors.New("boom")
		for a := range 3 {
			p.Go(ctx, resilience.Scope{}, func(ctx context.Context) error { // a fan-out with no call of its own
				for r := range 4 {
					sc := scope("op" + strconv.Itoa(a*4+r))
					p.Go(ctx, sc, func(ctx context.Context) error {
						ran.Add(1)
						if err := call(g, sc, time.Millisecond)(ctx); err != nil {
							return err
						}
						if a == 1 && r == 2 {
							return boom
						}
						if a == 2 && r == 3 {
							panic("bad item")
						}
						return nil
					})
				}
				return nil
			})
		}
		err := p.Wait()
		var pe *PanicError
		if ran.Load() != 12 || !errors.Is(err, boom) || !errors.As(err, &pe) || pe.Value != "bad item" {
			t.Fatalf("ran %d, err %v", ran.Load(), err)
		}
		if pr := p.Progress(); pr.Done != 13 || pr.Failed != 2 {
			t.Fatalf("progress %+v", pr)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("Go after Wait did not panic")
				}
			}()
			p.Go(ctx, resilience.Scope{}, func(context.Context) error { return nil })
		}()
	})
}

// A first call refused because its scope was busy after all (another
// caller took the token) is not lost: its task runs again when the scope
// can go, and nothing is recorded.
func TestARefusedFirstCallRunsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1, resilience.Config{})
		sc := scope("op")
		ctx, ledger := resilience.WithLedger(context.Background(), "scan")
		p, pctx := New(ctx, Workers(2), WithGovernor(g))
		var runs atomic.Int64
		p.Go(pctx, sc, func(ctx context.Context) error {
			if runs.Add(1) == 1 {
				// Someone outside the pool takes the token first.
				if err := call(g, sc, 0)(context.Background()); err != nil {
					return err
				}
			}
			return call(g, sc, 0)(ctx)
		})
		start := time.Now()
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if runs.Load() != 2 || time.Since(start) != time.Second || ledger.Degraded() {
			t.Fatalf("%d runs in %v, ledger %q", runs.Load(), time.Since(start), ledger.Describe())
		}
		if pr := p.Progress(); pr.Deferred != 1 || pr.Done != 1 {
			t.Fatalf("progress %+v", pr)
		}
	})
}

// A dead scope's queue fails fast: once its breaker is open, its queued
// tasks end at once, each call recorded as skipped, while other scopes go
// on.
func TestADeadScopeFailsFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{})
		dead := scope("dead")
		for range 5 {
			resilience.Do(context.Background(), dead, func(context.Context) error { return &apiErr{code: "Throttling", status: 400} },
				resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		}
		ctx, ledger := resilience.WithLedger(context.Background(), "scan")
		p, pctx := New(ctx, Workers(4), WithGovernor(g))
		for range 50 {
			p.Go(pctx, dead, call(g, dead, time.Second))
			p.Go(pctx, scope("live"), call(g, scope("live"), 10*time.Millisecond))
		}
		start := time.Now()
		err := p.Wait()
		if !errors.Is(err, resilience.ErrCircuitOpen) || ledger.Count(resilience.LossSkipped) != 50 {
			t.Fatalf("err %v, ledger %q", err, ledger.Describe())
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("the scan took %v: the dead scope's queue did not fail fast", d)
		}
	})
}

// Cancelling the pool's context stops it promptly: no task starts, the
// queued ones are dropped and recorded in their ledgers, Wait returns
// once the running ones return, and no goroutine is left (the bubble
// would report it).
func TestCancelStopsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1, resilience.Config{})
		parent, cancel := context.WithCancel(context.Background())
		ctx, ledger := resilience.WithLedger(parent, "scan")
		p, pctx := New(ctx, Workers(4), WithGovernor(g))
		for i := range 100 {
			sc := scope("op" + strconv.Itoa(i%3))
			p.Go(pctx, sc, call(g, sc, 10*time.Millisecond))
		}
		time.Sleep(2500 * time.Millisecond)
		cancel()
		start := time.Now()
		err := p.Wait()
		if !errors.Is(err, context.Canceled) || time.Since(start) > 20*time.Millisecond {
			t.Fatalf("Wait returned %v after %v", err, time.Since(start))
		}
		pr := p.Progress()
		if pr.Dropped == 0 || pr.Done+pr.Failed+pr.Dropped != 100 || ledger.Count(resilience.LossCancelled) < pr.Dropped {
			t.Fatalf("progress %+v, ledger %q", pr, ledger.Describe())
		}
	})
}

// Progress shows each scope's state (idle, ready, waiting for a token or
// a pause, open, waiting for a slot), its wait and ETA, and String sums
// them up in one line.
func TestProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 2 rps per operation, and one call in flight per account.
		g := newGov(t, 2, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}})
		inB := func(op string) resilience.Scope { s := scope(op); s.Account = "210987654321"; return s }
		openBreaker(t, g, scope("dead"))
		pause(t, g, scope("paused"), 30*time.Second)
		p, ctx := New(context.Background(), Workers(1), WithGovernor(g))
		// The only worker runs a call that holds account B's only slot.
		hold := make(chan struct{})
		p.Go(ctx, inB("busy"), func(ctx context.Context) error {
			return resilience.Do(ctx, inB("busy"), func(context.Context) error { <-hold; return nil }, resilience.WithGovernor(g))
		})
		synctest.Wait()
		queue := func(s resilience.Scope, n int) {
			for range n {
				p.Go(ctx, s, call(g, s, 0))
			}
		}
		queue(scope("dead"), 2)
		queue(scope("fresh"), 4)
		queue(scope("paused"), 3)
		queue(inB("capped"), 5)
		synctest.Wait()
		pr := p.Progress()
		type want struct {
			scope           resilience.Scope
			state           ScopeState
			queued, running int
			wait, eta       time.Duration
		}
		// The paused scope waits for its pause, then for the token its
		// throttled call took, at the rate its throttle halved (1 rps).
		// The dead one's breaker opened at its fifth failure, cooling down
		// for a minute, while its tasks would fail fast. The capped one
		// waits for account B's slot. The fresh and capped ones hold a
		// token each (burst 1), which their first task takes at once.
		deadWait := g.Inspect(scope("dead")).Breaker.Wait
		wants := []want{
			{scope("dead"), ScopeOpen, 2, 0, deadWait, 0},
			{scope("fresh"), ScopeReady, 4, 0, 0, 1500 * time.Millisecond},
			{scope("paused"), ScopeWaiting, 3, 0, 31 * time.Second, 34 * time.Second},
			{inB("busy"), ScopeIdle, 0, 1, 0, 0},
			{inB("capped"), ScopeNoSlot, 5, 0, 0, 2 * time.Second},
		}
		if len(pr.Scopes) != len(wants) || deadWait <= 0 {
			t.Fatalf("scopes %+v, the dead scope's breaker waits %v", pr.Scopes, deadWait)
		}
		for i, w := range wants {
			s := pr.Scopes[i]
			if s.Scope != w.scope || s.State != w.state || s.Queued != w.queued || s.Running != w.running || s.Wait != w.wait || s.ETA != w.eta {
				t.Errorf("scope %d: %+v, want %+v", i, s, w)
			}
		}
		if got, want := pr.String(), "done 0/15, running 1, queued 14 (2 scopes waiting, 1 open), ETA 34s"; got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
		close(hold)
		if err := p.Wait(); !errors.Is(err, resilience.ErrCircuitOpen) {
			t.Fatal(err)
		}
	})
}

// A parked queue whose time comes while every worker is busy waits in
// turn for a worker, and the pool's wake-up does not spin. Before the fix
// the wake-up re-armed itself for the parked queue's time, already past,
// slept 0 and re-armed again, forever: a busy loop, in which the bubble's
// clock never advanced and the busy worker's task never ended.
func TestAParkedQueueDueWhileAllWorkersAreBusy(t *testing.T) {
	if !childtest.InChild(t, time.Minute) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 10, resilience.Config{})
		pause(t, g, scope("paused"), 5*time.Second)
		p, ctx := New(context.Background(), Workers(1), WithGovernor(g))
		start := time.Now()
		var pausedAt time.Duration
		// The one worker parks the paused queue (until 5 s), then runs the
		// long task, past the paused queue's time.
		p.Go(ctx, scope("paused"), func(ctx context.Context) error {
			err := call(g, scope("paused"), 0)(ctx)
			pausedAt = time.Since(start)
			return err
		})
		p.Go(ctx, scope("busy"), call(g, scope("busy"), 20*time.Second))
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if pausedAt != 20*time.Second {
			t.Fatalf("the paused scope's task ran at %v, want 20 s (when the worker was free)", pausedAt)
		}
		if pr := p.Progress(); pr.Done != 2 {
			t.Fatalf("progress %+v", pr)
		}
	})
}

// A task that panics with an error value is found through Wait's joined
// error by errors.Is and errors.As, as the error it panicked with, and as
// a *PanicError; a panic with another value unwraps to nothing.
func TestAPanicWithAnErrorUnwrapsToIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, ctx := New(context.Background(), Workers(2), WithGovernor(newGov(t, 100, resilience.Config{})))
		gone := &apiErr{code: "ResourceNotFound", status: 404}
		p.Go(ctx, resilience.Scope{}, func(context.Context) error { panic(gone) })
		p.Go(ctx, resilience.Scope{}, func(context.Context) error { panic("not an error") })
		err := p.Wait()
		var ae *apiErr
		var pe *PanicError
		if !errors.Is(err, gone) || !errors.As(err, &ae) || ae != gone || !errors.As(err, &pe) {
			t.Fatalf("Wait returned %v: the panic's error is not found in it", err)
		}
		if u := errors.Unwrap(&PanicError{Value: "not an error"}); u != nil {
			t.Fatalf("a panic with a string unwraps to %v", u)
		}
	})
}

// Progress.String counts every task submitted, the dropped ones included:
// a stopped scan does not read as complete.
func TestProgressStringCountsDropped(t *testing.T) {
	for _, c := range []struct {
		pr   Progress
		want string
	}{
		{Progress{Done: 9}, "done 9/9, running 0, queued 0, ETA 0s"},
		{Progress{Done: 9, Dropped: 3}, "done 9/12 (3 dropped), running 0, queued 0, ETA 0s"},
		{Progress{Done: 7, Failed: 2, Dropped: 3}, "done 9/12 (2 failed, 3 dropped), running 0, queued 0, ETA 0s"},
		{Progress{Done: 7, Failed: 2, Running: 1, Queued: 4, ETA: 2500 * time.Millisecond}, "done 9/14 (2 failed), running 1, queued 4, ETA 3s"},
	} {
		if got := c.pr.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
	// A pool stopped with tasks queued.
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		p, ctx := New(parent, Workers(1), WithGovernor(newGov(t, 100, resilience.Config{})))
		hold := make(chan struct{})
		p.Go(ctx, resilience.Scope{}, func(context.Context) error { <-hold; return nil })
		for range 3 {
			p.Go(ctx, resilience.Scope{}, func(context.Context) error { return nil })
		}
		synctest.Wait()
		cancel()
		close(hold)
		p.Wait()
		if got, want := p.Progress().String(), "done 1/4 (3 dropped), running 0, queued 0, ETA 0s"; got != want {
			t.Errorf("a stopped pool's progress: %q, want %q", got, want)
		}
	})
}

// The scopes with work are taken in turn, each queue first in first out:
// one worker given 4 tasks each of scopes a, b and the zero scope, queued
// scope after scope, runs one of each in turn, in the order the scopes
// first queued work (the zero scope first: the fan-out that submits them
// is its task).
func TestScopesAreTakenInTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		perOp := true
		g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
			"svc": {MaxRPS: 100, Burst: 100, PerOperation: &perOp}, // no scope waits for a token
		}}})
		if err != nil {
			t.Fatal(err)
		}
		p, ctx := New(context.Background(), Workers(1), WithGovernor(g))
		var mu sync.Mutex
		var order []string
		ran := func(name string) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, name)
		}
		p.Go(ctx, resilience.Scope{}, func(ctx context.Context) error {
			// The only worker runs this task: nothing else starts before
			// every task is queued.
			for _, op := range []string{"a", "b"} {
				for i := range 4 {
					name := op + strconv.Itoa(i+1)
					p.Go(ctx, scope(op), func(ctx context.Context) error {
						return resilience.Do(ctx, scope(op), func(context.Context) error { ran(name); return nil }, resilience.WithGovernor(g))
					})
				}
			}
			for i := range 4 {
				name := "z" + strconv.Itoa(i+1)
				p.Go(ctx, resilience.Scope{}, func(context.Context) error { ran(name); return nil })
			}
			return nil
		})
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		want := []string{"z1", "a1", "b1", "z2", "a2", "b2", "z3", "a3", "b3", "z4", "a4", "b4"}
		if !slices.Equal(order, want) {
			t.Fatalf("tasks ran in the order %v, want %v", order, want)
		}
	})
}

// etaAndMakespan queues tasks (queue adds them) behind a task that holds
// the pool's only worker, reads the ETA Progress gives for them, lets
// them run, and returns that ETA, the ETA of each scope, and how long
// they took.
func etaAndMakespan(t *testing.T, g *resilience.Governor, queue func(p *Pool, ctx context.Context)) (Progress, time.Duration) {
	t.Helper()
	p, ctx := New(context.Background(), Workers(1), WithGovernor(g))
	hold := make(chan struct{})
	p.Go(ctx, resilience.Scope{}, func(context.Context) error { <-hold; return nil })
	synctest.Wait()
	queue(p, ctx)
	synctest.Wait()
	pr := p.Progress()
	start := time.Now()
	close(hold)
	err := p.Wait()
	took := time.Since(start)
	if err != nil && !errors.Is(err, resilience.ErrCircuitOpen) {
		t.Fatal(err)
	}
	return pr, took
}

// openBreaker opens s's breaker: its calls fail with throttling until it
// opens.
func openBreaker(t *testing.T, g *resilience.Governor, s resilience.Scope) {
	t.Helper()
	for range 5 {
		resilience.Do(context.Background(), s, func(context.Context) error { return &apiErr{code: "Throttling", status: 400} },
			resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
	}
	if _, why := g.Delay(s); !errors.Is(why, resilience.ErrCircuitOpen) {
		t.Fatalf("the breaker of %v did not open: %v", s, why)
	}
}

// The ETA of a scope whose breaker is open is what the pool will do with
// its queue: by default its tasks run at once and fail fast, an ETA of 0;
// with breaker_wait its first call waits for the breaker's verdict, and
// the queue then goes at the scope's rate.
func TestProgressETAOfAnOpenBreaker(t *testing.T) {
	for _, wait := range []bool{false, true} {
		t.Run("breaker_wait="+strconv.FormatBool(wait), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fixed := false
				g := newGov(t, 1, resilience.Config{AWS: resilience.ProviderConfig{Adaptive: &fixed, BreakerWait: wait}})
				dead := scope("dead")
				openBreaker(t, g, dead)
				pr, took := etaAndMakespan(t, g, func(p *Pool, ctx context.Context) {
					for range 20 {
						p.Go(ctx, dead, call(g, dead, 0))
					}
				})
				s := pr.Scopes[1] // the zero scope's is first
				if s.State != ScopeOpen || s.Wait <= 0 || s.Queued != 20 {
					t.Fatalf("the dead scope's progress: %+v", s)
				}
				if pr.ETA != s.ETA || !etaFits(pr.ETA, took, time.Second) {
					t.Fatalf("ETA %v (the scope's %v), the queue took %v", pr.ETA, s.ETA, took)
				}
				if !wait && took != 0 {
					t.Fatalf("the dead scope's queue took %v: it did not fail fast", took)
				}
			})
		})
	}
}

// A provider that is turned off paces nothing: its scopes' queued tasks
// go at once, and their ETA is 0, not the queue at the configured rate.
func TestProgressETAOfADisabledProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		off := false
		g := newGov(t, 1, resilience.Config{AWS: resilience.ProviderConfig{Enabled: &off}})
		s := scope("a")
		pr, took := etaAndMakespan(t, g, func(p *Pool, ctx context.Context) {
			for range 10 {
				p.Go(ctx, s, call(g, s, 0))
			}
		})
		sp := pr.Scopes[1] // the zero scope's is first
		if sp.State != ScopeReady || sp.Queued != 10 || sp.ETA != 0 || pr.ETA != 0 {
			t.Fatalf("a disabled provider's scope: %+v, ETA %v; want ready, 10 queued, ETA 0", sp, pr.ETA)
		}
		if took != 0 {
			t.Fatalf("the disabled provider's queue took %v, want 0", took)
		}
	})
}

// etaFits reports whether eta predicted took: the ETA counts a token's
// interval for each task its bucket's whole tokens do not cover, a
// fraction of a token not counted, so that it may be one interval late,
// and no more.
func etaFits(eta, took, interval time.Duration) bool {
	return eta >= took && eta <= took+interval
}

// Scopes that share a bucket share its rate, and their ETA says so: the
// operations of a service paced as one leaf (per_operation false) wait
// for each other's tokens, and so do the scopes of an account whose
// provider has an account bucket, and the scopes of a provider with a
// provider-wide bucket (global_max_rps), which the ETA did not see: it
// said 900ms for 20 tasks at 2 rps that took 9.5s.
func TestProgressETAOfScopesSharingABucket(t *testing.T) {
	whole, perOp, fixed := false, true, false
	for _, c := range []struct {
		name     string
		cfg      resilience.ProviderConfig
		interval time.Duration // of the bucket that binds
	}{
		{"one leaf per service", resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
			"svc": {MaxRPS: 1, Burst: 1, PerOperation: &whole},
		}}, time.Second},
		{"an account bucket", resilience.ProviderConfig{AccountMaxRPS: ptr(2.0), AccountBurst: 1, Services: map[string]resilience.ServiceConfig{
			"svc": {MaxRPS: 10, Burst: 1, PerOperation: &perOp},
		}}, 500 * time.Millisecond},
		{"a provider bucket", resilience.ProviderConfig{GlobalMaxRPS: ptr(2.0), GlobalBurst: 1, Services: map[string]resilience.ServiceConfig{
			"svc": {MaxRPS: 10, Burst: 1, PerOperation: &perOp},
		}}, 500 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c.cfg.Adaptive = &fixed
				g, err := resilience.NewGovernor(resilience.Config{AWS: c.cfg})
				if err != nil {
					t.Fatal(err)
				}
				pr, took := etaAndMakespan(t, g, func(p *Pool, ctx context.Context) {
					for range 10 {
						for _, op := range []string{"A", "B"} {
							p.Go(ctx, scope(op), call(g, scope(op), 0))
						}
					}
				})
				if !etaFits(pr.ETA, took, c.interval) {
					t.Fatalf("ETA %v, the queues took %v; scopes %+v", pr.ETA, took, pr.Scopes)
				}
				for _, s := range pr.Scopes[1:] {
					if !etaFits(s.ETA, took, c.interval) {
						t.Fatalf("%v: ETA %v, the queues took %v", s.Scope, s.ETA, took)
					}
				}
			})
		})
	}
}

// The tokens a bucket holds are spent at once, not at its rate: a scope
// fresh at a scan's start (ec2's built-in leaf bursts 100 at 20 rps, the
// account bucket of Azure 200 at 20, a provider-wide bucket its
// global_burst) goes through as many queued tasks
// as its bucket holds tokens before its rate paces it, and its ETA says
// so.
func TestProgressETACountsTheTokensABucketHolds(t *testing.T) {
	perOp, whole, fixed := true, false, false
	for _, c := range []struct {
		name     string
		cfg      resilience.ProviderConfig
		ops      []string
		tasks    int
		interval time.Duration // of the bucket that binds
	}{
		{"a leaf bursting 100 at 20 rps, 50 tasks", resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
			"svc": {MaxRPS: 20, Burst: 100, PerOperation: &perOp},
		}}, []string{"A"}, 50, 50 * time.Millisecond},
		{"a leaf bursting 100 at 20 rps, 140 tasks", resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
			"svc": {MaxRPS: 20, Burst: 100, PerOperation: &perOp},
		}}, []string{"A"}, 140, 50 * time.Millisecond},
		{"a leaf of two operations bursting 100 at 20 rps, 140 tasks", resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
			"svc": {MaxRPS: 20, Burst: 100, PerOperation: &whole},
		}}, []string{"A", "B"}, 140, 50 * time.Millisecond},
		{"an account bucket bursting 20 at 2 rps, 30 tasks", resilience.ProviderConfig{AccountMaxRPS: ptr(2.0), AccountBurst: 20, Services: map[string]resilience.ServiceConfig{
			"svc": {MaxRPS: 100, Burst: 100, PerOperation: &perOp},
		}}, []string{"A", "B"}, 30, 500 * time.Millisecond},
		{"a provider bucket bursting 20 at 2 rps, 30 tasks", resilience.ProviderConfig{GlobalMaxRPS: ptr(2.0), GlobalBurst: 20, Services: map[string]resilience.ServiceConfig{
			"svc": {MaxRPS: 100, Burst: 100, PerOperation: &perOp},
		}}, []string{"A", "B"}, 30, 500 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c.cfg.Adaptive = &fixed
				g, err := resilience.NewGovernor(resilience.Config{AWS: c.cfg})
				if err != nil {
					t.Fatal(err)
				}
				pr, took := etaAndMakespan(t, g, func(p *Pool, ctx context.Context) {
					for i := range c.tasks {
						op := c.ops[i%len(c.ops)]
						p.Go(ctx, scope(op), call(g, scope(op), 0))
					}
				})
				if !etaFits(pr.ETA, took, c.interval) {
					t.Fatalf("ETA %v, the queues took %v; scopes %+v", pr.ETA, took, pr.Scopes)
				}
				for _, s := range pr.Scopes[1:] {
					if !etaFits(s.ETA, took, c.interval) {
						t.Fatalf("%v: ETA %v, the queues took %v", s.Scope, s.ETA, took)
					}
				}
			})
		})
	}
}

func ptr[T any](v T) *T { return &v }

// poolGoroutines returns the stacks of the goroutines running the pool's
// code (its workers, its wake-ups, what its context's cancel runs), the
// caller's left out.
func poolGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i > 0 && (strings.Contains(g, "cloudg/pool.New") || strings.Contains(g, "cloudg/pool.(*Pool)")) {
			found = append(found, g)
		}
	}
	return found
}

// Wait leaves no goroutine of the pool behind: what the cancel of the
// pool's context runs (dropping what is queued) has ended too when it
// returns, whether the pool was stopped or not, and with two Waits at
// once. Once Wait returns, nothing of the pool needs its lock: with it
// held, its goroutines end (one that called wg.Done may still be
// returning: the check lets them run); one that still needs it is left
// behind. Before the fix, the cancel's goroutine was there after about
// one Wait in five, a race that the test repeats enough to lose.
func TestWaitLeavesNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1000, resilience.Config{})
		for i := range 300 {
			parent, cancel := context.WithCancel(context.Background())
			p, ctx := New(parent, Workers(2), WithGovernor(g))
			for range 3 {
				p.Go(ctx, scope("op"), call(g, scope("op"), 0))
				p.Go(ctx, resilience.Scope{}, func(context.Context) error { return nil })
			}
			if i%3 == 1 {
				cancel() // the pool is stopped before Wait
			}
			var wg sync.WaitGroup
			if i%3 == 2 {
				wg.Go(func() { p.Wait() })
			}
			p.Wait()
			wg.Wait()
			p.mu.Lock()
			left := poolGoroutines()
			for try := 0; len(left) > 0 && try < 1000; try++ {
				runtime.Gosched()
				left = poolGoroutines()
			}
			p.mu.Unlock()
			if len(left) > 0 {
				t.Fatalf("pool %d: Wait returned with %d goroutines of the pool left:\n%s", i, len(left), strings.Join(left, "\n\n"))
			}
			cancel()
		}
	})
}

// A queue parked for its scope's tokens fails fast once a task of its own
// opens the scope's breaker: as that task ends, not at the time the
// tokens gave. Each task's call is throttled and gives up; the fifth
// opens the breaker, and the other fifteen are refused then.
func TestAParkedQueueFailsFastOnceItsTaskOpensTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1, resilience.Config{})
		dead := scope("dead")
		ctx, ledger := resilience.WithLedger(context.Background(), "scan")
		p, pctx := New(ctx, Workers(2), WithGovernor(g))
		start := time.Now()
		var mu sync.Mutex
		var opened time.Duration
		for range 20 {
			p.Go(pctx, dead, func(ctx context.Context) error {
				err := resilience.Do(ctx, dead, func(context.Context) error {
					time.Sleep(2500 * time.Millisecond) // meanwhile, the other worker parks the queue
					return &apiErr{code: "Throttling", status: 400}
				},
					resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
				mu.Lock()
				defer mu.Unlock()
				if _, why := g.Delay(dead); errors.Is(why, resilience.ErrCircuitOpen) && opened == 0 {
					opened = time.Since(start)
				}
				return err
			})
		}
		p.Wait()
		took := time.Since(start)
		if opened == 0 || took != opened || ledger.Count(resilience.LossSkipped) != 15 {
			t.Fatalf("the breaker opened at %v, the scan ended at %v; ledger %q", opened, took, ledger.Describe())
		}
	})
}

// A parked queue's scope is asked again at least once a second: a breaker
// that calls outside the pool open fails its queue within a second, not
// at the time its tokens gave.
func TestAParkedQueueSeesABreakerOpenedOutsideThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 0.2, resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1}})
		dead := scope("dead")
		ctx, ledger := resilience.WithLedger(context.Background(), "scan")
		p, pctx := New(ctx, Workers(2), WithGovernor(g))
		start := time.Now()
		for range 3 {
			p.Go(pctx, dead, call(g, dead, 0)) // the first takes the burst; the queue parks 5 s
		}
		synctest.Wait()
		openedAt := make(chan time.Duration, 1)
		go func() {
			// Sent at 5 s with the next token, throttled at 8 s: the
			// breaker opens (threshold 1). The queue's next token is at 10 s.
			resilience.Do(context.Background(), dead, func(context.Context) error {
				time.Sleep(3 * time.Second)
				return &apiErr{code: "Throttling", status: 400}
			}, resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
			openedAt <- time.Since(start)
		}()
		p.Wait()
		took := time.Since(start)
		opened := <-openedAt
		if opened != 8*time.Second || took < opened || took > opened+parkRecheck || ledger.Count(resilience.LossSkipped) != 2 {
			t.Fatalf("the breaker opened at %v, the scan ended at %v (want within %v); ledger %q", opened, took, parkRecheck, ledger.Describe())
		}
	})
}

// A task whose first call was refused goes back to its queue, counted in
// Deferred; a stop that drops it before it runs again counts it in
// Dropped too, and it ran once.
func TestADeferredTaskDroppedByAStopIsCountedInBoth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{})
		s := scope("s")
		parent, cancel := context.WithCancel(context.Background())
		p, pctx := New(parent, Workers(2), WithGovernor(g))
		var runs atomic.Int64
		p.Go(pctx, s, func(ctx context.Context) error {
			if runs.Add(1) == 1 {
				pause(t, g, s, 60*time.Second)
			}
			return call(g, s, 0)(ctx)
		})
		synctest.Wait()
		cancel()
		if err := p.Wait(); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait: %v, want context.Canceled", err)
		}
		if pr := p.Progress(); pr.Deferred != 1 || pr.Dropped != 1 || pr.Done+pr.Failed != 0 || runs.Load() != 1 {
			t.Fatalf("progress %+v after %d runs, want 1 deferred, 1 dropped, 1 run", pr, runs.Load())
		}
	})
}
