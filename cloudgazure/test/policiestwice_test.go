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

// resendPolicy is a caller's per-call policy that sends a request again
// once when its answer is a 409.
type resendPolicy struct{}

func (resendPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err == nil && resp.StatusCode == http.StatusConflict {
		return req.Next()
	}
	return resp, err
}

// A request a caller's per-call policy, ahead of the package's, sends
// again once the package's per-call policy returned is a request of its
// own, governed as the first was, its final answer recorded: it is not
// taken for the request of a per-call policy of the package's installed
// twice.
func TestARequestSentAgainByAnEarlierPolicyIsGoverned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(0)}})
		e.srv.script(routeVnetGet, reply{status: http.StatusConflict, code: "Conflict"}, throttled("1"))
		base := *e.base
		base.PerCallPolicies = []policy.Policy{resendPolicy{}}
		o := cloudgazure.ClientOptions(&base, e.opts()...).ClientOptions
		pl, req := ownPipeline(t, &o)
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "vnets")
		resp, err := pl.Do(req.WithContext(ctx))
		if err != nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("%v %v, want the 429 the request sent again was answered", resp, err)
		}
		if sc := e.gov.Summary(stats).Scopes[networkA]; sc.Calls != 2 || sc.GaveUp != 1 || ledger.Lost() != 1 {
			t.Fatalf("stats %+v, %d lost, want 2 calls, the second given up and lost: the request sent again governed too",
				sc, ledger.Lost())
		}
		if n := e.gov.Inspect(networkA).InFlight; n != 0 {
			t.Fatalf("%d slots held, want none", n)
		}
	})
}
