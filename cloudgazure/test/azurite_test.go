package test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// azuriteBlob is the Blob service of Azurite, the Storage emulator, on its
// default port: its URLs are path-style, the account the path's first
// segment (http://127.0.0.1:10000/devstoreaccount1/<container>/<blob>).
const azuriteBlob = "127.0.0.1:10000"

// resourcesTenant is the scope of Resource Manager's tenant-level requests
// of no namespace (GET /providers, GET /subscriptions) whose token names
// no tenant.
var resourcesTenant = az("", cloudgazure.ServiceResources)

// azuriteTransport answers a request to Azurite's Blob service as a busy
// storage account does, 503 ServerBusy with a Retry-After of 30 s, and
// sends every other request to arm, the fake Resource Manager.
func azuriteTransport(arm memTransport) transportFunc {
	return func(req *http.Request) (*http.Response, error) {
		if req.URL.Host != azuriteBlob {
			return arm.Do(req)
		}
		h := http.Header{"Retry-After": {"30"}, "X-Ms-Error-Code": {"ServerBusy"}}
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: h, Body: http.NoBody, Request: req}, nil
	}
}

// A Storage SDK's request to Azurite (azblob's, on
// http://127.0.0.1:10000/devstoreaccount1) names no Azure storage host
// and no subscription: read as Resource Manager's, it went in
// azure/*/*/resources, the scope of the tenant-level Resource Manager
// calls, so that Azurite's 503 ServerBusy paused the program's listing
// of the tenant's resource providers for 30 s. It is the emulator's
// storage request: its scope is its endpoint's, host and port, and its
// service the SDK's, azure/127.0.0.1:10000/*/blob, as an account's host
// (<account>.blob.core.windows.net) names the account, and Resource
// Manager's calls go on at once.
func TestAzuritesServerBusyPausesNoResourceManagerCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		tr := azuriteTransport(memTransport{e.srv})
		base := *e.base
		base.Transport = tr
		ctx, stats := resilience.WithStats(context.Background())

		blobOpts := cloudgazure.ClientOptions(&arm.ClientOptions{ClientOptions: base.ClientOptions}, e.opts()...)
		blobs, err := azblob.NewClientWithNoCredential("http://"+azuriteBlob+"/devstoreaccount1", &azblob.ClientOptions{ClientOptions: blobOpts.ClientOptions})
		if err != nil {
			t.Fatal(err)
		}
		_, err = blobs.DownloadStream(ctx, "container", "blob", nil)
		if re := (*azcore.ResponseError)(nil); !errors.As(err, &re) || re.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("Azurite's blob download: %v, want its 503 ServerBusy", err)
		}

		got := resourceManagerAnswersAtOnce(t, e, &base, ctx, stats, "Azurite's 503 ServerBusy")
		if sc := az(azuriteBlob, "blob"); got[sc].Calls == 0 || got[sc].Calls != got[sc].Throttled {
			t.Errorf("scope %v: %d calls, %d throttled, want Azurite's every attempt, throttled (scopes: %v)", sc, got[sc].Calls, got[sc].Throttled, got)
		}
	})
}

// resourceManagerAnswersAtOnce lists the tenant's resource providers
// (GET /providers) with base, through e's governor, and fails the test
// unless the request is answered at once and recorded in stats as one
// call of resourcesTenant: what (an emulator's answer) paused no
// Resource Manager call. It returns the scopes stats recorded.
func resourceManagerAnswersAtOnce(t *testing.T, e *env, base *arm.ClientOptions, ctx context.Context, stats *resilience.Stats, what string) map[resilience.Scope]resilience.Counters {
	t.Helper()
	providers, err := cloudgazure.NewSubscriptionClient(armresources.NewProvidersClient, subB, fakeCred{}, base, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := providers.NewListAtTenantScopePager(nil).NextPage(ctx); err != nil {
		t.Fatalf("the tenant's resource providers: %v", err)
	}
	if took := time.Since(start); took != 0 {
		t.Errorf("the tenant's resource providers (GET /providers) answered after %v, want at once: %s paused Resource Manager", took, what)
	}
	got := e.gov.Summary(stats).Scopes
	if got[resourcesTenant].Calls != 1 {
		t.Errorf("scope %v: %d calls, want 1, the tenant's resource providers (scopes: %v)", resourcesTenant, got[resourcesTenant].Calls, got)
	}
	return got
}
