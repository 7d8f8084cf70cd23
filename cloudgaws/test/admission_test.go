package test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/pool"
	"github.com/cloudg/cloudg/resilience"
)

// admissionRec records what the governor tells a scheduler of a task's
// first call (resilience.WithAdmission).
type admissionRec struct {
	decided, deferred atomic.Int32
}

func (a *admissionRec) Decided()                      { a.decided.Add(1) }
func (a *admissionRec) Deferred(time.Duration, error) { a.deferred.Add(1) }

// A call of a disabled provider goes at once, ungoverned, and decides the
// admission its context carries (a scheduler's hold on the scope's next
// task, package pool's), as the core's calls of a disabled provider do:
// otherwise the scheduler holds the scope's next task back until the hold
// times out, and the tasks of an ungoverned scope run one after another.
func TestADisabledProvidersCallDecidesItsAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		for _, enabled := range []bool{true, false} {
			cfg, _ := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{Enabled: ptr(enabled)}})
			var a admissionRec
			ctx := resilience.WithAdmission(context.Background(), &a, 0)
			client := ec2.NewFromConfig(cfg)
			for range 2 {
				if err := describeVpcs(ctx, client); err != nil {
					t.Fatal(err)
				}
			}
			if a.decided.Load() != 1 || a.deferred.Load() != 0 {
				t.Errorf("enabled %v: decided %d times, deferred %d; want 1 and 0", enabled, a.decided.Load(), a.deferred.Load())
			}
		}
	})
}

// So the tasks of a disabled provider's scope run side by side on package
// pool: 8 one-second DescribeVpcs calls on 8 workers take 1 s (each task
// held the next one back 10 ms, package pool's hold, before the fix:
// 1.07 s).
func TestADisabledProvidersTasksRunTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.hold = func(*http.Request) { time.Sleep(time.Second) }
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{Enabled: ptr(false)}})
		scope, err := cloudgaws.Scope(cfg, ec2.ServiceID, "DescribeVpcs")
		if err != nil {
			t.Fatal(err)
		}
		p, ctx := pool.New(context.Background(), pool.Workers(8), pool.WithGovernor(g))
		client := ec2.NewFromConfig(cfg)
		start := time.Now()
		for range 8 {
			p.Go(ctx, scope, func(ctx context.Context) error { return describeVpcs(ctx, client) })
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != time.Second {
			t.Fatalf("took %v, want 1s", took)
		}
	})
}

// A task's first SDK call that its scheduler's admission defers reaches
// the task through the SDK's own error wrapping (a *smithy.OperationError
// around cloudgaws' *ThrottlingError) still saying so:
// errors.Is(err, resilience.ErrDeferred), which a task uses to return at
// once and not count the call as failed. A refusal of WithMaxWait, with
// the same *resilience.WouldWaitError, is a lost call and does not match.
func TestADeferredFirstSDKCallSaysErrDeferred(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, _ := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{Adaptive: ptr(false), Services: map[string]resilience.ServiceConfig{
			"ec2": {MaxRPS: 1, Burst: 1},
		}}})
		client := ec2.NewFromConfig(cfg)
		if err := describeVpcs(context.Background(), client); err != nil { // the only token
			t.Fatal(err)
		}
		var a admissionRec
		err := describeVpcs(resilience.WithAdmission(context.Background(), &a, 0), client)
		var ww *resilience.WouldWaitError
		if !errors.As(err, &ww) || !errors.Is(err, resilience.ErrDeferred) || a.deferred.Load() != 1 {
			t.Errorf("the first call under an admission, no token: %T %v (deferred %d); want errors.Is(err, resilience.ErrDeferred)", err, err, a.deferred.Load())
		}
		err = describeVpcs(resilience.WithMaxWait(context.Background(), 0), client)
		if !errors.As(err, &ww) || errors.Is(err, resilience.ErrDeferred) {
			t.Errorf("a call under WithMaxWait(0), no token: %T %v; want a *resilience.WouldWaitError that is not ErrDeferred", err, err)
		}
	})
}
