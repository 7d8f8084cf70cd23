package test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azappconfig/v2"
	"github.com/Azure/azure-sdk-for-go/sdk/security/keyvault/azsecrets"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// The emulators' endpoints: a Key Vault emulator's (Lowkey Vault's
// default port) and App Configuration's emulator's.
const (
	vaultEmulator     = "localhost:8443"
	appConfigEmulator = "localhost:8483"
)

// emulatorsTransport answers a request to the Key Vault emulator as a
// throttled vault does, 429 with a Retry-After of 30 s, one to the App
// Configuration emulator as a throttled store does, 429 with a
// retry-after-ms of 30000, and sends every other request to arm, the fake
// Resource Manager.
func emulatorsTransport(arm memTransport) transportFunc {
	return func(req *http.Request) (*http.Response, error) {
		var h http.Header
		switch req.URL.Host {
		case vaultEmulator:
			h = http.Header{"Retry-After": {"30"}}
		case appConfigEmulator:
			h = http.Header{"Retry-After-Ms": {"30000"}}
		default:
			return arm.Do(req)
		}
		return &http.Response{StatusCode: http.StatusTooManyRequests, Header: h, Body: http.NoBody, Request: req}, nil
	}
}

// A Key Vault SDK's request to an emulator (azsecrets's, on
// https://localhost:8443) or App Configuration's (azappconfig's, on
// http://localhost:8483) names no vault's or store's host and no
// subscription: read as Resource Manager's, it went in
// azure/*/*/resources, the scope of the tenant-level Resource Manager
// calls, so that the emulator's 429 paused the program's listing of the
// tenant's resource providers. Its scope is its endpoint's with the SDK's
// service, azure/localhost:8443/*/keyvault and
// azure/localhost:8483/*/appconfig, as a vault's or a store's host names
// the resource, and Resource Manager's calls go on at once.
func TestAnEmulatorsThrottlePausesNoResourceManagerCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := memEnv(t, resilience.Config{})
		base := *e.base
		base.Transport = emulatorsTransport(memTransport{e.srv})
		ctx, stats := resilience.WithStats(context.Background())
		opts := cloudgazure.ClientOptions(&arm.ClientOptions{ClientOptions: base.ClientOptions}, e.opts()...).ClientOptions

		secrets, err := azsecrets.NewClient("https://"+vaultEmulator, fakeCred{}, &azsecrets.ClientOptions{ClientOptions: opts, DisableChallengeResourceVerification: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = secrets.GetSecret(ctx, "s", "", nil)
		if re := (*azcore.ResponseError)(nil); !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("the Key Vault emulator's secret: %v, want its 429", err)
		}
		settings, err := azappconfig.NewClient("https://"+appConfigEmulator, fakeCred{}, &azappconfig.ClientOptions{ClientOptions: opts})
		if err != nil {
			t.Fatal(err)
		}
		_, err = settings.GetSetting(ctx, "k", nil)
		if re := (*azcore.ResponseError)(nil); !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("the App Configuration emulator's setting: %v, want its 429", err)
		}

		got := resourceManagerAnswersAtOnce(t, e, &base, ctx, stats, "an emulator's 429")
		for _, sc := range []resilience.Scope{az(vaultEmulator, cloudgazure.ServiceKeyVault), az(appConfigEmulator, cloudgazure.ServiceAppConfig)} {
			if got[sc].Calls == 0 || got[sc].Calls != got[sc].Throttled {
				t.Errorf("scope %v: %d calls, %d throttled, want the emulator's every attempt, throttled (scopes: %v)", sc, got[sc].Calls, got[sc].Throttled, got)
			}
		}
	})
}
