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

// A slot of a full account freed by anything other than the end of a
// task of the pool, a call ending inside a task that goes on (a page's
// call, the task then working on the page), a call outside the pool
// ending, or a Configure raising the account's concurrency cap, is taken
// by the next queue in line at the instant it is freed: the governor
// tells the pool of it (Governor.WatchSlots), as the pool sees a task's
// end, not at the recheck of the queues waiting for a slot, slotRecheck
// later. Here an account with one slot; op0's task holds it with its
// call (or a call outside the pool does), op1's waits for it.
func TestASlotFreedOutsideATasksEndIsTakenAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		// free frees the slot, or another, at the instant it returns: g
		// is the governor, cfg its configuration, done ends op0's call.
		free func(g *resilience.Governor, cfg resilience.Config, done chan<- struct{})
		// outside: a call outside the pool holds the slot, not op0's.
		outside bool
	}{
		{"a call ending inside a task that goes on", func(g *resilience.Governor, cfg resilience.Config, done chan<- struct{}) {
			close(done)
		}, false},
		{"a call outside the pool ending", func(g *resilience.Governor, cfg resilience.Config, done chan<- struct{}) {
			close(done)
		}, true},
		{"a Configure raising the cap", func(g *resilience.Governor, cfg resilience.Config, done chan<- struct{}) {
			cfg.AWS.MaxConcurrency = 2
			if err := g.Configure(cfg); err != nil {
				panic(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := cappedGov(t, 1)
				cfg := g.Config()
				p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
				callDone, taskDone := make(chan struct{}), make(chan struct{})
				var mu sync.Mutex
				var op1At time.Time
				if tc.outside {
					gd := takeSlot(t, g)
					go func() {
						<-callDone
						gd.End(nil)
					}()
					close(taskDone)
				} else {
					p.Go(ctx, scope("op0"), func(ctx context.Context) error {
						err := resilience.Do(ctx, scope("op0"), func(context.Context) error {
							<-callDone
							return nil
						}, resilience.WithGovernor(g))
						<-taskDone // the task goes on, working on what the call returned
						return err
					})
				}
				synctest.Wait() // the call holds the slot
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
				if !tc.outside {
					close(taskDone)
				}
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				if at.IsZero() {
					t.Fatal("op1's call did not begin within a second of the slot's freeing; want at once")
				}
				if d := at.Sub(freedAt); d != 0 {
					t.Fatalf("op1's call began %v after the slot was freed; want at once", d)
				}
			})
		})
	}
}

// A task started for a slot that was freed, which ends without a governed
// call (a fan-out, a task that found nothing to do), took no slot: the
// slot goes to the next queue in line as it ends, not at the next recheck
// of the queues waiting for a slot, slotRecheck later. Here an account
// with one slot; op0's task holds it with its call, op1's task makes no
// call and works 5 ms, op2's waits.
func TestASlotGivenATaskThatMakesNoCallGoesOnAtItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		release := make(chan struct{})
		var mu sync.Mutex
		var op1End time.Time
		var sent sendLog
		p.Go(ctx, scope("op0"), holdCall(g, scope("op0"), release))
		synctest.Wait()
		p.Go(ctx, scope("op1"), func(ctx context.Context) error {
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			op1End = time.Now()
			mu.Unlock()
			return nil
		})
		synctest.Wait()
		p.Go(ctx, scope("op2"), sent.call(g, scope("op2")))
		synctest.Wait() // op1 and op2 wait for the slot, op1 first
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if op2At := sent.last("op2"); op1End.IsZero() || op2At.IsZero() || op2At.Sub(op1End) != 0 {
			t.Fatalf("op1's task, given the slot op0's call freed, ended at %v without a call; op2's call began %v after; want at once", op1End, op2At.Sub(op1End))
		}
	})
}
