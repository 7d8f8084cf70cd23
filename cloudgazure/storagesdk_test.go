package cloudgazure

import (
	"net/http"
	"testing"
)

// A request a Storage SDK made (its User-Agent names azblob, azqueue,
// aztables, azfile or azdatalake, as azcore's telemetry policy writes
// it) on a host that names no data plane's account (Azurite's
// path-style endpoints, a custom domain; an account's privatelink host,
// which its certificate does not name, too) goes in its endpoint's
// scope, the SDK's service its service, as a storage account's host
// names the account and the service: port and brackets as for
// azcosmos's. A host ScopeOfURL reads keeps its scope (aztables's
// request to a Cosmos DB account's Table API is Cosmos DB's), and a
// request whose User-Agent names another SDK, or no SDK first (telemetry
// disabled, a caller's own User-Agent after azcore's), keeps ScopeOfURL's.
func TestStorageSDKRequestOfAnotherHostIsItsEndpoints(t *testing.T) {
	const blob, queue = "azsdk-go-azblob/v1.6.4 (go1.26.0; linux)", "azsdk-go-azqueue/v1.0.1 (go1.26.0; linux)"
	for _, tc := range []struct{ url, ua, want string }{
		{"http://127.0.0.1:10000/devstoreaccount1/c/b", blob, "azure/127.0.0.1:10000/*/blob"},
		{"http://127.0.0.1:10001/devstoreaccount1/q/messages", queue, "azure/127.0.0.1:10001/*/queue"},
		{"http://127.0.0.1:10002/devstoreaccount1/Tables", "azsdk-go-aztables/v1.4.0 (go1.26.0; linux)", "azure/127.0.0.1:10002/*/table"},
		{"http://127.0.0.1:10003/devstoreaccount1/share?restype=share", "azsdk-go-azfile/v1.5.0 (go1.26.0; linux)", "azure/127.0.0.1:10003/*/file"},
		{"http://127.0.0.1:10004/devstoreaccount1/fs/dir?resource=directory", "azsdk-go-azdatalake/v1.4.0 (go1.26.0; linux)", "azure/127.0.0.1:10004/*/dfs"},
		// Two Azurites on one host are two endpoints.
		{"http://127.0.0.1:20000/devstoreaccount1/c/b", blob, "azure/127.0.0.1:20000/*/blob"},
		{"http://LocalHost:10000/devstoreaccount1/c/b", "myapp " + blob, "azure/localhost:10000/*/blob"},
		{"http://azurite:10000/devstoreaccount1/subscriptions/b", blob, "azure/azurite:10000/*/blob"},
		{"http://azurite:10001/devstoreaccount1/q/messages", "my-azsdk-go-app " + queue + " curl/8", "azure/azurite:10001/*/queue"},
		{"http://[::1]:10000/devstoreaccount1/c/b", blob, "azure/[::1]:10000/*/blob"},
		{"https://[::1]/devstoreaccount1/c/b", blob, "azure/[::1]/*/blob"},
		{"https://files.contoso.com:443/c/b", blob, "azure/files.contoso.com/*/blob"},
		{"https://acct.privatelink.blob.core.windows.net/c/b", blob, "azure/acct.privatelink.blob.core.windows.net/*/blob"},
		{"https://ev%FFil.example.com/c/b", blob, "azure/*/*/blob"},
		// A host ScopeOfURL reads keeps its scope.
		{"https://acct.blob.core.windows.net/c/b", blob, "azure/acct/*/blob"},
		{"https://acct.table.cosmos.azure.com/Tables", "azsdk-go-aztables/v1.4.0 (go1.26.0; linux)", "azure/acct/*/cosmosdb"},
		// No Storage SDK's token first: ScopeOfURL's.
		{"http://127.0.0.1:10000/devstoreaccount1/c/b", "", "azure/*/*/resources"},
		{"http://127.0.0.1:10000/devstoreaccount1/c/b", "azsdk-go-armresources/v3.0.1 (go1.26.0; linux)", "azure/*/*/resources"},
		{"http://127.0.0.1:10000/devstoreaccount1/c/b", "azsdk-go-armresources/v3.0.1 (go1.26.0; linux) " + blob, "azure/*/*/resources"},
		{"http://127.0.0.1:10000/devstoreaccount1/c/b", "my app azsdk-go-azblob/v1.6.4", "azure/*/*/resources"},
		{"http://127.0.0.1:10000/devstoreaccount1/c/b", "azsdk-go-azblobby/v1 (go1.26.0; linux)", "azure/*/*/resources"},
		{"https://management.azure.com/subscriptions?api-version=2022-12-01", "azsdk-go-armsubscriptions/v1.3.0", "azure/*/*/resources"},
	} {
		r, err := http.NewRequest(http.MethodGet, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.ua != "" {
			r.Header.Set("User-Agent", tc.ua)
		}
		if sc, azcosmos := requestScope(r); sc.String() != tc.want || azcosmos {
			t.Errorf("requestScope(%s, User-Agent %q) = %q, %t, want %q, false", tc.url, tc.ua, sc.String(), azcosmos, tc.want)
		}
	}
}
