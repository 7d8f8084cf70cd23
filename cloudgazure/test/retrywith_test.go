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

// statusRetryWith is the status of Cosmos DB's "Retry With" answer, 449,
// a status of Microsoft's that net/http does not name.
const statusRetryWith = 449

// Cosmos DB answers a write that collided with concurrent writes to the
// same item with 449 Retry With: by Microsoft's "Designing resilient
// applications with Azure Cosmos DB SDKs", a "transient error that only
// occurs on write operations, and is safe to retry", which the .NET and
// Java SDKs retry and azcosmos (azcore's default retry statuses: 408, 429,
// 500, 502, 503, 504) does not. It is worth retrying and no rate signal:
// Transient, whatever its body's code, for azcosmos's error (which
// carries the answer by RawResponse), for an *azcore.ResponseError, and
// for the per-retry policy, which counts it as a transient answer rather
// than a fatal one that proves the account well.
func TestCosmosRetryWithIsTransient(t *testing.T) {
	for _, code := range []string{"", "RetryWith"} {
		cosmos := &cosmosShapedError{code: code, resp: &http.Response{StatusCode: statusRetryWith, Header: http.Header{}}}
		if k := resilience.Classify(cosmos); k != resilience.Transient {
			t.Errorf("azcosmos's 449 (code %q) classifies %v, want TRANSIENT", code, k)
		}
		if !resilience.IsProviderAnswer(cosmos) {
			t.Errorf("azcosmos's 449 (code %q) is not a provider answer", code)
		}
	}
	body := `{"code":"RetryWith","message":"Conflicting request to resource has been attempted. Retry to avoid conflicts."}`
	resp := &http.Response{StatusCode: statusRetryWith, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
	if k := resilience.Classify(runtime.NewResponseError(resp)); k != resilience.Transient {
		t.Errorf("an *azcore.ResponseError with 449 classifies %v, want TRANSIENT", k)
	}

	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{})
		o := governedOptions(gov, "Policies", transportFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: statusRetryWith, Header: http.Header{}, Request: req,
				Body: io.NopCloser(strings.NewReader(body))}, nil
		}))
		o.Retry = policy.RetryOptions{MaxRetries: -1}
		pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, o)
		ctx, stats := resilience.WithStats(context.Background())
		req := newRequest(t, ctx, http.MethodPost, "https://acct.documents.azure.com/dbs/d/colls/c/docs")
		if resp, err := pl.Do(req); err != nil || resp.StatusCode != statusRetryWith {
			t.Fatalf("got %v, %v; want the 449", resp, err)
		}
		sc := gov.Summary(stats).Scopes[resilience.Scope{Provider: "azure", Account: "acct", Service: cloudgazure.ServiceCosmosDB}]
		if sc.TransientErrors != 1 || sc.Throttled != 0 {
			t.Errorf("the policy counted a 449 as %+v, want one transient answer", sc)
		}
	})
}

// transportFunc is an azcore transport that answers by a function.
type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) Do(req *http.Request) (*http.Response, error) { return f(req) }
