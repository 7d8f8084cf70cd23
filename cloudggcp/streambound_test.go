package cloudggcp

import (
	"context"
	"errors"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// tickHealth is a gRPC health service whose Watch, a server stream, sends
// SERVING at once and every 100 s until its caller ends it, and whose
// Check, a unary call, never answers: it returns when its context ends.
type tickHealth struct {
	healthpb.UnimplementedHealthServer
}

func (tickHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	<-ctx.Done()
	return nil, status.FromContextError(ctx.Err()).Err()
}

func (tickHealth) Watch(_ *healthpb.HealthCheckRequest, s healthpb.Health_WatchServer) error {
	tick := time.NewTicker(100 * time.Second)
	defer tick.Stop()
	for {
		if err := s.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
			return err
		}
		select {
		case <-s.Context().Done():
			return s.Context().Err()
		case <-tick.C:
		}
	}
}

var healthScope = resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "health", Operation: "Watch"}

// healthClient returns a health client (grpc's generated client) on a
// tickHealth served on bufconn, for a synctest bubble, its connection
// made with opts. Call it inside the bubble.
func healthClient(t *testing.T, opts ...grpc.DialOption) healthpb.HealthClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, tickHealth{})
	go gs.Serve(lis)
	opts = append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	}, opts...)
	conn, err := grpc.NewClient("passthrough:///bufconn", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		gs.Stop()
		lis.Close()
	})
	return healthpb.NewHealthClient(conn)
}

// The Retry option bounds a unary call whose context has no deadline by
// the provider's deadline (900 s), and no stream: a generated client
// gives a streaming method no timeout, since gax.Invoke cancels the
// context of its timeout as it returns, which is as soon as the stream is
// open. A stream opened with the option (a Watch, held open by its
// caller) on a client with the stream interceptor is served past the
// deadline until its caller ends it, and, served, is a success. Before,
// the option's timeout cut it as gax.Invoke returned: its first Recv
// returned Canceled.
func TestARetriedStreamIsNotCutByTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{})
		gopts := []Option{WithGovernor(gov),
			WithScopeFunc(func(context.Context, string, any) (resilience.Scope, bool) { return healthScope, true })}
		c := healthClient(t, grpc.WithChainUnaryInterceptor(UnaryClientInterceptor(gopts...)),
			grpc.WithChainStreamInterceptor(StreamClientInterceptor(gopts...)))
		run, stats := resilience.WithStats(context.Background())
		run, ledger := resilience.WithLedger(run, "health")
		ctx, cancel := context.WithCancel(run) // the stream's: no deadline
		defer cancel()
		var stream healthpb.Health_WatchClient
		// As a generated client opens a stream: gax.Invoke, with the
		// method's options and the caller's.
		err := gax.Invoke(ctx, func(ctx context.Context, settings gax.CallSettings) error {
			var err error
			stream, err = c.Watch(ctx, &healthpb.HealthCheckRequest{}, settings.GRPC...)
			return err
		}, Retry(run, healthScope, gopts...))
		if err != nil {
			t.Fatalf("opening the stream: %v", err)
		}
		start, got := time.Now(), 0
		for time.Since(start) < 20*time.Minute {
			if _, err := stream.Recv(); err != nil {
				t.Fatalf("a stream opened with the Retry option on a context without a deadline ended with %v after %v, %d messages in; "+
					"want it open until its caller ends it, past the provider's deadline (15m0s)", err, time.Since(start), got)
			}
			got++
		}
		cancel() // the caller is done with the stream
		for err == nil {
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.Canceled {
			t.Fatalf("the stream ended with %v, want Canceled", err)
		}
		synctest.Wait() // the stream's end, recorded on grpc's goroutine
		if tot := gov.Summary(stats).Totals; tot.Calls != 1 || tot.Cancelled != 0 || ledger.Lost() != 0 {
			t.Fatalf("calls %d, cancelled %d, ledger %d lost (%q); want 1 call, served, nothing lost",
				tot.Calls, tot.Cancelled, ledger.Lost(), ledger.Describe())
		}
	})
}

// A unary call made with the Retry option on a context without a deadline
// is still bounded by the provider's deadline (900 s) against a server
// that never answers: GetFeed (the asset client's, which gives it a
// timeout of its own, 60 s, that the option's replaces) on a client with
// the interceptor or without it, and a call its client gives no timeout
// (the health service's Check through gax.Invoke, as a generated method
// without one is made) on a client with the interceptor, which bounds
// each of its attempts.
func TestARetriedUnaryCallIsBoundedByTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(t *testing.T, gov *resilience.Governor, run, ctx context.Context) error
	}{
		{"GetFeed", func(t *testing.T, gov *resilience.Governor, run, ctx context.Context) error {
			srv := newFake(0)
			srv.fail("GetFeed", "", errHold)
			client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
			_, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, Retry(run, feedScope(), WithGovernor(gov)))
			return err
		}},
		{"GetFeed/without the interceptor", func(t *testing.T, gov *resilience.Governor, run, ctx context.Context) error {
			srv := newFake(0)
			srv.fail("GetFeed", "", errHold)
			client := startBuf(t, srv)
			_, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, Retry(run, feedScope(), WithGovernor(gov)))
			return err
		}},
		{"Check, no timeout of its client's", func(t *testing.T, gov *resilience.Governor, run, ctx context.Context) error {
			gopts := []Option{WithGovernor(gov),
				WithScopeFunc(func(context.Context, string, any) (resilience.Scope, bool) { return healthScope, true })}
			c := healthClient(t, grpc.WithChainUnaryInterceptor(UnaryClientInterceptor(gopts...)))
			return gax.Invoke(ctx, func(ctx context.Context, settings gax.CallSettings) error {
				_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, settings.GRPC...)
				return err
			}, Retry(run, healthScope, gopts...))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gov := newGov(t, resilience.Config{})
				run, _ := resilience.WithStats(context.Background())
				ctx, cancel := context.WithCancel(run) // the call's: no deadline
				defer cancel()
				start := time.Now()
				errc := make(chan error, 1)
				go func() { errc <- tc.call(t, gov, run, ctx) }()
				select {
				case err := <-errc:
					if status.Code(err) != codes.DeadlineExceeded && !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 15*time.Minute {
						t.Fatalf("a call to a server that never answers ended with %v after %v; want DeadlineExceeded at the provider's deadline (15m0s)",
							err, time.Since(start))
					}
				case <-time.After(time.Hour):
					t.Fatalf("a call to a server that never answers is still out after %v; want DeadlineExceeded at the provider's deadline (15m0s)",
						time.Since(start))
				}
			})
		})
	}
}
