// Package bench measures the governor's hot path against a bare call and
// against what a Go user would compose instead: failsafe-go's retry,
// circuit breaker, rate limiter and bulkhead, and x/time/rate with
// sony/gobreaker and a channel semaphore by hand. It is its own module so
// that the core requires none of them.
//
//	go test -run '^$' -bench . -benchmem ./bench/
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/sony/gobreaker/v2"
	"golang.org/x/time/rate"

	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// A rate high enough that no benchmark ever waits: every layer does its
// bookkeeping, none sleeps.
const fast = 1e9

var scope = resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}

//go:noinline
func work(context.Context) error { return nil }

// governor returns a governor with every layer on: provider, account and
// leaf buckets, breaker, bulkhead, retry budget.
func governor(b *testing.B, opts ...resilience.GovernorOption) *resilience.Governor {
	g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{
		GlobalMaxRPS:  new(float64(fast)),
		GlobalBurst:   fast,
		AccountMaxRPS: new(float64(fast)),
		AccountBurst:  fast,
		Services:      map[string]resilience.ServiceConfig{"ec2": {MaxRPS: fast, Burst: fast}},
	}}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// nopObserver receives every event and does nothing with it: the cost of
// making the events.
type nopObserver struct{}

func (nopObserver) Observe(observe.Event) {}

// trio is the hand-rolled composition: x/time/rate, gobreaker, a channel.
type trio struct {
	lim *rate.Limiter
	cb  *gobreaker.CircuitBreaker[struct{}]
	sem chan struct{}
}

func newTrio() *trio {
	return &trio{
		lim: rate.NewLimiter(rate.Limit(fast), int(fast)),
		cb:  gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{Name: "ec2", Timeout: time.Minute}),
		sem: make(chan struct{}, 128),
	}
}

func (t *trio) call(ctx context.Context, fn func(context.Context) error) error {
	if err := t.lim.Wait(ctx); err != nil {
		return err
	}
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-t.sem }()
	_, err := t.cb.Execute(func() (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
}

// failsafeExecutor composes retry, circuit breaker, rate limiter and
// bulkhead, outermost first.
func failsafeExecutor() failsafe.Executor[any] {
	return failsafe.With[any](
		retrypolicy.NewBuilder[any]().WithMaxRetries(8).WithBackoff(500*time.Millisecond, 60*time.Second).Build(),
		circuitbreaker.NewBuilder[any]().WithFailureThreshold(5).WithDelay(time.Minute).Build(),
		ratelimiter.NewBursty[any](uint(fast), time.Second),
		bulkhead.New[any](128),
	)
}

func BenchmarkCall(b *testing.B) {
	ctx := context.Background()
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := work(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("governed", func(b *testing.B) {
		g := governor(b)
		opt := resilience.WithGovernor(g)
		b.ReportAllocs()
		for b.Loop() {
			if err := resilience.Do(ctx, scope, work, opt); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("governed-with-observer", func(b *testing.B) {
		g := governor(b, resilience.WithObserver(nopObserver{}))
		opt := resilience.WithGovernor(g)
		b.ReportAllocs()
		for b.Loop() {
			if err := resilience.Do(ctx, scope, work, opt); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bound", func(b *testing.B) {
		g := governor(b)
		bound, _ := g.Bind(scope)
		b.ReportAllocs()
		for b.Loop() {
			if err := bound.Do(ctx, work); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("governed-nesting", func(b *testing.B) {
		g := governor(b)
		opts := []resilience.CallOption{resilience.WithGovernor(g), resilience.WithNestedCalls()}
		b.ReportAllocs()
		for b.Loop() {
			if err := resilience.Do(ctx, scope, work, opts...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("governed-with-stats", func(b *testing.B) {
		g := governor(b)
		opt := resilience.WithGovernor(g)
		sctx, _ := resilience.WithStats(ctx)
		b.ReportAllocs()
		for b.Loop() {
			if err := resilience.Do(sctx, scope, work, opt); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("guard-sdk-hooks", func(b *testing.B) {
		// What an SDK integration does per call: the Guard's verbs from
		// the SDK's hooks around the attempt.
		g := governor(b)
		b.ReportAllocs()
		for b.Loop() {
			gd, err := g.Begin(ctx, scope)
			if err != nil {
				b.Fatal(err)
			}
			if err := gd.Enter(ctx); err != nil {
				b.Fatal(err)
			}
			err = work(ctx)
			gd.After(err)
			gd.End(err)
		}
	})
	b.Run("hand-rolled-rate-gobreaker-chan", func(b *testing.B) {
		t := newTrio()
		b.ReportAllocs()
		for b.Loop() {
			if err := t.call(ctx, work); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("failsafe-go", func(b *testing.B) {
		ex := failsafeExecutor()
		run := func() error { return work(ctx) }
		b.ReportAllocs()
		for b.Loop() {
			if err := ex.Run(run); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCallParallel(b *testing.B) {
	ctx := context.Background()
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				work(ctx)
			}
		})
	})
	b.Run("governed", func(b *testing.B) {
		g := governor(b)
		opt := resilience.WithGovernor(g)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := resilience.Do(ctx, scope, work, opt); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("hand-rolled-rate-gobreaker-chan", func(b *testing.B) {
		t := newTrio()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := t.call(ctx, work); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("failsafe-go", func(b *testing.B) {
		ex := failsafeExecutor()
		run := func() error { return work(ctx) }
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := ex.Run(run); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkDistinctScopes spreads calls over 10,000 scopes (100 accounts x
// 100 operations): the governor resolves each scope in its tables; the
// alternatives keep one set of policies per scope in a locked map, as a
// user would.
func BenchmarkDistinctScopes(b *testing.B) {
	const accounts, ops = 100, 100
	scopes := make([]resilience.Scope, 0, accounts*ops)
	keys := make([]string, 0, accounts*ops)
	for a := range accounts {
		for o := range ops {
			s := resilience.Scope{Provider: "aws", Account: fmt.Sprintf("%012d", a), Region: "us-east-1", Service: "ec2", Operation: fmt.Sprintf("Describe%d", o)}
			scopes = append(scopes, s)
			keys = append(keys, s.String())
		}
	}
	ctx := context.Background()
	b.Run("governed-10000", func(b *testing.B) {
		g := governor(b)
		opt := resilience.WithGovernor(g)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := resilience.Do(ctx, scopes[i%len(scopes)], work, opt); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("hand-rolled-10000", func(b *testing.B) {
		var mu sync.RWMutex
		reg := map[string]*trio{}
		get := func(k string) *trio {
			mu.RLock()
			t := reg[k]
			mu.RUnlock()
			if t == nil {
				mu.Lock()
				if t = reg[k]; t == nil {
					t = newTrio()
					reg[k] = t
				}
				mu.Unlock()
			}
			return t
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := get(keys[i%len(keys)]).call(ctx, work); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("failsafe-go-10000", func(b *testing.B) {
		var mu sync.RWMutex
		reg := map[string]failsafe.Executor[any]{}
		get := func(k string) failsafe.Executor[any] {
			mu.RLock()
			ex := reg[k]
			mu.RUnlock()
			if ex == nil {
				mu.Lock()
				if ex = reg[k]; ex == nil {
					ex = failsafeExecutor()
					reg[k] = ex
				}
				mu.Unlock()
			}
			return ex
		}
		run := func() error { return work(ctx) }
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := get(keys[i%len(keys)]).Run(run); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// TestGovernedCallDoesNotAllocate pins the zero-allocation success path.
func TestGovernedCallDoesNotAllocate(t *testing.T) {
	g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{
		GlobalMaxRPS: new(float64(fast)), AccountMaxRPS: new(float64(fast)),
		Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: fast, Burst: fast}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	opt := resilience.WithGovernor(g)
	ctx, _ := resilience.WithStats(context.Background())
	resilience.Do(ctx, scope, work, opt)
	if n := testing.AllocsPerRun(1000, func() { resilience.Do(ctx, scope, work, opt) }); n != 0 {
		t.Fatalf("%v allocations per governed call", n)
	}
	n := testing.AllocsPerRun(1000, func() {
		resilience.Call(ctx, scope, func(context.Context) (int, error) { return 1, nil }, opt)
	})
	if n != 0 {
		t.Fatalf("%v allocations per Call", n)
	}
}

// TestObservedCallDoesNotAllocate pins the success path of a governor whose
// events go to a logger (none of a success is logged) or to an observer
// (each event passed by value).
func TestObservedCallDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	for name, opt := range map[string]resilience.GovernorOption{
		"logger":   resilience.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		"observer": resilience.WithObserver(nopObserver{}),
	} {
		g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{
			Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: fast, Burst: fast}},
		}}, opt)
		if err != nil {
			t.Fatal(err)
		}
		gov := resilience.WithGovernor(g)
		resilience.Do(ctx, scope, work, gov)
		if n := testing.AllocsPerRun(1000, func() { resilience.Do(ctx, scope, work, gov) }); n != 0 {
			t.Errorf("with a %s: %v allocations per governed call", name, n)
		}
	}
}
