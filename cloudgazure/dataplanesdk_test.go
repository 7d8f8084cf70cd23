package cloudgazure

import (
	"net/http"
	"testing"
)

// A request a Key Vault SDK (azsecrets, azkeys, azcertificates), App
// Configuration's (azappconfig, v1 and v2 alike: both name their module
// without its major version), Service Bus's administration client
// (azservicebus's admin, whose pipeline azcore names azsbadmin) or
// Container Registry's (azcontainerregistry) made on a host of no data
// plane's (an emulator's, https://localhost:8443 for Lowkey Vault,
// http://localhost:8483 for App Configuration's, or a host of one's own)
// goes in its endpoint's scope with the SDK's service, as the data
// plane's host names the resource: read as Resource Manager's, its path
// naming no subscription, it went in azure/*/*/resources, where an
// emulator's throttling paused the tenant-level Resource Manager calls.
// A token that names no SDK by itself (azsdk-go-v2, what azcore writes
// for a module passed with its major version, azcore keeping the path's
// last element) is no SDK's. The SDK's token is the word the platform's,
// (<go version>; <os>), follows: an application's id before it names no
// SDK, whatever it reads (azsdk-go-scanner hid the SDK's token, and
// azsdk-go-azsecrets/1 before a Resource Manager client's token moved
// its call to management.azure.com's endpoint).
func TestDataPlaneSDKRequestOfAnotherHostIsItsEndpoints(t *testing.T) {
	const secrets = "azsdk-go-azsecrets/v1.5.0 (go1.26.0; linux)"
	const sub = "0b1f6471-1bf0-4dda-aec3-cb9272f09590"
	for _, tc := range []struct{ url, ua, want string }{
		{"https://localhost:8443/secrets/s?api-version=7.6", secrets, "azure/localhost:8443/*/keyvault"},
		{"https://default.localhost:8443/secrets/s/v1", "myapp " + secrets, "azure/default.localhost:8443/*/keyvault"},
		{"https://127.0.0.1:4997/keys/k?api-version=7.6", "azsdk-go-azkeys/v1.5.0 (go1.26.0; linux)", "azure/127.0.0.1:4997/*/keyvault"},
		{"https://[::1]:4997/certificates/c", "azsdk-go-azcertificates/v1.4.0 (go1.26.0; linux)", "azure/[::1]:4997/*/keyvault"},
		{"http://localhost:8483/kv?api-version=2023-11-01", "azsdk-go-azappconfig/v2.1.0 (go1.26.0; linux)", "azure/localhost:8483/*/appconfig"},
		{"http://localhost:8483/kv/k", "azsdk-go-azappconfig/v1.2.0 (go1.26.0; linux)", "azure/localhost:8483/*/appconfig"},
		{"https://localhost:5300/orders?api-version=2021-05", "azsdk-go-azsbadmin/v1.10.0 (go1.26.0; linux)", "azure/localhost:5300/*/messaging"},
		{"https://registry.local:5000/acr/v1/_catalog", "azsdk-go-azcontainerregistry/v0.2.3 (go1.26.0; linux)", "azure/registry.local:5000/*/acr"},
		// A host ScopeOfURL reads keeps its scope.
		{"https://myvault.vault.azure.net/secrets/s", secrets, "azure/myvault/*/keyvault"},
		{"https://myhsm.managedhsm.azure.net/keys/k", "azsdk-go-azkeys/v1.5.0 (go1.26.0; linux)", "azure/myhsm/*/managedhsm"},
		// The SDK's token is the word the platform's follows: an
		// application's id names none, whatever it reads, and a
		// User-Agent the request had, after the platform's, is not read.
		{"https://localhost:8443/secrets/s", "azsdk-go-scanner " + secrets, "azure/localhost:8443/*/keyvault"},
		{"https://localhost:8443/secrets/s", "azsdk-go-armresources/1 " + secrets, "azure/localhost:8443/*/keyvault"},
		{"https://localhost:8443/secrets/s", secrets + " azsdk-go-azblob/v1.6.4 (go1.26.0; linux)", "azure/localhost:8443/*/keyvault"},
		{"https://localhost:8443/secrets/s", "azsdk-go-azsecrets/v1.5.0 (devel go1.27-4f0e1a2 Tue Dec 1 10:00:00 2026 +0000; linux)", "azure/localhost:8443/*/keyvault"},
		{"https://management.azure.com/providers?api-version=2021-04-01", "azsdk-go-azsecrets/1 azsdk-go-armresources/v3.0.1 (go1.26.0; linux)", "azure/*/*/resources"},
		{"https://management.azure.com/subscriptions/" + sub + "/resourcegroups?api-version=2021-04-01", "azsdk-go-azblob/1 azsdk-go-armresources/v3.0.1 (go1.26.0; linux)", "azure/" + sub + "/*/resources"},
		// A name that is a major version names no SDK.
		{"https://localhost:8443/secrets/s", "azsdk-go-v2/v2.0.0 (go1.26.0; linux)", "azure/*/*/resources"},
		{"https://localhost:8443/secrets/s", "azsdk-go-azsecretsx/v1 (go1.26.0; linux)", "azure/*/*/resources"},
	} {
		r, err := http.NewRequest(http.MethodGet, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("User-Agent", tc.ua)
		if sc, azcosmos := requestScope(r); sc.String() != tc.want || azcosmos {
			t.Errorf("requestScope(%s, User-Agent %q) = %q, %t, want %q, false", tc.url, tc.ua, sc.String(), azcosmos, tc.want)
		}
	}
}
