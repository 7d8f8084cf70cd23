package test

import (
	"context"
	"errors"
	"io"
	"testing"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/cloudg/cloudg/cloudggcp"
	"github.com/cloudg/cloudg/resilience"
)

// A client given StreamClientOption twice governs each stream once: its
// opening one counted call and token, its end recorded once. Before, the
// second interceptor, chained after the first, governed the opening again
// and recorded the end again: "calls 2, throttled 2, gave up 2" for one
// stream that ended throttled.
func TestAStreamGivenTheOptionTwiceIsGovernedOnce(t *testing.T) {
	for _, tc := range []struct {
		service                 string
		throttled, gaveUp, lost int64
	}{
		{"eof", 0, 0, 0},
		{"exhausted-mid-stream", 1, 1, 1},
	} {
		t.Run(tc.service, func(t *testing.T) {
			gov, err := resilience.NewGovernor(resilience.Config{})
			if err != nil {
				t.Fatal(err)
			}
			gopts := []cloudggcp.Option{cloudggcp.WithGovernor(gov),
				cloudggcp.WithScopeFunc(func(context.Context, string, any) (resilience.Scope, bool) { return watchScope, true })}
			c := streamClient(t, cloudggcp.StreamClientOption(gopts...), cloudggcp.StreamClientOption(gopts...))
			run, stats := resilience.WithStats(context.Background())
			run, ledger := resilience.WithLedger(run, "health")
			stream, err := c.Watch(run, &healthpb.HealthCheckRequest{Service: tc.service})
			if err != nil {
				t.Fatalf("opening the stream: %v", err)
			}
			for {
				if _, err = stream.Recv(); err != nil {
					break
				}
			}
			if tc.throttled == 0 && !errors.Is(err, io.EOF) {
				t.Fatalf("the stream ended with %v, want io.EOF", err)
			}
			// The end is recorded as the Recv that reads it returns
			// (grpc.OnFinish, on the reading goroutine).
			tot := gov.Summary(stats).Totals
			if tot.Calls != 1 || tot.Throttled != tc.throttled || tot.GaveUp != tc.gaveUp || int64(ledger.Lost()) != tc.lost {
				t.Fatalf("totals %+v, ledger %d lost; want 1 call, %d throttled, %d gave up, %d lost",
					tot, ledger.Lost(), tc.throttled, tc.gaveUp, tc.lost)
			}
			if n := gov.Inspect(watchScope).InFlight; n != 0 {
				t.Fatalf("%d slots held, want none", n)
			}
		})
	}
}
