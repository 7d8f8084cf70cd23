//go:build go1.25

package pool

// Regressions a review of the pool found: each test states the rule a
// defect broke, and failed before its fix.

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	"github.com/cloudg/cloudg/state"
)

// A scope of a disabled provider is not paced, and its tasks run side by
// side: its calls, sent at once, decide their tasks' admission as they
// begin. Before, the pool held the scope's next task until the task
// ended: 8 one-second tasks on 8 workers took 8 s.
func TestADisabledProvidersScopeRunsItsTasksTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		off := false
		g := newGov(t, 1, resilience.Config{AWS: resilience.ProviderConfig{Enabled: &off}})
		s := scope("a")
		p, ctx := New(context.Background(), Workers(8), WithGovernor(g))
		start := time.Now()
		for range 8 {
			p.Go(ctx, s, call(g, s, time.Second))
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != time.Second {
			t.Fatalf("took %v, want 1s", took)
		}
	})
}

// A task that works a while before its first call holds its scope's next
// task back for admitHold at most, not until that call: 8 tasks of 1 s of
// work and a call at 1000 rps, on 8 workers, end within 1.1 s.
// Before, they took 8 s, one at a time.
func TestWorkBeforeTheFirstCallHoldsTheScopeBriefly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1000, resilience.Config{})
		s := scope("a")
		p, ctx := New(context.Background(), Workers(8), WithGovernor(g))
		start := time.Now()
		for range 8 {
			p.Go(ctx, s, func(ctx context.Context) error {
				time.Sleep(time.Second)
				return call(g, s, 0)(ctx)
			})
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if took, most := time.Since(start), time.Second+100*time.Millisecond; took > most {
			t.Fatalf("took %v, want at most %v", took, most)
		}
	})
}

// A task that calls runtime.Goexit (t.FailNow, say) ends failed with
// ErrGoexit; Wait returns, and the worker it ended is replaced. Before,
// Wait never returned and the worker's place was lost.
func TestATaskThatCallsGoexitEndsFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, ctx := New(context.Background(), Workers(1))
		var after atomic.Bool
		p.Go(ctx, resilience.Scope{}, func(context.Context) error { runtime.Goexit(); return nil })
		p.Go(ctx, resilience.Scope{}, func(context.Context) error { after.Store(true); return nil })
		err := p.Wait()
		if !errors.Is(err, ErrGoexit) || !after.Load() {
			t.Fatalf("Wait: %v; the task after it ran: %v", err, after.Load())
		}
		if pr := p.Progress(); pr.Failed != 1 || pr.Done != 1 {
			t.Fatalf("progress %v, want 1 failed and 1 done", pr)
		}
	})
}

// While a half-open breaker's probe is out, the scope's queue waits for
// its verdict: the probe succeeds, the breaker closes, and every task
// runs. Before, the queue ran at once behind the probe and its 19 other
// calls were refused, each recorded as skipped.
func TestAQueueWaitsForItsBreakersProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{})
		s := scope("flaky")
		openBreaker(t, g, s)
		d, _ := g.Delay(s)
		time.Sleep(d + time.Millisecond) // the cooldown is over: the next call is the probe
		ctx, ledger := resilience.WithLedger(context.Background(), "scan")
		p, pctx := New(ctx, Workers(4), WithGovernor(g))
		for range 20 {
			p.Go(pctx, s, call(g, s, time.Second))
		}
		synctest.Wait()
		for _, sp := range p.Progress().Scopes {
			if sp.Scope == s && (sp.State != ScopeWaiting || sp.Wait <= 0) {
				t.Errorf("while the probe is out, the scope is %q, wait %v; want waiting", sp.State, sp.Wait)
			}
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if n := ledger.Count(resilience.LossSkipped); n != 0 {
			t.Fatalf("%d of 20 calls skipped", n)
		}
	})
}

// The scopes' counts add up to the pool's, the dropped tasks included:
// those a stop dropped from their queues, and those Go dropped after it.
func TestTheScopesCountsAddUpAfterAStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1, resilience.Config{})
		parent, cancel := context.WithCancel(context.Background())
		p, ctx := New(parent, Workers(1), WithGovernor(g))
		for range 5 {
			p.Go(ctx, scope("a"), call(g, scope("a"), 0))
		}
		synctest.Wait()
		cancel()
		p.Go(ctx, scope("b"), call(g, scope("b"), 0)) // after the stop
		p.Wait()
		pr := p.Progress()
		dropped, sum := 0, 0
		for _, sp := range pr.Scopes {
			sum += sp.Queued + sp.Running + sp.Done + sp.Failed + sp.Dropped
			dropped += sp.Dropped
		}
		if total := pr.Queued + pr.Running + pr.Done + pr.Failed + pr.Dropped; sum != total || dropped != pr.Dropped || pr.Dropped != 5 {
			t.Fatalf("scopes add up to %d (%d dropped), the totals %d (%d dropped), want 6 (5)", sum, dropped, total, pr.Dropped)
		}
	})
}

// A queued task whose own context ends is dropped when its queue is next
// looked at, within parkRecheck, not run once its scope can go: here a
// 60 s pause. It is recorded as cancelled in its ledger, and Wait returns
// its context's cause.
func TestATaskWhoseContextEndsIsDroppedFromItsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{})
		s := scope("paused")
		pause(t, g, s, 60*time.Second)
		p, pctx := New(context.Background(), Workers(2), WithGovernor(g))
		tctx, ledger := resilience.WithLedger(pctx, "task")
		tctx, cancel := context.WithCancel(tctx)
		var ran atomic.Bool
		p.Go(tctx, s, func(ctx context.Context) error { ran.Store(true); return call(g, s, 0)(ctx) })
		synctest.Wait()
		cancel()
		start := time.Now()
		err := p.Wait()
		if took := time.Since(start); took > parkRecheck || ran.Load() {
			t.Fatalf("Wait took %v (want <= %v); the task ran: %v", took, parkRecheck, ran.Load())
		}
		if !errors.Is(err, context.Canceled) || ledger.Count(resilience.LossCancelled) != 1 || p.Progress().Dropped != 1 {
			t.Fatalf("Wait: %v; %d cancelled in the ledger, %d dropped; want context.Canceled, 1, 1",
				err, ledger.Count(resilience.LossCancelled), p.Progress().Dropped)
		}
	})
}

// A task of the zero scope, submitted by a task whose first call is still
// to come, does not take that task's hold: its call to a paused scope
// waits out the pause, and each task runs once. Before, the child's call
// was refused under the parent's hold, the parent put back and run again,
// and Wait returned the refusal.
func TestAZeroScopeChildDoesNotTakeItsParentsHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{})
		busy := scope("busy")
		pause(t, g, busy, 5*time.Second)
		s := scope("s")
		p, pctx := New(context.Background(), Workers(4), WithGovernor(g))
		var parents, children atomic.Int64
		started := make(chan struct{}, 10)
		p.Go(pctx, s, func(ctx context.Context) error {
			parents.Add(1)
			p.Go(ctx, resilience.Scope{}, func(ctx context.Context) error {
				children.Add(1)
				started <- struct{}{}
				return call(g, busy, 0)(ctx)
			})
			<-started
			time.Sleep(time.Millisecond)
			return call(g, s, 0)(ctx)
		})
		err := p.Wait()
		if parents.Load() != 1 || children.Load() != 1 || err != nil {
			t.Fatalf("the parent ran %d times, the child %d; Wait: %v", parents.Load(), children.Load(), err)
		}
	})
}

// A task whose first call was refused ends by how it ended, not by its
// error's type. One that then panicked (handling the refusal, say) or
// called runtime.Goexit ends failed with that: it is not run again as a
// refused task is, which would hide the defect (before, the panic was
// dropped and the task ran again). One that returned a *PanicError or
// ErrGoexit itself (a pool of its own, say) returned: it runs again
// (before, it ended failed, as if it had panicked).
func TestATaskAfterARefusalFailsOnlyIfItDidNotReturn(t *testing.T) {
	for _, end := range []struct {
		name      string
		do        func() error
		runsAgain bool
		want      func(error) bool // Wait's error, when it does not run again
	}{
		{"panic", func() error { panic("handling the refusal") }, false, func(err error) bool {
			var pe *PanicError
			return errors.As(err, &pe) && pe.Value == "handling the refusal"
		}},
		{"Goexit", func() error { runtime.Goexit(); return nil }, false, func(err error) bool { return errors.Is(err, ErrGoexit) }},
		{"returns a PanicError", func() error { return &PanicError{Value: "a pool of the task's own"} }, true, nil},
		{"returns ErrGoexit", func() error { return ErrGoexit }, true, nil},
	} {
		t.Run(end.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, 1, resilience.Config{})
				sc := scope("op")
				p, ctx := New(context.Background(), Workers(1), WithGovernor(g))
				var runs atomic.Int64
				p.Go(ctx, sc, func(ctx context.Context) error {
					if runs.Add(1) > 1 {
						return nil
					}
					// Someone outside the pool takes the token first.
					if err := call(g, sc, 0)(context.Background()); err != nil {
						return err
					}
					if err := call(g, sc, 0)(ctx); err != nil {
						return end.do()
					}
					return nil
				})
				err := p.Wait()
				pr := p.Progress()
				switch {
				case end.runsAgain && (err != nil || runs.Load() != 2 || pr.Done != 1 || pr.Deferred != 1):
					t.Fatalf("Wait: %v after %d runs, progress %+v; want nil after 2 runs (the refused task run again)", err, runs.Load(), pr)
				case !end.runsAgain && (!end.want(err) || runs.Load() != 1 || pr.Failed != 1 || pr.Deferred != 0):
					t.Fatalf("Wait: %v after %d runs, progress %+v; want the task's end after 1 run, failed", err, runs.Load(), pr)
				}
			})
		})
	}
}

// heldByARefusal starts a pool whose one task, of scope s, finds s busy
// on its first run: as it begins, busy makes the scope wait (a pause, a
// token taken by another caller), so that the task's first call is
// refused for that wait and its queue holds it until then. The task runs
// with ctx, or the pool's context if nil. It returns the pool and how many
// times the task ran.
func heldByARefusal(g *resilience.Governor, ctx context.Context, s resilience.Scope, busy func()) (*Pool, *atomic.Int64) {
	p, pctx := New(context.Background(), Workers(2), WithGovernor(g))
	if ctx == nil {
		ctx = pctx
	}
	runs := new(atomic.Int64)
	p.Go(ctx, s, func(ctx context.Context) error {
		if runs.Add(1) == 1 {
			busy()
		}
		return call(g, s, 0)(ctx)
	})
	synctest.Wait()
	return p, runs
}

// A queue held by a refusal of its head drops a task whose context ended
// within parkRecheck, as any waiting queue does. Before, it kept the task
// for the whole refusal's wait (here 60 s), and Wait with it.
func TestAQueueHeldByARefusalDropsACancelledTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{})
		s := scope("s")
		tctx, ledger := resilience.WithLedger(context.Background(), "task")
		tctx, cancel := context.WithCancel(tctx)
		p, runs := heldByARefusal(g, tctx, s, func() { pause(t, g, s, 60*time.Second) })
		cancel()
		start := time.Now()
		err := p.Wait()
		if took := time.Since(start); took > parkRecheck || runs.Load() != 1 {
			t.Fatalf("Wait took %v (want at most %v); %d runs, want 1", took, parkRecheck, runs.Load())
		}
		if !errors.Is(err, context.Canceled) || ledger.Count(resilience.LossCancelled) != 1 {
			t.Fatalf("Wait: %v, ledger %q; want context.Canceled, 1 cancelled", err, ledger.Describe())
		}
	})
}

// A queue held by a refusal of its head fails fast within parkRecheck once
// its scope's breaker opens, as the package's doc says of any waiting
// queue. Here the refusal waited for a token 20 s away, and the breaker
// opened at 3 s. Before, the queue waited the 20 s.
func TestAQueueHeldByARefusalSeesItsBreakerOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 0.05, resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1, MinRPS: 0.05}})
		s := scope("dead")
		ctx, ledger := resilience.WithLedger(context.Background(), "scan")
		start := time.Now()
		opened := make(chan time.Duration, 1)
		p, _ := heldByARefusal(g, ctx, s, func() {
			sent := make(chan struct{})
			go func() {
				// Another caller takes the token, and its call is
				// throttled at 3 s: the breaker opens (threshold 1).
				resilience.Do(context.Background(), s, func(context.Context) error {
					close(sent)
					time.Sleep(3 * time.Second)
					return &apiErr{code: "Throttling", status: 400}
				}, resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
				opened <- time.Since(start)
			}()
			<-sent
		})
		err := p.Wait()
		took, at := time.Since(start), <-opened
		if !errors.Is(err, resilience.ErrCircuitOpen) || took > at+parkRecheck || ledger.Count(resilience.LossSkipped) != 1 {
			t.Fatalf("the breaker opened at %v, the scan ended at %v (want within %v); Wait: %v; ledger %q", at, took, parkRecheck, err, ledger.Describe())
		}
	})
}

// Scopes that share a bucket (the operations of a service paced as one)
// take its tokens in turn: each waits for the same token, and the one
// that waited longest goes first. Here three operations of a service at
// 1 rps, 8 tasks each, 4 workers: any 5 calls in a row have one of each.
// Before, the parked queues due at the same time came out of the heap in
// no fair order (last in, first out), and one operation waited while the
// other two took 16 tokens in turn ("ABABABABABABABABCCCCCCCC"); and a
// queue whose first call lost the token to another scope's parked again
// behind the others.
func TestScopesSharingABucketTakeItsTokensInTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		order := sharedBucketTurns(t, 8, nil)
		// While each scope has tasks left, none waits more than a round
		// (and the start's: the first calls race for the first token).
		takenInTurn(t, order, 21)
	})
}

// sharedBucketTurns runs, on 4 workers, rounds tasks of each of the
// operations A, B and C (queued A, B, C, round after round) of a service
// whose operations share one bucket at 1 rps (burst 1), each task one
// call; before, if not nil, runs in each task before its call, with its
// operation. It returns the operations in the order their calls were sent.
func sharedBucketTurns(t *testing.T, rounds int, before func(op string)) []string {
	t.Helper()
	cfg := resilience.Config{}
	cfg.AWS.Services = map[string]resilience.ServiceConfig{"shared": {MaxRPS: 1, Burst: 1}}
	g, err := resilience.NewGovernor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
	var sent sendLog
	for range rounds {
		for _, op := range []string{"A", "B", "C"} {
			s := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "eu-west-1", Service: "shared", Operation: op}
			p.Go(ctx, s, func(ctx context.Context) error {
				if before != nil {
					before(op)
				}
				return sent.call(g, s)(ctx)
			})
		}
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return sent.order()
}

// takenInTurn fails t unless every 5 calls in a row of the first n of
// order (sharedBucketTurns's) have one of each of its three scopes.
func takenInTurn(t *testing.T, order []string, n int) {
	t.Helper()
	for i := 0; i+5 <= n; i++ {
		if w := order[i : i+5]; len(slices.Compact(slices.Sorted(slices.Values(w)))) != 3 {
			t.Fatalf("calls %d-%d are %v, not one of each scope: %s", i+1, i+5, w, strings.Join(order, ""))
		}
	}
}

// A queue held by a refusal of its head is asked about again as soon as a
// task of it ends, as the package's doc says of any waiting queue: here
// the task ends throttled at 2.5 s, the second failure in a row opens the
// breaker (threshold 2), and the queue fails fast then. Before, it waited
// for its next look, at 3 s.
func TestAQueueHeldByARefusalSeesItsTaskOpenTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1, resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 2}})
		s := scope("dead")
		ctx, ledger := resilience.WithLedger(context.Background(), "scan")
		p, pctx := New(ctx, Workers(2), WithGovernor(g))
		start := time.Now()
		var ended time.Duration
		p.Go(pctx, s, func(ctx context.Context) error {
			defer func() { ended = time.Since(start) }()
			return resilience.Do(ctx, s, func(context.Context) error {
				time.Sleep(2500 * time.Millisecond)
				return &apiErr{code: "Throttling", status: 400}
			}, resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
		})
		var runs atomic.Int64
		p.Go(pctx, s, func(ctx context.Context) error {
			if runs.Add(1) == 1 {
				pause(t, g, s, 60*time.Second) // at 1 s: the first call is refused, and holds the queue
			}
			return call(g, s, 0)(ctx)
		})
		err := p.Wait()
		took := time.Since(start)
		if !errors.Is(err, resilience.ErrCircuitOpen) || runs.Load() != 2 || took != ended || ledger.Count(resilience.LossSkipped) != 1 {
			t.Fatalf("the first task ended at %v, the scan at %v; %d runs of the second; Wait: %v; ledger %q", ended, took, runs.Load(), err, ledger.Describe())
		}
	})
}

// lockSeer is a task's error whose As notes whether its pool's lock was
// held when it was called: an error type with methods of its own may
// reach back into the pool (its Progress, say), which would deadlock then.
type lockSeer struct {
	p      *Pool
	locked *atomic.Bool
}

func (e lockSeer) Error() string { return "failed after the refusal" }
func (e lockSeer) As(any) bool {
	if e.p.mu.TryLock() {
		e.p.mu.Unlock()
	} else {
		e.locked.Store(true)
	}
	return false
}
func (e lockSeer) Unwrap() error { return &PanicError{Value: "a pool of the task's own"} }

// A task whose first call was refused and that returned (not panicked) runs
// again, whatever its error wraps: the pool calls no method of the error
// under its lock (before, errors.As did: an error whose As read the pool's
// Progress deadlocked the pool), and a PanicError the task returned
// (a pool of its own, say) is not the task's own panic (before, the task
// ended failed, not run again).
func TestATaskReturningAfterARefusalRunsAgainWhateverItsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1, resilience.Config{})
		sc := scope("op")
		p, ctx := New(context.Background(), Workers(1), WithGovernor(g))
		var runs atomic.Int64
		var locked atomic.Bool
		p.Go(ctx, sc, func(ctx context.Context) error {
			if runs.Add(1) > 1 {
				return nil
			}
			// Someone outside the pool takes the token first.
			if err := call(g, sc, 0)(context.Background()); err != nil {
				return err
			}
			if err := call(g, sc, 0)(ctx); err != nil {
				return lockSeer{p, &locked}
			}
			return nil
		})
		if err := p.Wait(); err != nil || runs.Load() != 2 || locked.Load() {
			t.Fatalf("Wait: %v after %d runs, the error's As called under the pool's lock: %v; want nil after 2 runs (the refused one again), no method of the error called under the lock",
				err, runs.Load(), locked.Load())
		}
		if pr := p.Progress(); pr.Done != 1 || pr.Deferred != 1 {
			t.Fatalf("progress %+v, want 1 done, 1 deferred", pr)
		}
	})
}

// A queue held by a refusal of its head asks the governor again within
// parkRecheck of a Governor.Reset or Governor.Configure: the refusal's
// wait was the old state's. After a Reset, which forgot the pause, the
// task runs; after a Configure, which keeps it, the queue waits out what
// remains of it. Here a 60 s pause, changed at 5 s. Before, the queue
// stayed held the whole 60 s after a Reset.
func TestAQueueHeldByARefusalRunsAgainAfterAReset(t *testing.T) {
	for _, change := range []struct {
		name string
		do   func(*resilience.Governor)
	}{
		{"Reset", (*resilience.Governor).Reset},
		{"Configure", func(g *resilience.Governor) {
			// The same configuration: the pause is the scope's learned
			// state, which Configure keeps, so the queue asks again and
			// is held by what remains of the pause.
			if err := g.Configure(g.Config()); err != nil {
				panic(err)
			}
		}},
	} {
		t.Run(change.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGov(t, 100, resilience.Config{})
				s := scope("s")
				start := time.Now()
				p, runs := heldByARefusal(g, nil, s, func() { pause(t, g, s, 60*time.Second) })
				time.Sleep(5 * time.Second)
				change.do(g)
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				took := time.Since(start)
				switch change.name {
				case "Reset":
					if took > 5*time.Second+parkRecheck || runs.Load() != 2 {
						t.Fatalf("Wait took %v (want at most %v); %d runs, want 2", took, 5*time.Second+parkRecheck, runs.Load())
					}
				default:
					if took < 60*time.Second || runs.Load() != 2 {
						t.Fatalf("Wait took %v (want the pause's 60 s); %d runs, want 2", took, runs.Load())
					}
				}
			})
		})
	}
}

// A task whose first call was refused goes back to its queue; when another
// task of the scope holds the queue then (its first call still to come),
// the queue is ready again at the end of that hold (admitHold), not when
// that task ends. Before, nothing woke the pool at the hold's end if the
// hold began with the queue empty: the refused task waited out the other
// task (10 s here, against its refusal's 1 s), and a pool whose holder
// waited for the refused task stalled.
func TestARefusedTaskBehindAnotherTasksHoldRunsWhenTheHoldEnds(t *testing.T) {
	t.Run("the holder works 10 s", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, 1, resilience.Config{})
			s := scope("op")
			p, ctx := New(context.Background(), Workers(2), WithGovernor(g))
			start := time.Now()
			var runs atomic.Int64
			rerun := make(chan time.Duration, 1)
			p.Go(ctx, s, func(ctx context.Context) error {
				if runs.Add(1) == 2 {
					rerun <- time.Since(start)
					return call(g, s, 0)(ctx)
				}
				time.Sleep(15 * time.Millisecond) // its hold ends at 10 ms: the second task starts, its queue empty
				return call(g, s, 0)(ctx)         // refused at 15 ms: the token went at 12 ms
			})
			p.Go(ctx, s, func(ctx context.Context) error {
				time.Sleep(10 * time.Second) // calls nothing: its hold ends at 20 ms
				return nil
			})
			time.Sleep(12 * time.Millisecond)
			call(g, s, 0)(context.Background()) // another caller takes the token
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if at := <-rerun; at > 1100*time.Millisecond {
				t.Fatalf("the refused task ran again at %v, want at its refusal's wait (about 1 s): the other task's hold ended at 20 ms", at)
			}
		})
	})
	t.Run("the holder waits for the refused task", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, 1, resilience.Config{})
			s := scope("op")
			p, ctx := New(context.Background(), Workers(2), WithGovernor(g))
			start := time.Now()
			firstDone := make(chan struct{})
			var runs atomic.Int64
			p.Go(ctx, s, func(ctx context.Context) error {
				if runs.Add(1) == 1 {
					time.Sleep(15 * time.Millisecond)
					return call(g, s, 0)(ctx)
				}
				defer close(firstDone)
				return call(g, s, 0)(ctx)
			})
			p.Go(ctx, s, func(ctx context.Context) error {
				select { // calls nothing, and waits for the first task
				case <-firstDone:
					return nil
				case <-time.After(time.Hour):
					return errors.New("the refused task never ran again")
				}
			})
			time.Sleep(12 * time.Millisecond)
			call(g, s, 0)(context.Background()) // another caller takes the token
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 1100*time.Millisecond {
				t.Fatalf("the scan took %v, want about 1 s", took)
			}
		})
	})
}

// An ETA too long for a time.Duration is the longest one, and more queued
// tasks never shorten it. Before, queued/rate seconds were converted
// without a bound: past the longest Duration the conversion wrapped, and
// 10,000 tasks at a call every 11.6 days gave an ETA of 0 (9,000 gave
// 2,500,000 h).
func TestAnETATooLongForADurationIsTheLongest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		perOp := true
		cfg := resilience.Config{AWS: resilience.ProviderConfig{DeadlineSeconds: 1.01e6, MinRPS: 1e-6,
			Services: map[string]resilience.ServiceConfig{"svc": {MaxRPS: 1e-6, Burst: 1, PerOperation: &perOp}}}}
		g, err := resilience.NewGovernor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := scope("slow")
		parent, cancel := context.WithCancel(context.Background())
		defer cancel()
		p, ctx := New(parent, Workers(1), WithGovernor(g))
		hold := make(chan struct{})
		p.Go(ctx, resilience.Scope{}, func(context.Context) error { <-hold; return nil }) // the one worker
		synctest.Wait()
		var last time.Duration
		for _, n := range []int{9000, 1000, 1000} {
			for range n {
				p.Go(ctx, s, call(g, s, 0))
			}
			pr := p.Progress()
			if pr.ETA < last || pr.Scopes[len(pr.Scopes)-1].ETA < 0 {
				t.Fatalf("%d queued: ETA %v after %v (%q): more tasks, a shorter ETA", pr.Queued, pr.ETA, last, pr.String())
			}
			last = pr.ETA
		}
		if last != math.MaxInt64 {
			t.Errorf("11,000 tasks at a call every 11.6 days: ETA %v, want the longest Duration", last)
		}
		cancel()
		close(hold)
		p.Wait()
	})
}

// progressCause is a stop's cause whose Error reads the pool's Progress.
type progressCause struct{ p *Pool }

func (c progressCause) Error() string { return "scan stopped at " + c.p.Progress().String() }

// The ledgers are told of the tasks a stop dropped with the pool's lock
// released: the reason formats the stop's cause, whose Error is the
// user's and may read the pool. Before, the stop formatted it under the
// lock, and a cause whose Error read Progress deadlocked the stop: Wait
// never returned. (Real time: a mutex deadlock is no synctest deadlock.)
func TestAStopsCauseMayReadThePool(t *testing.T) {
	g := newGov(t, 0.5, resilience.Config{})
	s := scope("op")
	parent, cancel := context.WithCancelCause(context.Background())
	lctx, ledger := resilience.WithLedger(parent, "scan")
	p, ctx := New(lctx, Workers(1), WithGovernor(g))
	for range 3 {
		p.Go(ctx, s, call(g, s, 0))
	}
	time.Sleep(50 * time.Millisecond) // one ran; the others wait for tokens 2 s apart
	cancel(progressCause{p})
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case err := <-done:
		if !strings.Contains(fmt.Sprint(err), "scan stopped at done") {
			t.Errorf("Wait: %v, want the stop's cause", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return within 5 s of the stop: the stop formats its cause, whose Error reads Progress, under the pool's lock")
	}
	// Every dropped task is in the ledger by the time Wait returns.
	if d := ledger.Describe(); !strings.Contains(d, "2 call(s) cancelled") || !strings.Contains(d, "task not run: scan stopped at done") {
		t.Errorf("the ledger: %q, want the 2 dropped tasks, with the stop's cause", d)
	}
}

// A task's first governed call made after the task returned (by a
// goroutine the task left running) is an ordinary call: the pool ends the
// task's hold when the task returns (resilience.EndAdmission), so the
// call waits for its token as any call does. Before, it claimed the
// task's hold, was refused at once as a first call that would wait, was
// recorded nowhere, and the task, counted done, never ran again.
func TestAFirstCallAfterItsTaskReturnedIsAnOrdinaryCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1, resilience.Config{})
		s := scope("op")
		ctx, ledger := resilience.WithLedger(context.Background(), "scan")
		p, _ := New(ctx, Workers(2), WithGovernor(g))
		start := time.Now()
		late := make(chan error, 1)
		var at time.Duration
		p.Go(ctx, s, func(ctx context.Context) error {
			go func() {
				time.Sleep(100 * time.Millisecond)
				err := call(g, s, 0)(ctx) // the task's first governed call, after the task returned
				at = time.Since(start)
				late <- err
			}()
			return nil
		})
		time.Sleep(50 * time.Millisecond)
		call(g, s, 0)(context.Background()) // another caller takes the token: the next is 1 s later
		err := <-late
		if werr := p.Wait(); werr != nil {
			t.Fatal(werr)
		}
		if err != nil || at != 1050*time.Millisecond {
			t.Fatalf("the late call: %v at %v; ledger %q; want a success at 1.05s, when its token came", err, at, ledger.Describe())
		}
	})
}

// A first call that a goroutine its task left running claimed before the
// task returned, and that was refused after it (it waited for a slot
// past the pool's max wait), is lost once, in the governor's lifetime
// counters, the run's stats and the task's ledger alike, as
// resilience.Loss says every lost call is, and the task, which will not
// run again, is done once. Before, only the ledger had it: the governor
// told the pool to run the task again (Deferred), recording nothing, and
// the pool, finding the task ended, recorded the call in the ledger
// alone. (Earlier still, it was recorded nowhere.)
func TestARefusalAfterItsTaskReturnedIsInEveryCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}})
		// The task's scope can go; its first call is of another account,
		// whose only slot the holder has.
		other := func(op string) resilience.Scope { sc := scope(op); sc.Account = "210987654321"; return sc }
		holdCtx, release := context.WithCancel(context.Background())
		var holding sync.WaitGroup
		holding.Go(func() { // the account's only slot, until released
			resilience.Do(holdCtx, other("holder"), func(ctx context.Context) error {
				<-ctx.Done()
				return nil
			}, resilience.WithGovernor(g))
		})
		synctest.Wait()

		s := scope("op")
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "scan")
		p, _ := New(ctx, Workers(1), WithGovernor(g), MaxWait(time.Second))
		late := make(chan error, 1)
		p.Go(ctx, s, func(ctx context.Context) error {
			go func() { late <- call(g, other("op"), 0)(ctx) }() // claims the task's hold, waits for the slot
			time.Sleep(10 * time.Millisecond)
			return nil // before the call is refused, at 1 s
		})
		err := <-late
		release()
		holding.Wait()
		if werr := p.Wait(); werr != nil {
			t.Fatal(werr)
		}
		if !errors.Is(err, resilience.ErrNoSlot) {
			t.Fatalf("the late call: %v, want a refusal for want of a slot", err)
		}
		run, life := g.Summary(stats).Totals.Refused, g.Summary(nil).Totals.Refused
		if n := ledger.Count(resilience.LossRefused); n != 1 || run != 1 || life != 1 {
			t.Errorf("refused: ledger %d, run's stats %d, lifetime %d; want 1 in each (ledger %q)", n, run, life, ledger.Describe())
		}
		if pr := p.Progress(); pr.Done != 1 || pr.Queued != 0 || pr.Deferred != 0 {
			t.Errorf("progress %+v, want the task done once, not queued again", pr)
		}
	})
}

// unhashableErr is an error that cannot be a map key, nor compared.
type unhashableErr struct{ parts []string }

func (e unhashableErr) Error() string { return strings.Join(e.parts, " ") }

// Wait returns the cause of every context that dropped a task, each cause
// once, as Go and Wait say: a task's own context's, and the stop's when
// the pool is stopped with tasks still queued. Before, only the first
// drop's cause was kept: a task whose deadline passed in a paused scope
// hid the stop that dropped the rest (errors.Is(err, stop) was false),
// and a second task's own cause was lost too.
func TestWaitReturnsTheCauseOfEveryDrop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{})
		s := scope("paused")
		pause(t, g, s, 60*time.Second)
		parent, stop := context.WithCancelCause(context.Background())
		p, pctx := New(parent, Workers(2), WithGovernor(g))
		errLate, errGone, errStop := errors.New("task deadline"), errors.New("tenant removed"), errors.New("scan interrupted")
		late, cancelLate := context.WithTimeoutCause(pctx, time.Millisecond, errLate)
		defer cancelLate()
		gone, cancelGone := context.WithCancelCause(pctx)
		odd, cancelOdd := context.WithCancelCause(pctx)
		for _, ctx := range []context.Context{late, late, gone, odd, odd, pctx} {
			p.Go(ctx, s, call(g, s, 0))
		}
		cancelGone(errGone)
		cancelOdd(unhashableErr{[]string{"odd", "cause"}})
		time.Sleep(2 * parkRecheck) // the own contexts' tasks are dropped
		stop(errStop)               // and then the pool's last task
		err := p.Wait()
		if pr := p.Progress(); pr.Dropped != 6 {
			t.Fatalf("%d dropped, want 6", pr.Dropped)
		}
		var got []error
		if u, ok := err.(interface{ Unwrap() []error }); ok {
			got = u.Unwrap()
		}
		for _, cause := range []error{errLate, errGone, errStop} {
			if !errors.Is(err, cause) {
				t.Errorf("Wait: %v; it lacks %q", err, cause)
			}
		}
		if !strings.Contains(fmt.Sprint(err), "odd cause") {
			t.Errorf("Wait: %v; it lacks \"odd cause\"", err)
		}
		if len(got) != 4 {
			t.Errorf("Wait: %q, want the 4 causes, each once", got)
		}
	})
}

// Go refuses a nil context or function at the call, with a panic that
// says so, in the caller's goroutine, and the pool goes on. Before, a nil
// context was queued, and the worker that looked at it dereferenced it
// under the pool's lock: the process crashed from a goroutine of the
// pool. A nil function was run, and Wait returned a *PanicError of a nil
// dereference inside the pool. (In a child process: the crash ends it.)
func TestGoRefusesANilContextOrFunction(t *testing.T) {
	if !childtest.InChild(t, time.Minute) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 100, resilience.Config{})
		s := scope("op")
		p, ctx := New(context.Background(), Workers(2), WithGovernor(g))
		goPanic := func(ctx context.Context, fn func(context.Context) error) (v any) {
			defer func() { v = recover() }()
			p.Go(ctx, s, fn)
			return nil
		}
		if v := goPanic(nil, call(g, s, 0)); !strings.Contains(fmt.Sprint(v), "pool: Go with a nil context") {
			t.Errorf("Go(nil ctx): panicked with %v, want \"pool: Go with a nil context\"", v)
		}
		if v := goPanic(ctx, nil); !strings.Contains(fmt.Sprint(v), "pool: Go with a nil function") {
			t.Errorf("Go(nil fn): panicked with %v, want \"pool: Go with a nil function\"", v)
		}
		synctest.Wait()
		p.Go(ctx, s, call(g, s, 0))
		if err := p.Wait(); err != nil {
			t.Errorf("Wait: %v, want nil", err)
		}
		if pr := p.Progress(); pr.Done != 1 || pr.Failed+pr.Dropped+pr.Queued != 0 {
			t.Errorf("progress %v, want the one task done", pr)
		}
	})
}

// A task's call waiting in a worker for its account's token sends nothing
// while its scope is paused: another task's call was throttled with a
// Retry-After of 60 s at 0.5 s, after the waiting call's leaf token was
// due (at once) and before its account token was (at 1 s, the second
// task's first call having taken the account's second token at 10 ms).
// It goes after the pause, at the halved rate. Before, it was sent at
// 1 s, into the pause.
func TestATaskWaitingAtItsAccountSendsNothingDuringAPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		acct, perOp := 1.0, true
		g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{AccountMaxRPS: &acct, AccountBurst: 2,
			Services: map[string]resilience.ServiceConfig{"svc": {MaxRPS: 100, Burst: 100, PerOperation: &perOp}}}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		once := resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1})
		p, ctx := New(context.Background(), Workers(2), WithGovernor(g))
		sent := time.Duration(-1)
		p.Go(ctx, scope("op0"), func(ctx context.Context) error {
			resilience.Do(ctx, scope("op0"), func(context.Context) error {
				time.Sleep(500 * time.Millisecond)
				return throttleAfter(60 * time.Second)
			}, resilience.WithGovernor(g), once)
			return nil
		})
		p.Go(ctx, scope("op1"), func(ctx context.Context) error {
			// After the first task's call took the account's first token,
			// whichever worker the scheduler runs first.
			time.Sleep(10 * time.Millisecond)
			if err := resilience.Do(ctx, scope("op1"), func(context.Context) error { return nil }, resilience.WithGovernor(g), once); err != nil {
				return err
			}
			return resilience.Do(ctx, scope("op0"), func(context.Context) error {
				sent = time.Since(start)
				return nil
			}, resilience.WithGovernor(g), once)
		})
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if want := 60*time.Second + 520*time.Millisecond; sent != want {
			t.Fatalf("the call waiting for its account's token, its scope paused from 0.5s for 60s: sent at %v, want at %v", sent, want)
		}
	})
}

// A scope whose breaker is open, of a provider that waits for its
// breakers' verdicts (breaker_wait), is not dead: its queue waits in the
// pool, costing no worker, until the breaker lets a probe through, and its
// first task then runs once, as the probe. Before, the pool ran the queue's
// head at once (as for a dead scope, whose calls fail fast), only for its
// first call to be refused and the task deferred: run twice, a worker
// taken and a deferral counted for each open period.
func TestAnOpenBreakerThatWaitsForItsVerdictRunsNoTaskToDeferIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fixed := false
		g := newGov(t, 1, resilience.Config{AWS: resilience.ProviderConfig{Adaptive: &fixed, BreakerWait: true}})
		s := scope("dead")
		openBreaker(t, g, s)
		wait, _ := g.Delay(s)
		start := time.Now()
		p, ctx := New(context.Background(), WithGovernor(g))
		var runs atomic.Int32
		var first time.Duration
		for range 3 {
			p.Go(ctx, s, func(ctx context.Context) error {
				if runs.Add(1) == 1 {
					first = time.Since(start)
				}
				return call(g, s, 0)(ctx)
			})
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if pr := p.Progress(); runs.Load() != 3 || pr.Deferred != 0 || first < wait {
			t.Fatalf("3 tasks of a scope whose breaker_wait breaker is open for %v: %d runs, the first at %v, %d deferred; want 3 runs, none before the cooldown ends, none deferred",
				wait, runs.Load(), first, pr.Deferred)
		}
	})
}

// A refusal holds its queue until its wait has passed when the task it
// refused started after the governor's last Reset, even if a task started
// before it is refused afterwards: that older refusal is asked again of
// Delay, but the newer one's hold stands. Here the second task's first
// call (to another scope, paused for 30 s) is refused after a Reset, then
// the first task, started before it, is refused for its own scope's token
// (1 s). Before, the two refusals, from tasks of different generations,
// dropped the whole hold: Delay said the queue's own scope could go at
// 1 s, and the second task ran again at 2 s, into the pause.
func TestARefusalAfterAResetHoldsItsQueueWhateverAnOlderOneSays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1, resilience.Config{})
		own, other := scope("own"), scope("other")
		p, ctx := New(context.Background(), Workers(2), WithGovernor(g))
		start := time.Now()
		release := make(chan struct{})
		p.Go(ctx, own, func(ctx context.Context) error {
			<-release // its hold ends at 10 ms: it calls after the Reset
			return call(g, own, 0)(ctx)
		})
		synctest.Wait()
		g.Reset()
		time.Sleep(20 * time.Millisecond)
		pause(t, g, other, 30*time.Second)
		var runs atomic.Int64
		var again time.Duration
		p.Go(ctx, own, func(ctx context.Context) error {
			if runs.Add(1) == 2 {
				again = time.Since(start)
			}
			if err := call(g, other, 0)(ctx); err != nil {
				return err // refused for the pause: run again after it
			}
			return call(g, own, 0)(ctx)
		})
		synctest.Wait()
		call(g, own, 0)(context.Background()) // another caller takes own's token
		close(release)                        // the first task's call is refused for 1 s
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if want := 30 * time.Second; runs.Load() < 2 || again < want {
			t.Fatalf("the task refused for a %v pause after the Reset ran again at %v (%d runs), want not before %v", want, again, runs.Load(), want)
		}
	})
}

// Progress says a queue is waiting, and for how long, while the refusal
// of its head's first call holds it: the pool runs none of its tasks until
// then, whatever Delay says of the queue's own scope (a first call to
// another scope, paused here for 30 s, which Delay of the queue's scope
// cannot see). Before, Progress said the queue was ready with no wait for
// the whole hold, as Delay said.
func TestProgressShowsTheHoldOfARefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, 1, resilience.Config{})
		own, other := scope("own"), scope("other")
		pause(t, g, other, 30*time.Second)
		p, ctx := New(context.Background(), Workers(2), WithGovernor(g))
		for range 2 {
			p.Go(ctx, own, func(ctx context.Context) error {
				if err := call(g, other, 0)(ctx); err != nil {
					return err // refused for the pause: run again after it
				}
				return call(g, own, 0)(ctx)
			})
		}
		synctest.Wait()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		d, _ := g.Delay(other) // the pause's end, and a token after it
		for _, sp := range p.Progress().Scopes {
			if sp.Scope != own {
				continue
			}
			if sp.State != ScopeWaiting || sp.Wait < d-time.Second || sp.Wait > d {
				t.Errorf("5 s into the hold of a refusal for a 30 s pause (the paused scope's calls wait %v), the queue is %q, wait %v; want waiting as long", d, sp.State, sp.Wait)
			}
			if sp.ETA < sp.Wait {
				t.Errorf("the queue's ETA %v is shorter than its wait %v", sp.ETA, sp.Wait)
			}
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

// A queue of a provider that is turned off, held by the refusal of its
// head's first call to a scope of another provider (paused for 30 s),
// waits as any held queue does, and its ETA is not shorter than its
// wait: the pool runs none of its tasks until the hold ends, though
// nothing paces the queue's own calls. Before, Progress said it waited
// for the hold and gave an ETA of 0.
func TestProgressOfAHeldQueueOfAProviderTurnedOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		off := false
		g := newGov(t, 1, resilience.Config{GCP: resilience.ProviderConfig{Enabled: &off}})
		own := resilience.Scope{Provider: "gcp", Account: "projects/p", Region: "global", Service: "compute", Operation: "list"}
		other := scope("other")
		pause(t, g, other, 30*time.Second)
		p, ctx := New(context.Background(), Workers(2), WithGovernor(g))
		for range 2 {
			p.Go(ctx, own, func(ctx context.Context) error {
				return call(g, other, 0)(ctx) // refused for the pause: run again after it
			})
		}
		synctest.Wait()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		pr := p.Progress()
		for _, sp := range pr.Scopes {
			if sp.Scope != own {
				continue
			}
			if sp.State != ScopeWaiting || sp.Wait < 20*time.Second {
				t.Errorf("5 s into the hold of a refusal for a 30 s pause, the queue of a provider turned off is %q, wait %v; want waiting about 25 s", sp.State, sp.Wait)
			}
			if sp.ETA < sp.Wait || pr.ETA < sp.ETA {
				t.Errorf("the held queue's ETA %v is shorter than its wait %v (the pool's ETA %v)", sp.ETA, sp.Wait, pr.ETA)
			}
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

// foundDead makes s dead without opening its breaker: five calls
// throttled over six seconds, their outcomes still open (end ends them),
// and four seconds of quiet. Delay says the scope cannot go, for the
// breaker's cooldown; the next call's admission opens the breaker.
func foundDead(t *testing.T, g *resilience.Governor, s resilience.Scope) (end func()) {
	t.Helper()
	var gds []*resilience.Guard
	for i := range 5 {
		if i > 0 {
			time.Sleep(1500 * time.Millisecond)
		}
		gd, err := g.Begin(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		gd.Release()
		gd.After(&apiErr{code: "Throttling", status: 400})
		gds = append(gds, gd)
	}
	time.Sleep(4 * time.Second)
	if _, why := g.Delay(s); !errors.Is(why, resilience.ErrCircuitOpen) || g.Inspect(s).Breaker.State != state.Closed {
		t.Fatalf("%v: Delay says %v, breaker %v; want found dead, its breaker closed", s, why, g.Inspect(s).Breaker.State)
	}
	return func() {
		for _, gd := range gds {
			gd.End(&apiErr{code: "Throttling", status: 400})
		}
	}
}

// A scope found dead with its breaker still closed, of a provider that
// waits for its breakers' verdicts (breaker_wait), sends nothing before
// the breaker's cooldown has passed, as a call made outside the pool
// waits for it, and as Progress's ETA says. Before, the pool parked the
// queue, asking Delay again each second, and no call's admission opened
// the breaker: once the streak of failures grew old (half of
// breaker_dead_seconds after its last), Delay said the scope could go, and
// the queue's calls were sent to the dead scope at 2 s.
func TestADeadScopeWhoseBreakerWaitsSendsNothingBeforeTheCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fixed := false
		g := newGov(t, 1, resilience.Config{AWS: resilience.ProviderConfig{Adaptive: &fixed, BreakerWait: true}})
		s := scope("dead")
		defer foundDead(t, g, s)()
		cooldown, _ := g.Delay(s)
		p, ctx := New(context.Background(), WithGovernor(g))
		start := time.Now()
		var first atomic.Int64
		for range 3 {
			p.Go(ctx, s, func(ctx context.Context) error {
				return resilience.Do(ctx, s, func(context.Context) error {
					first.CompareAndSwap(0, int64(time.Since(start)))
					return nil
				}, resilience.WithGovernor(g))
			})
		}
		synctest.Wait()
		eta := p.Progress().ETA
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if sent := time.Duration(first.Load()); sent < cooldown {
			t.Fatalf("the dead scope's first call was sent at %v, want not before its breaker's cooldown (%v)", sent, cooldown)
		}
		if !etaFits(eta, took, time.Second) {
			t.Fatalf("ETA %v, the queue took %v", eta, took)
		}
	})
}

// A task whose turn comes at its deadline (the wait its scope gave, a
// pause here, ends then) is dropped, not run, whichever of the pool's
// wake-up and its context's timer runs first at that instant: its
// context is done then, as a call's wait that ends at its deadline is not
// made. Before, the order of the two decided: the task was dropped (most
// runs), or run and its call refused at its deadline, or run and its call
// sent with its deadline spent.
func TestATaskWhoseTurnComesAtItsDeadlineIsDropped(t *testing.T) {
	for i := range 50 {
		synctest.Test(t, func(t *testing.T) {
			g := newGov(t, 1, resilience.Config{})
			s := scope("paused")
			pause(t, g, s, 5*time.Second)
			turn, _ := g.Delay(s)
			ctx, ledger := resilience.WithLedger(context.Background(), "scan")
			p, pctx := New(ctx, WithGovernor(g))
			tctx, cancel := context.WithTimeout(pctx, turn)
			defer cancel()
			ran := false
			p.Go(tctx, s, func(ctx context.Context) error {
				ran = true
				return call(g, s, 0)(ctx)
			})
			err := p.Wait()
			if pr := p.Progress(); ran || pr.Dropped != 1 || !errors.Is(err, context.DeadlineExceeded) || ledger.Count(resilience.LossCancelled) != 1 {
				t.Fatalf("run %d: a task whose turn came at its deadline (%v): ran %v, %v, Wait: %v, ledger %q; want dropped unrun, recorded as cancelled",
					i, turn, ran, pr, err, ledger.Describe())
			}
		})
	}
}

// Wait's error holds every task's error, for errors.Is and errors.As and
// for a caller that lists them, but its message lists ten at most and
// then how many more: a scan whose dead scope failed thousands of tasks
// printed as many lines. With ten or fewer it is errors.Join's message.
func TestWaitsErrorListsTenAndCountsTheRest(t *testing.T) {
	errLast := errors.New("the last task's error")
	for _, n := range []int{3, 10, 11, 2500} {
		p, ctx := New(context.Background(), Workers(4))
		for i := range n {
			p.Go(ctx, resilience.Scope{}, func(context.Context) error {
				if i == n-1 {
					return errLast
				}
				return errors.New("task " + strconv.Itoa(i) + " failed")
			})
		}
		err := p.Wait()
		if !errors.Is(err, errLast) {
			t.Errorf("%d tasks failed: errors.Is does not find the last one's error in %q", n, err)
		}
		if u, ok := err.(interface{ Unwrap() []error }); !ok || len(u.Unwrap()) != n {
			t.Errorf("%d tasks failed: Wait's error %T does not unwrap to the %d errors", n, err, n)
		}
		lines := strings.Split(err.Error(), "\n")
		want := min(n, 10)
		if n > 10 {
			want++
			if last := lines[len(lines)-1]; last != "... and "+strconv.Itoa(n-10)+" more errors ("+strconv.Itoa(n)+" in all)" {
				t.Errorf("%d tasks failed: the message ends %q", n, last)
			}
		}
		if len(lines) != want {
			t.Errorf("%d tasks failed: Wait's error's message has %d lines, want %d", n, len(lines), want)
		}
	}
}

// A scope whose tasks work a while before their first call (within
// admitHold) takes its turn at a bucket it shares with scopes whose tasks
// call at once: here three operations of a service at 1 rps, 6 tasks
// each, C's working 5 ms first. The queue first in line is started, the
// next is asked while its task works, told the token is there, and its
// task takes it first. Before, C lost every turn so, keeping its place
// in line, until A and B had no tasks left ("ABABABBABABACCCCCC"); now a
// queue asked behind a task whose queue lost its last token so waits for
// that task's first call.
func TestAScopeWorkingBeforeItsCallTakesItsTurnAtASharedBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		order := sharedBucketTurns(t, 6, func(op string) {
			if op == "C" {
				time.Sleep(5 * time.Millisecond) // builds its request
			}
		})
		// While each scope has tasks left (until the first to end makes
		// its last call), none waits more than a round and a turn lost.
		end, calls := 0, map[string]int{}
		for end < len(order) && calls[order[end]] < 5 {
			calls[order[end]]++
			end++
		}
		takenInTurn(t, order, end+1)
	})
}
