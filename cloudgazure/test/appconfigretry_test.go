package test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// The per-retry policy reads App Configuration's 429 for its Storage
// quota as resilience.Classify reads the *azcore.ResponseError the caller
// gets: fatal, a provider's answer, since no wait replenishes the size of
// the store's data. The answer is sent once, though azcore retries a 429
// by its status (a retry would be answered the same), is not counted as
// throttling, and neither halves nor pauses the store's scope; the
// caller gets the 429. The store's rate quotas stay throttling, retried.
func TestAppConfigStorageQuotaIsFatalPerAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{})
		var sent atomic.Int32
		o := governedOptions(gov, "Policies", storageQuotaSpent(&sent))
		o.Retry = policy.RetryOptions{MaxRetries: 3, RetryDelay: 10 * time.Millisecond}
		pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, o)
		ctx, stats := resilience.WithStats(context.Background())
		req := newRequest(t, ctx, http.MethodPut, "https://store.azconfig.io/kv/k?api-version=2023-10-01")
		start := time.Now()
		resp, err := pl.Do(req)
		var re *azcore.ResponseError
		switch {
		case err == nil && (resp == nil || resp.StatusCode != http.StatusTooManyRequests):
			t.Fatalf("got %v; want the 429", resp)
		case err != nil && (!errors.As(err, &re) || re.StatusCode != http.StatusTooManyRequests):
			t.Fatalf("got %v; want the 429", err)
		}
		if n := sent.Load(); n != 1 {
			t.Errorf("the Storage quota's 429 was sent %d times in %v, want once: a retry is answered the same", n, time.Since(start))
		}
		sc := gov.Summary(stats).Scopes[resilience.Scope{Provider: "azure", Account: "store", Service: cloudgazure.ServiceAppConfig}]
		if sc.Throttled != 0 || sc.GaveUp != 0 || sc.Pauses != 0 {
			t.Errorf("the policy counted the Storage quota's 429 as %+v, want no throttling, give-up or pause", sc)
		}
	})
}
