package test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// A paused scope sends nothing until the pause ends, in fleet mode as in
// process: a call that waits for its token (the leaf's, or the account's)
// when a call of its process pauses the scope (a throttle's Retry-After,
// or PauseAccount) is held until the pause ends, though the token it holds
// was granted before the pause began. Before, the call went when its
// token came due, 0.5 s into a 2 s pause.
func TestAWaitingCallIsHeldByAPauseOfItsProcess(t *testing.T) {
	for _, tc := range []struct {
		name     string
		leaf     resilience.ServiceConfig
		acct     float64 // the account's rate (burst 1)
		throttle bool    // the first call is throttled with a Retry-After of 2 s; else PauseAccount(2 s)
	}{
		{"waiting for the leaf, throttled", resilience.ServiceConfig{MaxRPS: 2, Burst: 1}, 1000, true},
		{"waiting at the account, throttled", resilience.ServiceConfig{MaxRPS: 1000, Burst: 1000}, 2, true},
		{"waiting for the leaf, account paused", resilience.ServiceConfig{MaxRPS: 2, Burst: 1}, 1000, false},
		{"waiting at the account, account paused", resilience.ServiceConfig{MaxRPS: 1000, Burst: 1000}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, be backend) {
				cfg := resilience.Config{AWS: resilience.ProviderConfig{AccountMaxRPS: new(tc.acct), AccountBurst: 1,
					Services: map[string]resilience.ServiceConfig{"ec2": tc.leaf}}}
				p := newProcess(t, be, uniquePrefix(t), cfg)
				start := time.Now()
				// The first call takes the burst's token (the next call
				// waits 0.5 s for its own) and pauses the scope 100 ms
				// later, for 2 s.
				first := make(chan struct{})
				go p.do(t, vpcs, func(context.Context) error {
					close(first)
					time.Sleep(100 * time.Millisecond)
					if tc.throttle {
						return &apiErr{code: "Throttling", status: 400, retry: "2"}
					}
					sub := vpcs
					sub.Operation = "DescribeSubnets"
					gd, _ := p.gov.Begin(context.Background(), sub)
					gd.PauseAccount(2 * time.Second)
					gd.End(nil)
					return nil
				}, once)
				<-first
				var sent time.Duration
				err := p.do(t, vpcs, func(context.Context) error {
					sent = time.Since(start)
					return nil
				}, once)
				if err != nil || sent < 2*time.Second {
					t.Fatalf("the call waiting for its token, its scope paused from 100 ms for 2 s: sent at %v (%v), want after 2.1 s", sent, err)
				}
			})
		})
	}
}

// So is a call waiting for its account's concurrency slot when the call
// holding it is throttled with a Retry-After: Do gives the slot back once
// the throttle (a round trip to Redis) has paused the scope. Before, it
// gave it back as the attempt returned, and the call waiting for it found
// the scope not paused yet and was sent at once (at 0.1 s into the 2 s
// pause, in 5 of 8 runs on redis-server and miniredis).
func TestACallWaitingForItsSlotIsHeldByAPause(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		cfg := resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1,
			Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 100, Burst: 100}}}}
		p := newProcess(t, be, uniquePrefix(t), cfg)
		start := time.Now()
		first := make(chan struct{})
		go p.do(t, vpcs, func(context.Context) error {
			close(first)
			time.Sleep(100 * time.Millisecond)
			return &apiErr{code: "Throttling", status: 400, retry: "2"}
		}, once)
		<-first
		var sent time.Duration
		err := p.do(t, vpcs, func(context.Context) error {
			sent = time.Since(start)
			return nil
		}, once)
		if err != nil || sent < 2*time.Second {
			t.Fatalf("the call waiting for its slot, its scope paused from 100 ms for 2 s: sent at %v (%v), want after 2.1 s", sent, err)
		}
	})
}

// A pause another process set holds this process's calls too, at most one
// lease window late: a call that waited for its token (granted before the
// pause began), or that takes a token of a lease borrowed before it, reads
// the bucket's pause from Redis before it is sent when the process has not
// read it for a lease window (a lease request's answer reads it too), and
// takes a token after the pause. Before, process B's call went at its
// token's time, 0.5 s into process A's 2 s pause, and the lease's at once.
func TestACallIsHeldByAPauseOfAnotherProcess(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leaf   resilience.ServiceConfig
		window time.Duration // the lease window
		lease  bool          // B's second call, 450 ms in, takes a token of the lease B borrowed 10 ms in
	}{
		// A's call takes the burst's token; B's, 10 ms in, waits for the
		// next, 0.5 s in.
		{"waiting for its token", resilience.ServiceConfig{MaxRPS: 2, Burst: 1}, 100 * time.Millisecond, false},
		// A borrows the tokens of 0 to 140 ms, B those of 150 to 290 ms
		// (its first call takes the first of them): its lease lasts until
		// 590 ms.
		{"holding a leased token", resilience.ServiceConfig{MaxRPS: 100, Burst: 1}, 300 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, be backend) {
				cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": tc.leaf}}}
				prefix := uniquePrefix(t)
				a := newProcess(t, be, prefix, cfg, fleet.WithLeaseWindow(tc.window))
				b := newProcess(t, be, prefix, cfg, fleet.WithLeaseWindow(tc.window))
				waitFor(t, time.Second, "two live processes", func() bool {
					return a.store.Stats().Processes == 2 && b.store.Stats().Processes == 2
				})
				warm := vpcs
				warm.Operation = "DescribeSubnets"
				a.do(t, warm, ok, once) // the scripts are loaded
				b.do(t, warm, ok, once)
				start := time.Now()
				// A's call is throttled 50 ms in, with a Retry-After of 2 s.
				first := make(chan struct{})
				thrown := make(chan struct{})
				go func() {
					defer close(thrown)
					a.do(t, vpcs, func(context.Context) error {
						close(first)
						time.Sleep(50 * time.Millisecond)
						return &apiErr{code: "Throttling", status: 400, retry: "2"}
					}, once)
				}()
				<-first
				time.Sleep(10 * time.Millisecond)
				var sent time.Duration
				send := func(context.Context) error {
					sent = time.Since(start)
					return nil
				}
				err := b.do(t, vpcs, send, once)
				if tc.lease {
					<-thrown
					time.Sleep(450*time.Millisecond - time.Since(start))
					err = b.do(t, vpcs, send, once)
				}
				if err != nil || sent < 2*time.Second {
					t.Fatalf("process B's call, process A having paused the scope for 2 s 50 ms in: sent at %v (%v), want after 2 s", sent, err)
				}
			})
		})
	}
}

// A call that waited for its token and finds, before it is sent, a pause
// another process set, whose end is past the call's deadline, is refused
// taking no token after the pause: the token a lease request brings for
// it stays in the lease, as for any call refused for its deadline (the
// fleet bucket's ReserveBy). Before, it took that token and gave it back
// to Redis, an operation of its own (4 Redis operations for the call
// against 3), moving the fleet's queue after the pause earlier under the
// callers queued after it.
func TestACallRefusedForAPauseOfAnotherProcessTakesNoToken(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 5, Burst: 1}}}}
		a := newProcess(t, be, prefix, cfg, fleet.WithHeartbeat(time.Hour))
		b := newProcess(t, be, prefix, cfg, fleet.WithHeartbeat(time.Hour))
		if err := a.do(t, vpcs, ok); err != nil { // the burst spent
			t.Fatal(err)
		}
		before := a.store.Stats()
		done := make(chan error)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			done <- resilience.Do(ctx, vpcs, ok, resilience.WithGovernor(a.gov))
		}()
		time.Sleep(50 * time.Millisecond) // A's call waits for its token, 200 ms on
		b.store.Bucket(vpcsKey, state.BucketSpec{Rate: 5, Burst: 1}, 0).Pause(0, 5*time.Second)
		err := <-done
		var de *resilience.DeadlineExceededError
		if !errors.As(err, &de) {
			t.Fatalf("a call with a 1 s context, paused for 5 s: %v; want a *DeadlineExceededError", err)
		}
		time.Sleep(100 * time.Millisecond) // what goes back to Redis has gone
		// Its lease request, the pause's read, the lease request for a
		// token after the pause.
		if n := a.store.Stats().RedisCalls - before.RedisCalls; n > 3 {
			t.Errorf("a call refused for a pause past its deadline cost %d Redis operations; want 3 (no token given back)", n)
		}
	})
}
