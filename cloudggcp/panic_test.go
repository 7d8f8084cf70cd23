package cloudggcp

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
)

// boom is the value the caller's code panics with: the caller must get
// this very value back.
var boom = &struct{ s string }{"boom"}

// panicking is a client option whose interceptor, after the package's,
// panics instead of sending.
var panicking = option.WithGRPCDialOption(grpc.WithChainUnaryInterceptor(
	func(context.Context, string, any, any, *grpc.ClientConn, grpc.UnaryInvoker, ...grpc.CallOption) error {
		panic(boom)
	}))

// Code of the caller's that panics under a governed gRPC call, over
// loopback TCP (the invoker under the interceptor, with and without the
// Retry option; the client Do runs; a listing's page) ends the call as
// lost to the panic, once, and the panic reaches the caller as it was: the
// slot is given back (the next call, under a cap of one, goes at once),
// and the one call counted has that one outcome.
func TestPanicIsRecordedAndGoesOnOverTCP(t *testing.T) {
	getFeed := func(c assetClient, ctx context.Context, opts ...gax.CallOption) error {
		_, err := c.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, opts...)
		return err
	}
	for _, tc := range []struct {
		name        string
		interceptor bool
		call        func(ctx context.Context, gov *resilience.Governor, c assetClient) error
	}{
		{"interceptor", true, func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
			return getFeed(c, ctx)
		}},
		{"Retry option with the interceptor", true, func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
			return getFeed(c, ctx, Retry(ctx, feedScope(), WithGovernor(gov)))
		}},
		{"Do", false, func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
			_, err := Do(ctx, feedScope(), func(ctx context.Context, opts ...gax.CallOption) (*assetpb.Feed, error) {
				return c.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, opts...)
			}, WithGovernor(gov))
			return err
		}},
		{"listing", false, func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
			_, err := ListAssets(ctx, c, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFake(5)
			gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{MaxConcurrency: 1}})
			var opts []option.ClientOption
			if tc.interceptor {
				opts = append(opts, ClientOption(WithGovernor(gov)))
			}
			client := startTCP(t, srv, append(opts, panicking)...)
			ctx, stats, ledger := newRun("assets")
			panickedThenNext(t, ctx, gov, stats, ledger,
				func(ctx context.Context) error { return tc.call(ctx, gov, client) },
				func(ctx context.Context) error { return tc.call(ctx, gov, startTCP(t, srv, opts...)) })
		})
	}
}

// panicOnThrottle is a log handler of the caller's that panics with boom
// on the governor's line for a throttled answer (which Guard.After
// writes) and drops every other line.
type panicOnThrottle struct{}

func (panicOnThrottle) Enabled(context.Context, slog.Level) bool { return true }

func (panicOnThrottle) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "cloudg: throttled" {
		panic(boom)
	}
	return nil
}

func (h panicOnThrottle) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h panicOnThrottle) WithGroup(string) slog.Handler      { return h }

// A panic of the caller's code while the interceptor records an attempt's
// answer (the governor's log handler, on a throttled answer, with and
// without the Retry option), over loopback TCP, ends the call as lost to
// the panic, once, and the panic reaches the caller as it was: the slot
// is given back (the next call, under a cap of one, goes at once), not
// held until the garbage collector finds the call's guard.
func TestAPanicRecordingTheAnswerGivesTheSlotBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		retry bool
	}{{"interceptor", false}, {"Retry option with the interceptor", true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFake(5)
			srv.fail("GetFeed", "", throttled(0))
			gov, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{MaxConcurrency: 1}},
				resilience.WithLogger(slog.New(panicOnThrottle{})))
			if err != nil {
				t.Fatal(err)
			}
			client := startTCP(t, srv, ClientOption(WithGovernor(gov)))
			getFeed := func(ctx context.Context) error {
				var opts []gax.CallOption
				if tc.retry {
					opts = append(opts, Retry(ctx, feedScope(), WithGovernor(gov)))
				}
				_, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, opts...)
				return err
			}
			ctx, stats, ledger := newRun("feeds")
			panickedThenNext(t, ctx, gov, stats, ledger, getFeed, getFeed)
		})
	}
}

// panickedThenNext runs call, which panics with boom, and checks that the
// caller recovers boom, that no slot is held, that the call is counted
// once and lost once as panicked, and that next, a call of the same
// account, gets the slot within 10 s and goes.
func panickedThenNext(t *testing.T, ctx context.Context, gov *resilience.Governor, stats *resilience.Stats, ledger *resilience.Ledger, call, next func(context.Context) error) {
	t.Helper()
	if r := func() (r any) {
		defer func() { r = recover() }()
		_ = call(ctx)
		return nil
	}(); r != boom {
		t.Fatalf("the caller got %v, want the panic's own value", r)
	}
	if in := gov.Inspect(feedScope()); in.InFlight != 0 {
		t.Fatalf("%d slots held after the panic, want none", in.InFlight)
	}
	if tot := gov.Summary(stats).Totals; tot.Calls != 1 {
		t.Errorf("%d calls counted, want the 1 that panicked", tot.Calls)
	}
	lostOnly(t, gov, stats, ledger, resilience.LossPanicked, 1)
	nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := next(nctx); err != nil {
		t.Fatalf("the next call: %v (the slot was not given back)", err)
	}
	lostOnly(t, gov, stats, ledger, resilience.LossPanicked, 1)
}
