package test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// The client's retry options come from the governor's configuration (8
// retries, 60 s max backoff and a 900 s deadline by default), and the
// caller's options are copied, never modified.
func TestClientRetryOptions(t *testing.T) {
	def := newGov(t, resilience.Config{})
	o := cloudgazure.ClientOptions(nil, cloudgazure.WithGovernor(def))
	if o.Retry.MaxRetries != 8 || o.Retry.MaxRetryDelay != 60*time.Second || o.Retry.RetryDelay != 500*time.Millisecond {
		t.Fatalf("default retry options %+v, want 8 retries, 60 s max delay, 0.5 s delay", o.Retry)
	}
	if len(o.PerCallPolicies) != 1 || len(o.PerRetryPolicies) != 1 {
		t.Fatalf("policies %d per call, %d per retry, want 1 and 1", len(o.PerCallPolicies), len(o.PerRetryPolicies))
	}
	if s := def.Policy("azure"); s.Deadline != 900*time.Second {
		t.Fatalf("default deadline %v, want 900 s", s.Deadline)
	}

	gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{
		MaxRetries: ptr(3), MaxBackoffSeconds: 20, BaseDelaySeconds: 0.25, DeadlineSeconds: 30,
	}})
	mine := policy.Policy(nil)
	base := &arm.ClientOptions{DisableRPRegistration: true}
	base.Retry.TryTimeout = time.Minute
	base.PerCallPolicies = make([]policy.Policy, 1, 4)
	base.PerCallPolicies[0] = mine
	o = cloudgazure.ClientOptions(base, cloudgazure.WithGovernor(gov))
	if o.Retry.MaxRetries != 3 || o.Retry.MaxRetryDelay != 20*time.Second || o.Retry.RetryDelay != 250*time.Millisecond || o.Retry.TryTimeout != time.Minute {
		t.Fatalf("configured retry options %+v", o.Retry)
	}
	if !o.DisableRPRegistration || len(o.PerCallPolicies) != 2 || len(base.PerCallPolicies) != 1 ||
		base.PerCallPolicies[:2][1] != nil || base.Retry.MaxRetries != 0 || len(base.PerRetryPolicies) != 0 {
		t.Fatalf("the caller's options were changed: %+v", base)
	}
	if again := cloudgazure.ClientOptions(o, cloudgazure.WithGovernor(gov)); len(again.PerCallPolicies) != 2 || len(again.PerRetryPolicies) != 1 {
		t.Fatal("options governed twice")
	}
	none := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(0)}})
	if r := cloudgazure.RetryOptions(cloudgazure.WithGovernor(none)); r.MaxRetries != -1 {
		t.Fatalf("max_retries 0 gave azcore MaxRetries %d, want -1 (azcore reads 0 as 3)", r.MaxRetries)
	}
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
			pl, req := ownPipeline(t, &o)
			budget := e.gov.Inspect(networkA).RetryBudget
			ctx, stats := resilience.WithStats(context.Background())
			resp, err := pl.Do(req.WithContext(ctx))
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("per call %v: %v %v", withPerCall, resp, err)
			}
			sc := e.gov.Summary(stats).Scopes[networkA]
			if sc.Calls != 4 || sc.Throttled != 3 || sc.Retries != 3 {
				t.Fatalf("per call %v: stats %+v, want 4 calls, 3 throttled, 3 retries", withPerCall, sc)
			}
			// One token for the third retry, 0.1 back for the success.
			if spent := budget - e.gov.Inspect(networkA).RetryBudget; math.Abs(spent-0.9) > 1e-9 {
				t.Fatalf("per call %v: %v budget tokens spent, want 0.9 (two retries free)", withPerCall, spent)
			}
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
		pl, req := ownPipeline(t, &o)
		resp, err := pl.Do(req)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("%v %v, want the final 429", resp, err)
		}
		if got := resp.Header.Get("Retry-After"); got != "2" {
			t.Fatalf("final Retry-After %q, want 2", got)
		}
	})
}

// Under azcore's TryTimeout each attempt has a context of its own, ended
// after the attempt: with only the per-retry policy installed, a Guard
// begun on the first attempt's context would end the retry with that
// context's error. The retry is sent, governed as a call of its own, and
// nothing is recorded as cancelled. Real pipeline, fake ARM on 127.0.0.1.
func TestPerRetryOnlyRetriesUnderTryTimeout(t *testing.T) {
	e := tcpEnv(t, resilience.Config{})
	_, perRetry := cloudgazure.Policies(e.opts()...)
	e.srv.script(routeVnetGet, withHeader(throttled(""), "Retry-After-Ms", "10"), reply{})
	retry := cloudgazure.RetryOptions(e.opts()...)
	retry.TryTimeout = 30 * time.Second
	o := policy.ClientOptions{Transport: e.base.Transport, Retry: retry, PerRetryPolicies: []policy.Policy{perRetry}}
	pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, &o)
	ctx, stats := resilience.WithStats(context.Background())
	req, err := runtime.NewRequest(ctx, http.MethodGet, e.base.Cloud.Services[cloud.ResourceManager].Endpoint+
		"/subscriptions/"+subA+"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v?api-version=1")
	if err != nil {
		t.Fatal(err)
	}
	req.Raw().Header.Set("Authorization", "Bearer x")
	resp, err := pl.Do(req)
	sc := e.gov.Summary(stats).Scopes[networkA]
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%v %v, want 200 after one retry; sent %d; stats %+v", resp, err, e.srv.count(routeVnetGet), sc)
	}
	if n := e.srv.count(routeVnetGet); n != 2 || sc.Calls != 2 || sc.Throttled != 1 || sc.Lost() != 0 {
		t.Fatalf("sent %d; stats %+v, want 2 sent, 2 calls, 1 throttled, none lost", n, sc)
	}
}

// The policies installed in a pipeline of their own do not see its retry
// options: each retry is asked for when azcore sends it, so azcore's last
// attempt counts no retry and costs no budget.
func TestPoliciesLastAttemptCountsNoRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{RetryBudget: ptr(10)}})
		perCall, perRetry := cloudgazure.Policies(e.opts()...)
		for _, withPerCall := range []bool{true, false} {
			e.srv.script(routeVnetGet, throttled("1"), throttled("1"), throttled("1"), throttled("1"))
			retry := cloudgazure.RetryOptions(e.opts()...)
			retry.MaxRetries = 3
			o := policy.ClientOptions{Transport: e.base.Transport, Retry: retry}
			if withPerCall {
				o.PerCallPolicies = []policy.Policy{perCall}
			}
			o.PerRetryPolicies = []policy.Policy{perRetry}
			pl, req := ownPipeline(t, &o)
			budget := e.gov.Inspect(networkA).RetryBudget
			ctx, stats := resilience.WithStats(context.Background())
			resp, err := pl.Do(req.WithContext(ctx))
			if err != nil || resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("per call %v: %v %v, want the last 429", withPerCall, resp, err)
			}
			sc := e.gov.Summary(stats).Scopes[networkA]
			if sc.Calls != 4 || sc.Retries != 3 {
				t.Fatalf("per call %v: stats %+v, want 4 calls, 3 retries", withPerCall, sc)
			}
			if spent := budget - e.gov.Inspect(networkA).RetryBudget; spent != 1 {
				t.Fatalf("per call %v: %v budget tokens spent, want 1 (for the third retry)", withPerCall, spent)
			}
		}
	})
}

// ownPipeline returns a pipeline of its own built with o, and a GET of a
// virtual network of subA for it.
func ownPipeline(t *testing.T, o *policy.ClientOptions) (runtime.Pipeline, *policy.Request) {
	t.Helper()
	pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, o)
	req, err := runtime.NewRequest(context.Background(), http.MethodGet, "http://127.0.0.1:1/subscriptions/"+subA+
		"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v?api-version=1")
	if err != nil {
		t.Fatal(err)
	}
	req.Raw().Header.Set("Authorization", "Bearer x")
	return pl, req
}

// admissionRec records what the governor tells a scheduler of a task's
// first call (resilience.WithAdmission).
type admissionRec struct{ decided, deferred atomic.Int32 }

func (a *admissionRec) Decided()                      { a.decided.Add(1) }
func (a *admissionRec) Deferred(time.Duration, error) { a.deferred.Add(1) }

// A call of a disabled provider goes at once, ungoverned, and decides the
// admission its context carries (a scheduler's hold on the scope's next
// task, package pool's), as the core's calls of a disabled provider do:
// it used to decide nothing, and the scheduler held the scope's next task
// back until its hold timed out.
func TestADisabledProvidersCallDecidesItsAdmission(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{Enabled: ptr(enabled)}})
			var a admissionRec
			ctx := resilience.WithAdmission(context.Background(), &a, 0)
			for range 2 {
				if _, err := e.groups(subA).Get(ctx, "rg", nil); err != nil {
					t.Fatal(err)
				}
			}
			if a.decided.Load() != 1 || a.deferred.Load() != 0 {
				t.Errorf("enabled %v: decided %d times, deferred %d; want 1 and 0", enabled, a.decided.Load(), a.deferred.Load())
			}
			// The per-retry policy alone, in a pipeline of its own.
			_, perRetry := cloudgazure.Policies(e.opts()...)
			o := policy.ClientOptions{Transport: e.base.Transport, Retry: cloudgazure.RetryOptions(e.opts()...),
				PerRetryPolicies: []policy.Policy{perRetry}}
			pl, req := ownPipeline(t, &o)
			var own admissionRec
			if _, err := pl.Do(req.WithContext(resilience.WithAdmission(context.Background(), &own, 0))); err != nil {
				t.Fatal(err)
			}
			if own.decided.Load() != 1 || own.deferred.Load() != 0 {
				t.Errorf("enabled %v, the per-retry policy alone: decided %d times, deferred %d; want 1 and 0", enabled, own.decided.Load(), own.deferred.Load())
			}
		})
	}
}
