//go:build go1.25

package pool

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// A slot of a full account that the pool does not see freed, a call
// ending inside a task that goes on (a page's call, the task then working
// on the page) or a Configure raising the account's concurrency cap, is
// taken by the next queue in line at the recheck of the queues waiting
// for a slot, within slotRecheck of its freeing: the governor tells the
// pool of neither (a task's end, which the pool sees, frees its slots at
// once). Here an account with one slot; op0's task holds it with its
// call, op1's waits for it.
func TestASlotFreedUnseenIsTakenWithinTheSlotRecheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		// free frees the slot, or another, at the instant it returns: g
		// is the governor, cfg its configuration, done ends op0's call.
		free func(g *resilience.Governor, cfg resilience.Config, done chan<- struct{})
	}{
		{"a call ending inside a task that goes on", func(g *resilience.Governor, cfg resilience.Config, done chan<- struct{}) {
			close(done)
		}},
		{"a Configure raising the cap", func(g *resilience.Governor, cfg resilience.Config, done chan<- struct{}) {
			cfg.AWS.MaxConcurrency = 2
			if err := g.Configure(cfg); err != nil {
				panic(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				acctRPS := 1000.0
				cfg := resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1, AccountMaxRPS: &acctRPS, AccountBurst: 1000}}
				g := newGov(t, 1000, cfg)
				cfg = g.Config()
				p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
				callDone, taskDone := make(chan struct{}), make(chan struct{})
				var mu sync.Mutex
				var op1At time.Time
				p.Go(ctx, scope("op0"), func(ctx context.Context) error {
					err := resilience.Do(ctx, scope("op0"), func(context.Context) error {
						<-callDone
						return nil
					}, resilience.WithGovernor(g))
					<-taskDone // the task goes on, working on what the call returned
					return err
				})
				synctest.Wait() // op0's call holds the slot
				p.Go(ctx, scope("op1"), func(ctx context.Context) error {
					return resilience.Do(ctx, scope("op1"), func(context.Context) error {
						mu.Lock()
						op1At = time.Now()
						mu.Unlock()
						return nil
					}, resilience.WithGovernor(g))
				})
				time.Sleep(7 * time.Millisecond) // op1's queue waits for the slot
				synctest.Wait()
				freedAt := time.Now()
				tc.free(g, cfg, callDone)
				time.Sleep(time.Second)
				mu.Lock()
				at := op1At
				mu.Unlock()
				select {
				case <-callDone:
				default:
					close(callDone)
				}
				close(taskDone)
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				if at.IsZero() {
					t.Fatalf("op1's call did not begin within a second of the slot's freeing; want within %v", slotRecheck)
				}
				if at.Sub(freedAt) > slotRecheck {
					t.Fatalf("op1's call began %v after the slot was freed; want within %v", at.Sub(freedAt), slotRecheck)
				}
				t.Logf("op1's call began %v after the slot was freed", at.Sub(freedAt))
			})
		})
	}
}
