package test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// throttleTransport answers a request by its host: 429 with the header
// hint (one header, its value) for a host that starts with "busy", 200
// otherwise.
type throttleTransport struct{ hint, value string }

func (h throttleTransport) Do(req *http.Request) (*http.Response, error) {
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}
	if strings.HasPrefix(req.URL.Host, "busy") {
		resp.StatusCode = http.StatusTooManyRequests
		resp.Header.Set(h.hint, h.value)
	}
	return resp, nil
}

// The data planes of Cosmos DB, Service Bus and Event Hubs, App
// Configuration, Azure AI services (Azure OpenAI among them) and Container
// Registry each count their limits per resource: request units per Cosmos
// DB account, credits or throughput units per namespace, requests per
// configuration store, per account, per registry. A request to one is
// governed in its resource's scope, azure/<resource>/*/<service>, so that
// a Cosmos DB account's 429 (x-ms-retry-after-ms) or a configuration
// store's (retry-after-ms) holds back neither another resource nor the
// tenant's Resource Manager calls, which, with a host read as Resource
// Manager's and a path that names no subscription, all shared
// azure/*/*/resources; and the throttled resource itself waits out its
// hint.
func TestOtherDataPlanesAreScopedByTheirResource(t *testing.T) {
	for _, c := range []struct {
		name, busy, hint, value string
		others                  []string
	}{
		{
			name: "cosmos db", busy: "https://busyacct.documents.azure.com/dbs/d/colls/c/docs/x",
			hint: "x-ms-retry-after-ms", value: "30000",
			others: []string{
				"https://otheracct.documents.azure.com/dbs/d/colls/c/docs/x",
				"https://store.azconfig.io/kv?api-version=2023-10-01",
				"https://ns.servicebus.windows.net/queue/messages",
				"https://myai.openai.azure.com/openai/deployments/d/chat/completions",
				"https://registry.azurecr.io/v2/_catalog",
				"https://management.azure.com/subscriptions?api-version=2022-12-01",
			},
		},
		{
			name: "app configuration", busy: "https://busystore.azconfig.io/kv?api-version=2023-10-01",
			hint: "retry-after-ms", value: "30000",
			others: []string{
				"https://otherstore.azconfig.io/kv?api-version=2023-10-01",
				"https://acct.documents.azure.com/dbs",
				"https://management.azure.com/subscriptions?api-version=2022-12-01",
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gov := newGov(t, resilience.Config{})
				send := governedSend(t, context.Background(), gov, throttleTransport{c.hint, c.value})
				if st, _ := send(c.busy); st != http.StatusTooManyRequests {
					t.Fatalf("busy resource answered %d", st)
				}
				for _, url := range c.others {
					if st, took := send(url); st != http.StatusOK || took != 0 {
						t.Errorf("%s: %d after %v, want 200 at once: another resource's 429 (%s: %s) held it", url, st, took, c.hint, c.value)
					}
				}
				if _, took := send(c.busy); took < 30*time.Second {
					t.Errorf("the throttled resource's next request went after %v, want 30 s (%s: %s)", took, c.hint, c.value)
				}
			})
		})
	}
}

// ScopeOfURL reads the hosts of these data planes in Azure's clouds
// (public, China, US Government), as Microsoft's documentation ("Azure
// Private Endpoint private DNS zone values", "Compare Azure Government
// and global Azure") and the Azure SDKs' cloud settings name them, and
// no host of a user's own whose labels read the same.
func TestScopeOfURLReadsOtherDataPlanes(t *testing.T) {
	checkScopeOfURL(t, []scopeCase{
		// Cosmos DB: the NoSQL API's and the Table API's hosts.
		{"https://acct.documents.azure.com/dbs/d", az("acct", "cosmosdb")},
		{"https://ACCT.Documents.Azure.Com:443/dbs/d", az("acct", "cosmosdb")},
		{"https://acct.documents.azure.cn/dbs/d", az("acct", "cosmosdb")},
		{"https://acct.documents.azure.us/dbs/d", az("acct", "cosmosdb")},
		{"https://acct.documents.azure.com./dbs/d", az("acct", "cosmosdb")},
		{"https://acct.table.cosmos.azure.com/t", az("acct", "cosmosdb")},
		{"https://acct.table.cosmos.azure.cn/t", az("acct", "cosmosdb")},
		{"https://acct.table.cosmos.azure.us/t", az("acct", "cosmosdb")},
		// Service Bus and Event Hubs namespaces.
		{"https://ns.servicebus.windows.net/q/messages", az("ns", "messaging")},
		{"https://ns.servicebus.chinacloudapi.cn/q/messages", az("ns", "messaging")},
		{"https://NS.servicebus.usgovcloudapi.net/hub/messages", az("ns", "messaging")},
		// App Configuration stores.
		{"https://store.azconfig.io/kv", az("store", "appconfig")},
		{"https://store.azconfig.azure.cn/kv", az("store", "appconfig")},
		{"https://store.azconfig.azure.us/kv", az("store", "appconfig")},
		// Azure AI services accounts, Azure OpenAI's host among them.
		{"https://ai.cognitiveservices.azure.com/language/:analyze-text", az("ai", "aiservices")},
		{"https://ai.cognitiveservices.azure.cn/x", az("ai", "aiservices")},
		{"https://ai.cognitiveservices.azure.us/x", az("ai", "aiservices")},
		{"https://ai.openai.azure.com/openai/deployments/d/chat/completions", az("ai", "aiservices")},
		{"https://ai.openai.azure.cn/openai/models", az("ai", "aiservices")},
		{"https://ai.openai.azure.us/openai/models", az("ai", "aiservices")},
		// Container registries.
		{"https://reg.azurecr.io/v2/_catalog", az("reg", "acr")},
		{"https://reg.azurecr.cn/v2/_catalog", az("reg", "acr")},
		{"https://Reg.AzureCR.us/v2/_catalog", az("reg", "acr")},
		// The storage account's table service stays the account's.
		{"https://acct.table.core.windows.net/t", az("acct", "table")},
		// A host of the user's own, or a suffix of no Azure cloud: by its
		// path.
		{"https://foo.documents.azure.com.example.org/dbs/d", az("", "resources")},
		{"https://foo.documents.example.org/subscriptions/" + subB, az(subB, "resources")},
		{"https://acct.table.cosmos.example.com/t", az("", "resources")},
		{"https://acct.table.cosmos.azure.com.evil/t", az("", "resources")},
		{"https://ns.servicebus.windows.net.example.org/q", az("", "resources")},
		{"https://store.azconfig.io.example.org/kv", az("", "resources")},
		{"https://store.azconfig.example.io/kv", az("", "resources")},
		{"https://ai.openai.azure.org/x", az("", "resources")},
		{"https://ai.cognitiveservices.azure.com.example.org/x", az("", "resources")},
		{"https://reg.azurecr.io.example.org/v2/", az("", "resources")},
		{"https://reg.azurecr.example/v2/", az("", "resources")},
		{"https://a.b.documents.azure.com/dbs/d", az("", "resources")},
		// A suffix alone names no resource.
		{"https://documents.azure.com/dbs/d", az("", "resources")},
		{"https://azconfig.io/kv", az("", "resources")},
		{"https://azurecr.io/v2/", az("", "resources")},
		// Shared endpoints, in no resource's host: by their path.
		{"https://api.openai.com/v1/models", az("", "resources")},
		{"https://westus.api.cognitive.microsoft.com/x", az("", "resources")},
	})
	checkNoAllocs(t,
		"https://acct.documents.azure.com/dbs/d",
		"https://acct.table.cosmos.azure.us/t",
		"https://reg.azurecr.io/v2/_catalog",
	)
}

// A container registry with dedicated data endpoints serves its layers'
// blobs from <registry>.<region>.data.azurecr.<io|cn|us>, one host per
// region the registry is replicated to (Microsoft's "Azure Private
// Endpoint private DNS zone values": {regionName}.data.azurecr.io). Its
// downloads count against the registry's own limits, so that such a host
// is governed in the registry's scope, azure/<registry>/*/acr, as its
// login server <registry>.azurecr.io is, and not in azure/*/*/resources,
// the scope of the tenant's Resource Manager calls. A host of no such
// shape, or under a suffix of no Azure cloud, stays Resource Manager's.
func TestScopeOfURLReadsRegistryDataEndpoints(t *testing.T) {
	checkScopeOfURL(t, []scopeCase{
		{"https://reg.eastus.data.azurecr.io/v2/img/blobs/sha256:00", az("reg", "acr")},
		{"https://Reg.WestEurope.Data.AzureCR.io:443/v2/img/blobs/sha256:00", az("reg", "acr")},
		{"https://reg.eastus.data.azurecr.io./v2/", az("reg", "acr")},
		{"https://reg.chinaeast2.data.azurecr.cn/v2/", az("reg", "acr")},
		{"https://reg.usgovvirginia.data.azurecr.us/v2/", az("reg", "acr")},
		// No registry, no region, another label, another suffix: by the path.
		{"https://eastus.data.azurecr.io/v2/", az("", "resources")},
		{"https://reg..data.azurecr.io/v2/", az("", "resources")},
		{"https://reg.eastus.blob.azurecr.io/v2/", az("", "resources")},
		{"https://reg.eastus.data.azurecr.io.example.org/v2/", az("", "resources")},
		{"https://reg.eastus.data.azurecr.com/v2/", az("", "resources")},
		{"https://a.reg.eastus.data.azurecr.io/v2/", az("", "resources")},
	})
	checkNoAllocs(t, "https://reg.eastus.data.azurecr.io/v2/img/blobs/sha256:00")
}

// An Azure AI services (Foundry) account answers on three hosts, which
// Microsoft's "Azure Private Endpoint private DNS zone values" lists for
// one private endpoint of Microsoft.CognitiveServices/accounts:
// <account>.cognitiveservices.azure.com, <account>.openai.azure.com and
// <account>.services.ai.azure.com (the Foundry models and agents
// endpoint). Its deployments' quotas are the account's, whichever host a
// request names, so that the third is governed in the account's scope,
// azure/<account>/*/aiservices, as the other two are, and not in
// azure/*/*/resources with the tenant's Resource Manager calls.
func TestScopeOfURLReadsTheAIServicesFoundryHost(t *testing.T) {
	checkScopeOfURL(t, []scopeCase{
		{"https://ai.services.ai.azure.com/models/chat/completions?api-version=2024-05-01-preview", az("ai", "aiservices")},
		{"https://AI.Services.AI.Azure.com:443/api/projects/p/agents", az("ai", "aiservices")},
		{"https://ai.services.ai.azure.com./models", az("ai", "aiservices")},
		{"https://ai.services.ai.azure.cn/models", az("ai", "aiservices")},
		{"https://ai.services.ai.azure.us/models", az("ai", "aiservices")},
		// Another label, another suffix, no account: by the path.
		{"https://ai.services.example.azure.com/models", az("", "resources")},
		{"https://ai.services.ai.azure.com.example.org/models", az("", "resources")},
		{"https://services.ai.azure.com/models", az("", "resources")},
		{"https://ai.services.azure.com/models", az("", "resources")},
	})
}

// A Cosmos DB account's dedicated gateway, through which its integrated
// cache serves reads, answers at <account>.sqlx.cosmos.azure.com (Cosmos
// DB's "Dedicated gateway" and "Configure Azure Private Link" documents,
// the SqlDedicated subresource), which the NoSQL SDKs are pointed at
// instead of <account>.documents.azure.com. Its cache misses spend the
// account's request units, so that it is governed in the account's scope,
// azure/<account>/*/cosmosdb, and not in azure/*/*/resources with the
// tenant's Resource Manager calls.
func TestScopeOfURLReadsTheCosmosDedicatedGateway(t *testing.T) {
	checkScopeOfURL(t, []scopeCase{
		{"https://acct.sqlx.cosmos.azure.com/dbs/d/colls/c/docs/x", az("acct", "cosmosdb")},
		{"https://ACCT.SQLX.Cosmos.Azure.com:443/dbs/d", az("acct", "cosmosdb")},
		{"https://acct.sqlx.cosmos.azure.com./dbs/d", az("acct", "cosmosdb")},
		{"https://acct.sqlx.cosmos.azure.cn/dbs/d", az("acct", "cosmosdb")},
		{"https://acct.sqlx.cosmos.azure.us/dbs/d", az("acct", "cosmosdb")},
		{"https://acct.sqlx.cosmos.example.com/dbs/d", az("", "resources")},
		{"https://acct.sqlx.cosmos.azure.com.example.org/dbs/d", az("", "resources")},
		{"https://sqlx.cosmos.azure.com/dbs/d", az("", "resources")},
	})
}
