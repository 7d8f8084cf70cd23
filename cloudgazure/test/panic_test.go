package test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"
	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// boom is the value the caller's code panics with: the caller must get
// this very value back.
var boom = &struct{ s string }{"boom"}

// panicTransport is a transport that panics.
type panicTransport struct{}

func (panicTransport) Do(*http.Request) (*http.Response, error) { panic(boom) }

// panicAround is a per-retry policy of the caller's, outside the
// package's: it panics once the first attempt returned.
type panicAround struct{}

func (panicAround) Do(req *policy.Request) (*http.Response, error) {
	_, _ = req.Next()
	panic(boom)
}

// panicQuerier is a GraphQuerier that panics.
type panicQuerier struct{}

func (panicQuerier) Resources(context.Context, armresourcegraph.QueryRequest, *armresourcegraph.ClientResourcesOptions) (
	armresourcegraph.ClientResourcesResponse, error,
) {
	panic(boom)
}

// getGroup returns a get of a resource group with c.
func getGroup(c *armresources.ResourceGroupsClient) func(context.Context) error {
	return func(ctx context.Context) error { _, err := c.Get(ctx, "rg", nil); return err }
}

// governedGet returns a get of a resource group with a governed client
// whose options mod changed.
func governedGet(e *env, mod func(*arm.ClientOptions)) func(context.Context) error {
	o := *e.base
	mod(&o)
	c, err := cloudgazure.NewSubscriptionClient(armresources.NewResourceGroupsClient, subA, fakeCred{}, &o, e.opts()...)
	if err != nil {
		e.t.Fatal(err)
	}
	return getGroup(c)
}

// Code of the caller's that panics during a governed Azure request, over
// loopback TCP (the transport under azcore, with both policies or the
// per-retry one alone; a per-retry policy around a throttled attempt whose
// retry the Guard allowed; the GraphQuerier QueryResources paces) ends the
// request as lost to the panic, once, and the panic reaches the caller as
// it was: the slot is given back (the next request, under a cap of one,
// goes at once), and the one call counted has that one outcome.
func TestPanicIsRecordedAndGoesOnOverTCP(t *testing.T) {
	cases := map[string]struct {
		setup func(e *env)
		call  func(e *env) func(context.Context) error
		next  func(e *env) func(context.Context) error
	}{
		"transport": {
			call: func(e *env) func(context.Context) error {
				return governedGet(e, func(o *arm.ClientOptions) { o.Transport = panicTransport{} })
			},
		},
		"transport under the per-retry policy alone": {
			call: func(e *env) func(context.Context) error {
				_, perRetry := cloudgazure.Policies(e.opts()...)
				o := *e.base
				o.Transport = panicTransport{}
				o.PerRetryPolicies = []policy.Policy{perRetry}
				c, err := armresources.NewResourceGroupsClient(subA, fakeCred{}, &o)
				if err != nil {
					t.Fatal(err)
				}
				return getGroup(c)
			},
		},
		"policy around a throttled attempt": {
			setup: func(e *env) { e.srv.script(routeGroupGet, throttled("")) },
			call: func(e *env) func(context.Context) error {
				return governedGet(e, func(o *arm.ClientOptions) { o.PerRetryPolicies = []policy.Policy{panicAround{}} })
			},
		},
		"graph querier": {
			call: func(e *env) func(context.Context) error {
				return func(ctx context.Context) error {
					_, err := cloudgazure.QueryResources(ctx, panicQuerier{}, query, e.opts()...)
					return err
				}
			},
			next: func(e *env) func(context.Context) error {
				return func(ctx context.Context) error {
					_, err := cloudgazure.QueryResources(ctx, e.plainGraph(policy.RetryOptions{MaxRetries: -1}), query, e.opts()...)
					return err
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := tcpEnv(t, resilience.Config{Azure: resilience.ProviderConfig{MaxConcurrency: 1}})
			if tc.setup != nil {
				tc.setup(e)
			}
			ctx, stats := resilience.WithStats(context.Background())
			ctx, ledger := resilience.WithLedger(ctx, "azure")
			next := getGroup(e.groups(subA))
			if tc.next != nil {
				next = tc.next(e)
			}
			panickedThenNext(t, ctx, e.gov, stats, ledger, nil, tc.call(e), next)
		})
	}
}

// panicOnThrottle is a log handler of the caller's that panics with boom
// on the governor's line for a throttled answer (which Guard.After
// writes) and drops every other line.
type panicOnThrottle struct{}

func (panicOnThrottle) Enabled(context.Context, slog.Level) bool { return true }

func (panicOnThrottle) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "cloudg: throttled" {
		panic(boom)
	}
	return nil
}

func (h panicOnThrottle) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h panicOnThrottle) WithGroup(string) slog.Handler      { return h }

// A panic of the caller's code while the package records an attempt's
// answer (the governor's log handler, on a throttled answer), over
// loopback TCP, with both policies, the per-retry one alone, or the pages
// QueryResources paces for an ungoverned client, ends the request as lost
// to the panic, once, and the panic reaches the caller as it was: the
// slot is given back (the next request, under a cap of one, goes at
// once), not held until the garbage collector finds the request's guard.
func TestAPanicRecordingTheAnswerGivesTheSlotBack(t *testing.T) {
	groups := resilience.Scope{Provider: "azure", Account: subALower, Service: "resources"}
	cases := map[string]struct {
		route string
		scope resilience.Scope
		call  func(e *env) func(context.Context) error
	}{
		"both policies": {routeGroupGet, groups, func(e *env) func(context.Context) error { return getGroup(e.groups(subA)) }},
		"the per-retry policy alone": {routeGroupGet, groups, func(e *env) func(context.Context) error {
			_, perRetry := cloudgazure.Policies(e.opts()...)
			o := *e.base
			o.PerRetryPolicies = []policy.Policy{perRetry}
			c, err := armresources.NewResourceGroupsClient(subA, fakeCred{}, &o)
			if err != nil {
				t.Fatal(err)
			}
			return getGroup(c)
		}},
		"graph querier": {routeGraph, graphScope, func(e *env) func(context.Context) error {
			c := e.plainGraph(policy.RetryOptions{MaxRetries: -1})
			return func(ctx context.Context) error {
				_, err := cloudgazure.QueryResources(ctx, c, query, e.opts()...)
				return err
			}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := resilience.Config{Azure: resilience.ProviderConfig{MaxConcurrency: 1}}
			e := tcpEnv(t, cfg)
			gov, err := resilience.NewGovernor(cfg, resilience.WithLogger(slog.New(panicOnThrottle{})))
			if err != nil {
				t.Fatal(err)
			}
			e.gov = gov
			e.srv.script(tc.route, throttled(""))
			ctx, stats := resilience.WithStats(context.Background())
			ctx, ledger := resilience.WithLedger(ctx, "azure")
			call := tc.call(e)
			panickedThenNext(t, ctx, gov, stats, ledger, &tc.scope, call, call)
		})
	}
}

// panickedThenNext runs call, which panics with boom, and checks that the
// caller recovers boom, that no slot of scope is held (when scope is not
// nil), that the call is counted once and lost once as panicked, and that
// next, a request of the same subscription, gets the slot within 10 s and
// goes.
func panickedThenNext(t *testing.T, ctx context.Context, gov *resilience.Governor, stats *resilience.Stats, ledger *resilience.Ledger, scope *resilience.Scope, call, next func(context.Context) error) {
	t.Helper()
	if r := func() (r any) {
		defer func() { r = recover() }()
		_ = call(ctx)
		return nil
	}(); r != boom {
		t.Fatalf("the caller got %v, want the panic's own value", r)
	}
	if scope != nil {
		if in := gov.Inspect(*scope); in.InFlight != 0 {
			t.Fatalf("%d slots held after the panic, want none", in.InFlight)
		}
	}
	if tot := gov.Summary(stats).Totals; tot.Calls != 1 {
		t.Errorf("%d calls counted, want the 1 that panicked", tot.Calls)
	}
	lostOnly(t, gov, stats, ledger, resilience.LossPanicked, 1)
	nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := next(nctx); err != nil {
		t.Fatalf("the next request: %v (the slot was not given back)", err)
	}
	lostOnly(t, gov, stats, ledger, resilience.LossPanicked, 1)
}
