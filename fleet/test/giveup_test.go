package test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// giveUpLoad runs goroutines in every process of ps that call vpcs again
// and again, each call with the context ctx gives it, for run; it returns
// how many calls went and how many gave up.
func giveUpLoad(ps []*process, perProcess int, run time.Duration, call func(p *process) error) (went, gaveUp int64) {
	var wg sync.WaitGroup
	var w, g atomic.Int64
	stop := time.Now().Add(run)
	for _, p := range ps {
		for range perProcess {
			wg.Go(func() {
				for time.Now().Before(stop) {
					if call(p) != nil {
						g.Add(1)
					} else {
						w.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	return w.Load(), g.Load()
}

// Callers that give up their tokens (their contexts cancelled while they
// wait) in two processes sharing a scope do not push either process's
// queue later: once the load stops and the bucket has refilled, each
// process's next calls go at the fleet's rate, however many callers gave
// up before. Each process counted the times Redis gave from the last
// token it handed out (so that answers that come back late do not bunch
// against it), and moved that back a token for each of its own tokens
// given back, but not for the other process's: each token the other gave
// back, moving Redis's queue earlier, left this process's later by a
// token, without end (2 s of such load left both processes' next tokens
// 1.6 to 2.7 s ahead of a full bucket's).
func TestCallsGivingUpDoNotPushTheQueueLater(t *testing.T) {
	const (
		rps      = 50
		interval = time.Second / rps
		margin   = 60 * time.Millisecond // scheduling and a round trip on a loaded machine
	)
	forEachSingleNode(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: rps, Burst: 1}}}}
		ps := []*process{newProcess(t, be, prefix, cfg), newProcess(t, be, prefix, cfg)}
		went, gaveUp := giveUpLoad(ps, 4, 2*time.Second, func(p *process) error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tm := time.AfterFunc(5*time.Millisecond, cancel) // while it waits for its token
			defer tm.Stop()
			return resilience.Do(ctx, vpcs, ok, resilience.WithGovernor(p.gov))
		})
		if gaveUp < 10*went {
			t.Fatalf("setup: %d calls went, %d gave up", went, gaveUp)
		}
		time.Sleep(10 * interval) // the bucket refills its burst, the tokens given back have gone
		for i, p := range ps {
			for n := range 3 {
				start := time.Now()
				if err := p.do(t, vpcs, ok); err != nil {
					t.Fatal(err)
				}
				if w := time.Since(start); w > 2*interval+margin {
					t.Fatalf("after %d calls gave up (%d went), process %d's call %d once the load stopped waited %v; want at most two intervals (%v) and %v", gaveUp, went, i, n+1, w, 2*interval, margin)
				}
			}
		}
	})
}
