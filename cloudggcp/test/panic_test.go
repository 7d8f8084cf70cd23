package test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"

	"github.com/cloudg/cloudg/cloudggcp"
	"github.com/cloudg/cloudg/resilience"
)

// boom is the value the caller's transport panics with: the caller must
// get this very value back.
var boom = &struct{ s string }{"boom"}

// panicky is an HTTP transport that panics.
type panicky struct{}

func (panicky) RoundTrip(*http.Request) (*http.Response, error) { panic(boom) }

// A panic of the HTTP transport under a governed REST client (compute's
// InstancesClient.Get, over loopback TCP) ends the call as lost to the
// panic, once, and the panic reaches the caller as it was: the slot is
// given back (the next get, under a cap of one, goes at once), and the
// one call counted has that one outcome.
func TestRESTPanicIsRecordedAndGoesOn(t *testing.T) {
	f := &fakeCompute{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	gov, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{MaxConcurrency: 1}})
	if err != nil {
		t.Fatal(err)
	}
	client := func(base http.RoundTripper) *compute.InstancesClient {
		t.Helper()
		hc := &http.Client{Transport: cloudggcp.RESTTransport(base, cloudggcp.WithGovernor(gov))}
		c, err := compute.NewInstancesRESTClient(context.Background(), option.WithHTTPClient(hc), option.WithEndpoint(srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ctx, stats := resilience.WithStats(context.Background())
	ctx, ledger := resilience.WithLedger(ctx, "compute")
	get := func(ctx context.Context, c *compute.InstancesClient) error {
		_, err := c.Get(ctx, &computepb.GetInstanceRequest{Project: "p1", Zone: "europe-west1-b", Instance: "vm-1"})
		return err
	}
	if r := func() (r any) {
		defer func() { r = recover() }()
		_ = get(ctx, client(panicky{}))
		return nil
	}(); r != boom {
		t.Fatalf("the caller got %v, want the panic's own value", r)
	}
	if in := gov.Inspect(scope("instances_get")); in.InFlight != 0 {
		t.Fatalf("%d slots held after the panic, want none", in.InFlight)
	}
	tot := gov.Summary(stats).Totals
	if tot.Calls != 1 || tot.Panicked != 1 || tot.Lost() != 1 || ledger.Count(resilience.LossPanicked) != 1 || ledger.Lost() != 1 {
		t.Fatalf("totals %v, ledger %q: want the one call counted, lost as panicked", tot, ledger.Describe())
	}
	next, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := get(next, client(http.DefaultTransport)); err != nil {
		t.Fatalf("the next get: %v (the slot was not given back)", err)
	}
	if tot := gov.Summary(stats).Totals; tot.Calls != 2 || tot.Lost() != 1 || ledger.Lost() != 1 {
		t.Fatalf("totals %v, ledger %q: want 2 calls, the panicked one lost", tot, ledger.Describe())
	}
}
