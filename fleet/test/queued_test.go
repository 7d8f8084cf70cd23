package test

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// TestQueuedCountsCallersNotLeasedTokens: Inspect's Queued is the callers
// waiting for a token, as in one process; the tokens the process's lease
// borrowed from Redis and no caller took yet are not callers, though the
// bucket's balance in Redis went below zero for them. Callers that do
// wait for their tokens are counted.
func TestQueuedCountsCallersNotLeasedTokens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// 1,000 rps with a burst of 10: a lease of 64 tokens, 54 of them
		// after the burst.
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1000, Burst: 10}}}}
		p := newProcess(t, be, prefix, cfg)
		if err := p.do(t, vpcs, ok); err != nil { // borrows a lease
			t.Fatal(err)
		}
		if s := p.gov.Inspect(vpcs); s.Queued != 0 || s.Leaf.Queued() != 0 {
			t.Fatalf("one call done, none waiting: Queued %d, the leaf's %d (tokens %.1f); want 0", s.Queued, s.Leaf.Queued(), s.Leaf.Tokens)
		}

		// 1 rps with a burst of 1: a lease of one token; of 4 callers at
		// once, 3 wait for their tokens (1, 2 and 3 s after the first).
		slow := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1, Burst: 1}}}}
		q := newProcess(t, be, uniquePrefix(t), slow)
		done := make(chan struct{}, 4)
		for range 4 {
			go func() {
				q.do(t, vpcs, ok)
				done <- struct{}{}
			}()
		}
		<-done // the one at once
		first := time.Now()
		time.Sleep(100 * time.Millisecond)
		s := q.gov.Inspect(vpcs)
		// Within a second of the first token, the 3 wait; a loaded machine
		// may read later, when the next has gone.
		if took := time.Since(first); s.Queued != 3 && (took < 900*time.Millisecond || s.Queued != 2) {
			t.Fatalf("3 callers waiting for their tokens: Queued %d (tokens %.2f) %v after the first token; want 3", s.Queued, s.Leaf.Tokens, took)
		}
		for range 3 {
			<-done
		}
	})
}
