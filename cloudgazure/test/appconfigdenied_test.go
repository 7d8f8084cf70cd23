package test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azappconfig/v2"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// App Configuration's 429 for its Storage quota (the total size of the
// store's data, "Throttling" in its REST API reference) refuses a write
// for a limit the governor does not pace: no wait replenishes it, so it
// is no throttle, and the request was well formed and allowed, so it is
// no failure of the caller's either. The call is lost as denied
// (resilience.LossDenied, Guard.EndDenied), as GitHub's refusal for a
// quota the scope's calls do not count against is: the run's Stats and
// the task's Ledger say "denied", not "failed", the store's scope is
// neither slowed nor paused, and the caller gets the 429. Through a real
// azappconfig client, with ClientOptions and with Policies.
func TestAppConfigStorageQuotaIsLostAsDenied(t *testing.T) {
	for _, opts := range []string{"ClientOptions", "Policies"} {
		t.Run(opts, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gov := newGov(t, resilience.Config{})
				var sent atomic.Int32
				o := governedOptions(gov, opts, storageQuotaSpent(&sent))
				settings, err := azappconfig.NewClient("https://store.azconfig.io", fakeCred{}, &azappconfig.ClientOptions{ClientOptions: *o})
				if err != nil {
					t.Fatal(err)
				}
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "appconfig")
				value := "v"
				_, err = settings.SetSetting(ctx, "k", &value, nil)
				if re := (*azcore.ResponseError)(nil); !errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests {
					t.Fatalf("SetSetting: %v, want the Storage quota's 429", err)
				}
				if n := sent.Load(); n != 1 {
					t.Errorf("the Storage quota's 429 was sent %d times, want once", n)
				}
				lostOnly(t, gov, stats, ledger, resilience.LossDenied, 1)
				store := az("store", cloudgazure.ServiceAppConfig)
				if s := gov.Inspect(store).Leaf; s.Paused != 0 {
					t.Errorf("the store's scope paused %v, want no pause", s.Paused)
				}
				if sc := gov.Summary(stats).Scopes[store]; sc.Throttled != 0 || sc.Calls != 1 {
					t.Errorf("the store's scope counted %+v, want one call, not throttled", sc)
				}
			})
		})
	}
}
