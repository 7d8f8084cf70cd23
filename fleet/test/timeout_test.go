package test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// TestTimeoutBoundsEveryRedisWait freezes Redis (a proxy holds every byte,
// as a SIGSTOPped redis-server's kernel would) for a second with
// WithTimeout(100ms): no Redis operation waits past the timeout, whichever
// client the store was made with (Open's, and a client with go-redis's
// defaults, which ignore a context's deadline), so that no call waits for
// Redis past two timeouts (its first operation Redis did not answer, and
// a second, sent a timeout after the silence began, whose lack of answer
// switches the process: see Store.unanswered); the process falls back to
// local limits, no call fails, and it returns to the shared state once
// Redis answers again.
func TestTimeoutBoundsEveryRedisWait(t *testing.T) {
	const timeout = 100 * time.Millisecond
	forEachSingleNode(t, func(t *testing.T, be backend) {
		for _, c := range []struct {
			name string
			open func(t *testing.T, addr string, opts ...fleet.Option) *fleet.Store
		}{
			{"Open", func(t *testing.T, addr string, opts ...fleet.Option) *fleet.Store {
				s, err := fleet.Open("redis://"+addr+"/0", opts...)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}},
			{"New with go-redis defaults", func(t *testing.T, addr string, opts ...fleet.Option) *fleet.Store {
				rdb := redis.NewClient(&redis.Options{Addr: addr})
				t.Cleanup(func() { rdb.Close() })
				return fleet.New(rdb, opts...)
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				px, _ := proxied(t, be)
				store := c.open(t, px.Addr(), fleet.WithPrefix(uniquePrefix(t)), fleet.WithLogger(quiet),
					fleet.WithTimeout(timeout), fleet.WithHeartbeat(100*time.Millisecond), fleet.WithMaxLease(1))
				defer store.Close()
				cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1000, Burst: 1000}}}}
				gov, err := resilience.NewGovernor(cfg, resilience.WithStateStore(store))
				if err != nil {
					t.Fatal(err)
				}
				call := func() (time.Duration, error) {
					start := time.Now()
					err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(gov))
					return time.Since(start), err
				}
				for range 10 {
					if _, err := call(); err != nil {
						t.Fatal(err)
					}
				}
				if st := store.Stats(); st.Degraded || st.Fallbacks != 0 {
					t.Fatalf("before the freeze: %+v", st)
				}

				px.Freeze()
				var slowest atomic.Int64
				var calls, failed atomic.Int64
				stop := time.Now().Add(time.Second)
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for time.Now().Before(stop) {
							d, err := call()
							calls.Add(1)
							if err != nil {
								failed.Add(1)
							}
							for {
								s := slowest.Load()
								if int64(d) <= s || slowest.CompareAndSwap(s, int64(d)) {
									break
								}
							}
							time.Sleep(5 * time.Millisecond)
						}
					})
				}
				wg.Wait()
				frozen := store.Stats()
				px.Thaw()

				// Two timeouts, and room for a loaded machine's scheduling.
				if d := time.Duration(slowest.Load()); d > 2*timeout+150*time.Millisecond {
					t.Errorf("the slowest of %d calls took %v while Redis was frozen, with WithTimeout(%v)", calls.Load(), d, timeout)
				}
				if failed.Load() != 0 {
					t.Errorf("%d of %d calls failed while Redis was frozen", failed.Load(), calls.Load())
				}
				if !frozen.Degraded || frozen.Fallbacks != 1 {
					t.Errorf("while Redis was frozen: %+v, want local limits", frozen)
				}
				deadline := time.Now().Add(5 * time.Second)
				for store.Stats().Degraded && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				if st := store.Stats(); st.Degraded {
					t.Fatalf("still on local limits after Redis answered again: %+v", st)
				}
				t.Logf("%s: %d calls while Redis was frozen for 1 s, the slowest %v", be.name, calls.Load(), time.Duration(slowest.Load()))
			})
		}
	})
}
