package resilience

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/bulkhead"
	"github.com/cloudg/cloudg/state"
)

// apiErr is an SDK-shaped error: code, status, headers by method sets.
type apiErr struct {
	code   string
	status int
	msg    string
	header http.Header
}

func (e *apiErr) Error() string {
	if e.msg != "" {
		return e.code + ": " + e.msg
	}
	return e.code
}
func (e *apiErr) ErrorCode() string   { return e.code }
func (e *apiErr) HTTPStatusCode() int { return e.status }
func (e *apiErr) Header() http.Header { return e.header }

func throttle() error { return &apiErr{code: "Throttling", status: 400, msg: "Rate exceeded"} }

func throttleAfter(d time.Duration) error {
	return &apiErr{code: "Throttling", status: 400, msg: "Rate exceeded",
		header: http.Header{"Retry-After": {strconv.Itoa(int(d.Seconds()))}}}
}

func transientErr() error { return &apiErr{code: "InternalError", status: 500} }

func accessDenied() error { return &apiErr{code: "AccessDenied", status: 403} }

var (
	ec2Vpcs    = Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
	ec2Subnets = Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeSubnets"}
	iamUsers   = Scope{Provider: "aws", Account: "123456789012", Service: "iam", Operation: "ListUsers"}
)

// throttledStreak throttles five calls of sc, 1.5 s apart, and leaves
// them open (after their answer, before their retry or End, as an SDK's
// calls between attempts are): a streak of failures over six seconds,
// which makes the scope dead once it spans breaker_dead_seconds (10 s),
// while its breaker, which counts a call as it ends, stays closed. It
// returns what ends the calls. Inside a synctest bubble, in virtual time.
func throttledStreak(t *testing.T, g *Governor, sc Scope) (end func()) {
	t.Helper()
	var gds []*Guard
	for i := range 5 {
		if i > 0 {
			time.Sleep(1500 * time.Millisecond)
		}
		gd, _ := g.Begin(context.Background(), sc)
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		gd.Release()
		gd.After(throttle())
		gds = append(gds, gd)
	}
	return func() {
		for _, gd := range gds {
			gd.End(throttle())
		}
	}
}

// newGov makes a governor with a fixed random source; inside a synctest
// bubble it runs in virtual time.
func newGov(t *testing.T, cfg Config, opts ...GovernorOption) *Governor {
	t.Helper()
	opts = append([]GovernorOption{WithRandom(rand.NewPCG(1, 2))}, opts...)
	g, err := NewGovernor(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// failing returns a fn that fails with errs in turn, then succeeds; it
// counts its calls in *n.
func failing(n *int, errs ...error) func(context.Context) error {
	return func(context.Context) error {
		*n++
		if *n <= len(errs) {
			return errs[*n-1]
		}
		return nil
	}
}

func always(n *int, err error) func(context.Context) error {
	return func(context.Context) error {
		*n++
		return err
	}
}

func rate(g *Governor, s Scope) float64 { return g.Inspect(s).Leaf.Rate }

// logBuffer collects slog output.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) contains(s string) bool { return strings.Contains(b.String(), s) }

// collectedLine waits, collecting, for the line a cleanup of a Guard
// dropped without End writes: the cleanup gives the slot back before it
// logs, on the runtime's cleanup goroutine, so that the line may come a
// moment after the slot shows free. It reports whether the line came.
func (b *logBuffer) collectedLine() bool {
	for i := 0; i < 1000; i++ {
		if b.contains("dropped without End") {
			return true
		}
		runtime.GC()
	}
	return false
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

func (t *scopeTable) accountBulkhead(name string) *bulkhead.Bulkhead {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.accounts[name].bulkhead
}

// sk is the scope of key, for the Summary's maps.
func sk(key string) Scope {
	s, err := state.ParseScope(key)
	if err != nil {
		panic(err)
	}
	return s
}

// throttledRetry begins a call of scope with ctx, sends its first attempt,
// reports a throttled answer and has Retry allow the retry: the guard is
// ready for the retry's Enter, Pace or Admit.
func throttledRetry(t *testing.T, g *Governor, ctx context.Context, scope Scope) *Guard {
	t.Helper()
	return throttledRetryBy(t, g, ctx, scope, throttle())
}

// throttledRetryBy is throttledRetry with the throttled answer given:
// the test fails if After does not read answer as THROTTLED.
func throttledRetryBy(t *testing.T, g *Governor, ctx context.Context, scope Scope, answer error) *Guard {
	t.Helper()
	gd, err := g.Begin(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	if err := gd.Enter(ctx); err != nil {
		t.Fatal(err)
	}
	gd.Release()
	if k := gd.After(answer); k != Throttled {
		t.Fatalf("After(%v) = %v, want THROTTLED", answer, k)
	}
	if _, err := gd.Retry(0); err != nil {
		t.Fatal(err)
	}
	return gd
}
