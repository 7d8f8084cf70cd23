package test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/internal/hint"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// Every test runs against an in-process Redis (miniredis, which runs the
// Lua scripts); again against a real redis-server when CLOUDG_REDIS_URL
// names one; and again against a real Redis Cluster when
// CLOUDG_REDIS_CLUSTER_ADDRS lists its nodes (./scripts/test starts both
// on 127.0.0.1). Redis keeps its own time (TIME), so these tests wait in
// real time.

type backend struct {
	name    string
	addrs   []string // host:port of the server, or of the cluster's nodes
	cluster bool
	mr      *miniredis.Miniredis // the in-process Redis; nil for a real one
}

// expireFor lets d pass for the keys' TTLs: a real Redis expires its keys
// as time passes, miniredis only when told (FastForward; its TIME goes on
// at the wall clock's pace, so that the state's own times do not move).
func (be backend) expireFor(d time.Duration) {
	if be.mr != nil {
		be.mr.FastForward(d)
		return
	}
	time.Sleep(d)
}

// addr is the server's address (a single node's; a cluster's first node).
func (be backend) addr() string { return be.addrs[0] }

// client returns a new client of the backend that fails fast, so that a
// Redis that does not answer shows at once. A cluster's client has loaded
// the slots and connected to every master, so that a store's first
// operation does not pay for it within its timeout.
func (be backend) client() redis.UniversalClient {
	if be.cluster {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: be.addrs, DialTimeout: 200 * time.Millisecond})
		cc.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() })
		return cc
	}
	return redis.NewClient(&redis.Options{Addr: be.addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
}

// url is the URL fleet.Open reads for the backend: go-redis's cluster form
// (one addr= per further node) for a cluster.
func (be backend) url() string {
	if !be.cluster {
		return "redis://" + be.addr() + "/0"
	}
	u := "redis://" + be.addrs[0]
	for i, a := range be.addrs[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + a
	}
	return u
}

// redisServer is the real redis-server that ./scripts/test starts, or
// false when CLOUDG_REDIS_URL names none.
func redisServer(t testing.TB) (backend, bool) {
	u := os.Getenv("CLOUDG_REDIS_URL")
	if u == "" {
		return backend{}, false
	}
	o, err := redis.ParseURL(u)
	if err != nil {
		t.Fatalf("CLOUDG_REDIS_URL: %v", err)
	}
	return backend{name: "redis-server", addrs: []string{o.Addr}}, true
}

// redisCluster is the real three-node Redis Cluster that ./scripts/test
// starts, or false when CLOUDG_REDIS_CLUSTER_ADDRS names none.
func redisCluster() (backend, bool) {
	v := os.Getenv("CLOUDG_REDIS_CLUSTER_ADDRS")
	if v == "" {
		return backend{}, false
	}
	return backend{name: "redis-cluster", addrs: strings.Split(v, ","), cluster: true}, true
}

// singleNodes are the backends a test can put a proxy in front of: a
// cluster's clients follow its nodes' own addresses, not a proxy's.
func singleNodes(t testing.TB) []backend {
	mr := miniredis.RunT(t)
	bs := []backend{{name: "miniredis", addrs: []string{mr.Addr()}, mr: mr}}
	if be, ok := redisServer(t); ok {
		bs = append(bs, be)
	}
	return bs
}

func backends(t testing.TB) []backend {
	bs := singleNodes(t)
	if be, ok := redisCluster(); ok {
		bs = append(bs, be)
	}
	return bs
}

func forEachBackend(t *testing.T, f func(t *testing.T, be backend)) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) { f(t, be) })
	}
}

func forEachSingleNode(t *testing.T, f func(t *testing.T, be backend)) {
	for _, be := range singleNodes(t) {
		t.Run(be.name, func(t *testing.T) { f(t, be) })
	}
}

// keys returns the keys matching pattern, on every master of a cluster.
func keys(t testing.TB, rdb redis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		var all []string
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			ks, err := c.Keys(ctx, pattern).Result()
			mu.Lock()
			all = append(all, ks...)
			mu.Unlock()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return all
	}
	ks, err := rdb.Keys(ctx, pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ks
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
	store *fleet.Store
	gov   *resilience.Governor
	rdb   redis.UniversalClient
}

func newProcess(t testing.TB, be backend, prefix string, cfg resilience.Config, opts ...fleet.Option) *process {
	t.Helper()
	rdb := be.client()
	opts = append([]fleet.Option{fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(100 * time.Millisecond)}, opts...)
	st := fleet.New(rdb, opts...)
	g, err := resilience.NewGovernor(cfg, resilience.WithStateStore(st))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		rdb.Close()
	})
	onRedis(t, st)
	return &process{store: st, gov: g, rdb: rdb}
}

// openStore opens a store on url (fleet.Open, with opts), which the
// test's end closes, and which must stay on Redis (onRedis).
func openStore(t testing.TB, url string, opts ...fleet.Option) *fleet.Store {
	t.Helper()
	st, err := fleet.Open(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	onRedis(t, st)
	return st
}

// onRedis fails the test, at its end, when st went on local limits or
// Redis failed one of its operations, unless the test declared that it
// brings that about (fallsBack). Such a store read and wrote its local
// limits, not the fleet's state: a test that checks the shared state
// through it passes with nothing tested, or fails for nothing. A Redis
// operation not answered within WithTimeout (250 ms by default) is enough,
// and a loaded host alone makes one (five tests passed so, or flaked,
// before their stores waited longer: c539d4f, 15351bb). Every store the
// helpers open is checked so; the message names where the test opened it
// and gives its stats. It runs before the store's Close.
func onRedis(t testing.TB, st *fleet.Store) {
	at := "?"
	pcs := make([]uintptr, 16)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for f, more := frames.Next(); ; f, more = frames.Next() {
		if !strings.HasSuffix(f.File, "/helpers_test.go") {
			at = filepath.Base(f.File) + ":" + strconv.Itoa(f.Line)
			break
		}
		if !more {
			break
		}
	}
	t.Cleanup(func() {
		if _, ok := fallbacksExpected.LoadAndDelete(st); ok {
			return
		}
		if s := st.Stats(); s.Fallbacks > 0 || s.RedisErrors > 0 {
			t.Errorf("the store opened at %s went on local limits or had Redis fail an operation, which the test does not bring about (its stats: %+v): what the test read and wrote through it after that was its local limits, not Redis's state; a test that brings an outage about says so with fallsBack, and a store on a loaded host may need a longer WithTimeout", at, s)
		}
	})
}

// fallbacksExpected holds the stores whose tests bring an outage or a
// refusal about (fallsBack): onRedis lets them fall back.
var fallbacksExpected sync.Map // *fleet.Store → struct{}

// fallsBack declares that the test brings about, on purpose, what sends
// st to local limits or fails its Redis operations (a proxy taken down,
// frozen or answering for Redis, a Redis that refuses or is gone), so
// that onRedis does not fail it for that. A comment beside the call says
// what it is.
func fallsBack(st *fleet.Store) { fallbacksExpected.Store(st, struct{}{}) }

// at is a single-node backend at addr (a proxy's).
func at(addr string) backend { return backend{name: addr, addrs: []string{addr}} }

type apiErr struct {
	code   string
	status int
	retry  string
}

func (e *apiErr) Error() string       { return e.code }
func (e *apiErr) ErrorCode() string   { return e.code }
func (e *apiErr) HTTPStatusCode() int { return e.status }
func (e *apiErr) RetryAfter() time.Duration {
	d, _ := hint.ParseRetryAfter(e.retry, time.Now())
	return d
}

// vpcsKey is the state key the governor gives vpcs's leaf (ec2 has a leaf
// per operation).
const vpcsKey = "aws/123456789012/us-east-1/ec2/DescribeVpcs"

var (
	vpcs      = resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
	once      = resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1})
	ok        = func(context.Context) error { return nil }
	throttl   = func(context.Context) error { return &apiErr{code: "Throttling", status: 400} }
	transient = &apiErr{code: "InternalError", status: 500}
)

func (p *process) do(t testing.TB, sc resilience.Scope, fn func(context.Context) error, opts ...resilience.CallOption) error {
	return resilience.Do(context.Background(), sc, fn, append([]resilience.CallOption{resilience.WithGovernor(p.gov)}, opts...)...)
}

// begin starts a logical call to vpcs, driven attempt by attempt.
func (p *process) begin(t testing.TB) *resilience.Guard {
	t.Helper()
	gd, err := p.gov.Begin(context.Background(), vpcs)
	if err != nil {
		t.Fatal(err)
	}
	return gd
}

// failAndRetry sends one attempt of gd's call, which fails with a
// transient error, and asks for a retry: the n-th use on a call asks for
// its n-th retry. Every retry after the first two of a call costs a token
// of the provider's retry budget. It returns Retry's refusal, or nil.
func failAndRetry(gd *resilience.Guard) error {
	if err := gd.Enter(context.Background()); err != nil {
		return err
	}
	gd.After(transient)
	_, err := gd.Retry(0)
	return err
}

// inLoops runs n goroutines, each calling call again and again until call
// returns false or stop is called; stop returns once they all have. The
// test's end stops them too, whatever path it ends by (a t.Fatal before
// the stop); stop may be called any number of times.
func inLoops(t testing.TB, n int, call func() bool) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if !call() {
					return
				}
			}
		})
	}
	var once sync.Once
	stop = func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
	t.Cleanup(stop)
	return stop
}

// redisBalance measures how far the balance of vpcsKey's bucket in Redis
// moves, its refill aside: another process drains the bucket far below
// zero, so that the balance is not capped while it is read, and a third,
// which holds no lease, reads it. The move is read off the bucket's hash
// in Redis: below zero, its balance at Redis's time now is (now - t0) /
// interval (bucketSnapshotScript), t0 being when the fleet's queue of
// tokens ends, so that the tokens given back, refill aside, are t0's move
// back over the interval, with no clock of the test's in it. (Before,
// the refill was reckoned from the test's times around each reading,
// taken as their midpoint; a reading slow under load put that 40-60 ms
// off, 4 to 6 tokens at 100 rps, past the tests' 2.5: "Redis's balance
// moved by 42.9 tokens (its refill aside) ...; want 48".)
type redisBalance struct {
	t      testing.TB
	reader state.Bucket
	rdb    redis.UniversalClient
	key    string    // the bucket's hash
	rate   float64   // the bucket's rate, which no throttle changes here
	was    float64   // the balance at mark
	t0     float64   // the bucket's t0 at mark, in µs of Redis's clock
	start  time.Time // when mark read
	drain  *fleet.Store
}

// drainedBalance drains vpcsKey's bucket of spec in Redis (650 tokens
// taken, with the 50 a first process may hold) through a process of its
// own, and returns the measure of its balance, through another, to mark.
// The drain's callers are concurrent, so that each lease request carries
// many of them (one per caller, each a round trip, took up to 6 s under
// -race on a loaded 2-core machine: the bucket's refill at 100 rps
// undid most of the drain). Both processes wait for Redis up to 2 s, not
// the 250 ms default: a Redis slow to answer under load is no outage
// here, and the drain's reservations went to its local limits, not
// Redis, which read 20.0 tokens, its burst, after the drain.
func drainedBalance(t testing.TB, be backend, prefix string, spec state.BucketSpec) *redisBalance {
	t.Helper()
	patient := fleet.WithTimeout(2 * time.Second)
	dp := newProcess(t, be, prefix, resilience.Config{}, patient)
	drain := dp.store.Bucket(vpcsKey, spec, 0)
	const callers = 20
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range 600 / callers {
				drain.Reserve(0)
			}
		})
	}
	wg.Wait()
	rp := newProcess(t, be, prefix, resilience.Config{}, patient)
	return &redisBalance{t: t, reader: rp.store.Bucket(vpcsKey, spec, 0), rdb: rp.rdb, key: prefix + ":{" + vpcsKey + "}:bucket", rate: spec.Rate, drain: dp.store}
}

// mark reads the balance the moves are measured from, and fails the test
// unless the bucket is drained.
func (b *redisBalance) mark() {
	b.t.Helper()
	b.start = time.Now()
	b.was, b.t0 = b.read()
	if b.was > -150 {
		b.t.Fatalf("the bucket holds %.1f tokens after 650 taken; want it drained (the drain's store: %+v)", b.was, b.drain.Stats())
	}
}

// read returns the balance the reader reads, and the bucket's t0 in
// Redis, read after it; it fails the test unless the bucket's rate is the
// spec's, whose interval t0 counts in.
func (b *redisBalance) read() (tokens, t0 float64) {
	b.t.Helper()
	tokens = b.reader.Snapshot(0).Tokens
	h, err := b.rdb.HMGet(context.Background(), b.key, "t0", "rate").Result()
	if err != nil {
		b.t.Fatalf("reading the bucket's hash: %v", err)
	}
	if t0, err = strconv.ParseFloat(fmt.Sprint(h[0]), 64); err != nil {
		b.t.Fatalf("the bucket's t0 %v: %v", h[0], err)
	}
	if rate, _ := strconv.ParseFloat(fmt.Sprint(h[1]), 64); rate != b.rate {
		b.t.Fatalf("the bucket's rate is %v in Redis; the measure wants %v", h[1], b.rate)
	}
	return tokens, t0
}

// gain returns how far the balance moved since mark, less its refill
// since (t0's move back, in tokens), and the balance now, which must be
// below zero still: t0 does not measure a capped balance.
func (b *redisBalance) gain() (gain, now float64) {
	b.t.Helper()
	now, t0 := b.read()
	if now >= 0 {
		b.t.Fatalf("the bucket holds %.1f tokens, %.1f at mark; the measure wants it below zero", now, b.was)
	}
	return (b.t0 - t0) * b.rate / 1e6, now
}

// gainBy is gain, read again every 20 ms for up to a second until it
// comes within 1.5 tokens of want: a give-back in the background.
func (b *redisBalance) gainBy(want float64) (gain, now float64) {
	for end := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		if gain, now = b.gain(); gain > want-1.5 || time.Now().After(end) {
			return gain, now
		}
	}
}

// leasedConfig is the configuration of leasedProcess's governor: ec2 at
// 100 rps with a burst of 20.
var leasedConfig = resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 100, Burst: 20}}}}

// leasedProcess is a process A whose governor (leasedConfig, and opts) is
// on a store with a lease window of 500 ms that counts A alone (its
// heartbeat is an hour), so that its leases are of 50 tokens; it makes
// one call to vpcs, which borrows a lease and leaves 49 tokens in it.
func leasedProcess(t testing.TB, be backend, prefix string, opts ...resilience.GovernorOption) *process {
	t.Helper()
	rdb := be.client()
	st := fleet.New(rdb, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour),
		fleet.WithLeaseWindow(500*time.Millisecond))
	t.Cleanup(func() {
		st.Close()
		rdb.Close()
	})
	onRedis(t, st)
	g, err := resilience.NewGovernor(leasedConfig, append([]resilience.GovernorOption{resilience.WithStateStore(st)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	a := &process{store: st, gov: g, rdb: rdb}
	if err := a.do(t, vpcs, ok); err != nil {
		t.Fatal(err)
	}
	return a
}

// untilLocal reads a bucket of s's (which changes nothing in Redis) until
// s is on local limits, Redis being down or frozen: an operation Redis does
// not answer goes on local limits alone, and the store switches when one
// sent a timeout after it gets no answer either (Store.unanswered).
func untilLocal(t *testing.T, s *fleet.Store) {
	t.Helper()
	bk := s.Bucket("untilLocal", state.BucketSpec{Rate: 1, Burst: 1}, 0)
	waitFor(t, 10*time.Second, "local limits", func() bool {
		if !s.Stats().Degraded {
			bk.Snapshot(0)
		}
		return s.Stats().Degraded
	})
}

// loseNextAnswerNaming makes px lose the answer to the next command that
// names the scope key (its hash tag: a write-back of the scope's breaker
// or bucket), after Redis ran it, then calls up (Redis back, for a
// process on local limits to write back to), and waits until that answer
// was lost: 5 s at most, or the test fails.
func loseNextAnswerNaming(t *testing.T, px *redisproxy.Proxy, key string, up func()) {
	t.Helper()
	var once sync.Once
	lost := make(chan struct{})
	px.DropAnswerTo(func(cmd []byte) bool {
		if !bytes.Contains(cmd, []byte(key+"}")) {
			return false
		}
		once.Do(func() { close(lost) })
		return true
	})
	up()
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("the process wrote nothing back")
	}
}
