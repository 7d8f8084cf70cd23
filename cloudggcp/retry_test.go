package cloudggcp

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The backoff is capped at max_backoff_seconds.
func TestBackoffCap(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 9; n++ {
		got = append(got, backoff(n, 60*time.Second))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i := range want {
		want[i] *= time.Second
	}
	if !slices.Equal(got, want) {
		t.Errorf("backoff %v", got)
	}
	if d := backoff(1000, 60*time.Second); d != 60*time.Second {
		t.Errorf("backoff(1000) %v", d)
	}
}

// The Retry option alone: ResourceExhausted retried after RetryInfo's
// delay, reported to the governor.
func TestRetryOptionAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		srv.fail("GetFeed", "", throttled(2*time.Second), throttled(0))
		gov := newGov(t, resilience.Config{})
		client := startBuf(t, srv)
		ctx, stats := resilience.WithStats(context.Background())
		start := time.Now()
		if _, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, Retry(ctx, feedScope(), WithGovernor(gov))); err != nil {
			t.Fatal(err)
		}
		// 2 s (RetryInfo over the 1 s backoff), then 2 s (backoff).
		want := []time.Duration{0, 2 * time.Second, 4 * time.Second}
		if got := offsets(srv.reqs("GetFeed"), start); !slices.Equal(got, want) {
			t.Errorf("attempts at %v, want %v", got, want)
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Throttled != 2 || sc.Retries != 2 {
			t.Errorf("stats %+v", sc)
		}
		// Without the option the client does not retry ResourceExhausted.
		srv.fail("GetFeed", "", throttled(0))
		if _, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}); status.Code(err) != codes.ResourceExhausted {
			t.Errorf("plain: %v", err)
		}
	})
}

// Do paces a unary call once (the interceptor lets it through), retries it
// with the policy, and returns the limit's error instead of gax's.
func TestDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		srv.fail("BatchGetAssetsHistory", "", throttled(0), unavailable())
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{RetryBudget: intp(0)}})
		client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
		ctx, stats := resilience.WithStats(context.Background())
		scope := Scope("projects/p1", "BatchGetAssetsHistory")
		call := func(ctx context.Context, opts ...gax.CallOption) (*assetpb.BatchGetAssetsHistoryResponse, error) {
			return client.BatchGetAssetsHistory(ctx, &assetpb.BatchGetAssetsHistoryRequest{Parent: "projects/p1"}, opts...)
		}
		if _, err := Do(ctx, scope, call, WithGovernor(gov)); err != nil {
			t.Fatal(err)
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Calls != 1 || sc.Retries != 2 || sc.Throttled != 2 {
			t.Errorf("stats %+v", sc)
		}

		for range 5 {
			srv.fail("BatchGetAssetsHistory", "", unavailable())
		}
		before := len(srv.reqs("BatchGetAssetsHistory"))
		_, err := Do(ctx, scope, call, WithGovernor(gov))
		var rbe *resilience.RetryBudgetExhaustedError
		if !errors.As(err, &rbe) || status.Code(err) != codes.Unavailable {
			t.Fatalf("%T %v", err, err)
		}
		if n := len(srv.reqs("BatchGetAssetsHistory")) - before; n != 3 {
			t.Errorf("%d attempts, want 1 + 2 free retries", n)
		}
	})
}

// cloudg's own errors are never retried, whatever they wrap: they are no
// provider's answer, and where they were made the guard recorded them, so
// the retry records nothing of them.
func TestRetryNeverRetriesOwnErrors(t *testing.T) {
	gov := newGov(t, resilience.Config{})
	ctx, stats := resilience.WithStats(context.Background())
	scope := feedScope()
	for _, err := range []error{
		&resilience.CircuitOpenError{Scope: scope, Err: unavailable()},
		&resilience.RetryBudgetExhaustedError{Scope: scope, Err: unavailable()},
		&resilience.DeadlineExceededError{Scope: scope, Err: unavailable()},
	} {
		for _, paced := range []bool{true, false} {
			gd, _ := gov.Begin(ctx, scope)
			st := &callState{ctx: ctx, scope: scope, gd: gd, maxBackoff: time.Minute, paced: paced}
			if _, ok := st.Retry(err); ok {
				t.Errorf("%T retried", err)
			}
		}
	}
	if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.String() != (resilience.Counters{}).String() || sc.LastError != "" {
		t.Errorf("recorded %+v", sc)
	}
	if br := gov.Inspect(scope).Breaker; br.Failures != 0 {
		t.Errorf("breaker %+v", br)
	}
}

// Do stopped by max_retries ends as a listing's page does: with a
// *resilience.RetryBudgetExhaustedError wrapping a *RetriesExhaustedError
// and the provider's error.
func TestDoPastMaxRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		for range 5 {
			srv.fail("BatchGetAssetsHistory", "", unavailable())
		}
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{MaxRetries: intp(3)}})
		client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
		call := func(ctx context.Context, opts ...gax.CallOption) (*assetpb.BatchGetAssetsHistoryResponse, error) {
			return client.BatchGetAssetsHistory(ctx, &assetpb.BatchGetAssetsHistoryRequest{Parent: "projects/p1"}, opts...)
		}
		_, err := Do(context.Background(), Scope("projects/p1", "BatchGetAssetsHistory"), call, WithGovernor(gov))
		rbe, ok := err.(*resilience.RetryBudgetExhaustedError)
		if !ok {
			t.Fatalf("%T %v, want a *resilience.RetryBudgetExhaustedError", err, err)
		}
		if ree, ok := rbe.Err.(*RetriesExhaustedError); !ok || ree.Retries != 3 || status.Code(ree.Err) != codes.Unavailable {
			t.Fatalf("under the budget's error: %T %v", rbe.Err, rbe.Err)
		}
		if n := len(srv.reqs("BatchGetAssetsHistory")); n != 4 {
			t.Errorf("%d attempts, want 1 + 3 retries", n)
		}
	})
}

// The zero errors are usable, as their godocs say; the zero Listing is
// not (Close alone is harmless).
func TestZeroValues(t *testing.T) {
	var stopped RetryStoppedError
	if msg := stopped.Error(); msg != "*/*/*/*: <nil> while waiting to retry: <nil>" {
		t.Fatalf("zero RetryStoppedError: %q", msg)
	}
	if errors.Is(&stopped, context.DeadlineExceeded) {
		t.Fatal("the zero RetryStoppedError has a reason")
	}
	var exhausted RetriesExhaustedError
	if msg := exhausted.Error(); msg != ": 0 consecutive retries exhausted: <nil>" || exhausted.Unwrap() != nil {
		t.Fatalf("zero RetriesExhaustedError: %q", msg)
	}
	var l Listing[int]
	l.Close()
	defer func() {
		if recover() == nil {
			t.Fatal("Next on the zero Listing did not panic")
		}
	}()
	_, _ = l.Next()
}

// The watch that ends the Retry option's call when its context ends during
// gax's sleep (on a client without the interceptor, whose call's own
// credentials, given after the option, replace its gate, which would
// sleep the pause itself) runs the governor's
// observer outside every lock, and the call does not wait for it: an
// observer that calls back into the governor and waits for the call to
// return sees it return.
func TestWatchRunsTheObserverOutsideTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(0)
		srv.fail("GetFeed", "", unavailable())
		var returned atomic.Bool
		var lost, sawReturn atomic.Int32
		var gov *resilience.Governor
		var stats *resilience.Stats
		obs := observe.Func(func(ev observe.Event) {
			if ev.Kind != observe.Lost {
				return
			}
			lost.Add(1)
			_ = gov.Summary(stats) // back into the governor
			_ = gov.Inspect(feedScope())
			// Give the call a bounded chance to return while the
			// observer runs; it cannot if it waits for the observer.
			for i := 0; i < 1_000_000 && !returned.Load(); i++ {
				runtime.Gosched()
			}
			if returned.Load() {
				sawReturn.Add(1)
			}
		})
		var err error
		if gov, err = resilience.NewGovernor(resilience.Config{}, resilience.WithObserver(obs)); err != nil {
			t.Fatal(err)
		}
		client := startBuf(t, srv) // no interceptor: gax sleeps the pause
		ctx, st := resilience.WithStats(context.Background())
		stats = st
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			var n atomic.Int32
			_, err := client.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, Retry(ctx, feedScope(), WithGovernor(gov)),
				gax.WithGRPCOptions(grpc.PerRPCCredentials(countingCreds{&n})))
			returned.Store(true)
			done <- err
		}()
		time.Sleep(500 * time.Millisecond) // within gax's 1 s backoff
		synctest.Wait()
		if n := len(srv.reqs("GetFeed")); n != 1 {
			t.Fatalf("%d attempts, want 1 (gax asleep before the retry)", n)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		synctest.Wait() // the watch's record, on its own goroutine
		if lost.Load() != 1 || sawReturn.Load() != 1 {
			t.Fatalf("%d lost events, the call returned during %d of them; want 1 and 1", lost.Load(), sawReturn.Load())
		}
		if sc := scopeStats(gov, stats, "gcp/projects/p1/*/cloudasset"); sc.Cancelled != 1 {
			t.Fatalf("stats %+v, want the call cancelled once", sc)
		}
	})
}

// A scope without a provider leaves the call to the client's own
// settings: its retry, and its timeout too, which the provider's deadline
// replaces only for a governed call.
func TestRetryWithoutProviderKeepsTheClientsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{})
		deadlineOf := func(opts ...gax.CallOption) time.Duration {
			var left time.Duration
			_ = gax.Invoke(context.Background(), func(ctx context.Context, _ gax.CallSettings) error {
				if d, ok := ctx.Deadline(); ok {
					left = time.Until(d)
				}
				return nil
			}, opts...)
			return left
		}
		own := gax.WithTimeout(time.Minute)
		if got := deadlineOf(own, Retry(context.Background(), resilience.Scope{}, WithGovernor(gov))); got != time.Minute {
			t.Errorf("without a provider: the call's timeout %v, want the client's own (1m0s)", got)
		}
		if got := deadlineOf(own, Retry(context.Background(), Scope("projects/p1", "GetFeed"), WithGovernor(gov))); got != 15*time.Minute {
			t.Errorf("governed: the call's timeout %v, want the provider's deadline (15m0s)", got)
		}
	})
}
