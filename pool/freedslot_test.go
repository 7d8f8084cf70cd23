//go:build go1.25

package pool

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// gateStore is a state store, shared as a fleet's is, whose next read of
// the bucket of key by a worker asking the governor about a queue (once
// armed) waits until the test opens the gate: a round trip that takes a
// while, during which the pool's other workers look for work.
type gateStore struct {
	state.Store
	key string

	mu      sync.Mutex
	armed   bool
	entered chan struct{} // closed as the gated read begins
	open    chan struct{} // closed by the test: the read goes on
}

func (s *gateStore) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed, s.entered, s.open = true, make(chan struct{}), make(chan struct{})
}

func (s *gateStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	b := s.Store.Bucket(key, spec, now)
	if key != s.key {
		return b
	}
	return gateBucket{b, s}
}

type gateBucket struct {
	state.Bucket
	s *gateStore
}

func (b gateBucket) Snapshot(now time.Duration) state.BucketSnapshot {
	s := b.s
	s.mu.Lock()
	gated := s.armed && askedByThePool()
	var entered, open chan struct{}
	if gated {
		s.armed, entered, open = false, s.entered, s.open
	}
	s.mu.Unlock()
	if gated {
		close(entered)
		<-open
	}
	return b.Bucket.Snapshot(now)
}

// A slot a task's end freed, promised to the queue first in line while
// the governor is asked about it, goes to the next queue in line at once
// when the first does not take it (its task dropped, its scope waiting
// for a token, its breaker open): not at the next recheck of the queues
// waiting for a slot, slotRecheck later. Here an account with one slot,
// held by a task's call; operations x and y wait for it, x first in
// line; as the call ends, x's queue is asked about (a fleet's store,
// read across the network), and meanwhile x's task's context is
// cancelled and a task of the zero scope is submitted (a fan-out, still
// running), whose worker finds y in turn, the account's slot promised to
// x. y's call should begin as
// x's queue is found empty.
func TestAFreedSlotNotTakenGoesToTheNextInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &gateStore{Store: resilience.MemoryStore(), key: "aws/123456789012"}
		g := cappedGov(t, 1,
			resilience.WithStateStore(store))
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		var mu sync.Mutex
		began := map[string]time.Time{}
		release := make(chan struct{})
		submit := func(ctx context.Context, op string, hold bool) {
			sc := scope(op)
			p.Go(ctx, sc, func(ctx context.Context) error {
				return resilience.Do(ctx, sc, func(context.Context) error {
					mu.Lock()
					began[op] = time.Now()
					mu.Unlock()
					if hold {
						<-release
					}
					return nil
				}, resilience.WithGovernor(g))
			})
		}
		submit(ctx, "a", true)
		synctest.Wait()
		xctx, cancelX := context.WithCancel(ctx)
		defer cancelX()
		submit(xctx, "x", false)
		synctest.Wait()
		submit(ctx, "y", false)
		synctest.Wait() // x and y wait for the slot, x first
		store.arm()
		start := time.Now()
		close(release)
		<-store.entered // x's queue is asked about
		cancelX()
		fanout := make(chan struct{})
		p.Go(ctx, resilience.Scope{}, func(context.Context) error { <-fanout; return nil })
		synctest.Wait()
		close(store.open)
		synctest.Wait()
		mu.Lock()
		_, xBegan := began["x"]
		yAt, yBegan := began["y"]
		mu.Unlock()
		if !yBegan {
			time.Sleep(time.Second)
			mu.Lock()
			yAt, yBegan = began["y"]
			mu.Unlock()
		}
		if xBegan || !yBegan || yAt.Sub(start) != 0 {
			t.Errorf("the slot freed as a's call ended: x's call began: %v; y's began: %v, %v later; want x's not, y's at once", xBegan, yBegan, yAt.Sub(start))
		}
		close(fanout)
		if err := p.Wait(); err == nil {
			t.Error("Wait returned nil; want x's cancellation")
		}
	})
}

// A slot a task's end freed, given a task whose first call is refused (it
// went to another account's scope, whose token was not there), is still
// free: the next queue in line is asked about at once and takes it, not
// at the next recheck of the queues waiting for a slot, slotRecheck
// later. Here an account with one slot, held by a task's call; x and y
// wait for it, x first in line; x's task calls first a scope of another
// account whose token the test took.
func TestAFreedSlotWhoseTaskIsRefusedGoesToTheNextInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		acctRPS := 1000.0
		g := newGov(t, 1000, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1, AccountMaxRPS: &acctRPS, AccountBurst: 1000,
			Services: map[string]resilience.ServiceConfig{"slow": {MaxRPS: 1, Burst: 1}}}})
		other := resilience.Scope{Provider: "aws", Account: "210987654321", Region: "eu-west-1", Service: "slow", Operation: "z"}
		if err := resilience.Do(context.Background(), other, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err) // the other account's token taken: its next call waits a second
		}
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		var mu sync.Mutex
		began := map[string]time.Duration{}
		var start time.Time
		release := make(chan struct{})
		call := func(ctx context.Context, sc resilience.Scope, hold bool) error {
			return resilience.Do(ctx, sc, func(context.Context) error {
				mu.Lock()
				if _, ok := began[sc.Operation]; !ok {
					began[sc.Operation] = time.Since(start)
				}
				mu.Unlock()
				if hold {
					<-release
				}
				return nil
			}, resilience.WithGovernor(g))
		}
		p.Go(ctx, scope("a"), func(ctx context.Context) error { return call(ctx, scope("a"), true) })
		synctest.Wait()
		p.Go(ctx, scope("x"), func(ctx context.Context) error {
			if err := call(ctx, other, false); err != nil {
				return err
			}
			return call(ctx, scope("x"), false)
		})
		synctest.Wait()
		p.Go(ctx, scope("y"), func(ctx context.Context) error { return call(ctx, scope("y"), false) })
		synctest.Wait() // x and y wait for the slot, x first
		start = time.Now()
		close(release)
		time.Sleep(2 * time.Second)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if y, ok := began["y"]; !ok || y != 0 || p.Progress().Deferred != 1 {
			t.Errorf("the slot freed as a's call ended, x's first call refused (deferred %d): y's call began: %v, %v later; want at once", p.Progress().Deferred, ok, y)
		}
	})
}

// A slot a task's end freed, given a task whose first call goes through
// to another account's scope (a task that reads another account first),
// is still free: that call took none of the account's slots, and the next
// queue in line takes it at once, not at the next recheck of the queues
// waiting for a slot, slotRecheck later. Here an account with one slot,
// held by a task's call; x and y wait for it, x first in line; x's task
// calls a scope of another account, whose call lasts until the test ends
// it.
func TestAFreedSlotWhoseTaskCallsAnotherAccountGoesToTheNextInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		other := resilience.Scope{Provider: "aws", Account: "210987654321", Region: "eu-west-1", Service: "svc", Operation: "z"}
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		var mu sync.Mutex
		began := map[string]time.Duration{}
		var start time.Time
		release := make(chan struct{})
		call := func(ctx context.Context, sc resilience.Scope) error {
			return resilience.Do(ctx, sc, func(context.Context) error {
				mu.Lock()
				if _, ok := began[sc.Operation]; !ok {
					began[sc.Operation] = time.Since(start)
				}
				mu.Unlock()
				<-release
				return nil
			}, resilience.WithGovernor(g))
		}
		hold := make(chan struct{})
		p.Go(ctx, scope("a"), func(ctx context.Context) error {
			return resilience.Do(ctx, scope("a"), func(context.Context) error { <-hold; return nil }, resilience.WithGovernor(g))
		})
		synctest.Wait()
		p.Go(ctx, scope("x"), func(ctx context.Context) error { return call(ctx, other) })
		synctest.Wait()
		p.Go(ctx, scope("y"), func(ctx context.Context) error { return call(ctx, scope("y")) })
		synctest.Wait() // x and y wait for the slot, x first
		start = time.Now()
		close(hold)
		time.Sleep(time.Second)
		mu.Lock()
		z, zok := began["z"]
		y, yok := began["y"]
		mu.Unlock()
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if !zok || z != 0 || !yok || y != 0 {
			t.Errorf("the slot freed as a's call ended, x's first call sent to another account (began %v, %v later): y's call began: %v, %v later; want both at once", zok, z, yok, y)
		}
	})
}

// A slot a call's end freed, which puts back in turn the first queue in
// line alone, goes to the next queue in line at once when that first
// queue is found empty before it is asked about (its tasks' deadlines
// came while it waited in line): not at the next recheck of the queues
// waiting for a slot, slotRecheck later. Here an account with one slot,
// held by a's call; x and y wait for it, x first in line, x's task's
// deadline coming 15 ms before a's call ends, between two rechecks.
func TestAFreedSlotWhoseQueueExpiredInLineGoesToTheNextInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		release := make(chan struct{})
		var sent sendLog
		p.Go(ctx, scope("a"), holdCall(g, scope("a"), release))
		synctest.Wait()
		start := time.Now()
		xctx, cancelX := context.WithDeadline(ctx, start.Add(time.Second+slotRecheck/5))
		defer cancelX()
		p.Go(xctx, scope("x"), sent.call(g, scope("x")))
		synctest.Wait()
		p.Go(ctx, scope("y"), sent.call(g, scope("y")))
		time.Sleep(time.Second + slotRecheck/2) // between two rechecks, x's deadline past
		synctest.Wait()                         // x and y wait for the slot, x first
		freed := time.Now()
		close(release)
		if err := p.Wait(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v; want x's deadline", err)
		}
		if x := sent.times("x"); len(x) != 0 {
			t.Fatalf("x's call was sent %v after the slot was freed; want never", since(freed, x))
		}
		if yAt := sent.last("y"); yAt.IsZero() || yAt.Sub(freed) != 0 {
			t.Fatalf("y's call began %v after the slot was freed, x's task dropped at its turn; want at once", yAt.Sub(freed))
		}
	})
}

// A slot a call's end freed, which puts back in turn the first queue in
// line alone, goes to the next queue in line at once when that first
// queue runs nothing before a wait a refusal gave it (a task of it
// refused a token after its hold ended, while the queue waited in line):
// not at the next recheck of the queues waiting for a slot, slotRecheck
// later. Here an account with two slots: a's call holds one, x's first
// task works 20 ms before its first call (to another account's scope,
// whose token the test took), and a call outside the pool takes the
// other at 5 ms; x's second task and y wait for a slot, x first in line,
// and x's first task is refused a token at 20 ms, back in its queue for
// a second. The call outside the pool ends at 30 ms, before the next
// recheck: y's call should begin then.
func TestAFreedSlotWhoseQueueWaitsForATokenGoesToTheNextInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		acctRPS := 1000.0
		g := newGov(t, 1000, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 2, AccountMaxRPS: &acctRPS, AccountBurst: 1000,
			Services: map[string]resilience.ServiceConfig{"slow": {MaxRPS: 1, Burst: 1}}}})
		other := resilience.Scope{Provider: "aws", Account: "210987654321", Region: "eu-west-1", Service: "slow", Operation: "z"}
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		release := make(chan struct{})
		var sent sendLog
		p.Go(ctx, scope("a"), holdCall(g, scope("a"), release))
		synctest.Wait()
		start := time.Now()
		p.Go(ctx, scope("x"), func(ctx context.Context) error {
			time.Sleep(20 * time.Millisecond) // its own work, past its hold
			if err := sent.call(g, other)(ctx); err != nil {
				return err
			}
			return sent.call(g, scope("x"))(ctx)
		})
		p.Go(ctx, scope("x"), sent.call(g, scope("x")))
		if err := resilience.Do(context.Background(), other, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err) // the other account's token taken: its next call waits a second
		}
		time.Sleep(5 * time.Millisecond)
		outside := takeSlot(t, g)
		time.Sleep(10 * time.Millisecond) // x's hold ended: its second task waits for a slot
		p.Go(ctx, scope("y"), sent.call(g, scope("y")))
		time.Sleep(15 * time.Millisecond) // x's first task refused at 20 ms
		synctest.Wait()
		if d := p.Progress().Deferred; d != 1 {
			t.Fatalf("%d tasks deferred at %v; want x's first", d, time.Since(start))
		}
		freed := time.Now()
		outside.End(nil)
		outside.Release()
		time.Sleep(time.Second)
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if yAt := sent.last("y"); yAt.IsZero() || yAt.Sub(freed) != 0 {
			t.Fatalf("y's call began %v after the slot was freed, x's queue waiting for a token; want at once", yAt.Sub(freed))
		}
	})
}

// A slot a call's end freed goes to the next queue in line at once when
// the task started for it makes its first call to a scope of the account
// whose breaker is open: the call is refused before it is sent, holding
// no slot, and the slot goes on (gaveBack), not at the next recheck of
// the queues waiting for a slot, slotRecheck later. Here an account with
// one slot, held by a's call; x's task (its scope x) calls dead, whose
// breaker is open, and y waits behind x.
func TestAFreedSlotWhoseTasksCallAnOpenBreakerRefusesGoesToTheNextInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := cappedGov(t, 1)
		dead := scope("dead")
		openBreaker(t, g, dead)
		p, ctx := New(context.Background(), Workers(4), WithGovernor(g))
		release := make(chan struct{})
		var sent sendLog
		p.Go(ctx, scope("a"), holdCall(g, scope("a"), release))
		synctest.Wait()
		p.Go(ctx, scope("x"), sent.call(g, dead))
		synctest.Wait()
		p.Go(ctx, scope("y"), sent.call(g, scope("y")))
		time.Sleep(time.Second + slotRecheck/2) // between two rechecks
		synctest.Wait()                         // x and y wait for the slot, x first
		freed := time.Now()
		close(release)
		var coe *resilience.CircuitOpenError
		if err := p.Wait(); !errors.As(err, &coe) {
			t.Fatalf("Wait = %v; want x's call refused by dead's open breaker", err)
		}
		if yAt := sent.last("y"); yAt.IsZero() || yAt.Sub(freed) != 0 {
			t.Fatalf("y's call began %v after the slot was freed, x's first call refused by an open breaker; want at once", yAt.Sub(freed))
		}
	})
}
