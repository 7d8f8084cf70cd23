package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/fleet/internal/redisproxy"
	"github.com/cloudg/cloudg/resilience"
)

// Every test runs against an in-process Redis (miniredis, which runs the
// Lua scripts), and again against a real redis-server when
// CLOUDG_REDIS_URL names one (./scripts/test starts one on 127.0.0.1).

type backend struct {
	name string
	addr string // host:port
	url  string // without the database: redis://host:port
}

func backends(t testing.TB) []backend {
	mr := miniredis.RunT(t)
	bs := []backend{{name: "miniredis", addr: mr.Addr(), url: "redis://" + mr.Addr()}}
	if u := os.Getenv("CLOUDG_REDIS_URL"); u != "" {
		o, err := redis.ParseURL(u)
		if err != nil {
			t.Fatalf("CLOUDG_REDIS_URL: %v", err)
		}
		bs = append(bs, backend{name: "redis-server", addr: o.Addr, url: u})
	}
	return bs
}

func forEachBackend(t *testing.T, f func(t *testing.T, be backend)) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) { f(t, be) })
	}
}

// uniquePrefix isolates a test's keys on a shared Redis.
func uniquePrefix(t testing.TB) string {
	var r [6]byte
	rand.Read(r[:])
	return "test-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + hex.EncodeToString(r[:])
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// process is one member of a test fleet: a store and a governor.
type process struct {
	store *Store
	gov   *resilience.Governor
	rdb   *redis.Client
}

func newProcess(t testing.TB, addr, prefix string, cfg resilience.Config, opts ...Option) *process {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	opts = append([]Option{WithPrefix(prefix), WithLogger(quiet), WithHeartbeat(100 * time.Millisecond)}, opts...)
	st := New(rdb, opts...)
	g, err := resilience.NewGovernor(cfg, resilience.WithStateStore(st))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		rdb.Close()
	})
	return &process{store: st, gov: g, rdb: rdb}
}

type apiErr struct {
	code   string
	status int
	retry  string
}

func (e *apiErr) Error() string       { return e.code }
func (e *apiErr) ErrorCode() string   { return e.code }
func (e *apiErr) HTTPStatusCode() int { return e.status }
func (e *apiErr) RetryAfter() time.Duration {
	d, _ := resilience.ParseRetryAfter(e.retry, time.Now())
	return d
}

var (
	vpcs    = resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
	once    = resilience.WithPolicy(resilience.RetryPolicy{MaxRetries: resilience.NoRetries})
	ok      = func(context.Context) error { return nil }
	throttl = func(context.Context) error { return &apiErr{code: "Throttling", status: 400} }
)

func (p *process) do(t testing.TB, sc resilience.Scope, fn func(context.Context) error, opts ...resilience.CallOption) error {
	return resilience.Do(context.Background(), sc, fn, append([]resilience.CallOption{resilience.WithGovernor(p.gov)}, opts...)...)
}

func TestThrottleInOneProcessSlowsTheFleet(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		a := newProcess(t, be.addr, prefix, resilience.Config{})
		b := newProcess(t, be.addr, prefix, resilience.Config{})
		a.do(t, vpcs, throttl, once)
		if r := b.gov.BucketState(vpcs).RateRPS; r != 10 {
			t.Fatalf("process B sees %v rps after A was throttled, want 10", r)
		}
		// The same congestion event: B's throttle within a second changes nothing.
		b.do(t, vpcs, throttl, once)
		if r := a.gov.BucketState(vpcs).RateRPS; r != 10 {
			t.Fatalf("%v rps after two throttles within a second, want 10", r)
		}
		time.Sleep(1100 * time.Millisecond)
		b.do(t, vpcs, throttl, once)
		if r := a.gov.BucketState(vpcs).RateRPS; r != 5 {
			t.Fatalf("%v rps after a second congestion event, want 5", r)
		}
		// Other operations are other leaves.
		sub := vpcs
		sub.Operation = "DescribeSubnets"
		if r := b.gov.BucketState(sub).RateRPS; r != 20 {
			t.Fatalf("DescribeSubnets at %v rps", r)
		}
	})
}

func TestRetryAfterPausesTheFleet(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		a := newProcess(t, be.addr, prefix, resilience.Config{})
		b := newProcess(t, be.addr, prefix, resilience.Config{})
		a.do(t, vpcs, func(context.Context) error { return &apiErr{code: "Throttling", status: 400, retry: "3"} }, once)
		p := b.gov.BucketState(vpcs).PausedFor
		if p < 2500*time.Millisecond || p > 3*time.Second {
			t.Fatalf("process B paused for %v, want about 3s", p)
		}
		start := time.Now()
		if err := b.do(t, vpcs, ok); err != nil {
			t.Fatal(err)
		}
		if w := time.Since(start); w < 2500*time.Millisecond {
			t.Fatalf("B's call went after %v, inside A's 3 s pause", w)
		}
	})
}

func TestBreakerOpenedByOneProcessRejectsInAnother(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{BreakerCooldownSeconds: 1}}
		a := newProcess(t, be.addr, prefix, cfg, WithBreakerStaleness(200*time.Millisecond))
		b := newProcess(t, be.addr, prefix, cfg, WithBreakerStaleness(200*time.Millisecond))
		// B has seen the breaker closed (its cache is warm).
		if err := b.do(t, vpcs, ok); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			a.do(t, vpcs, throttl, once)
		}
		// B trusts its view of a closed breaker for at most the staleness.
		time.Sleep(250 * time.Millisecond)
		sent := 0
		err := b.do(t, vpcs, func(context.Context) error { sent++; return nil })
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || sent != 0 {
			t.Fatalf("process B: %v, %d sent; want rejected by the breaker A opened", err, sent)
		}
		// After the cooldown, one probe for the whole fleet.
		time.Sleep(1100 * time.Millisecond)
		probing, release := make(chan struct{}), make(chan struct{})
		done := make(chan error)
		go func() {
			done <- a.do(t, vpcs, func(context.Context) error { close(probing); <-release; return nil })
		}()
		<-probing
		if err := b.do(t, vpcs, ok); !errors.As(err, &coe) {
			t.Fatalf("process B during A's probe: %v, want rejected", err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := b.do(t, vpcs, ok); err != nil {
			t.Fatalf("after the probe closed the breaker: %v", err)
		}
	})
}

func TestRetryBudgetIsShared(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: new(3)}}
		a := newProcess(t, be.addr, prefix, cfg)
		b := newProcess(t, be.addr, prefix, cfg)
		cause := &apiErr{code: "Throttling", status: 400}
		gd, _ := a.gov.Begin(context.Background(), vpcs)
		defer gd.End()
		for i := range 5 { // 2 free, 3 paid
			if err := gd.Retry(cause); err != nil {
				t.Fatalf("A's retry %d refused: %v", i+1, err)
			}
		}
		gb, _ := b.gov.Begin(context.Background(), vpcs)
		defer gb.End()
		gb.Retry(cause)
		gb.Retry(cause)
		var rbe *resilience.RetryBudgetExhaustedError
		if err := gb.Retry(cause); !errors.As(err, &rbe) {
			t.Fatalf("B's paid retry after A emptied the budget: %v", err)
		}
		if r := b.gov.RetryBudget("aws"); r != 0 {
			t.Fatalf("B sees %v left", r)
		}
		// Ten successes in A refund a token the fleet can spend, once A
		// sent its refunds (a token's worth at a time, or each heartbeat).
		for range 10 {
			a.do(t, vpcs, ok)
		}
		time.Sleep(250 * time.Millisecond)
		gc, _ := b.gov.Begin(context.Background(), vpcs)
		defer gc.End()
		gc.Retry(cause)
		gc.Retry(cause)
		if err := gc.Retry(cause); err != nil {
			t.Fatalf("the refunded token was not spendable: %v", err)
		}
	})
}

func TestLeasesSaveRoundTripsAndKeepPacing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 500, Burst: 1}}}}
		p := newProcess(t, be.addr, prefix, cfg)
		p.store.procs.Store(1) // the lease is the process's share of the rate
		start := time.Now()
		for range 500 {
			if err := p.do(t, vpcs, ok); err != nil {
				t.Fatal(err)
			}
		}
		el := time.Since(start)
		st := p.store.Stats()
		if st.LeaseMisses > 100 || st.LeaseHits < 400 {
			t.Fatalf("%d lease misses, %d hits for 500 calls: the leases do not save round trips", st.LeaseMisses, st.LeaseHits)
		}
		// 500 calls at 500 rps with a burst of one: about a second, never
		// much less (leases are sized from the rate, they do not add any).
		if el < 850*time.Millisecond {
			t.Fatalf("500 calls at 500 rps took %v: pacing lost", el)
		}
		t.Logf("%s: 500 calls in %v, %d Redis calls (%d lease misses, %d hits)", be.name, el, st.RedisCalls, st.LeaseMisses, st.LeaseHits)
	})
}

func TestKeysAreNamespacedAndExpire(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		p := newProcess(t, be.addr, prefix, resilience.Config{}, WithKeyTTL(time.Minute))
		p.do(t, vpcs, throttl, once)
		gd, _ := p.gov.Begin(context.Background(), vpcs)
		for range 3 { // the third retry spends from the budget
			gd.Retry(&apiErr{code: "Throttling", status: 400})
		}
		gd.End()
		keys, err := p.rdb.Keys(context.Background(), prefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{
			prefix + ":{aws/123456789012/us-east-1/ec2/DescribeVpcs}:bucket":  false,
			prefix + ":{aws/123456789012/us-east-1/ec2/DescribeVpcs}:breaker": false,
			prefix + ":{budget:aws}": false,
			prefix + ":procs":        false,
		}
		for _, k := range keys {
			if _, ok := want[k]; ok {
				want[k] = true
			}
			ttl := p.rdb.PTTL(context.Background(), k).Val()
			if ttl <= 0 || ttl > time.Minute {
				t.Errorf("key %s has TTL %v", k, ttl)
			}
		}
		for k, seen := range want {
			if !seen {
				t.Errorf("key %s missing among %v", k, keys)
			}
		}
	})
}

func TestOpenReadsCredentialsTLSAndDatabaseFromTheURL(t *testing.T) {
	s, err := Open("rediss://alice:s3cret@redis.example:6380/3", WithLogger(quiet), WithTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := s.rdb.(*redis.Client).Options()
	if o.Username != "alice" || o.Password != "s3cret" || o.DB != 3 || o.TLSConfig == nil || o.Addr != "redis.example:6380" {
		t.Fatalf("options %+v", o)
	}
	if _, err := Open("http://nope"); err == nil {
		t.Fatal("a malformed URL was accepted")
	}
	// Against a Redis that requires a user and password.
	mr := miniredis.RunT(t)
	mr.RequireUserAuth("alice", "s3cret")
	s2, err := Open("redis://alice:s3cret@"+mr.Addr()+"/0", WithLogger(quiet), WithPrefix(uniquePrefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	g, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(s2))
	resilience.Do(context.Background(), vpcs, throttl, resilience.WithGovernor(g), once)
	if st := s2.Stats(); st.Degraded || st.RedisErrors != 0 {
		t.Fatalf("authenticated store: %+v", st)
	}
	s3, _ := Open("redis://alice:wrong@"+mr.Addr()+"/0", WithLogger(quiet))
	defer s3.Close()
	g3, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(s3))
	if err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(g3)); err != nil {
		t.Fatalf("a call failed because Redis refused the credentials: %v", err)
	}
	if !s3.Stats().Degraded {
		t.Fatal("wrong credentials did not switch to local limits")
	}
}

// TestRedisDownThenRestarted kills Redis (its proxy) in the middle of a
// run: calls go on at local limits and none is lost; when it comes back
// with its state gone, the fleet's state is rebuilt from the defaults.
func TestRedisDownThenRestarted(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		px, err := redisproxy.Start(be.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer px.Close()
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 100, Burst: 10}}}}
		a := newProcess(t, px.Addr(), prefix, cfg)
		b := newProcess(t, px.Addr(), prefix, cfg)
		time.Sleep(250 * time.Millisecond) // two heartbeats: both count two live processes
		a.do(t, vpcs, throttl, once)       // the fleet learns 50 rps

		var calls, failed atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, p := range []*process{a, b} {
			for range 4 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						if err := p.do(t, vpcs, ok); err != nil {
							failed.Add(1)
						}
						calls.Add(1)
					}
				})
			}
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
		del, _ := redis.NewClient(&redis.Options{Addr: be.addr}).Keys(context.Background(), prefix+"*").Result()
		if len(del) > 0 {
			redis.NewClient(&redis.Options{Addr: be.addr}).Del(context.Background(), del...)
		}
		if err := px.Up(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(400 * time.Millisecond)
		close(stop)
		wg.Wait()
		if failed.Load() != 0 {
			t.Fatalf("%d of %d calls failed because Redis failed", failed.Load(), calls.Load())
		}
		if st := a.store.Stats(); st.Degraded {
			t.Fatalf("store A still on local limits after Redis came back: %+v", st)
		}
		if r := b.gov.BucketState(vpcs).RateRPS; r != 100 {
			t.Fatalf("rebuilt rate %v, want the default 100", r)
		}
	})
}

// TestSlowRedisStillPaces adds 50 ms to every round trip to Redis: calls
// stay paced at the shared rate, and the overhead per call is measured.
func TestSlowRedisStillPaces(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		px, err := redisproxy.Start(be.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer px.Close()
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 200, Burst: 1}}}}
		a := newProcess(t, px.Addr(), prefix, cfg)
		b := newProcess(t, px.Addr(), prefix, cfg)
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
	s := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond}), WithLogger(quiet))
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

func ExampleOpen() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	store, err := Open("redis://" + mr.Addr() + "/0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	gov, _ := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(store))
	err = resilience.Do(context.Background(), vpcs, func(context.Context) error { return nil }, resilience.WithGovernor(gov))
	fmt.Println(err, store.Stats().Degraded)
	// Output: <nil> false
}

// TestEveryOperationAnswers runs each bucket, breaker and budget operation
// once against Redis: none may be mistaken for Redis failing.
func TestEveryOperationAnswers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		p := newProcess(t, be.addr, uniquePrefix(t), resilience.Config{})
		s := p.store
		spec := resilience.BucketSpec{Rate: 10, Burst: 10, Floor: 0.5, Adaptive: true}
		b := s.Bucket(vpcs, spec, 0)
		b.Reserve(0)
		b.TryReserve(0)
		b.Cancel(0)
		b.Pause(0, int64(time.Second))
		b.Throttle(0, 0)
		b.Success(0)
		if snap := b.Snapshot(0); snap.Rate != 5 || snap.Ceiling != 10 || snap.Paused <= 0 {
			t.Fatalf("bucket snapshot %+v", snap)
		}
		br := s.Breaker(vpcs, resilience.BreakerSpec{Threshold: 1, Cooldown: time.Minute, MaxCooldown: 10 * time.Minute})
		br.Allow(0)
		br.Failure(0)
		br.Success()
		if snap := br.Snapshot(0); snap.State != "open" || snap.Cooldown != time.Minute {
			t.Fatalf("breaker snapshot %+v", snap)
		}
		bu := s.Budget("aws", 2)
		bu.Take()
		bu.Succeed()
		bu.Remaining()
		if st := s.Stats(); st.Degraded || st.RedisErrors != 0 {
			t.Fatalf("an operation failed against a healthy Redis: %+v", st)
		}
	})
}

// A process that never retried still refunds the shared budget: its view
// of the budget is refreshed each heartbeat.
func TestRefundsFromAProcessThatNeverRetried(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: new(3)}}
		a := newProcess(t, be.addr, prefix, cfg)
		b := newProcess(t, be.addr, prefix, cfg)
		cause := &apiErr{code: "Throttling", status: 400}
		gb, _ := b.gov.Begin(context.Background(), vpcs)
		for range 5 { // 2 free, 3 paid: the budget is empty
			gb.Retry(cause)
		}
		gb.End()
		time.Sleep(250 * time.Millisecond) // A's heartbeat sees it empty
		for range 30 {
			a.do(t, vpcs, ok)
		}
		time.Sleep(250 * time.Millisecond) // A's refunds reach Redis
		gc, _ := b.gov.Begin(context.Background(), vpcs)
		defer gc.End()
		gc.Retry(cause)
		gc.Retry(cause)
		if err := gc.Retry(cause); err != nil {
			t.Fatalf("B's paid retry after 30 successes in A: %v", err)
		}
	})
}

// While Redis does not answer, the local limits still recover after a
// throttle.
func TestLocalLimitsRecoverWhileRedisIsDown(t *testing.T) {
	s := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond}), WithLogger(quiet))
	defer s.Close()
	b := s.Bucket(vpcs, resilience.BucketSpec{Rate: 20, Burst: 20, Floor: 0.2, Adaptive: true}, 0)
	sec := int64(time.Second)
	b.Throttle(0, 0)
	if r := b.Snapshot(0).Rate; r != 10 {
		t.Fatalf("local rate %v after a throttle, want 10", r)
	}
	var r float64
	for now := sec; now <= 30*sec; now += sec / 10 {
		r, _ = b.Success(now)
	}
	if r <= 10 || b.Snapshot(30*sec).Rate != r {
		t.Fatalf("local rate %v after 30 s of successes, want above 10", r)
	}
}

// A bucket used once holds an expired lease; it is idle all the same (the
// core may drop it), and the breakers of dropped scopes are forgotten.
func TestUnusedSharedStateCanBeDropped(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		p := newProcess(t, be.addr, uniquePrefix(t), resilience.Config{})
		b := p.store.Bucket(vpcs, resilience.BucketSpec{Rate: 20, Burst: 40, Floor: 0.2, Adaptive: true}, 0)
		b.Reserve(0)
		if !b.Idle(int64(time.Hour), int64(time.Minute)) {
			t.Fatal("a bucket whose lease expired an hour ago is not idle")
		}
		for i := range 100 {
			sc := vpcs
			sc.Account = fmt.Sprint(i)
			p.store.Breaker(sc, resilience.BreakerSpec{Threshold: 5, Cooldown: time.Minute, MaxCooldown: time.Hour})
		}
		runtime.GC()
		p.store.forgetDroppedBreakers()
		n := 0
		p.store.breakers.Range(func(any, any) bool { n++; return true })
		if n > 5 { // a breaker may survive one GC cycle
			t.Fatalf("%d breakers remembered after the governor dropped them", n)
		}
	})
}

// TestWhatALeaseTrades measures what leases trade away: after another
// process's throttle halves the fleet's rate, a process may still spend
// the tokens it borrowed (at most its lease), at their old times.
func TestWhatALeaseTrades(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, maxLease := range []int{64, 8, 1} {
			prefix := uniquePrefix(t)
			spec := resilience.BucketSpec{Rate: 1000, Burst: 1000, Floor: 1, Adaptive: true}
			a := newProcess(t, be.addr, prefix, resilience.Config{}, WithMaxLease(maxLease))
			b := newProcess(t, be.addr, prefix, resilience.Config{}, WithMaxLease(maxLease))
			a.store.procs.Store(1)
			ba := a.store.Bucket(vpcs, spec, 0)
			bb := b.store.Bucket(vpcs, spec, 0)
			ba.Reserve(0) // A borrows a lease
			bb.Throttle(0, 0)
			before := a.store.Stats().LeaseHits
			for range maxLease {
				ba.Reserve(0)
			}
			spent := a.store.Stats().LeaseHits - before
			if spent > int64(maxLease-1) {
				t.Fatalf("lease %d: %d tokens spent after the throttle, more than the lease", maxLease, spent)
			}
			if maxLease > 1 && spent == 0 {
				t.Fatalf("lease %d: no token spent from the lease after the throttle (the trade the test measures)", maxLease)
			}
			t.Logf("%s: lease of %d: %d tokens spent after another process's throttle", be.name, maxLease, spent)
		}
	})
}

// WithProcessID names the process in the heartbeat set; WithLeaseWindow
// sizes the lease: 500 rps over a 20 ms window is 10 tokens a lease.
func TestProcessIDAndLeaseWindow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		p := newProcess(t, be.addr, prefix, resilience.Config{}, WithProcessID("collector-7"), WithLeaseWindow(20*time.Millisecond))
		members, err := p.rdb.ZRange(context.Background(), prefix+":procs", 0, -1).Result()
		if err != nil || len(members) != 1 || members[0] != "collector-7" {
			t.Fatalf("heartbeat set %v, %v", members, err)
		}
		p.store.procs.Store(1)
		b := p.store.Bucket(vpcs, resilience.BucketSpec{Rate: 500, Burst: 500, Floor: 1, Adaptive: true}, 0)
		before := p.store.Stats()
		for range 30 {
			b.Reserve(0)
		}
		st := p.store.Stats()
		if misses, hits := st.LeaseMisses-before.LeaseMisses, st.LeaseHits-before.LeaseHits; misses != 3 || hits != 27 {
			t.Fatalf("%d lease requests, %d hits for 30 tokens; want 3 and 27 (leases of 10)", misses, hits)
		}
	})
}
