package test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// Any ARM client built with ClientOptions is governed: here a virtual
// networks client against a fake ARM endpoint on loopback.
func ExampleClientOptions() {
	srv := httptest.NewServer(newFakeARM())
	defer srv.Close()
	gov, _ := resilience.NewGovernor(resilience.Config{})

	// base points the client at the fake endpoint; nil for Azure itself.
	base := armOptions(srv.URL, nil)
	opts := cloudgazure.ClientOptions(base, cloudgazure.WithGovernor(gov))
	vnets, err := armnetwork.NewVirtualNetworksClient(subA, fakeCred{}, opts)
	if err != nil {
		panic(err)
	}
	ctx, stats := resilience.WithStats(context.Background())
	vn, err := vnets.Get(ctx, "rg", "vnet-0", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(*vn.Name, opts.Retry.MaxRetries, opts.Retry.MaxRetryDelay)
	for scope, s := range gov.Summary(stats).Scopes {
		fmt.Println(scope, s.Calls)
	}
	// Output:
	// vnet-0 8 1m0s
	// azure/0b1f6471-1bf0-4dda-aec3-cb9272f09590/*/network 1
}

// QueryResources follows the skip tokens of a Resource Graph query.
func ExampleQueryResources() {
	srv := httptest.NewServer(newFakeARM())
	defer srv.Close()
	gov, _ := resilience.NewGovernor(resilience.Config{})
	graph, err := cloudgazure.NewGraphClient(fakeCred{}, armOptions(srv.URL, nil), cloudgazure.WithGovernor(gov))
	if err != nil {
		panic(err)
	}
	q := "Resources | project id"
	rows, err := cloudgazure.QueryResources(context.Background(), graph, armresourcegraph.QueryRequest{Query: &q})
	fmt.Println(len(rows), err)
	// Output:
	// 6 <nil>
}

// A scheduler asks how long a request would wait now (Governor.Delay on
// ScopeOf's scope, which changes nothing), and lets a request refuse to
// wait past a bound (resilience.WithMaxWait), so that it can requeue the
// task instead of holding its worker. Here ARM throttled a request with
// Retry-After: 30.
func ExampleScopeOf() {
	fake := newFakeARM()
	fake.script(routeVnetGet, throttled("30"))
	srv := httptest.NewServer(fake)
	defer srv.Close()
	gov, _ := resilience.NewGovernor(resilience.Config{})
	vnets, err := cloudgazure.NewSubscriptionClient(armnetwork.NewVirtualNetworksClient, subA, fakeCred{},
		armOptions(srv.URL, nil), cloudgazure.WithGovernor(gov))
	if err != nil {
		panic(err)
	}
	scope := cloudgazure.ScopeOf("/subscriptions/" + subA + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet-0")
	wait, why := gov.Delay(scope)
	fmt.Println(scope, wait, why)

	ctx := resilience.WithMaxWait(context.Background(), time.Second)
	_, err = vnets.Get(ctx, "rg", "vnet-0", nil) // 429, Retry-After: 30: refused at once
	retryAfter, _ := resilience.RetryAfter(err)
	fmt.Println(resilience.Classify(err), retryAfter.Round(time.Second), errors.Is(err, resilience.ErrNoToken))
	wait, why = gov.Delay(scope)
	fmt.Println(wait.Round(time.Second), why)
	// Output:
	// azure/0b1f6471-1bf0-4dda-aec3-cb9272f09590/*/network 0s <nil>
	// THROTTLED 30s true
	// 30s resilience: no rate token now
}
