package test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// nonRetriable is an error azcore's retry policy does not retry, as
// azcosmos's errorinfo.NonRetriableError makes one.
type nonRetriable struct{ error }

func (nonRetriable) NonRetriable() {}

// regionRetry stands for the retry policy azcosmos (since its endpoint
// manager routes requests by region) runs in the per-retry stage, ahead
// of the policies a client's options add: on a 503 it sends the same
// request again at once, to another region, up to regions times, and
// then gives the answer up as an error azcore does not retry
// (clientRetryPolicy.Do, attemptRetryOnServiceUnavailable: with no
// preferred regions, at the first 503).
type regionRetry struct{ regions int }

func (p regionRetry) Do(req *policy.Request) (*http.Response, error) {
	for tried := 0; ; tried++ {
		resp, err := req.Next()
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
			return resp, err
		}
		if tried == p.regions {
			return nil, nonRetriable{runtime.NewResponseErrorWithErrorCode(resp, resp.Status)}
		}
		if err := req.RewindBody(); err != nil {
			return resp, err
		}
	}
}

// A policy ahead of the package's per-retry policy may send an attempt's
// request again itself, or give its answer up so that azcore does not
// retry it, as azcosmos's retry policy does with a 503 of a request
// azcosmos made (and marked so: see newAzcosmosRequest). The retries the
// governor counts (and pays its budget for) are those sent: the
// region's, not azcore's, which it never makes.
func TestARetryAnEarlierPolicyGivesUpIsNotCounted(t *testing.T) {
	for _, regions := range []int{0, 1, 2} {
		for _, opts := range []string{"Policies", "ClientOptions"} {
			t.Run(fmt.Sprintf("%s, %d other regions", opts, regions), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					gov := newGov(t, resilience.Config{})
					// With ClientOptions, the options of a data-plane client
					// made from ClientOptions' (azcosmos.ClientOptions embeds
					// them).
					o := governedOptions(gov, opts, transportFunc(func(req *http.Request) (*http.Response, error) {
						return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
							Header: http.Header{}, Body: http.NoBody, Request: req}, nil
					}))
					pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1",
						runtime.PipelineOptions{PerRetry: []policy.Policy{regionRetry{regions}}}, o)
					ctx, stats := resilience.WithStats(context.Background())
					if _, err := pl.Do(newAzcosmosRequest(t, ctx, http.MethodGet, "https://acct.documents.azure.com/dbs/d")); err == nil {
						t.Fatal("the 503 came back without an error")
					}
					sc := gov.Summary(stats).Scopes[resilience.Scope{Provider: "azure", Account: "acct", Service: cloudgazure.ServiceCosmosDB}]
					want := int64(regions + 1)
					if sc.Calls != want || sc.Throttled != want || sc.Retries != want-1 {
						t.Errorf("%d attempts sent, %d of them retries; the governor counted %+v", want, want-1, sc)
					}
				})
			})
		}
	}
}
