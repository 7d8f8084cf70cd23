//go:build go1.25

package pool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// A scope throttled for good whose first calls came before the rest of
// its tasks (a listing's fan-out) is found dead, with the defaults
// (breaker_threshold 5, breaker_dead_seconds 10), within
// breaker_dead_seconds and one of its floor's tokens (10 s + 5 s) of
// its first failed answer, whatever the governor's random source (its
// backoffs' jitter): seeds 1 to 12. The retries of the three calls in
// flight, each waiting for a fresh token at the scope's floor (0.2 rps),
// hold the scope's tokens, so that the pool, which starts a queued task
// only when a token is free now, sent the 4th call at 39.0 s and the 5th
// at 69.03 s (seed 1), and the breaker opened only then (139 s behind a
// moto server with the AWS SDK's 11 attempts). The pool lets tasks of a
// scope whose answers all failed, from fewer calls than
// breaker_threshold, wait for a token in line with those retries, so that
// the dead rule gets its evidence. Every task then fails with the open
// circuit's refusal, the queued ones skipped in the ledger (IAM GetRole,
// its defaults: 10 rps, burst 40, 8 workers, 3 tasks then 20 more 3 s
// later, each answer throttled after 20 ms).
func TestADeadScopeBehindItsOwnRetriesIsFoundWithinItsDeadSeconds(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { deadBehindRetries(t, seed) })
		})
	}
}

// deadBehindRetries runs the scene of
// TestADeadScopeBehindItsOwnRetriesIsFoundWithinItsDeadSeconds with the
// governor's random source seeded with seed, in a synctest bubble.
func deadBehindRetries(t *testing.T, seed uint64) {
	g := defaultGov(t, seed, 2)
	dead := getRole()
	ctx, ledger := resilience.WithLedger(context.Background(), "scan")
	p, pctx := New(ctx, Workers(8), WithGovernor(g))
	start := time.Now()
	var firstSent []time.Duration // each call's first attempt, in order
	var ends []time.Duration
	sent := 0
	seen := map[int]bool{}
	queueDeadScope(p, pctx, g, dead, func(i int) {
		sent++
		if !seen[i] {
			seen[i] = true
			firstSent = append(firstSent, time.Since(start))
		}
	}, func(i int, _ bool, err error) {
		ends = append(ends, time.Since(start))
		if !errors.Is(err, resilience.ErrCircuitOpen) {
			t.Errorf("task %d: %v; want the open circuit's refusal", i, err)
		}
	})
	p.Wait()
	const bound = 15*time.Second + 20*time.Millisecond // from the first answer
	opened := slices.Max(ends)
	if len(firstSent) < 5 || opened > bound {
		t.Fatalf("seed %d: the last task ended at %v, %d calls sent (first attempts at %v); want the breaker opened by %v, at the fifth call's answer or later",
			seed, opened, len(firstSent), firstSent, bound)
	}
	if gave, skipped := ledger.Count(resilience.LossGaveUp), ledger.Count(resilience.LossSkipped); gave != len(firstSent) || gave+skipped != 23 {
		t.Fatalf("seed %d: ledger %q; want the %d calls sent given up, the others skipped", seed, ledger.Describe(), len(firstSent))
	}
	t.Logf("seed %d: calls first sent at %v, last task ended at %v, %d attempts", seed, firstSent, opened, sent)
}

// queueDeadScope queues on p the tasks of the scene of
// TestADeadScopeBehindItsOwnRetriesIsFoundWithinItsDeadSeconds: 23 tasks
// of dead, 3 then, 3 s later, 20 more, each one call whose every attempt
// is answered throttled after 20 ms. sent runs as each attempt is sent,
// with its task's index; ended runs as each task ends, with its index,
// whether this run of it sent an attempt, and its error, but for a call
// refused before it sent anything (ErrNoToken), which the pool runs
// again. sent and ended run one at a time.
func queueDeadScope(p *Pool, ctx context.Context, g *resilience.Governor, dead resilience.Scope, sent func(task int), ended func(task int, sentAny bool, err error)) {
	var mu sync.Mutex
	for i := range 23 {
		if i == 3 {
			time.Sleep(3 * time.Second)
		}
		p.Go(ctx, dead, func(ctx context.Context) error {
			sentAny := false
			err := resilience.Do(ctx, dead, func(context.Context) error {
				mu.Lock()
				sentAny = true
				sent(i)
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
				return &apiErr{code: "Throttling", status: 400}
			}, resilience.WithGovernor(g))
			if errors.Is(err, resilience.ErrNoToken) {
				return err // refused before it sent anything: the pool runs it again
			}
			mu.Lock()
			defer mu.Unlock()
			ended(i, sentAny, err)
			return err
		})
	}
}

// A scope throttled but alive (its provider serves 2 calls a second and
// throttles the rest, a success between its throttles) makes no worker
// wait inside it: every task's first call is sent at once, or refused
// before anything is sent and the task run again later, while the
// streaks of failures its throttles begin end at its next success, long
// before a task is started to prove it dead (see Pool.proves). 60 tasks
// of it and 60 of a scope that always answers, on 4 workers.
func TestAThrottledButAliveScopeParksNoWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := defaultGov(t, 3, 4)
		alive := getRole()
		other := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
		p, pctx := New(context.Background(), Workers(4), WithGovernor(g))
		provider := rationed{every: 500 * time.Millisecond}
		var mu sync.Mutex
		waited := 0
		var longest time.Duration
		task := func(scope resilience.Scope) func(context.Context) error {
			return func(ctx context.Context) error {
				began, first := time.Now(), true
				return resilience.Do(ctx, scope, func(context.Context) error {
					mu.Lock()
					if first {
						first = false
						if w := time.Since(began); w > 0 {
							waited++
							longest = max(longest, w)
						}
					}
					mu.Unlock()
					if scope == alive {
						return provider.answer()
					}
					time.Sleep(20 * time.Millisecond)
					return nil
				}, resilience.WithGovernor(g))
			}
		}
		for range 60 {
			p.Go(pctx, alive, task(alive))
			p.Go(pctx, other, task(other))
		}
		if err := p.Wait(); err != nil {
			t.Fatalf("Wait: %v; want every task done", err)
		}
		throttled := provider.throttled
		if throttled == 0 {
			t.Fatal("no call was throttled: the test proves nothing")
		}
		if waited > 0 {
			t.Fatalf("%d tasks' first calls waited in a worker (the longest %v); want none: the scope answers between its throttles (%d throttled)", waited, longest, throttled)
		}
		t.Logf("%d answers throttled", throttled)
	})
}

// A task started to prove its scope dead (see Pool.proves), its first
// call waiting for a token in line with the retries of the calls in
// flight, ends when its context is done, with the context's error, and
// sends nothing: the pool stopped at 5 s (the scene of
// TestADeadScopeBehindItsOwnRetriesIsFoundWithinItsDeadSeconds, whose 5th
// call waits from 3.35 s to 8.9 s), every task ends at once, no call is
// sent after, Wait returns, and every task is in the ledger: the calls
// sent and the one waiting cancelled or given up, the queued ones
// cancelled unrun.
func TestATaskProvingAScopeEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := defaultGov(t, 1, 2)
		dead := getRole()
		base, stop := context.WithCancel(context.Background())
		ctx, ledger := resilience.WithLedger(base, "scan")
		p, pctx := New(ctx, Workers(8), WithGovernor(g))
		start := time.Now()
		const stopAt = 5 * time.Second
		var sentAfter []time.Duration
		var waiting []int // tasks whose first call was waiting when the pool stopped
		var ends []time.Duration
		queueDeadScope(p, pctx, g, dead, func(int) {
			if at := time.Since(start); at > stopAt {
				sentAfter = append(sentAfter, at)
			}
		}, func(i int, sent bool, err error) {
			ends = append(ends, time.Since(start))
			if !sent {
				waiting = append(waiting, i)
				if !errors.Is(err, context.Canceled) {
					t.Errorf("task %d, its first call waiting: %v; want the context's error", i, err)
				}
			}
		})
		time.Sleep(stopAt - time.Since(start))
		stop()
		p.Wait()
		if len(waiting) != 1 || len(sentAfter) > 0 {
			t.Fatalf("tasks %v were waiting for their first call when the pool stopped, calls were sent after it at %v; want one waiting, none sent", waiting, sentAfter)
		}
		for _, end := range ends {
			if end > stopAt+20*time.Millisecond {
				t.Fatalf("tasks ended at %v; want each by %v (an attempt out answers in 20 ms)", ends, stopAt+20*time.Millisecond)
			}
		}
		if n := ledger.Count(resilience.LossCancelled) + ledger.Count(resilience.LossGaveUp); n != 23 {
			t.Fatalf("ledger %q; want the 23 tasks in it", ledger.Describe())
		}
	})
}
