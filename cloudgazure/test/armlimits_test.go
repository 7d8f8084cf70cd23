package test

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"

	"github.com/cloudg/cloudg/cloudgazure"
)

// ARM's token buckets (since 2024) count reads, writes and deletes apart,
// per subscription and per tenant, and across all principals of a
// subscription in a global bucket fifteen times a principal's; a success
// says what each has left. Under one second's refill of its bucket (reads
// 25, writes and deletes 10; global reads 375, global writes and deletes
// 150) a reads bucket pauses the subscription for a second, as remaining
// reads under 25 pause it (TestLowRemainingReadsPauseSubscription), and a
// writes or deletes bucket the request's scope, its resource provider of
// the subscription (TestSpentWritesHoldOnlyTheirScope shows that the
// subscription's other resource providers go on); a tenant's header
// pauses the tenant-level requests (no subscription in the path), or the
// tenant-level write's scope, and is not read on a subscription's
// request. At the threshold nothing is paused.
func TestLowRemainingARMQuotaPausesItsScope(t *testing.T) {
	type sender func(e *env) error
	getGroup := func(e *env) error { _, err := e.groups(subA).Get(context.Background(), "rg", nil); return err }
	putGroup := func(e *env) error {
		_, err := e.groups(subA).CreateOrUpdate(context.Background(), "rg", armresources.ResourceGroup{Location: ptr("westeurope")}, nil)
		return err
	}
	deleteGroup := func(e *env) error { _, err := e.groups(subA).BeginDelete(context.Background(), "rg", nil); return err }
	provider := func(ns string) sender {
		return func(e *env) error {
			c, err := cloudgazure.NewSubscriptionClient(armresources.NewProvidersClient, subB, fakeCred{}, e.base, e.opts()...)
			if err != nil {
				return err
			}
			_, err = c.GetAtTenantScope(context.Background(), ns, nil)
			return err
		}
	}
	register := func(ns string) sender {
		return func(e *env) error {
			c, err := cloudgazure.NewSubscriptionClient(armresources.NewProvidersClient, subB, fakeCred{}, e.base, e.opts()...)
			if err != nil {
				return err
			}
			_, err = c.RegisterAtManagementGroupScope(context.Background(), ns, "mg", nil)
			return err
		}
	}
	graphQuery := func(e *env) error { _, err := e.graph().Resources(context.Background(), query, nil); return err }
	// A query of a client whose pipeline is not governed, paced page by
	// page by QueryResources.
	pagedQuery := func(e *env) error {
		e.srv.graphPages = 1
		_, err := cloudgazure.QueryResources(context.Background(), e.plainGraph(policy.RetryOptions{MaxRetries: -1}), query, e.opts()...)
		return err
	}
	vnetA := func(e *env) error { _, err := e.vnets(subA).Get(context.Background(), "rg", "vnet", nil); return err }
	groupB := func(e *env) error { _, err := e.groups(subB).Get(context.Background(), "rg", nil); return err }

	cases := []struct {
		name   string
		route  string
		send   sender // the request whose success carries the header
		header string
		below  int // the threshold: below it the scope pauses
		// held is a request of the paused scope, sent after it;
		// free one of another, never held.
		held, free sender
		// ignored: the header is not read on this request at all.
		ignored bool
	}{
		{"subscription writes", routeGroupPut, putGroup, "x-ms-ratelimit-remaining-subscription-writes", 10, putGroup, groupB, false},
		{"subscription deletes", routeGroupDel, deleteGroup, "x-ms-ratelimit-remaining-subscription-deletes", 10, deleteGroup, groupB, false},
		{"subscription global reads", routeGroupGet, getGroup, "x-ms-ratelimit-remaining-subscription-global-reads", 375, vnetA, groupB, false},
		{"subscription global writes", routeGroupPut, putGroup, "x-ms-ratelimit-remaining-subscription-global-writes", 150, putGroup, groupB, false},
		{"subscription global deletes", routeGroupDel, deleteGroup, "x-ms-ratelimit-remaining-subscription-global-deletes", 150, deleteGroup, groupB, false},
		{"tenant reads", routeProvider, provider("Microsoft.Compute"), "x-ms-ratelimit-remaining-tenant-reads", 25, provider("Microsoft.Network"), vnetA, false},
		{"tenant writes", routeRegister, register("Microsoft.Compute"), "x-ms-ratelimit-remaining-tenant-writes", 10, register("Microsoft.Compute"), vnetA, false},
		// A Resource Graph query is a tenant-level request: the tenant's
		// reads header pauses its account, shared with the tenant-level
		// requests, and the writes header its scope; whether the policies
		// or QueryResources, for a client they do not govern, read the
		// answer.
		{"tenant reads on a Resource Graph query", routeGraph, graphQuery, "x-ms-ratelimit-remaining-tenant-reads", 25, provider("Microsoft.Network"), vnetA, false},
		{"tenant writes on a Resource Graph query", routeGraph, graphQuery, "x-ms-ratelimit-remaining-tenant-writes", 10, graphQuery, vnetA, false},
		{"tenant reads on a page QueryResources paces", routeGraph, pagedQuery, "x-ms-ratelimit-remaining-tenant-reads", 25, provider("Microsoft.Network"), vnetA, false},
		{"tenant writes on a page QueryResources paces", routeGraph, pagedQuery, "x-ms-ratelimit-remaining-tenant-writes", 10, pagedQuery, vnetA, false},
		{"tenant reads on a subscription's request", routeGroupGet, getGroup, "x-ms-ratelimit-remaining-tenant-reads", 25, vnetA, groupB, true},
	}
	for _, c := range cases {
		for _, left := range []int{c.below - 1, c.below} {
			paused := left < c.below && !c.ignored
			t.Run(c.name+" "+strconv.Itoa(left), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					// Rates that hold nothing back (a token costs a nanosecond):
					// only a pause holds a request.
					e := memEnv(t, fast())
					e.srv.okHeaders(c.route, c.header, strconv.Itoa(left))
					if err := c.send(e); err != nil {
						t.Fatal(err)
					}
					start := time.Now()
					if err := c.free(e); err != nil {
						t.Fatal(err)
					}
					if d := time.Since(start); d >= time.Millisecond {
						t.Fatalf("%s: %d left held a request of another scope %v", c.header, left, d)
					}
					if err := c.held(e); err != nil {
						t.Fatal(err)
					}
					d := time.Since(start)
					switch {
					case paused && !near(d, time.Second, time.Millisecond):
						t.Errorf("%s: %d left (under %d): the next request of its scope waited %v, want 1s", c.header, left, c.below, d)
					case !paused && d >= time.Millisecond:
						t.Errorf("%s: %d left: the next request of its scope waited %v, want none", c.header, left, d)
					}
				})
			})
		}
	}
}
