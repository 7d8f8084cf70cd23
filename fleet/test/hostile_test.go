package test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// TestAStoppedOrKilledRedisFailsNoCall stops a redis-server of the test's
// own (SIGSTOP: its kernel still takes connections, nothing answers) or
// kills it (SIGKILL) while an operation of each kind is in flight: a
// token request of the bucket, a lease request that gives back an
// expired lease's tokens, a breaker's failure, and a retry's token of
// the retry budget. Each call goes on with local limits, as documented:
// within WithTimeout when Redis is stopped, at once when it is killed
// (the connection resets, well before the timeout); none fails because
// Redis failed (no call refused by a breaker or a budget, none lost in
// the ledger but those whose own function failed), the store switches
// once and logs it.
func TestAStoppedOrKilledRedisFailsNoCall(t *testing.T) {
	redisServerBinary(t)
	type path struct {
		name string
		cfg  resilience.ServiceConfig
		opts []fleet.Option
		// prepare readies the process so that call sends an operation of
		// its kind to Redis.
		prepare func(t *testing.T, p *process)
		call    func(t *testing.T, p *process) error
	}
	paths := []path{
		{"bucket", resilience.ServiceConfig{MaxRPS: 1000, Burst: 10}, []fleet.Option{fleet.WithMaxLease(1)},
			func(t *testing.T, p *process) {},
			func(t *testing.T, p *process) error { return p.do(t, vpcs, ok) }},
		{"lease", resilience.ServiceConfig{MaxRPS: 1000, Burst: 10}, nil,
			func(t *testing.T, p *process) { time.Sleep(300 * time.Millisecond) }, // the lease borrowed by the warm-up call expires
			func(t *testing.T, p *process) error { return p.do(t, vpcs, ok) }},
		{"breaker", resilience.ServiceConfig{MaxRPS: 1000, Burst: 10}, nil,
			func(t *testing.T, p *process) {},
			func(t *testing.T, p *process) error {
				err := p.do(t, vpcs, func(context.Context) error { return transient }, once)
				if !errors.Is(err, transient) || errors.Is(err, state.ErrCircuitOpen) {
					t.Errorf("a failing call: %v, want its own error", err)
				}
				return nil
			}},
		{"budget", resilience.ServiceConfig{MaxRPS: 1000, Burst: 10}, nil,
			func(t *testing.T, p *process) {},
			func(t *testing.T, p *process) error {
				sent := 0
				err := p.do(t, vpcs, func(context.Context) error { sent++; return transient },
					resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxBackoff: 2 * time.Millisecond}))
				if !errors.Is(err, transient) || errors.Is(err, state.ErrBudgetExhausted) || sent != 4 {
					t.Errorf("a call with 3 retries (the third costs a budget token): %v after %d attempts, want its own error after 4", err, sent)
				}
				return nil
			}},
	}
	for _, kill := range []bool{false, true} {
		mode, timeout, within := "stopped", 100*time.Millisecond, 1500*time.Millisecond
		if kill {
			mode, timeout, within = "killed", 5*time.Second, 2*time.Second
		}
		for _, pt := range paths {
			t.Run(mode+"/"+pt.name, func(t *testing.T) {
				srv := startServer(t, freePort(t))
				var logs syncBuffer
				rdb := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
				t.Cleanup(func() { rdb.Close() })
				opts := append([]fleet.Option{fleet.WithPrefix(uniquePrefix(t)), fleet.WithTimeout(timeout),
					fleet.WithHeartbeat(time.Hour), fleet.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))}, pt.opts...)
				store := fleet.New(rdb, opts...)
				t.Cleanup(func() { store.Close() })
				cfg := resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: new(10),
					Services: map[string]resilience.ServiceConfig{"ec2": pt.cfg}}}
				gov, err := resilience.NewGovernor(cfg, resilience.WithStateStore(store))
				if err != nil {
					t.Fatal(err)
				}
				p := &process{store: store, gov: gov, rdb: rdb}
				// A budget of 10 in Redis, the scripts loaded, the breaker's
				// view and a lease read.
				if err := p.do(t, vpcs, ok); err != nil {
					t.Fatal(err)
				}
				pt.prepare(t, p)
				if st := store.Stats(); st.Degraded || st.RedisErrors != 0 {
					t.Fatalf("before the fault: %+v", st)
				}

				srv.cmd.Process.Signal(syscall.SIGSTOP)
				if kill {
					go func() {
						time.Sleep(300 * time.Millisecond) // the call's operation is in flight
						srv.cmd.Process.Kill()
					}()
				}
				done := make(chan error, 1)
				start := time.Now()
				go func() { done <- pt.call(t, p) }()
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("the call failed: %v", err)
					}
					if d := time.Since(start); d > within {
						t.Errorf("the call took %v, want within %v (WithTimeout(%v))", d, within, timeout)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the call hung")
				}
				if err := p.do(t, vpcs, ok); err != nil {
					t.Errorf("the next call, on local limits: %v", err)
				}
				if st := store.Stats(); !st.Degraded || st.Fallbacks != 1 {
					t.Errorf("after the fault: %+v, want local limits, one switch", st)
				}
				if n := strings.Count(logs.String(), "Redis does not answer"); n != 1 {
					t.Errorf("the switch logged %d times, want once:\n%s", n, logs.String())
				}
				tot, _ := gov.Lifetime()
				if tot.Rejected != 0 || tot.Refused != 0 || tot.Errored != 0 || tot.Cancelled != 0 {
					t.Errorf("the ledger lost calls to the fault: %+v", tot)
				}
			})
		}
	}
}
