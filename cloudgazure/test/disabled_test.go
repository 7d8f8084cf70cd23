package test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// disabledConfigs are the two ways to disable the azure provider
// (ratelimit.azure.enabled: false, ratelimit.enabled: false), each with
// the provider's max_retries set to retries (nil: the default, 8).
func disabledConfigs(retries *int) []struct {
	name string
	cfg  resilience.Config
} {
	return []struct {
		name string
		cfg  resilience.Config
	}{
		{"azure disabled", resilience.Config{Azure: resilience.ProviderConfig{Enabled: ptr(false), MaxRetries: retries}}},
		{"all disabled", resilience.Config{Enabled: ptr(false), Azure: resilience.ProviderConfig{MaxRetries: retries}}},
	}
}

// With the azure provider disabled the spec calls fn once, directly, with
// no pacing and no retries of the governor's: a client built with
// ClientOptions steps aside, and azcore retries its requests with the
// retry options the client was given (base's Retry, azcore's defaults
// when unset, or a call's own policy.WithRetryOptions), not with those
// ClientOptions made of the governor's retry policy. A fake ARM server on
// 127.0.0.1 answers 429 (retry-after-ms: 1), then 200.
func TestADisabledProviderKeepsTheClientsRetryOptions(t *testing.T) {
	cases := []struct {
		name    string
		retries *int                // the provider's max_retries
		user    policy.RetryOptions // the client's, base's Retry
		ctx     func(context.Context) context.Context
		want    int // requests the server gets
	}{
		// The governor would retry (8 retries); the client does not.
		{name: "the client's MaxRetries -1", user: policy.RetryOptions{MaxRetries: -1}, want: 1},
		// The governor would not retry (max_retries 0); azcore's
		// defaults (3 retries) do.
		{name: "azcore's defaults, max_retries 0", retries: ptr(0), want: 2},
		// The client retries no 429.
		{name: "the client's StatusCodes", user: policy.RetryOptions{StatusCodes: []int{http.StatusServiceUnavailable}}, want: 1},
		// A call's own options are azcore's to apply, over the client's.
		{name: "a call's own WithRetryOptions", retries: ptr(0), ctx: func(ctx context.Context) context.Context {
			return policy.WithRetryOptions(ctx, policy.RetryOptions{MaxRetries: 2})
		}, want: 2},
		{name: "a call's own WithRetryOptions, no retries", ctx: func(ctx context.Context) context.Context {
			return policy.WithRetryOptions(ctx, policy.RetryOptions{MaxRetries: -1})
		}, want: 1},
	}
	for _, tc := range cases {
		for _, dc := range disabledConfigs(tc.retries) {
			t.Run(dc.name+"/"+tc.name, func(t *testing.T) {
				e := tcpEnv(t, dc.cfg)
				e.base.Retry = tc.user
				e.srv.script(routeGroupGet, withHeader(throttled(""), "retry-after-ms", "1"))
				ctx, stats := resilience.WithStats(context.Background())
				if tc.ctx != nil {
					ctx = tc.ctx(ctx)
				}
				_, err := e.groups(subA).Get(ctx, "rg", nil)
				n := e.srv.count(routeGroupGet)
				if n != tc.want {
					t.Errorf("%d requests, want %d: a disabled provider's request is retried as the client's own retry options say", n, tc.want)
				}
				var re *azcore.ResponseError
				if throttledAnswer := errors.As(err, &re) && re.StatusCode == http.StatusTooManyRequests; throttledAnswer != (tc.want == 1) {
					t.Errorf("err %s, want the 429 only when it is not retried", short(err))
				}
				if tot := e.gov.Summary(stats).Totals; tot.Calls != 0 || tot.Throttled != 0 || tot.Retries != 0 {
					t.Errorf("totals %+v, want nothing recorded", tot)
				}
			})
		}
	}
}

// The client's MaxRetryDelay and RetryDelay, not the governor's
// max_backoff_seconds (60 s) and base_delay_seconds (0.5 s), decide
// azcore's waits for a disabled provider's request: a Retry-After of 2 s
// over the client's MaxRetryDelay of 1 s is not retried, and a 503
// without a hint is retried after the client's RetryDelay of 5 s (azcore's
// jitter: 4 to 6.5 s).
func TestADisabledProviderKeepsTheClientsRetryDelays(t *testing.T) {
	for _, dc := range disabledConfigs(nil) {
		t.Run(dc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, dc.cfg)
				e.base.Retry = policy.RetryOptions{MaxRetryDelay: time.Second}
				e.srv.script(routeGroupGet, throttled("2"))
				if _, err := e.groups(subA).Get(context.Background(), "rg", nil); err == nil {
					t.Error("a Retry-After over the client's MaxRetryDelay: the request succeeded, want the 429")
				}
				if n := e.srv.count(routeGroupGet); n != 1 {
					t.Errorf("a Retry-After over the client's MaxRetryDelay: %d requests, want 1", n)
				}

				e = memEnv(t, dc.cfg)
				e.base.Retry = policy.RetryOptions{RetryDelay: 5 * time.Second}
				e.srv.script(routeGroupGet, reply{status: http.StatusServiceUnavailable})
				if _, err := e.groups(subA).Get(context.Background(), "rg", nil); err != nil {
					t.Fatal(err)
				}
				if hs := e.srv.hitsOf(routeGroupGet); len(hs) != 2 || gap(hs, 0, 1) < 4*time.Second || gap(hs, 0, 1) > 6500*time.Millisecond {
					t.Errorf("the client's RetryDelay 5s: %d requests, the retry %v after the first, want 2, 4 to 6.5 s apart", len(hs), gap(hs, 0, len(hs)-1))
				}
			})
		})
	}
}

// short is an error's gist: a response error's status, or the error.
func short(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return "ResponseError " + re.ErrorCode + " " + http.StatusText(re.StatusCode)
	}
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// With the azure provider disabled QueryResources fetches each page once,
// directly, with the client's own retry options, as the core's Do calls
// its function once: a client that is not governed is neither paced nor
// retried by QueryResources (QueryLimits are for a governed provider),
// and nothing is recorded. Before, a throttled page of such a client was
// retried after the longer of QueryLimits' backoff and its hint, through
// a Guard whose Retry still allowed QueryLimits' attempts.
func TestADisabledProviderFetchesEachPageOnce(t *testing.T) {
	for _, dc := range disabledConfigs(nil) {
		t.Run(dc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, dc.cfg)
				e.srv.graphPages = 2
				e.srv.script(routeGraph, throttled("7"))
				ctx, stats := resilience.WithStats(context.Background())
				start := time.Now()
				rows, err := cloudgazure.QueryResources(ctx, e.plainGraph(policy.RetryOptions{MaxRetries: -1}), query, e.opts()...)
				var re *azcore.ResponseError
				if !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests || len(rows) != 0 || time.Since(start) != 0 {
					t.Errorf("a client that does not retry: %d rows, err %s after %v, want the 429 at once", len(rows), short(err), time.Since(start))
				}
				if n := e.srv.count(routeGraph); n != 1 {
					t.Errorf("a client that does not retry: %d requests, want 1: a disabled provider's page is fetched once", n)
				}

				// The client's own retries are its own: azcore retries the
				// throttled page after its hint, and QueryResources goes on.
				e.srv.script(routeGraph, throttled("2"))
				start = time.Now()
				rows, err = cloudgazure.QueryResources(ctx, e.plainGraph(policy.RetryOptions{}), query, e.opts()...)
				if err != nil || len(rows) != 4 || time.Since(start) != 2*time.Second {
					t.Errorf("a client that retries: %d rows, err %s after %v, want 4 rows after its 2 s retry", len(rows), short(err), time.Since(start))
				}
				if n := e.srv.count(routeGraph); n != 4 {
					t.Errorf("%d requests in all, want 4: the first query's page, then the second's throttled page, its retry and page 2", n)
				}
				if tot := e.gov.Summary(stats).Totals; tot.Calls != 0 || tot.Throttled != 0 || tot.Retries != 0 {
					t.Errorf("totals %+v, want nothing recorded", tot)
				}
			})
		})
	}
}

// A disabled provider's requests (a subscription's, a tenant-level one
// whose token names its tenant and one whose token does not, Resource
// Graph queries through the policies and paced by nothing), throttled
// ones included, leave nothing a reader sees: no live scope (Scopes),
// each scope as a governor no request used shows it (Inspect), and no
// calls in the lifetime's or the run's Summary. The begun and ended Guard
// that decides a scheduler's admission makes no state.
func TestADisabledProviderLeavesNoState(t *testing.T) {
	for _, dc := range disabledConfigs(nil) {
		t.Run(dc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, dc.cfg)
				ctx, stats := resilience.WithStats(context.Background())
				e.srv.script(routeGroupGet, throttled("1"))
				if _, err := e.groups(subA).Get(ctx, "rg", nil); err != nil {
					t.Fatal(err)
				}
				for _, cred := range []azcore.TokenCredential{tenantCred{tenantA}, fakeCred{}} {
					e.srv.script(routeProvider, withHeader(reply{status: http.StatusTooManyRequests, code: "TenantRequestsThrottled"}, "Retry-After", "1"))
					c, err := cloudgazure.NewSubscriptionClient(armresources.NewProvidersClient, subB, cred, e.base, e.opts()...)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := c.GetAtTenantScope(ctx, "Microsoft.Compute", nil); err != nil {
						t.Fatal(err)
					}
				}
				for _, client := range []cloudgazure.GraphQuerier{e.graph(), e.plainGraph(policy.RetryOptions{})} {
					e.srv.script(routeGraph, throttled("1"))
					if _, err := cloudgazure.QueryResources(ctx, client, query, e.opts()...); err != nil {
						t.Fatal(err)
					}
				}
				for scope := range e.gov.Scopes() {
					t.Errorf("live scope %v, want none", scope)
				}
				fresh := newGov(t, dc.cfg)
				tenantScope := resilience.Scope{Provider: "azure", Account: "tenants/" + strings.ToLower(tenantA), Service: "compute"}
				shared := resilience.Scope{Provider: "azure", Service: "compute"}
				for _, s := range []resilience.Scope{resourcesA, tenantScope, shared, graphScope} {
					if got, want := e.gov.Inspect(s), fresh.Inspect(s); !reflect.DeepEqual(got, want) {
						t.Errorf("Inspect(%v) = %+v, want %+v, as for a governor no request used", s, got, want)
					}
				}
				if sum := e.gov.Summary(nil); sum.Totals.Calls != 0 || len(sum.Scopes) != 0 {
					t.Errorf("lifetime: %+v, want no calls", sum)
				}
				if sum := e.gov.Summary(stats); sum.Totals.Calls != 0 || len(sum.Scopes) != 0 {
					t.Errorf("run: %+v, want no calls", sum)
				}
			})
		})
	}
}
