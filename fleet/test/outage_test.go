package test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// When Redis fails, does not answer or is slow, no call fails: the process
// goes on at local limits, and back to the shared state when Redis answers.

// TestRedisDownThenRestarted kills Redis (its proxy) in the middle of a
// run: calls go on at local limits and none is lost; when it comes back
// with its state gone, the fleet's state is rebuilt from the defaults.
func TestRedisDownThenRestarted(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 100, Burst: 10}}}}
		a := newProcess(t, at(px.Addr()), prefix, cfg)
		b := newProcess(t, at(px.Addr()), prefix, cfg)
		fallsBack(a.store) // the outage: the proxy goes down under both
		fallsBack(b.store)
		time.Sleep(250 * time.Millisecond) // two heartbeats: both count two live processes
		a.do(t, vpcs, throttl, once)       // the fleet learns 50 rps

		var calls, failed atomic.Int64
		var stops []func()
		for _, p := range []*process{a, b} {
			stops = append(stops, inLoops(t, 4, func() bool {
				if err := p.do(t, vpcs, ok); err != nil {
					failed.Add(1)
				}
				calls.Add(1)
				return true
			}))
		}
		time.Sleep(300 * time.Millisecond)
		px.Down()
		downAt := calls.Load()
		time.Sleep(time.Second)
		during := calls.Load() - downAt
		if !a.store.Stats().Degraded || a.store.Stats().Fallbacks != 1 {
			t.Fatalf("store A after Redis died: %+v", a.store.Stats())
		}
		// Local limits: the learned 50 rps divided by the 2 live processes,
		// for each of the 2 processes: about 50 calls a second in all.
		if during < 20 || during > 90 {
			t.Fatalf("%d calls in the second Redis was down, want about 50 (local limits)", during)
		}
		// Redis restarts empty.
		direct := redis.NewClient(&redis.Options{Addr: be.addr()})
		defer direct.Close()
		if del, _ := direct.Keys(context.Background(), prefix+"*").Result(); len(del) > 0 {
			direct.Del(context.Background(), del...)
		}
		if err := px.Up(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(400 * time.Millisecond)
		for _, stop := range stops {
			stop()
		}
		if failed.Load() != 0 {
			t.Fatalf("%d of %d calls failed because Redis failed", failed.Load(), calls.Load())
		}
		if st := a.store.Stats(); st.Degraded {
			t.Fatalf("store A still on local limits after Redis came back: %+v", st)
		}
		if r := b.gov.Inspect(vpcs).Leaf.Rate; r != 100 {
			t.Fatalf("rebuilt rate %v, want the default 100", r)
		}
	})
}

// TestSlowRedisStillPaces adds 50 ms to every round trip to Redis: calls
// stay paced at the shared rate, and the overhead per call is measured.
func TestSlowRedisStillPaces(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 200, Burst: 1}}}}
		a := newProcess(t, at(px.Addr()), prefix, cfg)
		b := newProcess(t, at(px.Addr()), prefix, cfg)
		time.Sleep(250 * time.Millisecond)
		px.SetDelay(25 * time.Millisecond) // each way: 50 ms per round trip
		var wg sync.WaitGroup
		var calls atomic.Int64
		start := time.Now()
		for _, p := range []*process{a, b} {
			for range 8 {
				wg.Go(func() {
					for range 25 {
						if err := p.do(t, vpcs, ok); err != nil {
							t.Error(err)
						}
						calls.Add(1)
					}
				})
			}
		}
		wg.Wait()
		el := time.Since(start)
		// 400 calls at 200 rps shared: 2 s; never faster than the limit.
		if el < 1800*time.Millisecond {
			t.Fatalf("400 calls at a shared 200 rps took %v: not paced", el)
		}
		sa, sb := a.store.Stats(), b.store.Stats()
		if sa.Degraded || sb.Degraded {
			t.Fatalf("a 50 ms round trip switched to local limits: %+v %+v", sa, sb)
		}
		t.Logf("%s: 400 calls at a shared 200 rps over a 50 ms Redis: %v (%.1f ms per call per worker); Redis calls %d+%d, lease hits %d+%d",
			be.name, el, float64(el.Milliseconds())*16/400, sa.RedisCalls, sb.RedisCalls, sa.LeaseHits, sb.LeaseHits)
	})
}

func TestNoCallFailsWhenRedisNeverAnswered(t *testing.T) {
	s := fleet.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond}), fleet.WithLogger(quiet))
	defer s.Close()
	g, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(s))
	for range 20 {
		if err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); !st.Degraded || st.Fallbacks != 1 {
		t.Fatalf("%+v", st)
	}
	// The local limits still throttle and trip breakers.
	for range 5 {
		resilience.Do(context.Background(), vpcs, throttl, resilience.WithGovernor(g), once)
	}
	var coe *resilience.CircuitOpenError
	if err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g)); !errors.As(err, &coe) {
		t.Fatalf("local breaker did not open: %v", err)
	}
}

// While Redis does not answer, the local limits still recover after a
// throttle.
func TestLocalLimitsRecoverWhileRedisIsDown(t *testing.T) {
	s := fleet.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond}), fleet.WithLogger(quiet))
	defer s.Close()
	b := s.Bucket(vpcsKey, state.BucketSpec{Rate: 20, Burst: 20, Floor: 0.2, Adaptive: true}, 0)
	b.Throttle(0, 0)
	if r := b.Snapshot(0).Rate; r != 10 {
		t.Fatalf("local rate %v after a throttle, want 10", r)
	}
	var r float64
	for now := time.Second; now <= 30*time.Second; now += time.Second / 10 {
		r, _ = b.Success(now)
	}
	if r <= 10 || b.Snapshot(30*time.Second).Rate != r {
		t.Fatalf("local rate %v after 30 s of successes, want above 10", r)
	}
}

// While Redis does not answer, the local limits divide the floor among
// the live processes as they divide the rate: a throttled process slows
// further, down to its share of the floor. With 2 processes, a floor of 4
// and a fleet rate of 5, the local rate is 2.5; a throttle halves it, not
// below the share of the floor, 2 (the whole floor, 4, kept it at 2.5).
func TestLocalLimitsShareTheFloor(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		prefix := uniquePrefix(t)
		a := newProcess(t, at(px.Addr()), prefix, resilience.Config{})
		other := newProcess(t, at(px.Addr()), prefix, resilience.Config{})
		fallsBack(a.store) // the outage: the proxy goes down under both
		fallsBack(other.store)
		time.Sleep(250 * time.Millisecond) // two heartbeats: both count two live processes
		if n := a.store.Stats().Processes; n != 2 {
			t.Fatalf("%d live processes counted, want 2", n)
		}
		b := a.store.Bucket(vpcsKey, state.BucketSpec{Rate: 5, Burst: 5, Floor: 4, Adaptive: true}, 0)
		px.Down()
		untilLocal(t, a.store)
		if r := b.Snapshot(0).Rate; r != 2.5 || !a.store.Stats().Degraded {
			t.Fatalf("local rate %v (degraded %v), want half the fleet's 5", r, a.store.Stats().Degraded)
		}
		if r, dec := b.Throttle(0, 0); !dec || r != 2 {
			t.Fatalf("a throttle on local limits: rate %v, decreased %v; want 2 (half the floor of 4), decreased", r, dec)
		}
		if r, dec := b.Throttle(2*time.Second, 0); dec || r != 2 {
			t.Fatalf("a throttle at the floor's share: rate %v, decreased %v; want 2, not decreased", r, dec)
		}
	})
}

// Processes that start while Redis does not answer have counted no other:
// with WithExpectedProcesses(n) each takes 1/n of the fleet's limits, so
// that n of them never send more than the fleet's rate together (without
// it, each took the whole rate: 4 processes, 4 times the rate); and a
// process that counted fewer live processes at its last heartbeat than n
// takes 1/n too, since the others may start during the outage.
func TestProcessesStartingDuringAnOutageShareTheLimits(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		prefix := uniquePrefix(t)
		spec := state.BucketSpec{Rate: 20, Burst: 8, Adaptive: true}
		first := newProcess(t, at(px.Addr()), prefix, resilience.Config{}, fleet.WithExpectedProcesses(4))
		fallsBack(first.store) // the outage: the proxy goes down under it
		if n := first.store.Stats().Processes; n != 1 {
			t.Fatalf("%d live processes counted, want 1", n)
		}
		buckets := []state.Bucket{first.store.Bucket(vpcsKey, spec, 0)}
		px.Down()
		for range 3 { // started during the outage
			p := newProcess(t, at(px.Addr()), prefix, resilience.Config{}, fleet.WithExpectedProcesses(4), fleet.WithTimeout(100*time.Millisecond))
			fallsBack(p.store) // it starts during the outage
			if !p.store.Stats().Degraded {
				t.Fatal("a process started during the outage is not on local limits")
			}
			buckets = append(buckets, p.store.Bucket(vpcsKey, spec, 0))
		}
		sum := 0.0
		for i, b := range buckets {
			s := b.Snapshot(0)
			if s.Rate != 5 || s.Tokens > 2 {
				t.Fatalf("process %d on local limits: rate %v, burst %v; want a quarter of 20 rps and of a burst of 8", i, s.Rate, s.Tokens)
			}
			sum += s.Rate
		}
		if sum > spec.Rate {
			t.Fatalf("4 processes of a fleet of 4 take %v rps together during an outage, more than the fleet's %v", sum, spec.Rate)
		}
	})
}
