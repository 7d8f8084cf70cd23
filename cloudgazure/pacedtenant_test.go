package cloudgazure

import (
	"context"
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resourcegraph/armresourcegraph"
)

// tenantClient is a Resource Graph client QueryResources does not govern,
// whose tenant pacedTenants remembers.
type tenantClient struct{ n int }

func (c *tenantClient) Resources(context.Context, armresourcegraph.QueryRequest, *armresourcegraph.ClientResourcesOptions) (armresourcegraph.ClientResourcesResponse, error) {
	return armresourcegraph.ClientResourcesResponse{}, nil
}

// More clients than the memory of their tenants holds (maxPacedTenants)
// cost it one client each, not all of them: with one client more than it
// holds, queried in turn, nearly every page is still paced in its
// client's tenant's scope. Before, the memory was emptied when full, and
// every page of the second round went to the shared scope, where one
// tenant's throttle holds every tenant's queries (a reviewer's run: "257
// of 257 clients' pages paced in azure/*/*/resourcegraph").
func TestMoreClientsThanTheTenantMemoryHoldsForgetFew(t *testing.T) {
	defer pacedTenants.Clear()
	clients := make([]*tenantClient, maxPacedTenants+1)
	for i := range clients {
		clients[i] = &tenantClient{i}
	}
	for round := range 2 {
		forgotten := 0
		for _, c := range clients {
			if round > 0 && pacedTenant(c) == "" {
				forgotten++
			}
			rememberTenant(c, fmt.Sprintf("tenants/t%d", c.n))
		}
		if round > 0 && forgotten > 16 {
			t.Fatalf("second round: %d of %d clients' pages paced in the shared scope, their tenants forgotten; want a few at most", forgotten, len(clients))
		}
	}
}
