package test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azsecrets"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// secretTransport answers every request with a secret.
func secretTransport(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	return &http.Response{StatusCode: http.StatusOK, Header: h, Request: req,
		Body: io.NopCloser(strings.NewReader(`{"value":"v","id":"https://localhost:8443/secrets/s/1"}`))}, nil
}

// azcore writes a client's ApplicationID (its spaces made slashes, cut to
// 24 bytes) before the SDK's token, azsdk-go-<module>/<version>, which the
// platform's, (<go version>; <os>), follows: the SDK is named by the word
// the platform's follows, whatever the application's id reads. An id
// that begins as a token does (azsdk-go-scanner) hid the SDK's token: a
// Key Vault emulator's request went in azure/*/*/resources, the
// tenant-level Resource Manager scope; and an id that reads as a data
// plane SDK's token (azsdk-go-azsecrets/1) named that SDK for a
// Resource Manager client: its tenant-level request went in
// azure/127.0.0.1:1/*/keyvault. Through real azsecrets and armresources
// clients built with ClientOptions.
func TestAnApplicationIDNamesNoSDK(t *testing.T) {
	vault := az(vaultEmulator, cloudgazure.ServiceKeyVault)
	for _, id := range []string{"", "scanner", "azsdk-go-scanner", "azsdk-go-armresources/1", "my scanner, v2 (nightly)"} {
		t.Run("azsecrets "+id, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gov := newGov(t, resilience.Config{})
				o := governedOptions(gov, "ClientOptions", transportFunc(secretTransport))
				o.Telemetry.ApplicationID = id
				client, err := azsecrets.NewClient("https://"+vaultEmulator, fakeCred{}, &azsecrets.ClientOptions{ClientOptions: *o, DisableChallengeResourceVerification: true})
				if err != nil {
					t.Fatal(err)
				}
				ctx, stats := resilience.WithStats(context.Background())
				if _, err := client.GetSecret(ctx, "s", "", nil); err != nil {
					t.Fatalf("GetSecret: %v", err)
				}
				if got := gov.Summary(stats).Scopes; got[vault].Calls != 1 {
					t.Errorf("ApplicationID %q: the emulator's secret went in %v, want %v", id, got, vault)
				}
			})
		})
	}
	for _, id := range []string{"azsdk-go-azsecrets/1", "azsdk-go-azblob/v1.6.4"} {
		t.Run("armresources "+id, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := memEnv(t, resilience.Config{})
				base := *e.base
				base.Telemetry.ApplicationID = id
				providers, err := cloudgazure.NewSubscriptionClient(armresources.NewProvidersClient, subB, fakeCred{}, &arm.ClientOptions{ClientOptions: base.ClientOptions, DisableRPRegistration: true}, e.opts()...)
				if err != nil {
					t.Fatal(err)
				}
				ctx, stats := resilience.WithStats(context.Background())
				if _, err := providers.NewListAtTenantScopePager(nil).NextPage(ctx); err != nil {
					t.Fatalf("the tenant's resource providers: %v", err)
				}
				if got := e.gov.Summary(stats).Scopes; got[resourcesTenant].Calls != 1 {
					t.Errorf("ApplicationID %q: the tenant's resource providers went in %v, want %v", id, got, resourcesTenant)
				}
			})
		})
	}
}
