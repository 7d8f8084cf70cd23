//go:build go1.25

package pool

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// A scope throttled for good whose first calls came before the rest of
// its tasks (a listing's fan-out) is found dead, with the defaults
// (breaker_threshold 5, breaker_dead_seconds 10), at the answer of its
// fifth distinct call: the retries of the three calls in flight, each
// waiting for a fresh token at the scope's floor (0.2 rps), hold the
// scope's tokens, and the pool starts a queued task only when a token is
// free while all three back off. Every queued task then fails at that
// instant, recorded as skipped in its ledger, and the calls in flight stop
// at their next retry. Measured here (IAM GetRole, its defaults: 10 rps,
// burst 40, 8 workers, 3 tasks then 20 more 3 s later, each answer
// throttled after 20 ms): the 4th call was sent at 39.0 s, the 5th at
// 69.03 s, and the breaker opened at 69.05 s, 23 attempts sent in all, as
// the README's scan section says (139 s with the AWS SDK's 11 attempts
// behind a moto server).
func TestADeadScopeBehindItsOwnRetriesIsFoundAtItsFifthCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithRandom(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		dead := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "iam", Operation: "GetRole"}
		ctx, ledger := resilience.WithLedger(context.Background(), "scan")
		p, pctx := New(ctx, Workers(8), WithGovernor(g))
		start := time.Now()
		var mu sync.Mutex
		var firstSent []time.Duration // each call's first attempt, in order
		var ends []time.Duration
		sent := 0
		seen := map[int]bool{}
		for i := range 23 {
			if i == 3 {
				time.Sleep(3 * time.Second)
			}
			p.Go(pctx, dead, func(ctx context.Context) error {
				err := resilience.Do(ctx, dead, func(context.Context) error {
					mu.Lock()
					sent++
					if !seen[i] {
						seen[i] = true
						firstSent = append(firstSent, time.Since(start))
					}
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					return &apiErr{code: "Throttling", status: 400}
				}, resilience.WithGovernor(g))
				mu.Lock()
				defer mu.Unlock()
				ends = append(ends, time.Since(start))
				if !errors.Is(err, resilience.ErrCircuitOpen) {
					t.Errorf("task %d: %v; want the open circuit's refusal", i, err)
				}
				return err
			})
		}
		p.Wait()
		if len(firstSent) != 5 {
			t.Fatalf("%d calls were sent (first attempts at %v); want the breaker opened at the fifth", len(firstSent), firstSent)
		}
		opened := firstSent[4] + 20*time.Millisecond // its answer
		for _, end := range ends {
			if end != opened {
				t.Fatalf("tasks ended at %v; want every one at %v, the fifth call's answer", ends, opened)
			}
		}
		if gave, skipped := ledger.Count(resilience.LossGaveUp), ledger.Count(resilience.LossSkipped); gave != 5 || skipped != 18 {
			t.Fatalf("ledger %q; want the 5 calls sent given up, the 18 others skipped", ledger.Describe())
		}
		t.Logf("calls first sent at %v, breaker opened at %v, %d attempts", firstSent, opened, sent)
	})
}
