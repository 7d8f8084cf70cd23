package test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// A pipeline that carries the package's policies twice (Policies
// installed twice, as by a helper that adds them to options that carry
// them already; or ClientOptions of a base whose per-retry policies hold
// Policies' per-retry policy alone) governs each request once: a
// throttled attempt and its retry are two calls, one throttle, one
// retry. Before, the second per-call policy began a Guard of its own, and
// the second per-retry policy entered the attempt's Guard again: "calls
// 4, throttled 2" for the two attempts.
func TestPoliciesInstalledTwiceGovernOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		options func(e *env) policy.ClientOptions
	}{
		{"policies twice", func(e *env) policy.ClientOptions {
			perCall, perRetry := cloudgazure.Policies(e.opts()...)
			perCall2, perRetry2 := cloudgazure.Policies(e.opts()...)
			return policy.ClientOptions{Transport: e.base.Transport, Retry: cloudgazure.RetryOptions(e.opts()...),
				PerCallPolicies: []policy.Policy{perCall, perCall2}, PerRetryPolicies: []policy.Policy{perRetry, perRetry2}}
		}},
		{"per-retry policy twice", func(e *env) policy.ClientOptions {
			_, perRetry := cloudgazure.Policies(e.opts()...)
			_, perRetry2 := cloudgazure.Policies(e.opts()...)
			return policy.ClientOptions{Transport: e.base.Transport, Retry: cloudgazure.RetryOptions(e.opts()...),
				PerRetryPolicies: []policy.Policy{perRetry, perRetry2}}
		}},
		{"client options of a base with the per-retry policy", func(e *env) policy.ClientOptions {
			_, perRetry := cloudgazure.Policies(e.opts()...)
			base := *e.base
			base.PerRetryPolicies = []policy.Policy{perRetry}
			return cloudgazure.ClientOptions(&base, e.opts()...).ClientOptions
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, resilience.Config{})
				e.srv.script(routeVnetGet, throttled("2"))
				o := tc.options(e)
				pl, req := ownPipeline(t, &o)
				ctx, stats := resilience.WithStats(context.Background())
				resp, err := pl.Do(req.WithContext(ctx))
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("%v %v, want the vnet after a retry", resp, err)
				}
				if n := e.srv.count(routeVnetGet); n != 2 {
					t.Fatalf("%d attempts, want 2", n)
				}
				if sc := e.gov.Summary(stats).Scopes[networkA]; sc.Calls != 2 || sc.Throttled != 1 || sc.Retries != 1 {
					t.Fatalf("stats %+v, want 2 calls, 1 throttled, 1 retry: each attempt governed once", sc)
				}
				if n := e.gov.Inspect(networkA).InFlight; n != 0 {
					t.Fatalf("%d slots held, want none", n)
				}
			})
		})
	}
}
