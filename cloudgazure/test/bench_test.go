package test

import (
	"context"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v3"

	"github.com/cloudg/cloudg/cloudgazure"
)

// clientPair returns an ungoverned and a governed resource groups client
// with the same pipeline otherwise, against the same fake server; the
// governor's buckets never hold a call back, so the difference is the
// policies' own cost.
func clientPair(tb testing.TB, e *env) (plain, governed *armresources.ResourceGroupsClient) {
	return e.plainGroups(subA, cloudgazure.RetryOptions(e.opts()...)), e.groups(subA)
}

// BenchmarkGet is a resource group GET through a real client, ungoverned
// and governed, over the in-memory transport (the pipeline's cost alone)
// and over loopback TCP.
func BenchmarkGet(b *testing.B) {
	for _, tr := range []struct {
		name string
		env  func(testing.TB) *env
	}{
		{"memory", func(tb testing.TB) *env { return memEnv(tb, fast()) }},
		{"loopback", func(tb testing.TB) *env { return tcpEnv(tb, fast()) }},
	} {
		e := tr.env(b)
		plain, governed := clientPair(b, e)
		for _, c := range []struct {
			name   string
			client *armresources.ResourceGroupsClient
		}{{"ungoverned", plain}, {"governed", governed}} {
			b.Run(tr.name+"/"+c.name, func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.client.Get(ctx, "rg", nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// The policies add seven allocations to a request, and none per attempt on
// the success path: the Guard (the core's Begin), the request's state, the
// two that azcore's operation-values map makes for its first entry, and the
// three of the guard's watch, which gives its slot back should the guard
// be dropped without End (its record, and the runtime's cleanup).
func TestGovernedAllocations(t *testing.T) {
	e := memEnv(t, fast())
	plain, governed := clientPair(t, e)
	ctx := context.Background()
	get := func(c *armresources.ResourceGroupsClient) func() {
		return func() {
			if _, err := c.Get(ctx, "rg", nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	base := testing.AllocsPerRun(200, get(plain))
	gov := testing.AllocsPerRun(200, get(governed))
	t.Logf("allocations per request: ungoverned %.0f, governed %.0f", base, gov)
	if gov-base > 7+raceSlack {
		t.Fatalf("the policies add %.0f allocations per request, want at most %d", gov-base, 7+raceSlack)
	}
}

// staticTransport answers every request with 200 and an empty JSON body.
type staticTransport struct{}

func (staticTransport) Do(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// BenchmarkPipeline isolates the policies' cost: an ARM pipeline whose
// transport answers at once, without and with the governed options.
func BenchmarkPipeline(b *testing.B) {
	gov := newGov(b, fast())
	base := armOptions("http://127.0.0.1:1", staticTransport{})
	url := "http://127.0.0.1:1/subscriptions/" + subA + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v?api-version=1"
	for _, c := range []struct {
		name string
		opts *arm.ClientOptions
	}{
		{"ungoverned", base},
		{"governed", cloudgazure.ClientOptions(base, cloudgazure.WithGovernor(gov))},
	} {
		b.Run(c.name, func(b *testing.B) {
			cl, err := arm.NewClient("cloudgazure.bench", "v0.0.1", fakeCred{}, c.opts)
			if err != nil {
				b.Fatal(err)
			}
			pl := cl.Pipeline()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				req, err := runtime.NewRequest(ctx, http.MethodGet, url)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := pl.Do(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTenantPipeline is BenchmarkPipeline for a tenant-level request
// (no subscription in its path), whose token names its tenant (a JWT with
// a tid claim, as Microsoft Entra ID's are) or names none.
func BenchmarkTenantPipeline(b *testing.B) {
	gov := newGov(b, fast())
	base := armOptions("http://127.0.0.1:1", staticTransport{})
	url := "http://127.0.0.1:1/providers/Microsoft.Compute?api-version=1"
	for _, cred := range []struct {
		name string
		cred azcore.TokenCredential
	}{{"tenant", tenantCred{tenantA}}, {"no tenant", fakeCred{}}} {
		for _, c := range []struct {
			name string
			opts *arm.ClientOptions
		}{
			{"ungoverned", base},
			{"governed", cloudgazure.ClientOptions(base, cloudgazure.WithGovernor(gov))},
		} {
			b.Run(cred.name+"/"+c.name, func(b *testing.B) {
				cl, err := arm.NewClient("cloudgazure.bench", "v0.0.1", cred.cred, c.opts)
				if err != nil {
					b.Fatal(err)
				}
				pl := cl.Pipeline()
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					req, err := runtime.NewRequest(ctx, http.MethodGet, url)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := pl.Do(req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
