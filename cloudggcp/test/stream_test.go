package test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	gtransport "google.golang.org/api/transport/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/cloudg/cloudg/cloudggcp"
	"github.com/cloudg/cloudg/resilience"
)

// fakeHealth is a gRPC health service whose Watch, a server-streaming
// RPC, plays the script its request's service names.
type fakeHealth struct {
	healthpb.UnimplementedHealthServer
	opened chan struct{} // a "hold" stream sent its first message
}

func (f *fakeHealth) Watch(req *healthpb.HealthCheckRequest, s healthpb.Health_WatchServer) error {
	serving := &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}
	switch req.GetService() {
	case "eof":
		return s.Send(serving)
	case "exhausted-at-open":
		return status.Error(codes.ResourceExhausted, "quota exceeded")
	case "unavailable-mid-stream":
		if err := s.Send(serving); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "backend went away")
	case "exhausted-mid-stream":
		if err := s.Send(serving); err != nil {
			return err
		}
		return status.Error(codes.ResourceExhausted, "quota exceeded")
	case "silent": // open until the client goes, sending nothing
		<-s.Context().Done()
		return s.Context().Err()
	default: // "hold": open until the client goes
		if err := s.Send(serving); err != nil {
			return err
		}
		<-s.Context().Done()
		return s.Context().Err()
	}
}

var watchScope = resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "health", Operation: "Watch"}

// streamClient returns a health client on a fresh fake on 127.0.0.1,
// its connection made as a Google client makes it, with opts (the
// package's client options).
func streamClient(t *testing.T, opts ...option.ClientOption) healthpb.HealthClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, &fakeHealth{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	opts = append([]option.ClientOption{
		option.WithEndpoint(lis.Addr().String()), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}, opts...)
	conn, err := gtransport.Dial(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return healthpb.NewHealthClient(conn)
}

// A streaming RPC on a client with the interceptors (ClientOption and
// StreamClientOption), made as a Google client makes one (gax.Invoke
// opening the stream, with the Retry option or without), against a real
// gRPC server on 127.0.0.1 (the health service's Watch): the stream's opening is one counted call,
// paced, whose slot goes back once the stream is open; its end is its
// outcome, recorded once: a success at io.EOF, a failure with the
// status it ended with (throttling a give-up, counted towards the
// breaker), its caller's cancellation once it was served a success
// (TestAStreamItsCallerEndsAfterItWasServedIsNotLost), and so is its
// closing by the service with Unavailable once it was served.
func TestAStreamIsGovernedFromItsOpeningToItsEnd(t *testing.T) {
	type want struct {
		calls, throttled, gaveUp, cancelled, lost int64
		failures                                  int
		code                                      codes.Code
	}
	for _, tc := range []struct {
		service string
		retry   bool
		want    want
	}{
		{"eof", false, want{calls: 1, code: codes.OK}},
		{"eof", true, want{calls: 1, code: codes.OK}},
		{"exhausted-at-open", false, want{calls: 1, throttled: 1, gaveUp: 1, lost: 1, failures: 1, code: codes.ResourceExhausted}},
		{"exhausted-at-open", true, want{calls: 1, throttled: 1, gaveUp: 1, lost: 1, failures: 1, code: codes.ResourceExhausted}},
		{"exhausted-mid-stream", false, want{calls: 1, throttled: 1, gaveUp: 1, lost: 1, failures: 1, code: codes.ResourceExhausted}},
		// A served stream the service closes with Unavailable (as it
		// closes a StreamingPull, by design) was served: no throttle, no
		// breaker failure, nothing lost; five of them opened the breaker.
		{"unavailable-mid-stream", false, want{calls: 1, code: codes.Unavailable}},
		{"unavailable-mid-stream", true, want{calls: 1, code: codes.Unavailable}},
		{"hold", false, want{calls: 1, code: codes.Canceled}},
		{"hold", true, want{calls: 1, code: codes.Canceled}},
	} {
		name := tc.service
		if tc.retry {
			name += "/retry"
		}
		t.Run(name, func(t *testing.T) {
			gov, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{MaxConcurrency: 1}})
			if err != nil {
				t.Fatal(err)
			}
			gopts := []cloudggcp.Option{cloudggcp.WithGovernor(gov),
				cloudggcp.WithScopeFunc(func(context.Context, string, any) (resilience.Scope, bool) { return watchScope, true })}
			c := streamClient(t, cloudggcp.ClientOption(gopts...), cloudggcp.StreamClientOption(gopts...))
			base, cancelRun := context.WithCancel(context.Background())
			defer cancelRun()
			run, stats := resilience.WithStats(base)
			run, ledger := resilience.WithLedger(run, "health")
			ctx, cancel := context.WithCancel(run)
			defer cancel()
			var opts []gax.CallOption
			if tc.retry {
				// A deadline of the stream's own, which the option keeps
				// (on a context without one it gives a stream none:
				// cloudggcp's TestARetriedStreamIsNotCutByTheDeadline).
				ctx, cancel = context.WithTimeout(run, time.Minute)
				defer cancel()
				opts = append(opts, cloudggcp.Retry(run, watchScope, gopts...))
			}
			var stream healthpb.Health_WatchClient
			err = gax.Invoke(ctx, func(ctx context.Context, settings gax.CallSettings) error {
				var err error
				stream, err = c.Watch(ctx, &healthpb.HealthCheckRequest{Service: tc.service}, settings.GRPC...)
				return err
			}, opts...)
			if err != nil {
				t.Fatalf("opening the stream: %v", err)
			}
			var end error
			for {
				if _, end = stream.Recv(); end != nil {
					break
				}
				// An open stream holds no slot of the account's: a
				// call (cap 1) is not kept waiting for its lifetime.
				if n := gov.Inspect(watchScope).InFlight; n != 0 {
					t.Errorf("a stream open holds %d slots, want none", n)
				}
				if tc.service == "hold" {
					// The stream's context ends: the run's, for the Retry
					// option's call, whose guard is the run's.
					cancel()
					cancelRun()
				}
			}
			if errors.Is(end, io.EOF) {
				end = nil
			}
			if got := status.Code(end); got != tc.want.code {
				t.Fatalf("the stream ended with %v, want %v", end, tc.want.code)
			}
			// The end is recorded as the stream ends (a context's end, on
			// grpc's goroutine, a moment after Recv returned).
			var got want
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
				tot := gov.Summary(stats).Totals
				snap := gov.Inspect(watchScope)
				got = want{calls: tot.Calls, throttled: tot.Throttled, gaveUp: tot.GaveUp, cancelled: tot.Cancelled,
					lost: int64(ledger.Lost()), failures: snap.Breaker.Failures, code: tc.want.code}
				if got == tc.want && snap.InFlight == 0 || time.Now().After(deadline) {
					break
				}
			}
			if got != tc.want {
				t.Errorf("recorded %+v (ledger %q), want %+v", got, ledger.Describe(), tc.want)
			}
			if n := gov.Inspect(watchScope).InFlight; n != 0 {
				t.Errorf("%d slots held once the stream ended, want none", n)
			}
		})
	}
}

// A stream that fails to open (nothing listens on its address: grpc's
// NewStream returns Unavailable) is recorded as a failed attempt of a
// unary call on the interceptor's own guard is: one counted call, the
// throttle, no breaker failure (gax may retry the opening), and its slot
// given back.
func TestAStreamThatFailsToOpenGivesItsSlotBack(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	gov, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{MaxConcurrency: 1}})
	if err != nil {
		t.Fatal(err)
	}
	gopts := []cloudggcp.Option{cloudggcp.WithGovernor(gov),
		cloudggcp.WithScopeFunc(func(context.Context, string, any) (resilience.Scope, bool) { return watchScope, true })}
	conn, err := gtransport.Dial(context.Background(), option.WithEndpoint(addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
		cloudggcp.StreamClientOption(gopts...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	run, stats := resilience.WithStats(context.Background())
	_, err = healthpb.NewHealthClient(conn).Watch(run, &healthpb.HealthCheckRequest{Service: "eof"})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("opening a stream to nothing: %v, want Unavailable", err)
	}
	tot, snap := gov.Summary(stats).Totals, gov.Inspect(watchScope)
	if tot.Calls != 1 || tot.Throttled != 1 || tot.Lost() != 0 || snap.Breaker.Failures != 0 || snap.InFlight != 0 {
		t.Fatalf("totals %+v, breaker %+v, %d slots held: want one call, throttled, no breaker failure, no slot held",
			tot, snap.Breaker, snap.InFlight)
	}
}

// A stream its caller shuts down by cancelling its context once it was
// open and served (a Watch that received its messages, as every Watch,
// StreamingPull or Listen ends) is not a lost call: the provider served
// it, and the ledger, which marks a task degraded, counts it nowhere; the
// stream is a success. One cancelled before it delivered anything is
// lost as cancelled, as a unary call ended by its context is. Before, both
// were lost, as cancelled (or, for the Retry option's, whose guard's
// context is the run's, as errored: a local error): every run holding a
// Watch read as degraded.
func TestAStreamItsCallerEndsAfterItWasServedIsNotLost(t *testing.T) {
	for _, tc := range []struct {
		name            string
		retry, recv     bool
		cancelled, lost int64
		breakerFailures int
	}{
		{"served", false, true, 0, 0, 0},
		{"served/retry", true, true, 0, 0, 0},
		{"nothing received", false, false, 1, 1, 0},
		{"nothing received/retry", true, false, 1, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gov, err := resilience.NewGovernor(resilience.Config{})
			if err != nil {
				t.Fatal(err)
			}
			gopts := []cloudggcp.Option{cloudggcp.WithGovernor(gov),
				cloudggcp.WithScopeFunc(func(context.Context, string, any) (resilience.Scope, bool) { return watchScope, true })}
			c := streamClient(t, cloudggcp.ClientOption(gopts...), cloudggcp.StreamClientOption(gopts...))
			run, stats := resilience.WithStats(context.Background())
			run, ledger := resilience.WithLedger(run, "health")
			// A deadline of its own, far off, which the stream's end by
			// its caller comes before.
			ctx, cancel := context.WithTimeout(run, time.Hour)
			defer cancel()
			var opts []gax.CallOption
			if tc.retry {
				opts = append(opts, cloudggcp.Retry(run, watchScope, gopts...))
			}
			var stream healthpb.Health_WatchClient
			// A stream that sends nothing for the case that receives
			// nothing: "hold"'s first message, come before the caller's
			// end, would be handed over by a Recv after it.
			service := "hold"
			if !tc.recv {
				service = "silent"
			}
			err = gax.Invoke(ctx, func(ctx context.Context, settings gax.CallSettings) error {
				var err error
				stream, err = c.Watch(ctx, &healthpb.HealthCheckRequest{Service: service}, settings.GRPC...)
				return err
			}, opts...)
			if err != nil {
				t.Fatalf("opening the stream: %v", err)
			}
			if tc.recv {
				if _, err := stream.Recv(); err != nil {
					t.Fatalf("the stream's first message: %v", err)
				}
			}
			cancel() // the caller is done with the stream
			for {
				if _, err = stream.Recv(); err != nil {
					break
				}
			}
			if status.Code(err) != codes.Canceled {
				t.Fatalf("the stream ended with %v, want Canceled", err)
			}
			var tot resilience.Counters
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				tot = gov.Summary(stats).Totals
				if tot.Cancelled == tc.cancelled && int64(ledger.Lost()) == tc.lost && gov.Inspect(watchScope).InFlight == 0 && (tc.lost == 1 || tot.Calls == 1) {
					break
				}
			}
			if tot.Calls != 1 || tot.Cancelled != tc.cancelled || int64(ledger.Lost()) != tc.lost {
				t.Fatalf("calls %d, cancelled %d, ledger %d lost (%q); want 1 call, %d cancelled, %d lost",
					tot.Calls, tot.Cancelled, ledger.Lost(), ledger.Describe(), tc.cancelled, tc.lost)
			}
			if n := gov.Inspect(watchScope).Breaker.Failures; n != tc.breakerFailures {
				t.Fatalf("%d breaker failures, want %d", n, tc.breakerFailures)
			}
		})
	}
}
