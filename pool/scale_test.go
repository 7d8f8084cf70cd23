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
// virtual time. It returns the wall-clock time the scan took a task: the
// pool's own work and the governor's, the calls taking none.
func fullAccountsScan(t *testing.T, queues, accounts int) time.Duration {
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
	})
	return time.Since(start) / time.Duration(queues)
}

// The pool's work a task grows little with the queues waiting for a
// slot: a task of a scan of 5000 queues over 50 accounts, their caps
// full, costs less than three times what one of 1000 costs, not five
// times as much or more (each slot freed putting every queue of its
// account back in turn, each then slotted again by a scan of the line).
// The fastest of three runs of each, on a machine that may be busy with
// other work. What is left grows with the queues (a pass over the line
// of queues waiting for a slot a slot freed; see Pool.unslot).
func TestDispatchCostDoesNotGrowWithTheQueuesWaitingForASlot(t *testing.T) {
	fastest := func(queues int) time.Duration {
		best := time.Duration(1<<63 - 1)
		for range 3 {
			best = min(best, fullAccountsScan(t, queues, 50))
		}
		return best
	}
	small, large := fastest(1000), fastest(5000)
	t.Logf("a task of a scan of 1000 queues over 50 accounts, their caps full: %v; of 5000: %v", small, large)
	if large > 3*small {
		t.Errorf("a task of a scan of 5000 queues over 50 accounts cost %v, of 1000 %v; want less than three times as much", large, small)
	}
}
