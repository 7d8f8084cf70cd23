package cloudggcp

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc"

	"github.com/cloudg/cloudg/resilience"
)

// The Retry option is made once per run, with the run's context; a call
// made with it may have a context of its own (a per-call timeout, a
// cancellation of its own), on which the Retryer of a client with the
// interceptor, or the option's per-RPC credentials on a client without
// it, sleep the pause before a retry. When that context ends during the
// pause, the call ends then and is lost once, as cancelled, as it is when
// the run's context ends. Before, the call ended but its
// loss was left to a watch of the run's context, which had not ended: the
// ledger and the stats recorded nothing (and the watch stayed registered
// on the run's context until the run ended, when it recorded the call,
// long over, as cancelled then), with the interceptor (bf46a75) and,
// where gax slept the pause, without it.
func TestACallsOwnContextEndingDuringThePauseIsRecorded(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(context.Context) (context.Context, context.CancelFunc)
		want error
	}{
		{"timeout", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 5*time.Second)
		}, context.DeadlineExceeded},
		{"cancel", func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(5*time.Second, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		for _, bare := range []bool{false, true} {
			name := tc.name
			if bare {
				name += "/without the interceptor"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := newFake(0)
					srv.fail("GetFeed", "", throttled(20*time.Second))
					gov := newGov(t, resilience.Config{})
					var client assetClient
					if bare {
						client = startBuf(t, srv)
					} else {
						client = startBuf(t, srv, ClientOption(WithGovernor(gov)))
					}
					run, stats := resilience.WithStats(context.Background())
					run, ledger := resilience.WithLedger(run, "feeds")
					opt := Retry(run, feedScope(), WithGovernor(gov)) // one per run
					ctx, cancel := tc.end(run)
					defer cancel()
					start := time.Now()
					_, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, opt)
					if !errors.Is(err, tc.want) || time.Since(start) != 5*time.Second {
						t.Fatalf("err %v after %v, want %v at 5s", err, time.Since(start), tc.want)
					}
					synctest.Wait()
					if n := len(srv.reqs("GetFeed")); n != 1 {
						t.Fatalf("%d requests, want 1", n)
					}
					if lost, c := ledger.Lost(), ledger.Count(resilience.LossCancelled); lost != 1 || c != 1 {
						t.Fatalf("ledger: %d lost, %d cancelled (%v), want the call lost once as cancelled when its context ended",
							lost, c, ledger.Reasons())
					}
					if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Cancelled != 1 {
						t.Fatalf("stats %+v, want one cancelled call", sc)
					}
				})
			})
		}
	}
}

// A call made with the Retry option, whose own context (a timeout or
// cancel of its own under the run's, the option's) ends while an attempt
// is out, is lost once, as cancelled, as one whose context ends during
// the pause before a retry is, on a client with the interceptor or
// without it. Before, a timeout's DeadlineExceeded was allowed a retry
// that gax never made (its sleep on the ended context returned at once),
// so that nothing was recorded but a watch of the run's context, left to
// record the call when the run ended; a cancellation's Canceled was
// recorded as a local error (errored): with the interceptor until
// 5556641, without it until the option's credentials read the context
// they saw as grpc reports the attempt's end (before grpc cancels it).
func TestACallsOwnContextEndingDuringAnAttemptIsRecorded(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(context.Context) (context.Context, context.CancelFunc)
	}{
		{"timeout", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 5*time.Second)
		}},
		{"cancel", func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(5*time.Second, cancel)
			return ctx, cancel
		}},
	} {
		for _, bare := range []bool{false, true} {
			name := tc.name
			if bare {
				name += "/without the interceptor"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv := newFake(0)
					srv.fail("GetFeed", "", errHold)
					gov := newGov(t, resilience.Config{})
					var client assetClient
					if bare {
						client = startBuf(t, srv)
					} else {
						client = startBuf(t, srv, ClientOption(WithGovernor(gov)))
					}
					run, stats := resilience.WithStats(context.Background())
					run, ledger := resilience.WithLedger(run, "feeds")
					opt := Retry(run, feedScope(), WithGovernor(gov)) // one per run
					ctx, cancel := tc.end(run)
					defer cancel()
					start := time.Now()
					_, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, opt)
					if err == nil || time.Since(start) != 5*time.Second {
						t.Fatalf("err %v after %v, want the context's at 5s", err, time.Since(start))
					}
					synctest.Wait()
					if n := len(srv.reqs("GetFeed")); n != 1 {
						t.Fatalf("%d requests, want 1", n)
					}
					if lost, c := ledger.Lost(), ledger.Count(resilience.LossCancelled); lost != 1 || c != 1 {
						t.Fatalf("ledger: %d lost, %d cancelled (%v), want the call lost once as cancelled when its context ended",
							lost, c, ledger.Reasons())
					}
					if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Cancelled != 1 {
						t.Fatalf("stats %+v, want one cancelled call", sc)
					}
				})
			})
		}
	}
}

// A call made with the Retry option on a gRPC client without the
// interceptor, with per-RPC credentials of its own given before the
// option (grpc.PerRPCCredentials), whose own context ends while an
// attempt is out, is lost once, as cancelled, as one without credentials
// of its own is (TestACallsOwnContextEndingDuringAnAttemptIsRecorded):
// the option's credentials ask the call's, and see the attempt's
// context. Given after the option, the call's credentials replace the
// option's, which see nothing of the attempt: then nothing tells the
// option that the call's context ended (see Retry), and the ledger showed
// "0 lost, 0 cancelled" for the timeout and "1 lost, 0 cancelled
// ([...: rpc error: code = Canceled desc = context canceled])", an
// errored call, for the cancellation.
func TestACallsOwnContextEndingDuringAnAttemptWithItsOwnCredentialsIsRecorded(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(context.Context) (context.Context, context.CancelFunc)
	}{
		{"timeout", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 5*time.Second)
		}},
		{"cancel", func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(5*time.Second, cancel)
			return ctx, cancel
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFake(0)
				srv.fail("GetFeed", "", errHold)
				gov := newGov(t, resilience.Config{})
				client := startBuf(t, srv)
				run, stats := resilience.WithStats(context.Background())
				run, ledger := resilience.WithLedger(run, "feeds")
				opt := Retry(run, feedScope(), WithGovernor(gov)) // one per run
				ctx, cancel := tc.end(run)
				defer cancel()
				var n atomic.Int32
				start := time.Now()
				_, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed},
					gax.WithGRPCOptions(grpc.PerRPCCredentials(countingCreds{&n})), opt)
				if err == nil || time.Since(start) != 5*time.Second || n.Load() != 1 {
					t.Fatalf("err %v after %v, own credentials asked %d times; want the context's at 5s, asked once", err, time.Since(start), n.Load())
				}
				synctest.Wait()
				if n := len(srv.reqs("GetFeed")); n != 1 {
					t.Fatalf("%d requests, want 1", n)
				}
				if lost, c := ledger.Lost(), ledger.Count(resilience.LossCancelled); lost != 1 || c != 1 {
					t.Fatalf("ledger: %d lost, %d cancelled (%v), want the call lost once as cancelled when its context ended",
						lost, c, ledger.Reasons())
				}
				if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Cancelled != 1 {
					t.Fatalf("stats %+v, want one cancelled call", sc)
				}
			})
		})
	}
}
