//go:build go1.25

package pool

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// fullAccountsScan runs a scan of queues queues, one task each, spread
// over accounts accounts of one slot each (max_concurrency 1), with four
// workers a slot, so that the accounts' caps are full and most queues
// wait for a slot; each task's call lasts a millisecond of the bubble's
// virtual time. It returns the pool's work on its line of queues waiting
// for a slot a task: the queues of the line it looked at or moved
// (Pool.slotSteps), a count that does not depend on the machine, and the
// wall-clock time the scan took a task, for the log: the pool's own work
// and the governor's, the calls taking none.
func fullAccountsScan(t *testing.T, queues, accounts int) (steps float64, wall time.Duration) {
	start := time.Now() // outside the bubble: the wall clock
	synctest.Test(t, func(t *testing.T) {
		acctRPS := 1e6
		perOp := true
		g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1, AccountMaxRPS: &acctRPS, AccountBurst: 1e6,
			Services: map[string]resilience.ServiceConfig{"svc": {MaxRPS: 1e6, Burst: 1e6, PerOperation: &perOp}}}})
		if err != nil {
			t.Fatal(err)
		}
		p, ctx := New(context.Background(), Workers(4*accounts), WithGovernor(g))
		begin := time.Now()
		for i := range queues {
			sc := resilience.Scope{Provider: "aws", Account: fmt.Sprintf("%012d", i%accounts), Region: "eu-west-1", Service: "svc", Operation: fmt.Sprint("op", i)}
			p.Go(ctx, sc, func(ctx context.Context) error {
				return resilience.Do(ctx, sc, func(context.Context) error {
					time.Sleep(time.Millisecond)
					return nil
				}, resilience.WithGovernor(g))
			})
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if d, want := time.Since(begin), time.Duration(queues/accounts)*time.Millisecond; d > want+want/2 {
			t.Errorf("the scan took %v of virtual time; want about %v (each account's calls one after the other)", d, want)
		}
		p.mu.Lock()
		steps = float64(p.slotSteps) / float64(queues)
		p.mu.Unlock()
	})
	return steps, time.Since(start) / time.Duration(queues)
}

// The pool's work a task on its line of queues waiting for a slot does
// not grow with the line: a task of a scan of 1000 or 5000 queues over 50
// accounts, their caps full, looks at or moves fewer than maxSteps queues
// of the line, not hundreds or thousands (each slot freed looking for the
// first queue of its account by a pass over every account's queues, or
// putting every queue of its account back in turn, each then slotted
// again by a scan of the line). What is left grows with the time the
// scan takes, not with the slots freed: the recheck's pass over the line
// every 50 ms (slotRecheck). The work is counted (the queues of the line
// looked at or moved), not timed: the same on any machine; it varies a
// little with the order the bubble's goroutines run in (2 to 10 a task).
func TestDispatchCostDoesNotGrowWithTheQueuesWaitingForASlot(t *testing.T) {
	const maxSteps = 30
	for _, queues := range []int{1000, 5000} {
		steps, wall := fullAccountsScan(t, queues, 50)
		t.Logf("a task of a scan of %d queues over 50 accounts, their caps full: %.1f queues of the line looked at or moved, %v of wall-clock time", queues, steps, wall)
		if steps >= maxSteps {
			t.Errorf("a task of a scan of %d queues over 50 accounts looked at or moved %.1f queues of the line; want fewer than %d", queues, steps, maxSteps)
		}
	}
}
