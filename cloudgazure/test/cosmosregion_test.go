package test

import (
	"net/url"
	"testing"

	"github.com/cloudg/cloudg/cloudgazure"
)

// A Cosmos DB account answers at its global endpoint,
// <account>.documents.azure.com, and at one regional endpoint per region
// it is replicated to, <account>-<location name>.documents.azure.com
// (Cosmos DB's DatabaseAccountLocation.DatabaseAccountEndpoint: "for
// example, https://contoso-WestUS.documents.azure.com:443/"), to which
// azcosmos's endpoint manager sends an account's requests, the dedicated
// gateway and the Table API likewise. A regional endpoint's requests are
// the account's: its scope has the account as its account, and the
// region, whose request units are provisioned apart, as its region, so
// that the account's calls are not split between an account named
// contoso and one named contoso-westus. Only Azure's location names are
// cut off: an account whose own name holds a hyphen (orders-prod) keeps
// it whole.
func TestScopeOfURLReadsCosmosRegionalEndpoints(t *testing.T) {
	checkScopeOfURL(t, []scopeCase{
		{"https://contoso-westus.documents.azure.com/dbs/d/colls/c/docs/x", azIn("contoso", "westus", "cosmosdb")},
		{"https://contoso-WestUS.documents.azure.com:443/dbs/d", azIn("contoso", "westus", "cosmosdb")},
		{"https://orders-prod-eastus2.documents.azure.com/dbs/d", azIn("orders-prod", "eastus2", "cosmosdb")},
		{"https://acct-southeastasia.documents.azure.com./dbs/d", azIn("acct", "southeastasia", "cosmosdb")},
		{"https://acct-chinaeast2.documents.azure.cn/dbs/d", azIn("acct", "chinaeast2", "cosmosdb")},
		{"https://acct-usgovvirginia.documents.azure.us/dbs/d", azIn("acct", "usgovvirginia", "cosmosdb")},
		{"https://acct-westeurope.sqlx.cosmos.azure.com/dbs/d", azIn("acct", "westeurope", "cosmosdb")},
		{"https://acct-northeurope.table.cosmos.azure.com/t", azIn("acct", "northeurope", "cosmosdb")},
		// The global endpoint, and an account whose name holds a hyphen
		// but ends with no location name: the account, no region.
		{"https://contoso.documents.azure.com/dbs/d", az("contoso", "cosmosdb")},
		{"https://orders-prod.documents.azure.com/dbs/d", az("orders-prod", "cosmosdb")},
		{"https://my-west.documents.azure.com/dbs/d", az("my-west", "cosmosdb")},
		{"https://-westus.documents.azure.com/dbs/d", az("-westus", "cosmosdb")},
		// Not Cosmos DB: a storage account's table service.
		{"https://acct-westus.table.core.windows.net/t", az("acct-westus", "table")},
	})
	u, _ := url.Parse("https://contoso-westus.documents.azure.com/dbs/d")
	if n := testing.AllocsPerRun(100, func() { cloudgazure.ScopeOfURL(u) }); n != 0 {
		t.Errorf("ScopeOfURL(%q) allocates %v times", u, n)
	}
}
