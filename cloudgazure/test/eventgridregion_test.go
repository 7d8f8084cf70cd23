package test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// An Event Grid topic's name is unique within its region only: orders in
// westus2 (orders.westus2-1.eventgrid.azure.net) and orders in eastus
// (orders.eastus-1.eventgrid.azure.net) are two topics, which a
// deployment stamped out per region names alike, each with limits of its
// own. One's requests neither take the other's slots of the account's
// bulkhead nor spend its account bucket.
func TestSameNamedTopicsInTwoRegionsAreTwo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One slot per account: a publish to orders in westus2 answered
		// in 10 s holds its account's slot that long.
		gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{MaxConcurrency: 1}})
		slow := transportFunc(func(req *http.Request) (*http.Response, error) {
			if strings.HasPrefix(req.URL.Host, "orders.westus2-1.") {
				time.Sleep(10 * time.Second)
			}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		})
		ctx, stats := resilience.WithStats(context.Background())
		send := governedSend(t, ctx, gov, slow)
		done := make(chan struct{})
		go func() {
			defer close(done)
			send("https://orders.westus2-1.eventgrid.azure.net/api/events")
		}()
		synctest.Wait()
		if st, took := send("https://orders.eastus-1.eventgrid.azure.net/api/events"); st != http.StatusOK || took != 0 {
			t.Errorf("orders in eastus: %d after %v, want 200 at once: the westus2 topic's request held its slot", st, took)
		}
		<-done
		got := gov.Summary(stats).Scopes
		for _, sc := range []resilience.Scope{azIn("orders.westus2", "westus2", "eventgrid"), azIn("orders.eastus", "eastus", "eventgrid")} {
			if got[sc].Calls != 1 {
				t.Errorf("scope %v: %d calls, want 1 (scopes: %v)", sc, got[sc].Calls, got)
			}
		}
	})
}
