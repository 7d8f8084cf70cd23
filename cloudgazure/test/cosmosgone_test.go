package test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// cosmosGone is Cosmos DB's 410 Gone with sub-status sub (none when "").
func cosmosGone(sub string) *http.Response {
	h := http.Header{}
	if sub != "" {
		h.Set("x-ms-substatus", sub)
	}
	return &http.Response{StatusCode: http.StatusGone, Status: "410 Gone", Header: h,
		Body: io.NopCloser(strings.NewReader(`{"code":"Gone","message":"The requested resource is no longer available at the server."}`))}
}

// Cosmos DB answers 410 Gone with sub-status 1002 (partition key range
// gone), 1007 (completing a split) or 1008 (completing a partition
// migration) while the partition a request was routed to splits or
// moves; azcosmos retries such an answer itself after refreshing its
// partition key ranges (isPartitionKeyRangeGoneError: those three
// sub-statuses, with a 410 and no other), and the .NET and Java SDKs do
// too. It is worth retrying and no rate signal: Transient, for azcosmos's
// error, for an *azcore.ResponseError, and for the per-retry policy. A
// 410 with another sub-status (1000, a stale name cache, which azcosmos
// does not retry) or none stays FATAL.
func TestCosmosPartitionGoneIsTransient(t *testing.T) {
	for _, sub := range []string{"1002", "1007", "1008"} {
		if k := resilience.Classify(&cosmosShapedError{code: "Gone", resp: cosmosGone(sub)}); k != resilience.Transient {
			t.Errorf("azcosmos's 410 with sub-status %s classifies %v, want TRANSIENT", sub, k)
		}
		if k := resilience.Classify(runtime.NewResponseError(cosmosGone(sub))); k != resilience.Transient {
			t.Errorf("an *azcore.ResponseError with 410 and sub-status %s classifies %v, want TRANSIENT", sub, k)
		}
	}
	for _, sub := range []string{"", "1000", "3"} {
		if k := resilience.Classify(&cosmosShapedError{code: "Gone", resp: cosmosGone(sub)}); k != resilience.Fatal {
			t.Errorf("azcosmos's 410 with sub-status %q classifies %v, want FATAL", sub, k)
		}
	}

	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{})
		o := governedOptions(gov, "Policies", transportFunc(func(req *http.Request) (*http.Response, error) {
			resp := cosmosGone("1002")
			resp.Request = req
			return resp, nil
		}))
		o.Retry = policy.RetryOptions{MaxRetries: -1}
		pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, o)
		ctx, stats := resilience.WithStats(context.Background())
		req := newRequest(t, ctx, http.MethodPost, "https://acct.documents.azure.com/dbs/d/colls/c/docs")
		if resp, err := pl.Do(req); err != nil || resp.StatusCode != http.StatusGone {
			t.Fatalf("got %v, %v; want the 410", resp, err)
		}
		sc := gov.Summary(stats).Scopes[resilience.Scope{Provider: "azure", Account: "acct", Service: cloudgazure.ServiceCosmosDB}]
		if sc.TransientErrors != 1 || sc.Throttled != 0 {
			t.Errorf("the policy counted a 410 with sub-status 1002 as %+v, want one transient answer", sc)
		}
	})
}
