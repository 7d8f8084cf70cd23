package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/resilience"
)

// Every test runs against an in-process Redis (miniredis, which runs the
// Lua scripts), and again against a real redis-server when
// CLOUDG_REDIS_URL names one (./scripts/test starts one on 127.0.0.1).
// Redis keeps its own time (TIME), so these tests wait in real time.

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

func (p *process) do(t testing.TB, sc resilience.Scope, fn func(context.Context) error, opts ...resilience.Option) error {
	return resilience.Do(context.Background(), sc, fn, append([]resilience.Option{resilience.WithGovernor(p.gov)}, opts...)...)
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
