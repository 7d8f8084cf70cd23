package cloudggcp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A RetryInfo pause longer than the time left is not slept: the provider
// error comes back at once, with the deadline as the reason (gax would
// sleep until the context expires and return a bare context error).
func TestRetryInfoBeyondDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		srv.fail(RPCListAssets, "", throttled(30*time.Second))
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		start := time.Now()
		_, err := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
		if time.Since(start) != 0 {
			t.Errorf("returned after %v", time.Since(start))
		}
		var rse *RetryStoppedError
		var ae *apierror.APIError
		if !errors.As(err, &rse) || !errors.As(err, &ae) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %T %v", err, err)
		}
		if ae.GRPCStatus().Code() != codes.ResourceExhausted || rse.Pause != 30*time.Second {
			t.Errorf("%+v", rse)
		}
		if resilience.Classify(err) != resilience.Throttled || !strings.Contains(err.Error(), "would pass the deadline") {
			t.Errorf("%v classifies as %v", err, resilience.Classify(err))
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.GaveUp != 1 || sc.Retries != 0 {
			t.Errorf("stats %+v", sc)
		}
	})
}

// Without a context deadline the provider's deadline (900 s) bounds a page:
// gax's timeout, and the retry's own check.
func TestProviderDeadlineBoundsAPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		for range 20 {
			srv.fail(RPCListAssets, "", throttled(200*time.Second))
		}
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{})
		start := time.Now()
		_, err := ListAssets(context.Background(), client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
		var rse *RetryStoppedError
		if !errors.As(err, &rse) {
			t.Fatalf("error %v", err)
		}
		// Attempts at 0, 200, 400, 600, 800 s; the next would be at 1000 s.
		if n := len(srv.reqs(RPCListAssets)); n != 5 || time.Since(start) != 800*time.Second {
			t.Errorf("%d attempts, %v", n, time.Since(start))
		}
	})
}

// A caller cancelling during the backoff gets its context error with the
// provider error alongside, and nothing is recorded as lost.
func TestCancelDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		srv.fail(RPCListAssets, "", unavailable())
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		ctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(500*time.Millisecond, cancel)
		_, err := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
		var rse *RetryStoppedError
		if !errors.As(err, &rse) || !errors.Is(err, context.Canceled) || status.Code(rse.Err) != codes.Unavailable {
			t.Fatalf("error %v", err)
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.GaveUp != 0 {
			t.Errorf("stats %+v", sc)
		}
		if _, ok := gov.Summary(nil).Breakers[mustScope("gcp/projects%2Fp1/*/cloudasset/ListAssets")]; ok {
			t.Error("a cancelled listing counted as a breaker failure")
		}
	})
}

// The gax behaviour the listing improves on, measured: a retryer whose
// pause (RetryInfo's 30 s) outlasts the context's 10 s sleeps until the
// context expires and returns a bare context.DeadlineExceeded, losing the
// provider's answer.
func TestGaxLosesTheProviderErrorPastTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		srv.fail(RPCListAssets, "", throttled(30*time.Second))
		client := startBuf(t, srv)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var seen error
		honourRetryInfo := gax.WithRetry(func() gax.Retryer {
			return retryerFunc(func(err error) (time.Duration, bool) {
				seen = err
				d, _ := resilience.RetryAfter(err)
				return d, true
			})
		})
		start := time.Now()
		_, err := client.ListAssets(ctx, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, honourRetryInfo).Next()
		var ae *apierror.APIError
		if err != context.DeadlineExceeded || errors.As(err, &ae) || time.Since(start) != 10*time.Second {
			t.Errorf("gax returned %T %v after %v", err, err, time.Since(start))
		}
		if !errors.As(seen, &ae) || ae.Details().RetryInfo.GetRetryDelay().AsDuration() != 30*time.Second {
			t.Errorf("the retryer saw %T %v", seen, seen)
		}
	})
}

type retryerFunc func(error) (time.Duration, bool)

func (f retryerFunc) Retry(err error) (time.Duration, bool) { return f(err) }
