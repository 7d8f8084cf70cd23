package test

import (
	"context"
	"testing"
	"time"

	"github.com/cloudg/cloudg/resilience"
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
