package test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
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
		// Both wait 2 s for Redis, not the default 250 ms: under load
		// (2 CPU hogs, miniredis) an operation past 250 ms put both on
		// local limits, whose queues are not the fleet's.
		patient := fleet.WithTimeout(2 * time.Second)
		ps := []*process{newProcess(t, be, prefix, cfg, patient), newProcess(t, be, prefix, cfg, patient)}
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

// The tokens Redis gives for callers whose contexts ended while they
// waited for the answer (their lease request was slow) go back to the
// fleet, but for a lease's worth that the process keeps: before, the
// process kept them all in its lease, however far ahead, until the last
// of them was due, and the other processes' calls queued behind tokens
// no one would use. At 2 rps with a lease of one token, 10 callers of
// process A that gave up during a 300 ms round trip left A a lease of 10
// tokens, 5 s of the fleet's rate: process B's next call waited 4.8 s.
func TestTokensOfCallersGoneBeforeTheAnswerGoBack(t *testing.T) {
	const (
		rps      = 2
		interval = time.Second / rps
		oneWay   = 150 * time.Millisecond
	)
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: rps, Burst: 1}}}}
		a := newProcess(t, at(px.Addr()), prefix, cfg, fleet.WithTimeout(2*time.Second))
		b := newProcess(t, be, prefix, cfg)
		if err := a.do(t, vpcs, ok); err != nil { // the scripts are loaded, the burst spent
			t.Fatal(err)
		}
		px.SetDelay(oneWay)
		var wg sync.WaitGroup
		// A caller whose lease request is in flight while the others
		// queue: they all go in the next one, and give up before its
		// answer.
		wg.Go(func() {
			if err := a.do(t, vpcs, ok); err != nil {
				t.Error(err)
			}
		})
		time.Sleep(oneWay / 3)
		for range 10 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 3*oneWay)
				defer cancel()
				if err := resilience.Do(ctx, vpcs, ok, resilience.WithGovernor(a.gov)); err == nil {
					t.Error("a call with a 450 ms context went, its token at least 1 s ahead")
				}
			})
		}
		wg.Wait()
		// What A gives back reaches Redis a round trip after the answer at
		// the earliest, two (NOSCRIPT) for a script Redis does not hold yet
		// (miniredis's, new for each test), later on a loaded machine; once
		// it has, and A's lease's token is due, the bucket there, which B
		// reads, holds a token. Kept by A, the ten tokens stay queued there
		// and the refill takes 5 s to pass them: B's call goes when the
		// bucket holds a token, or 2 s after A's callers gave up, whichever
		// comes first.
		var tokens float64
		for end := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if tokens = b.gov.Inspect(vpcs).Leaf.Tokens; tokens >= 0 || time.Now().After(end) {
				break
			}
		}
		start := time.Now()
		if err := b.do(t, vpcs, ok); err != nil {
			t.Fatal(err)
		}
		if w := time.Since(start); w > 2*interval {
			t.Errorf("after 10 callers of A gave up while its lease request was answered, B's call waited %v (the bucket in Redis held %.1f tokens before it); want at most two intervals (%v)", w, tokens, 2*interval)
		}
	})
}

// A call refused because its token would come past its max wait (or its
// deadline) takes no token, in fleet mode as in process: when the
// process's lease shows that its next token is not usable in time, the
// call is refused with no Redis operation, and the lease keeps the token
// for the calls after it. Before, each such call took the lease's next
// token and gave it back to Redis, an operation of its own: 100 calls
// with WithMaxWait(ctx, 0) cost 26 to 32 Redis operations, and a
// goroutine calling so for a second, 550 to 2,900, for 50 calls sent.
func TestARefusedCallCostsNoRedisOperation(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		// 50 rps with a burst of 1: a lease of 5 tokens, 20 ms apart, the
		// first usable at once.
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 50, Burst: 1}}}}
		p := newProcess(t, be, uniquePrefix(t), cfg, fleet.WithHeartbeat(time.Hour))
		if err := p.do(t, vpcs, ok); err != nil {
			t.Fatal(err)
		}
		before := p.store.Stats()
		refused := 0
		for range 100 {
			err := resilience.Do(resilience.WithMaxWait(context.Background(), 0), vpcs, ok, resilience.WithGovernor(p.gov))
			var ww *resilience.WouldWaitError
			if errors.As(err, &ww) {
				refused++
			}
		}
		after := p.store.Stats()
		if refused < 90 {
			t.Fatalf("setup: %d of 100 calls refused", refused)
		}
		// Within the 20 ms before the lease's next token, a refusal is
		// local; a lease window on, the process reads the pause again.
		if n := after.RedisCalls - before.RedisCalls; n > 3 {
			t.Errorf("%d calls refused for their max wait cost %d Redis operations; want at most 3 (the lease's next tokens due meanwhile, a read of the pause)", refused, n)
		}
	})
}

// A call refused at its leaf (its token there would come past its max
// wait) gives back the account's token it took first: one usable at once
// goes back into the account bucket's lease, for the next caller, with no
// Redis operation. Before, each such call gave it back to Redis, an
// operation of its own: 100 calls 2 ms apart with WithMaxWait(ctx, 0), at
// 50 rps on the leaf and 1,000 on the account, 83 to 87 refused, cost 79
// to 86 Redis operations.
func TestAnAccountTokenOfACallRefusedAtItsLeafStaysInTheLease(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		acct := 1000.0
		cfg := resilience.Config{AWS: resilience.ProviderConfig{AccountMaxRPS: &acct, Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 50, Burst: 1}}}}
		p := newProcess(t, be, uniquePrefix(t), cfg, fleet.WithHeartbeat(time.Hour))
		if err := p.do(t, vpcs, ok); err != nil {
			t.Fatal(err)
		}
		before := p.store.Stats()
		refused := 0
		for range 100 {
			err := resilience.Do(resilience.WithMaxWait(context.Background(), 0), vpcs, ok, resilience.WithGovernor(p.gov))
			var ww *resilience.WouldWaitError
			if errors.As(err, &ww) {
				refused++
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // what goes back to Redis has gone
		after := p.store.Stats()
		if refused < 50 {
			t.Fatalf("setup: %d of 100 calls refused", refused)
		}
		// The leaf's lease requests (5 tokens each, one per 100 ms) and
		// the account's (100 tokens each).
		if n := after.RedisCalls - before.RedisCalls; n > 20 {
			t.Errorf("%d calls refused at their leaf cost %d Redis operations; want at most 20 (the leases' requests)", refused, n)
		}
	})
}
