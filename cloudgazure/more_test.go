package cloudgazure_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// Every page of a pager is a request of its own, with its own two free
// retries: with the budget empty, page 2 survives two 503s, and page 3
// ends after its third.
func TestPagerPagesGetTheirOwnFreeRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{RetryBudget: ptr(0)}})
		busy := reply{status: http.StatusServiceUnavailable}
		e.srv.script(routeGroupList, reply{}, busy, busy, reply{}, busy, busy, busy, reply{})
		pager := e.groups(subA).NewListPager(nil)
		var names []string
		var err error
		for pager.More() {
			var page armresources.ResourceGroupsClientListResponse
			if page, err = pager.NextPage(context.Background()); err != nil {
				break
			}
			for _, g := range page.Value {
				names = append(names, *g.Name)
			}
		}
		var rbe *resilience.RetryBudgetExhaustedError
		if !errors.As(err, &rbe) {
			t.Fatalf("page 3: %v, want a RetryBudgetExhaustedError", err)
		}
		if strings.Join(names, ",") != "rg-0,rg-1,rg-2,rg-3" {
			t.Fatalf("groups %v", names)
		}
		hs := e.srv.hitsOf(routeGroupList)
		if len(hs) != 7 {
			t.Fatalf("%d requests, want 1 + 3 + 3", len(hs))
		}
		if hs[6].skip != "4" {
			t.Fatalf("last request asked for %q", hs[6].skip)
		}
	})
}

// Importing the package teaches the classifier *azcore.ResponseError:
// errors from real clients classify as the spec's table says.
func TestClassifyResponseErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		plain := e.plainGroups(subA, policy.RetryOptions{MaxRetries: -1})
		cases := []struct {
			r    reply
			kind resilience.Kind
		}{
			{throttled(""), resilience.Throttled},
			{reply{status: http.StatusTooManyRequests, code: "RetryableErrorDueToAnotherOperation"}, resilience.Transient},
			{reply{status: http.StatusConflict, code: "TenantRequestsThrottled"}, resilience.Throttled},
			{reply{status: http.StatusServiceUnavailable, code: "ServerBusy"}, resilience.Throttled},
			{reply{status: http.StatusInternalServerError, code: "InternalServerError"}, resilience.Transient},
			{reply{status: http.StatusGatewayTimeout, code: "GatewayTimeout"}, resilience.Transient},
			{reply{status: http.StatusNotFound, code: "ResourceGroupNotFound"}, resilience.Fatal},
			{reply{status: http.StatusForbidden, code: "AuthorizationFailed"}, resilience.Fatal},
		}
		for _, c := range cases {
			e.srv.script(routeGroupGet, c.r)
			_, err := plain.Get(context.Background(), "rg", nil)
			var re *azcore.ResponseError
			if !errors.As(err, &re) || re.ErrorCode != c.r.code && c.r.code != "" {
				t.Fatalf("%d %s: got %v", c.r.status, c.r.code, err)
			}
			if k := resilience.Classify(err); k != c.kind {
				t.Errorf("%d %s classifies %v, want %v", c.r.status, c.r.code, k, c.kind)
			}
			if !resilience.IsProviderAnswer(err) {
				t.Errorf("%d %s is not a provider answer", c.r.status, c.r.code)
			}
		}
		e.srv.script(routeGroupGet, withHeader(throttled("7"), "x-ms-retry-after-ms", "2500"))
		_, err := plain.Get(context.Background(), "rg", nil)
		if d, ok := resilience.RetryAfter(err); !ok || d != 2500*time.Millisecond {
			t.Fatalf("RetryAfter = %v %v, want 2.5 s from x-ms-retry-after-ms", d, ok)
		}

		// The policy reads only the status: a 429 is throttling even when
		// its code is a lock conflict.
		e.srv.script(routeGroupGet, reply{status: http.StatusTooManyRequests, code: "RetryableErrorDueToAnotherOperation"})
		if _, err := e.groups(subA).Get(context.Background(), "rg", nil); err != nil {
			t.Fatal(err)
		}
		if st := e.gov.BucketState(resourcesA); st.RateRPS != 7.5 {
			t.Fatalf("resources bucket %+v, want halved to 7.5", st)
		}
	})
}

// A client type that rejects the governed options is built plainly, with
// a debug log, and works ungoverned.
func TestBuildFallsBackToPlainClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		var logs bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		picky := func(o *arm.ClientOptions) (*armresources.ResourceGroupsClient, error) {
			if o != nil && len(o.PerRetryPolicies) > 0 {
				return nil, errors.New("unsupported per-retry policies")
			}
			return armresources.NewResourceGroupsClient(subA, fakeCred{}, o)
		}
		c, err := cloudgazure.Build(picky, e.base, cloudgazure.WithGovernor(e.gov), cloudgazure.WithLogger(logger))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs.String(), "level=DEBUG") || !strings.Contains(logs.String(), "unsupported per-retry policies") {
			t.Fatalf("log: %q", logs.String())
		}
		ctx, stats := resilience.WithStats(context.Background())
		if _, err := c.Get(ctx, "rg", nil); err != nil {
			t.Fatal(err)
		}
		if n := len(e.gov.Summary(stats).Scopes); n != 0 {
			t.Fatalf("the plain client was governed: %v", e.gov.Summary(stats).Scopes)
		}

		broken := func(*arm.ClientOptions) (*armresources.ResourceGroupsClient, error) { return nil, errors.New("no") }
		if _, err := cloudgazure.Build(broken, nil, cloudgazure.WithGovernor(e.gov), cloudgazure.WithLogger(logger)); err == nil {
			t.Fatal("want the plain build's error")
		}

		// A cloud without Resource Manager fails both builds: the error
		// comes back.
		noCloud := &arm.ClientOptions{ClientOptions: policy.ClientOptions{Cloud: e.base.Cloud}}
		noCloud.Cloud.Services = nil
		if _, err := cloudgazure.NewGraphClient(fakeCred{}, noCloud, cloudgazure.WithGovernor(e.gov), cloudgazure.WithLogger(logger)); err == nil {
			t.Fatal("want an error for a cloud without Resource Manager")
		}
	})
}

// A reset connection and a body that breaks off are transient attempts:
// counted, retried by azcore (the broken response drained), and the
// request succeeds.
func TestTransportErrorRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
		var closed atomic.Int32
		e.srv.script(routeVnetGet, reply{fail: reset}, reply{brokenBody: &closed})
		ctx, stats := resilience.WithStats(context.Background())
		if _, err := e.vnets(subA).Get(ctx, "rg", "vnet", nil); err != nil {
			t.Fatal(err)
		}
		sc := e.gov.Summary(stats).Scopes[networkA.String()]
		if sc.Calls != 3 || sc.TransientErrors != 2 || sc.Retries != 2 || sc.Throttled != 0 {
			t.Fatalf("stats %+v, want 3 calls, 2 transient, 2 retries", sc)
		}
		if closed.Load() == 0 {
			t.Fatal("the broken response's body was never closed")
		}
	})
}

// With the governor disabled the policies step aside: nothing is counted,
// azcore retries as configured.
func TestDisabledGovernorPassesThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{Enabled: ptr(false)}})
		e.srv.script(routeGroupGet, throttled("1"))
		ctx, stats := resilience.WithStats(context.Background())
		if _, err := e.groups(subA).Get(ctx, "rg", nil); err != nil {
			t.Fatal(err)
		}
		if n := len(e.gov.Summary(stats).Scopes); n != 0 {
			t.Fatalf("disabled governor counted %d scopes", n)
		}
		if n := e.srv.count(routeGroupGet); n != 2 {
			t.Fatalf("%d attempts, want 2", n)
		}
	})
}

// The policies installed in a pipeline of their own (an azcore data-plane
// client) govern it the same way; the per-retry policy alone governs each
// attempt, with the request's free retries kept across azcore's clones.
func TestPoliciesInOwnPipeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		perCall, perRetry := cloudgazure.Policies(e.opts()...)
		for _, withPerCall := range []bool{true, false} {
			e.srv.script(routeVnetGet, throttled("2"), throttled("2"), throttled("2"))
			o := policy.ClientOptions{Transport: e.base.Transport, Retry: cloudgazure.RetryOptions(e.opts()...)}
			if withPerCall {
				o.PerCallPolicies = []policy.Policy{perCall}
			}
			o.PerRetryPolicies = []policy.Policy{perRetry}
			pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, &o)
			req, err := runtime.NewRequest(context.Background(), http.MethodGet, "http://127.0.0.1:1/subscriptions/"+subA+
				"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v?api-version=1")
			if err != nil {
				t.Fatal(err)
			}
			req.Raw().Header.Set("Authorization", "Bearer x")
			budget := e.gov.RetryBudget("azure")
			ctx, stats := resilience.WithStats(context.Background())
			resp, err := pl.Do(req.WithContext(ctx))
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("per call %v: %v %v", withPerCall, resp, err)
			}
			sc := e.gov.Summary(stats).Scopes[networkA.String()]
			if sc.Calls != 4 || sc.Throttled != 3 || sc.Retries != 3 {
				t.Fatalf("per call %v: stats %+v, want 4 calls, 3 throttled, 3 retries", withPerCall, sc)
			}
			// One token for the third retry, 0.1 back for the success.
			if spent := budget - e.gov.RetryBudget("azure"); math.Abs(spent-0.9) > 1e-9 {
				t.Fatalf("per call %v: %v budget tokens spent, want 0.9 (two retries free)", withPerCall, spent)
			}
		}
	})
}

// Many goroutines over real loopback sockets: no race, every slot back.
func TestConcurrentLoopback(t *testing.T) {
	e := tcpEnv(t, fast())
	vnets := e.vnets(subA)
	graph := e.graph()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		wg.Go(func() {
			for range 5 {
				var err error
				if i%4 == 0 {
					_, err = cloudgazure.QueryResources(context.Background(), graph, armresourcegraph.QueryRequest{Query: ptr("Resources")})
				} else {
					_, err = vnets.Get(context.Background(), "rg", "vnet", nil)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := freeSlots(e.gov, subALower); n != 64 {
		t.Fatalf("%d free slots, want 64", n)
	}
}

// fast is a configuration whose buckets never hold a call back, for
// measuring the policies' own cost.
func fast() resilience.Config {
	huge := 1e9
	return resilience.Config{Azure: resilience.ProviderConfig{
		MaxRPS: huge, Burst: huge, AccountMaxRPS: &huge, AccountBurst: huge, MaxConcurrency: 64,
		Services: map[string]resilience.ServiceConfig{
			"network":       {MaxRPS: huge, Burst: huge},
			"resourcegraph": {MaxRPS: huge, Burst: huge},
		},
	}}
}

// A retry the breaker refuses ends azcore's loop with a CircuitOpenError
// that carries the answer before it.
func TestRefusedRetryCarriesLastAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{BreakerThreshold: 1}})
		e.srv.script(routeVnetGet, reply{status: http.StatusBadGateway, code: "BadGateway"})
		done := make(chan error, 1)
		go func() { _, err := e.vnets(subA).Get(context.Background(), "rg", "vnet", nil); done <- err }()
		synctest.Wait() // the 502 is in; azcore sleeps its backoff
		gd, _ := e.gov.Begin(context.Background(), networkA)
		gd.Failed(&azcore.ResponseError{StatusCode: http.StatusServiceUnavailable}) // another request gives up: the breaker opens
		gd.End()
		err := <-done
		var coe *resilience.CircuitOpenError
		var re *azcore.ResponseError
		if !errors.As(err, &coe) || !errors.As(err, &re) || re.StatusCode != http.StatusBadGateway {
			t.Fatalf("got %v, want a CircuitOpenError carrying the 502", err)
		}
		if n := e.srv.count(routeVnetGet); n != 1 {
			t.Fatalf("%d attempts, want 1", n)
		}
	})
}

// With only the per-retry policy installed nothing puts hidden headers
// back, so none are hidden: the final answer keeps its Retry-After.
func TestPerRetryOnlyKeepsDelayHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		_, perRetry := cloudgazure.Policies(e.opts()...)
		e.srv.script(routeVnetGet, throttled("2"), throttled("2"))
		retry := cloudgazure.RetryOptions(e.opts()...)
		retry.MaxRetries = 1
		o := policy.ClientOptions{Transport: e.base.Transport, Retry: retry, PerRetryPolicies: []policy.Policy{perRetry}}
		pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, &o)
		req, err := runtime.NewRequest(context.Background(), http.MethodGet, "http://127.0.0.1:1/subscriptions/"+subA+
			"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v?api-version=1")
		if err != nil {
			t.Fatal(err)
		}
		req.Raw().Header.Set("Authorization", "Bearer x")
		resp, err := pl.Do(req)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("%v %v, want the final 429", resp, err)
		}
		if got := resp.Header.Get("Retry-After"); got != "2" {
			t.Fatalf("final Retry-After %q, want 2", got)
		}
	})
}
