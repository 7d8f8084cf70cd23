package resilience

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// A call refused because its token would come past its limit (its
// deadline, its max wait, or at once for TryEnter) takes no token. Such
// refusals come in bursts, from goroutines that call again at once, and a
// token taken and given back while another caller queued behind it stays
// spent: before, four goroutines refused beside a queue pushed it on by
// thousands of tokens (minutes at the leaf's rate), so that every later
// call of the scope waited or was refused too. Real goroutines, not
// virtual time: the refusals must interleave.
func TestRefusedCallsTakeNoToken(t *testing.T) {
	const goroutines, calls = 4, 3000
	azure := Scope{Provider: "azure", Account: "sub-1", Service: "compute"}
	cases := []struct {
		name  string
		call  func(g *Governor) error
		scope Scope // ec2Vpcs when zero
	}{
		{"max wait 0", func(g *Governor) error {
			return Do(WithMaxWait(context.Background(), 0), ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g))
		}, Scope{}},
		{"a deadline 2 ms away", func(g *Governor) error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
			defer cancel()
			return Do(ctx, ec2Vpcs, func(context.Context) error { return nil }, WithGovernor(g))
		}, Scope{}},
		{"max wait 0, the account's bucket binding", func(g *Governor) error {
			return Do(WithMaxWait(context.Background(), 0), azure, func(context.Context) error { return nil }, WithGovernor(g))
		}, azure},
		{"a deadline 2 ms away, the account's bucket binding", func(g *Governor) error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
			defer cancel()
			return Do(ctx, azure, func(context.Context) error { return nil }, WithGovernor(g))
		}, azure},
		{"TryEnter", func(g *Governor) error {
			gd, err := g.Begin(context.Background(), ec2Vpcs)
			if err != nil {
				return err
			}
			if err := gd.TryEnter(); err != nil {
				gd.End(nil)
				return err
			}
			gd.After(nil)
			gd.End(nil)
			return nil
		}, Scope{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// 50 rps, burst 1: a token every 20 ms, so that nearly every
			// call is refused; for Azure, the subscription's bucket, its
			// scopes' leaves far above it.
			fifty := 50.0
			g := newGov(t, Config{
				AWS:   ProviderConfig{Services: map[string]ServiceConfig{"ec2": {MaxRPS: 50, Burst: 1}}},
				Azure: ProviderConfig{MaxRPS: 10000, Burst: 10000, AccountMaxRPS: &fifty, AccountBurst: 1},
			})
			scope := c.scope
			if scope == (Scope{}) {
				scope = ec2Vpcs
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			refused := 0
			for range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := 0
					for range calls {
						if err := c.call(g); err != nil {
							var ww *WouldWaitError
							var de *DeadlineExceededError
							if !errors.As(err, &ww) && !errors.As(err, &de) {
								t.Errorf("a call failed with %v, want a refusal", err)
								return
							}
							n++
						}
					}
					mu.Lock()
					refused += n
					mu.Unlock()
				}()
			}
			wg.Wait()
			if refused < goroutines*calls/2 {
				t.Fatalf("setup: %d of %d calls refused", refused, goroutines*calls)
			}
			// No call waits longer than 2 ms for its token, so the
			// next call waits at most that and one interval.
			if d, _ := g.Delay(scope); d > 22*time.Millisecond {
				t.Errorf("after %d refused calls, the next call would wait %v (%d tokens queued); want at most 22ms (one token's 20ms, and the 2 ms a call may wait)", refused, d, g.Inspect(scope).Queued)
			}
		})
	}
}
