package cloudggcp

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// internalError is a transient answer whose RetryInfo asks for delay
// before the retry: the pause before the retry is delay, and, unlike a
// throttle's hint, it does not pause the scope (which would hold the calls
// that open the breaker until the pause ends).
func internalError(delay time.Duration) error {
	st := status.New(codes.Internal, "internal error")
	if delay > 0 {
		st, _ = st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	}
	return st.Err()
}

// openBreaker opens the breaker of scope: five calls of it give up
// throttled, one after another.
func openBreaker(gov *resilience.Governor, scope resilience.Scope) {
	for range 5 {
		_ = resilience.Do(context.Background(), scope, func(context.Context) error { return throttled(0) },
			resilience.WithGovernor(gov), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
	}
}

// cutFlavour is a flavour of a governed unary call or listing whose
// backoff the Retryer sleeps: rpc is the RPC it makes, interceptor whether
// the client has the interceptor.
type cutFlavour struct {
	name        string
	rpc         string
	interceptor bool
	call        func(ctx context.Context, gov *resilience.Governor, c assetClient) error
}

var cutFlavours = []cutFlavour{
	{"Do", "GetFeed", false, func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
		_, err := Do(ctx, feedScope(), func(ctx context.Context, opts ...gax.CallOption) (*assetpb.Feed, error) {
			return c.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, opts...)
		}, WithGovernor(gov))
		return err
	}},
	{"listing", RPCListAssets, false, func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
		_, err := ListAssets(ctx, c, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
		return err
	}},
	{"Retry option with the interceptor", "GetFeed", true, retryOptionCall},
}

// retryOptionCall is a GetFeed call made with the Retry option.
func retryOptionCall(ctx context.Context, gov *resilience.Governor, c assetClient) error {
	_, err := c.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, Retry(ctx, feedScope(), WithGovernor(gov)))
	return err
}

// pauseRun is a call whose scope's breaker five other calls opened a
// second into the 20 s pause before its retry (runPause).
type pauseRun struct {
	srv           *fakeAsset
	gov           *resilience.Governor
	stats         *resilience.Stats
	ledger        *resilience.Ledger
	start         time.Time
	opened, ended time.Duration // since start: the breaker's opening, the call's end
	err           error
}

// startFlavour starts a client of srv for tc (with the interceptor of gov
// when tc says so), srv failing tc's first request with a 20 s RetryInfo
// delay.
func startFlavour(t *testing.T, tc cutFlavour, srv *fakeAsset, gov *resilience.Governor) assetClient {
	t.Helper()
	srv.fail(tc.rpc, "", internalError(20*time.Second))
	var opts []option.ClientOption
	if tc.interceptor {
		opts = append(opts, ClientOption(WithGovernor(gov)))
	}
	return startBuf(t, srv, opts...)
}

// runPause makes tc's call (startFlavour) in a run of its own, opens the
// scope's breaker a second into the pause before its retry, and returns
// once the call ended.
func runPause(t *testing.T, tc cutFlavour, srv *fakeAsset, gov *resilience.Governor) pauseRun {
	t.Helper()
	client := startFlavour(t, tc, srv, gov)
	ctx, stats, ledger := newRun("assets")
	r := pauseRun{srv: srv, gov: gov, stats: stats, ledger: ledger, start: time.Now()}
	done := make(chan error)
	go func() {
		err := tc.call(ctx, gov, client)
		r.ended = time.Since(r.start)
		done <- err
	}()
	synctest.Wait() // answered, asleep in the 20 s pause before the retry
	time.Sleep(time.Second)
	scope := Scope("projects/p1", tc.rpc)
	openBreaker(gov, scope)
	r.opened = time.Since(r.start)
	if s := gov.Inspect(scope).Breaker.State; s != state.Open {
		t.Fatalf("the breaker is %v, want open", s)
	}
	r.err = <-done
	return r
}

// refused checks that the call ended at at, its retry refused: a
// *resilience.CircuitOpenError wrapping the answer, one request of rpc,
// the call lost once, as failed after its retries.
func (r pauseRun) refused(t *testing.T, rpc string, at time.Duration) *resilience.CircuitOpenError {
	t.Helper()
	var coe *resilience.CircuitOpenError
	if !errors.As(r.err, &coe) || status.Code(coe.Err) != codes.Internal || r.ended != at {
		t.Fatalf("the call ended at %v with %v (the breaker opened at %v); want a CircuitOpenError wrapping the answer at %v", r.ended, r.err, r.opened, at)
	}
	if n := len(r.srv.reqs(rpc)); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	lostOnly(t, r.gov, r.stats, r.ledger, resilience.LossFailed, 1)
	return coe
}

// A call asleep in the pause before a retry (20 s, RetryInfo's) when five
// other calls of its scope open the breaker ends then, not when the pause
// would have: its retry is refused as the breaker refuses a retry (a
// *resilience.CircuitOpenError wrapping the last answer; the call lost
// once, as failed after its retries), and nothing more is sent. So do Do,
// a listing's page, and the Retry option's call on a client with the
// interceptor.
func TestBreakerOpeningEndsTheBackoff(t *testing.T) {
	for _, tc := range cutFlavours {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := runPause(t, tc, newFake(5), newGov(t, resilience.Config{}))
				r.refused(t, tc.rpc, r.opened)
			})
		})
	}
}

// A breaker that opens while a call sleeps before a retry, but lets a
// probe through before the pause ends (its cooldown, 5 s, is shorter),
// leaves the pause whole, as Call's backoff does: the retry goes when it
// ends, as it would have, and succeeds.
func TestABreakerThatLetsAProbeThroughLeavesTheBackoffWhole(t *testing.T) {
	for _, tc := range cutFlavours {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFake(5) // one page
				r := runPause(t, tc, srv, newGov(t, resilience.Config{GCP: resilience.ProviderConfig{BreakerCooldownSeconds: 5}}))
				if r.err != nil || r.ended != 20*time.Second || len(srv.reqs(tc.rpc)) != 2 {
					t.Fatalf("%v after %v and %d requests, want the retry's success after 20 s", r.err, r.ended, len(srv.reqs(tc.rpc)))
				}
				lostOnly(t, r.gov, r.stats, r.ledger, resilience.LossFailed, 0)
			})
		})
	}
}

// The Retry option's call on a client without the interceptor is cut
// short too: its gate (retryGate) sleeps the pause before the retry, as
// grpc asks it for the retry's metadata, watching the breaker, and gax
// goes on at once. The breaker opened a second into the 20 s pause ends
// it then, and the retry is refused, a *resilience.CircuitOpenError
// wrapping the answer, nothing more sent.
func TestRetryOptionAloneCutsItsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := runPause(t, retryAlone, newFake(0), newGov(t, resilience.Config{}))
		coe := r.refused(t, retryAlone.rpc, r.opened)
		// As the interceptor's refusal: status Unknown, classified as the
		// refusal itself is.
		if c, k := status.Code(r.err), resilience.Classify(r.err); c != codes.Unknown || k != resilience.Classify(coe) {
			t.Fatalf("the refusal's status is %v, its kind %v; want Unknown, %v", c, k, resilience.Classify(coe))
		}
	})
}

// A call whose Retryer slept before a retry leaves nothing behind once it
// returns: the context its sleep watched is cancelled with the sleep.
func TestASleptBackoffLeavesNothingBehind(t *testing.T) {
	for _, tc := range cutFlavours {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFake(5) // one page
				srv.fail(tc.rpc, "", internalError(0))
				gov := newGov(t, resilience.Config{})
				var opts []option.ClientOption
				if tc.interceptor {
					opts = append(opts, ClientOption(WithGovernor(gov)))
				}
				client := startBuf(t, srv, opts...)
				ctx := endlessContext{context.Background(), make(chan struct{})}
				if err := tc.call(ctx, gov, client); err != nil || len(srv.reqs(tc.rpc)) != 2 {
					t.Fatalf("%v after %d requests, want a success after 2", err, len(srv.reqs(tc.rpc)))
				}
			})
		})
	}
}

// endlessContext can be cancelled, but never is: a context derived from
// it (not a type the context package knows) that is never cancelled
// leaves a goroutine behind, blocked on both, which the bubble reports.
type endlessContext struct {
	context.Context
	done chan struct{}
}

func (c endlessContext) Done() <-chan struct{} { return c.done }

// countingCreds are a call's own per-RPC credentials, which count the
// attempts they were asked for.
type countingCreds struct{ n *atomic.Int32 }

func (c countingCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	c.n.Add(1)
	return map[string]string{"x-test": "1"}, nil
}

func (countingCreds) RequireTransportSecurity() bool { return false }

// A call's own per-RPC credentials given before the Retry option are kept:
// the option's gate, which replaces them, asks them for each attempt it
// lets through.
func TestRetryOptionKeepsTheCallsOwnCredentials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		srv.fail("GetFeed", "", internalError(0))
		gov := newGov(t, resilience.Config{})
		client := startBuf(t, srv)
		var n atomic.Int32
		ctx := context.Background()
		_, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed},
			gax.WithGRPCOptions(grpc.PerRPCCredentials(countingCreds{&n})), Retry(ctx, feedScope(), WithGovernor(gov)))
		if err != nil || n.Load() != 2 || len(srv.reqs("GetFeed")) != 2 {
			t.Fatalf("%v; the call's credentials asked %d times for %d attempts, want a success, asked for each of 2", err, n.Load(), len(srv.reqs("GetFeed")))
		}
	})
}
