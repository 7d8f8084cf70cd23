package test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// Two Cosmos DB emulators on one host, on two ports (localhost:8081 and
// localhost:8082, as a test suite runs one per package), are two
// accounts: azcosmos's requests to each go in their endpoint's scope,
// its port and all (azure/localhost:8081/*/cosmosdb), so that, with one
// slot per Azure account, a slow request of one emulator holds no slot
// of the other's, and one's throttling would pause the other not. A
// host's default port (https://cosmos.contoso.com:443) names the same
// endpoint as no port.
func TestTwoCosmosEmulatorsOnOneHostAreTwoAccounts(t *testing.T) {
	const held, other = "https://localhost:8081/dbs/d/colls/c/docs/x", "https://localhost:8082/dbs/d/colls/c/docs/x"
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{MaxConcurrency: 1}})
		slow := transportFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Host == "localhost:8081" {
				time.Sleep(10 * time.Second)
			}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		})
		pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, governedOptions(gov, "Policies", slow))
		ctx, stats := resilience.WithStats(context.Background())
		send := func(url string) time.Duration {
			start := time.Now()
			if _, err := pl.Do(newAzcosmosRequest(t, ctx, http.MethodGet, url)); err != nil {
				t.Errorf("%s: %v", url, err)
			}
			return time.Since(start)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			send(held)
		}()
		synctest.Wait()
		if took := send(other); took != 0 {
			t.Errorf("%s: answered after %v, want at once: %s's request held its slot", other, took, held)
		}
		<-done
		got := gov.Summary(stats).Scopes
		for _, sc := range []resilience.Scope{az("localhost:8081", cloudgazure.ServiceCosmosDB), az("localhost:8082", cloudgazure.ServiceCosmosDB)} {
			if got[sc].Calls != 1 {
				t.Errorf("scope %v: %d calls, want 1 (scopes: %v)", sc, got[sc].Calls, got)
			}
		}
	})
}
