package test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

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
	checkNoAllocs(t, "https://orders-eastus2.documents.azure.com/dbs/d")
	// One slot per account: a request of orders-eastus2 answered in 10 s
	// holds its account's slot that long.
	checkOwnSlots(t, "https://orders-eastus2.documents.azure.com/dbs/d/colls/c/docs/a", "https://orders-westus2.documents.azure.com/dbs/d/colls/c/docs/b",
		az("orders-eastus2", "cosmosdb"), az("orders-westus2", "cosmosdb"))
}

// regionalHosts stands for azcosmos's retry policy (clientRetryPolicy),
// which runs in the per-retry stage ahead of the policies a client's
// options add and sends each attempt to the regional endpoint its
// endpoint manager resolves (req.Raw().URL.Host set to one of the
// account's databaseAccountEndpoint hosts), and a 503 again at once to the
// next region.
type regionalHosts struct{ hosts []string }

func (p regionalHosts) Do(req *policy.Request) (*http.Response, error) {
	for i := 0; ; i++ {
		req.Raw().Host = p.hosts[i]
		req.Raw().URL.Host = p.hosts[i]
		resp, err := req.Next()
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || i == len(p.hosts)-1 {
			return resp, err
		}
		if err := req.RewindBody(); err != nil {
			return resp, err
		}
	}
}

// azcosmos builds every request on the client's endpoint (the account's
// global one, contoso.documents.azure.com) and its retry policy sends
// each attempt to a regional endpoint in the per-retry stage, after the
// per-call policy has begun the request's Guard on the endpoint's scope.
// One call is one Guard: each attempt, whichever region it went to, is
// governed and recorded in the scope the Guard began in, the account's,
// never in one named by a regional host.
func TestCosmosRegionalAttemptsStayInTheCallsScope(t *testing.T) {
	for _, opts := range []string{"Policies", "ClientOptions"} {
		t.Run(opts, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gov := newGov(t, resilience.Config{})
				var sent []string
				o := governedOptions(gov, opts, transportFunc(func(req *http.Request) (*http.Response, error) {
					sent = append(sent, req.URL.Host)
					resp := &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{}, Body: http.NoBody, Request: req}
					switch len(sent) {
					case 1: // westus: busy (throttling), azcosmos goes on to eastus at once
						resp.StatusCode, resp.Status = http.StatusServiceUnavailable, "503 Service Unavailable"
					case 2: // eastus: throttled, azcore retries
						resp.StatusCode, resp.Status = http.StatusTooManyRequests, "429 Too Many Requests"
						resp.Header.Set("x-ms-retry-after-ms", "100")
					}
					return resp, nil
				}))
				pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{PerRetry: []policy.Policy{
					regionalHosts{[]string{"contoso-westus.documents.azure.com", "contoso-eastus.documents.azure.com"}},
				}}, o)
				ctx, stats := resilience.WithStats(context.Background())
				resp, err := pl.Do(newAzcosmosRequest(t, ctx, http.MethodGet, "https://contoso.documents.azure.com:443/dbs/d/colls/c/docs/x"))
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("answered %v, %v; want 200", resp, err)
				}
				if len(sent) != 3 || sent[0] != "contoso-westus.documents.azure.com" || sent[1] != "contoso-eastus.documents.azure.com" {
					t.Fatalf("sent to %v, want westus, eastus, then a region again", sent)
				}
				got := gov.Summary(stats).Scopes
				sc := got[az("contoso", "cosmosdb")]
				if len(got) != 1 || sc.Calls != 3 || sc.Retries != 2 || sc.Throttled != 2 {
					t.Errorf("three attempts of one call, two of them retries after a 503 and a 429, recorded as %v; want them all in %v", got, az("contoso", "cosmosdb"))
				}
			})
		})
	}
}
