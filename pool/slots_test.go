//go:build go1.25

package pool

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/internal/sleep"
	"github.com/cloudg/cloudg/resilience"
)

// countingClock is the time package, counting its readings: the
// governor reads it once for each question Governor.Delay is asked.
type countingClock struct{ reads atomic.Int64 }

func (c *countingClock) Now() time.Time { c.reads.Add(1); return time.Now() }
func (c *countingClock) Sleep(ctx context.Context, d time.Duration) error {
	return sleep.For(ctx, d)
}

// The queues waiting for a slot of a full account are not all asked
// again each time a task ends: one task's end frees one slot at most, and
// asking every one of a thousand scopes of the account whether it can go
// made a scan quadratic in its scopes (4000 scopes of one account at
// max_concurrency 1, 16 workers: 250 µs of CPU a task, against 3 µs with
// no cap). The work of the pool and the governor, counted in readings of
// the governor's clock, is about the same a task for 250 scopes and for
// 2000 in a scan of the same length, 1 s (the recheck asks every queue
// waiting for a slot once a second: a cost with the scopes and the time,
// not with the tasks ended).
func TestATasksEndDoesNotAskEverySlottedQueue(t *testing.T) {
	perTask := map[int]float64{}
	for _, n := range []int{250, 2000} {
		synctest.Test(t, func(t *testing.T) {
			clock := &countingClock{}
			perOp := true
			g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1, Services: map[string]resilience.ServiceConfig{
				"svc": {MaxRPS: 1e6, Burst: 1, PerOperation: &perOp},
			}}}, resilience.WithClock(clock), resilience.WithRandom(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			p, ctx := New(context.Background(), Workers(16), WithGovernor(g))
			for i := range n {
				sc := scope("op" + strconv.Itoa(i))
				p.Go(ctx, sc, call(g, sc, time.Second/time.Duration(n))) // one at a time, 1 s in all
			}
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			perTask[n] = float64(clock.reads.Load()) / float64(n)
		})
	}
	if perTask[2000] > 2*perTask[250] {
		t.Fatalf("clock readings a task: %.0f with 250 scopes of one account, %.0f with 2000: the work grows with the scopes queued for a slot",
			perTask[250], perTask[2000])
	}
}
