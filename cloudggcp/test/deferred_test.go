package test

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	gax "github.com/googleapis/gax-go/v2"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/cloudg/cloudg/cloudggcp"
	"github.com/cloudg/cloudg/resilience"
)

// admissionRec records what the governor tells a scheduler of a task's
// first call (resilience.WithAdmission).
type admissionRec struct{ deferred atomic.Int32 }

func (a *admissionRec) Decided()                      {}
func (a *admissionRec) Deferred(time.Duration, error) { a.deferred.Add(1) }

// saysDeferred checks what call returns for a task's first call that its
// scheduler's admission defers (errors.Is(err, resilience.ErrDeferred),
// the admission told once), and for a refusal of WithMaxWait of the same
// kind (a *resilience.WouldWaitError that is not ErrDeferred), once call
// has taken the scope's only token.
func saysDeferred(t *testing.T, call func(ctx context.Context) error) {
	t.Helper()
	if err := call(context.Background()); err != nil { // the only token
		t.Fatal(err)
	}
	var a admissionRec
	err := call(resilience.WithAdmission(context.Background(), &a, 0))
	var ww *resilience.WouldWaitError
	if !errors.As(err, &ww) || !errors.Is(err, resilience.ErrDeferred) || a.deferred.Load() != 1 {
		t.Errorf("the first call under an admission, no token: %T %v (deferred %d); want errors.Is(err, resilience.ErrDeferred)", err, err, a.deferred.Load())
	}
	err = call(resilience.WithMaxWait(context.Background(), 0))
	if !errors.As(err, &ww) || errors.Is(err, resilience.ErrDeferred) {
		t.Errorf("a call under WithMaxWait(0), no token: %T %v; want a *resilience.WouldWaitError that is not ErrDeferred", err, err)
	}
}

// A task's first call of the real Compute REST client (RESTClientOption:
// cloudghttp's Transport under net/http's *url.Error and gax's retry
// loop) that its scheduler's admission defers reaches the task saying so;
// a WithMaxWait refusal does not. Nothing is sent after the first call.
// One token per 100 s: no token comes back during the test.
func TestADeferredFirstRESTCallSaysErrDeferred(t *testing.T) {
	f, c, _ := setup(t, func(pc *resilience.ProviderConfig) {
		pc.Adaptive = new(false)
		pc.Services["compute.instances_get"] = resilience.ServiceConfig{MaxRPS: 0.01, Burst: 1}
	})
	get := &computepb.GetInstanceRequest{Project: "p1", Zone: "europe-west1-b", Instance: "vm-1"}
	saysDeferred(t, func(ctx context.Context) error {
		_, err := c.Get(ctx, get)
		return err
	})
	if n := len(f.hitsOf("get")); n != 1 {
		t.Errorf("%d requests sent, want the first alone", n)
	}
}

// So for the opening of a stream (StreamClientOption; gax.Invoke opening
// it as a Google client does, with the Retry option or without), the
// task's first call, against the health service's Watch on 127.0.0.1.
func TestADeferredFirstStreamSaysErrDeferred(t *testing.T) {
	for _, retry := range []bool{false, true} {
		t.Run(map[bool]string{false: "interceptor", true: "Retry option"}[retry], func(t *testing.T) { firstStream(t, retry) })
	}
}

// firstStream opens a stream on a fresh governor whose Watch scope has a
// token per 100 s, with the Retry option or without.
func firstStream(t *testing.T, retry bool) {
	gov, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{Adaptive: new(false),
		Services: map[string]resilience.ServiceConfig{"health.Watch": {MaxRPS: 0.01, Burst: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	gopts := []cloudggcp.Option{cloudggcp.WithGovernor(gov),
		cloudggcp.WithScopeFunc(func(context.Context, string, any) (resilience.Scope, bool) { return watchScope, true })}
	c := streamClient(t, cloudggcp.ClientOption(gopts...), cloudggcp.StreamClientOption(gopts...))
	saysDeferred(t, func(ctx context.Context) error {
		var opts []gax.CallOption
		if retry {
			opts = append(opts, cloudggcp.Retry(ctx, watchScope, gopts...))
		}
		return gax.Invoke(ctx, func(ctx context.Context, settings gax.CallSettings) error {
			stream, err := c.Watch(ctx, &healthpb.HealthCheckRequest{Service: "eof"}, settings.GRPC...)
			if err != nil {
				return err
			}
			for {
				if _, err := stream.Recv(); errors.Is(err, io.EOF) {
					return nil // the fake's "eof" ends the stream after one message
				} else if err != nil {
					return err
				}
			}
		}, opts...)
	})
}
