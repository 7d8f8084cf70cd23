package cloudggcp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	asset "cloud.google.com/go/asset/apiv1"
	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const getFeedMethod = "/google.cloud.asset.v1.AssetService/GetFeed"

type assetClient = *asset.Client

// refusedShape checks that err is a refusal as a scheduler reads it: a
// *resilience.WouldWaitError matching check, that classifies as Throttled
// and says when the scope can go.
func refusedShape(t *testing.T, err, check error, retryAfter time.Duration) *resilience.WouldWaitError {
	t.Helper()
	var ww *resilience.WouldWaitError
	if !errors.As(err, &ww) || !errors.Is(err, check) {
		t.Fatalf("err = %v, want a *resilience.WouldWaitError matching %v", err, check)
	}
	if resilience.Classify(err) != resilience.Throttled {
		t.Fatalf("%v classifies as %v", err, resilience.Classify(err))
	}
	if ra, _ := resilience.RetryAfter(err); ra < retryAfter {
		t.Fatalf("RetryAfter %v, want at least %v", ra, retryAfter)
	}
	return ww
}

// lostOnly checks that the run lost want calls of kind, and no other, in
// its stats and its ledger.
func lostOnly(t *testing.T, g *resilience.Governor, stats *resilience.Stats, ledger *resilience.Ledger, kind resilience.Loss, want int) {
	t.Helper()
	tot := g.Summary(stats).Totals
	byKind := map[resilience.Loss]int64{
		resilience.LossGaveUp: tot.GaveUp, resilience.LossSkipped: tot.Rejected, resilience.LossFailed: tot.Failed,
		resilience.LossRefused: tot.Refused, resilience.LossCancelled: tot.Cancelled,
		resilience.LossErrored: tot.Errored, resilience.LossPanicked: tot.Panicked, resilience.LossDenied: tot.Denied,
	}
	if k := resilience.Loss(len(byKind)); !strings.HasPrefix(k.String(), "resilience.Loss(") {
		t.Fatalf("loss %v is not looked at", k)
	}
	for k, n := range byKind {
		w := 0
		if k == kind {
			w = want
		}
		if n != int64(w) || ledger.Count(k) != w {
			t.Errorf("%v: stats %d, ledger %d; want %d (ledger %q)", k, n, ledger.Count(k), w, ledger.Describe())
		}
	}
	if tot.Lost() != int64(want) || ledger.Lost() != want {
		t.Errorf("lost: stats %d, ledger %d; want %d", tot.Lost(), ledger.Lost(), want)
	}
}

// run is a run's Stats and a task's Ledger, bound to a context.
func newRun(task string) (context.Context, *resilience.Stats, *resilience.Ledger) {
	ctx, stats := resilience.WithStats(context.Background())
	ctx, ledger := resilience.WithLedger(ctx, task)
	return ctx, stats, ledger
}

// Over loopback TCP, an attempt the interceptor governs whose context
// carries resilience.WithMaxWait is refused at once while its scope is
// paused: nothing sent, gax does not retry it, one refusal. Delay on
// MethodScope's scope said so, and asking changed nothing.
func TestMaxWaitRefusesAnInterceptedCallOverTCP(t *testing.T) {
	srv := newFake(0)
	srv.fail("GetFeed", "", throttled(30*time.Second)) // within GetFeed's 60 s timeout
	gov := newGov(t, resilience.Config{})
	client := startTCP(t, srv, ClientOption(WithGovernor(gov)))
	req := &assetpb.GetFeedRequest{Name: feed}
	scope := MethodScope("", getFeedMethod, req)
	if scope != feedScope() {
		t.Fatalf("MethodScope = %v, want %v", scope, feedScope())
	}
	if _, err := client.GetFeed(context.Background(), req); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("first: %v", err)
	}
	d, why := gov.Delay(scope)
	if !errors.Is(why, resilience.ErrNoToken) || d < 25*time.Second {
		t.Fatalf("Delay = %v, %v", d, why)
	}

	ctx, stats, ledger := newRun("feeds")
	start := time.Now()
	_, err := client.GetFeed(resilience.WithMaxWait(ctx, time.Second), req)
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("refused after %v, want at once", took)
	}
	refusedShape(t, err, resilience.ErrNoToken, 25*time.Second)
	if n := len(srv.reqs("GetFeed")); n != 1 {
		t.Fatalf("%d requests, want the first call's alone", n)
	}
	lostOnly(t, gov, stats, ledger, resilience.LossRefused, 1)
	if d2, why2 := gov.Delay(scope); why2 != why || d2 > d {
		t.Fatalf("after the refusal: Delay = %v, %v", d2, why2)
	}
}

// A RetryInfo delay longer than the call may wait ends a listing, Do, and
// a call made with the Retry option on a client with the interceptor, at
// once: one request each, the refusal (wrapping the provider's answer) as
// the error, recorded once as refused. Without the interceptor the Retry
// option's call returns the provider's error, and the refusal is still
// recorded once.
func TestMaxWaitRefusesARetry(t *testing.T) {
	for _, tc := range []struct {
		name        string
		interceptor bool
		call        func(ctx context.Context, gov *resilience.Governor, client assetClient) error
		rpc         string
		wantRefusal bool
	}{
		{"listing", false, func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
			_, err := ListAssets(ctx, c, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
			return err
		}, RPCListAssets, true},
		{"Do", true, func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
			_, err := Do(ctx, Scope("projects/p1", "GetFeed"), func(ctx context.Context, opts ...gax.CallOption) (*assetpb.Feed, error) {
				return c.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, opts...)
			}, WithGovernor(gov))
			return err
		}, "GetFeed", true},
		{"Retry option with the interceptor", true, func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
			_, err := c.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, Retry(ctx, feedScope(), WithGovernor(gov)))
			return err
		}, "GetFeed", true},
		{"Retry option alone", false, func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
			_, err := c.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, Retry(ctx, feedScope(), WithGovernor(gov)))
			return err
		}, "GetFeed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFake(25)
				srv.fail(tc.rpc, "", throttled(30*time.Second))
				gov := newGov(t, resilience.Config{})
				client := startBuf(t, srv)
				if tc.interceptor {
					client = startBuf(t, srv, ClientOption(WithGovernor(gov)))
				}
				ctx, stats, ledger := newRun("assets")
				start := time.Now()
				err := tc.call(resilience.WithMaxWait(ctx, time.Second), gov, client)
				if took := time.Since(start); took != 0 {
					t.Fatalf("ended after %v, want at once", took)
				}
				if n := len(srv.reqs(tc.rpc)); n != 1 {
					t.Fatalf("%d requests, want 1", n)
				}
				if tc.wantRefusal {
					ww := refusedShape(t, err, resilience.ErrNoToken, 29*time.Second)
					if status.Code(ww.Last) != codes.ResourceExhausted {
						t.Fatalf("the refusal wraps %v, want the provider's answer", ww.Last)
					}
				} else if status.Code(err) != codes.ResourceExhausted {
					t.Fatalf("err = %v, want the provider's answer", err)
				}
				lostOnly(t, gov, stats, ledger, resilience.LossRefused, 1)
			})
		})
	}
}

// A call that may not wait is refused at once when its project's
// concurrency cap is full (here held by a listing between its pages).
func TestMaxWaitRefusesAFullBulkhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{MaxConcurrency: 1}})
		client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
		l := ListAssets(context.Background(), client, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov))
		defer l.Close()
		if _, err := l.Next(); err != nil {
			t.Fatal(err)
		}
		req := &assetpb.GetFeedRequest{Name: feed}
		if d, why := gov.Delay(MethodScope("", getFeedMethod, req)); !errors.Is(why, resilience.ErrNoSlot) || d != 0 {
			t.Fatalf("cap full: Delay = %v, %v", d, why)
		}
		ctx, stats, ledger := newRun("feeds")
		start := time.Now()
		_, err := client.GetFeed(resilience.WithMaxWait(ctx, 0), req)
		if took := time.Since(start); took != 0 {
			t.Fatalf("refused after %v", took)
		}
		refusedShape(t, err, resilience.ErrNoSlot, 0)
		if n := len(srv.reqs("GetFeed")); n != 0 {
			t.Fatalf("%d requests", n)
		}
		lostOnly(t, gov, stats, ledger, resilience.LossRefused, 1)
	})
}

// A call its context ends is lost once, as cancelled, wherever it was:
// waiting for a token before its first attempt, or in gax's backoff after
// a throttle, for a listing, Do, and the Retry option's call (which gax
// ends without telling its Retryer: recorded as the context ends, a
// moment after the call returns).
func TestCancelledCallsCountedOnce(t *testing.T) {
	type callFn = func(ctx context.Context, gov *resilience.Governor, client assetClient) error
	list := func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
		_, err := ListAssets(ctx, c, &assetpb.ListAssetsRequest{Parent: "projects/p1"}, WithGovernor(gov)).Collect()
		return err
	}
	do := func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
		_, err := Do(ctx, feedScope(), func(ctx context.Context, opts ...gax.CallOption) (*assetpb.Feed, error) {
			return c.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, opts...)
		}, WithGovernor(gov))
		return err
	}
	retry := func(ctx context.Context, gov *resilience.Governor, c assetClient) error {
		_, err := c.GetFeed(ctx, &assetpb.GetFeedRequest{Name: feed}, Retry(ctx, feedScope(), WithGovernor(gov)))
		return err
	}
	for _, tc := range []struct {
		name   string
		call   callFn
		rpc    string
		paused bool // the scope is paused before the call
		fail   error
		sent   int
		async  bool // recorded as the context ends, not by the time the call returns
	}{
		{"listing waiting for a token", list, RPCListAssets, true, nil, 0, false},
		{"listing in gax's backoff", list, RPCListAssets, false, throttled(0), 1, false},
		{"Do waiting for a token", do, "GetFeed", true, nil, 0, false},
		{"Do in gax's backoff", do, "GetFeed", false, throttled(0), 1, false},
		{"Retry option in gax's backoff", retry, "GetFeed", false, throttled(0), 1, true},
		{"Retry option waiting for a token", retry, "GetFeed", true, nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFake(25)
				gov := newGov(t, resilience.Config{})
				client := startBuf(t, srv, ClientOption(WithGovernor(gov)))
				if tc.paused {
					gd, _ := gov.Begin(context.Background(), Scope("projects/p1", tc.rpc))
					gd.Pause(60 * time.Second)
					gd.End(nil)
				}
				for range 20 {
					if tc.fail != nil {
						srv.fail(tc.rpc, "", tc.fail)
					}
				}
				ctx, stats, ledger := newRun("assets")
				ctx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- tc.call(ctx, gov, client) }()
				synctest.Wait()
				select {
				case err := <-done:
					t.Fatalf("the call ended before the cancel: %v", err)
				default:
				}
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v, want context.Canceled", err)
				}
				if n := len(srv.reqs(tc.rpc)); n != tc.sent {
					t.Fatalf("%d requests, want %d", n, tc.sent)
				}
				if tc.async {
					// gax returns without telling its Retryer: the watch of
					// the context records the call, on a goroutine of its
					// own, as the context ends.
					synctest.Wait()
				}
				lostOnly(t, gov, stats, ledger, resilience.LossCancelled, 1)
			})
		})
	}
}

// A listing whose next page may not wait for its token (the listing's
// context carries resilience.WithMaxWait) ends before that page is sent,
// and its ResumeToken is that page's token: a later listing resumes at
// the page that was not fetched, with no page twice and none skipped.
func TestMaxWaitResumesAtThePageNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFake(25)
		client := startBuf(t, srv)
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{
			"cloudasset.ListAssets": {MaxRPS: 1, Burst: 1}, // page 2's token is a second away
		}}})
		ctx, stats, ledger := newRun("assets")
		l := ListAssets(resilience.WithMaxWait(ctx, 500*time.Millisecond), client,
			&assetpb.ListAssetsRequest{Parent: "projects/p1", PageSize: 10}, WithGovernor(gov))
		items, err := l.Collect()
		refusedShape(t, err, resilience.ErrNoToken, 500*time.Millisecond)
		if got := names(items, assetName); !slices.Equal(got, seq(0, 10)) {
			t.Fatalf("items %v, want page 1", got)
		}
		if n := len(srv.reqs(RPCListAssets)); n != 1 {
			t.Fatalf("%d requests, want page 1 alone", n)
		}
		lostOnly(t, gov, stats, ledger, resilience.LossRefused, 1)
		if tok := l.ResumeToken(); tok != "10" {
			t.Fatalf("ResumeToken %q, want %q, the token of page 2, which was not sent", tok, "10")
		}
		time.Sleep(time.Second)
		rest, err := ListAssets(ctx, client, &assetpb.ListAssetsRequest{Parent: "projects/p1", PageSize: 10, PageToken: l.ResumeToken()},
			WithGovernor(gov)).Collect()
		if err != nil || !slices.Equal(append(names(items, assetName), names(rest, assetName)...), seq(0, 25)) {
			t.Errorf("resumed: %v, %v; want the items after page 1", names(rest, assetName), err)
		}
	})
}
