package test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// A Cosmos DB account's name is its host's first label, whole: a name may
// hold hyphens and end with what reads as a location name (orders-eastus2,
// a common way of naming an account for the region it serves, is a legal
// name), and an account's regional endpoints are whatever its properties
// name (writableLocations[].databaseAccountEndpoint, which azcosmos reads
// and never composes: contoso-westus.documents.azure.com, or a custom
// host), so that no host can be read as another account's in a region.
// Two accounts named for their regions are two accounts: one's requests
// neither take the other's slots of the account's bulkhead nor spend its
// account bucket.
func TestACosmosAccountNamedForARegionIsItsOwn(t *testing.T) {
	checkScopeOfURL(t, []scopeCase{
		{"https://orders-eastus2.documents.azure.com/dbs/d/colls/c/docs/x", az("orders-eastus2", "cosmosdb")},
		{"https://Shop-WestUS.documents.azure.com:443/dbs/d", az("shop-westus", "cosmosdb")},
		{"https://orders-prod-eastus2.documents.azure.com/dbs/d", az("orders-prod-eastus2", "cosmosdb")},
		{"https://acct-southeastasia.documents.azure.com./dbs/d", az("acct-southeastasia", "cosmosdb")},
		{"https://acct-chinaeast2.documents.azure.cn/dbs/d", az("acct-chinaeast2", "cosmosdb")},
		{"https://acct-usgovvirginia.documents.azure.us/dbs/d", az("acct-usgovvirginia", "cosmosdb")},
		{"https://acct-westeurope.sqlx.cosmos.azure.com/dbs/d", az("acct-westeurope", "cosmosdb")},
		{"https://acct-northeurope.table.cosmos.azure.com/t", az("acct-northeurope", "cosmosdb")},
		{"https://contoso.documents.azure.com/dbs/d", az("contoso", "cosmosdb")},
		{"https://orders-prod.documents.azure.com/dbs/d", az("orders-prod", "cosmosdb")},
		{"https://-westus.documents.azure.com/dbs/d", az("-westus", "cosmosdb")},
	})
	u, _ := url.Parse("https://orders-eastus2.documents.azure.com/dbs/d")
	if n := testing.AllocsPerRun(100, func() { cloudgazure.ScopeOfURL(u) }); n != 0 {
		t.Errorf("ScopeOfURL(%q) allocates %v times", u, n)
	}

	synctest.Test(t, func(t *testing.T) {
		// One slot per account: a request of orders-eastus2 answered in
		// 10 s holds its account's slot that long.
		gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{MaxConcurrency: 1}})
		slow := transportFunc(func(req *http.Request) (*http.Response, error) {
			if strings.HasPrefix(req.URL.Host, "orders-eastus2.") {
				time.Sleep(10 * time.Second)
			}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		})
		ctx, stats := resilience.WithStats(context.Background())
		send := governedSend(t, ctx, gov, slow)
		done := make(chan struct{})
		go func() {
			defer close(done)
			send("https://orders-eastus2.documents.azure.com/dbs/d/colls/c/docs/a")
		}()
		synctest.Wait()
		if st, took := send("https://orders-westus2.documents.azure.com/dbs/d/colls/c/docs/b"); st != http.StatusOK || took != 0 {
			t.Errorf("orders-westus2: %d after %v, want 200 at once: another account's request held its slot", st, took)
		}
		<-done
		got := gov.Summary(stats).Scopes
		for _, sc := range []resilience.Scope{az("orders-eastus2", "cosmosdb"), az("orders-westus2", "cosmosdb")} {
			if got[sc].Calls != 1 {
				t.Errorf("scope %v: %d calls, want 1 (scopes: %v)", sc, got[sc].Calls, got)
			}
		}
	})
}
