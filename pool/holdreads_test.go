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

// heldBackReads runs 200 tasks spread over queues operations of an
// account with four slots, one held by a call outside the pool for the
// whole scan, on four workers, each task working 5 ms before its 10 ms
// call, so that the account's queues are held back for one another's
// first calls (holdBack) all along; it returns the reads of the
// account's bucket (with a fleet's store, a round trip each) per task,
// and the scan's makespan.
func heldBackReads(t *testing.T, queues int) (perTask float64, makespan time.Duration) {
	store := newReadStore()
	g := cappedGov(t, 4,
		resilience.WithStateStore(store))
	outside := takeSlot(t, g)
	defer outside.Release()
	defer outside.End(nil)
	store.counts()
	start := time.Now()
	p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
	const tasks = 200
	for i := range tasks {
		sc := scope(fmt.Sprint("op", i%queues))
		p.Go(ctx, sc, func(ctx context.Context) error {
			time.Sleep(5 * time.Millisecond) // its own work, before its first call
			return resilience.Do(ctx, sc, func(context.Context) error {
				time.Sleep(10 * time.Millisecond)
				return nil
			}, resilience.WithGovernor(g))
		})
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	makespan = time.Since(start)
	buckets, _ := store.counts()
	return float64(buckets["aws/123456789012"]) / tasks, makespan
}

// The queues of an account held back for one another's first calls
// (holdBack) are not each asked again for the slots free as a first call
// is decided, or a task ends: the first in line is asked, the others wait
// behind it (unholdBack), so that the account's bucket is read as often
// per task whether its tasks are spread over ten operations or over two
// hundred, and the scan takes as long. Here 200 tasks of an account with
// four slots (one held outside the pool) on four workers.
func TestHeldBackQueuesReadTheAccountOncePerDecision(t *testing.T) {
	queues := []int{10, 200}
	var reads [2]float64
	var spans [2]time.Duration
	for i, n := range queues {
		synctest.Test(t, func(t *testing.T) {
			reads[i], spans[i] = heldBackReads(t, n)
		})
	}
	if reads[1] > reads[0]+0.5 || spans[1] > spans[0]+spans[0]/10 {
		t.Fatalf("200 tasks of an account held back for its tasks' first calls read its bucket %.2f times a task over %d operations (in %v), %.2f over %d (in %v); want no more over %d, in about as long", reads[0], queues[0], spans[0], reads[1], queues[1], spans[1], queues[1])
	}
}

// takeSlot takes a slot of g's account of the pool tests' scopes with a
// call outside the pool (of the scope "outside"), entered and not ended:
// the test gives it back, or ends with it held.
func takeSlot(t *testing.T, g *resilience.Governor) *resilience.Guard {
	t.Helper()
	outside, err := g.Begin(context.Background(), scope("outside"))
	if err != nil {
		t.Fatal(err)
	}
	if err := outside.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	return outside
}
