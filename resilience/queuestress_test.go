package resilience

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// Callers whose contexts are cancelled while they wait for a token leave
// no queue behind them, at any level: the provider's bucket
// (global_max_rps), an account's, a leaf's. Eight goroutines call three
// scopes for 400 ms at 50 rps, burst 1, each call cancelled after up to
// 30 ms, so that most give their places up; once they stop, the next call
// waits at most one interval and what the last calls left of the queue,
// not seconds. Before, a call cancelled in the provider's queue left its
// token spent, and 400 ms of such calls left a queue of about 4.5 s.
// Real goroutines, not virtual time: the cancellations must interleave.
func TestCallersCancelledWhileQueuedLeaveNoQueue(t *testing.T) {
	fifty := 50.0
	azure := Scope{Provider: "azure", Account: "sub-1", Service: "compute"}
	cases := []struct {
		name   string
		cfg    Config
		scopes []Scope
	}{
		{"the provider's bucket", Config{AWS: ProviderConfig{MaxRPS: 10000, Burst: 10000, GlobalMaxRPS: &fifty, GlobalBurst: 1}},
			[]Scope{ec2Vpcs, ec2Subnets, iamUsers}},
		{"an account's bucket", Config{Azure: ProviderConfig{MaxRPS: 10000, Burst: 10000, AccountMaxRPS: &fifty, AccountBurst: 1}},
			[]Scope{azure, {Provider: "azure", Account: "sub-1", Service: "network"}}},
		{"a leaf", Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"ec2": {MaxRPS: 50, MinRPS: 50, Burst: 1}}}},
			[]Scope{ec2Vpcs}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newGov(t, c.cfg)
			var wg sync.WaitGroup
			var mu sync.Mutex
			cancelled := 0
			stop := time.Now().Add(400 * time.Millisecond)
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(i), 1))
					n := 0
					for time.Now().Before(stop) {
						ctx, cancel := context.WithCancel(context.Background())
						tm := time.AfterFunc(time.Duration(r.IntN(30))*time.Millisecond, cancel)
						if Do(ctx, c.scopes[r.IntN(len(c.scopes))], func(context.Context) error { return nil }, WithGovernor(g)) != nil {
							n++
						}
						tm.Stop()
						cancel()
					}
					mu.Lock()
					cancelled += n
					mu.Unlock()
				}()
			}
			wg.Wait()
			if cancelled < 20 {
				t.Fatalf("setup: %d calls cancelled", cancelled)
			}
			// The last calls were cancelled within 30 ms of their start,
			// so no one queued past about 30 ms from now.
			if d, _ := g.Delay(c.scopes[0]); d > 60*time.Millisecond {
				t.Errorf("after %d calls were cancelled while queued, the next call would wait %v; want at most 60ms (one token's 20 ms, and what the last calls left)", cancelled, d)
			}
		})
	}
}
