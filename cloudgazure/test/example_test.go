package test

import (
	"context"
	"fmt"
	"net/http/httptest"

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
