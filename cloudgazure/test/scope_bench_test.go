package test

import (
	"net/url"
	"testing"

	"github.com/cloudg/cloudg/cloudgazure"
)

// BenchmarkScopeOfURL measures ScopeOfURL's scope of a request, which the
// policy computes on every call: an ARM resource's, a key vault's, an
// Event Grid topic's and a storage account's.
func BenchmarkScopeOfURL(b *testing.B) {
	for _, name := range []string{
		"https://management.azure.com/subscriptions/5D2C7E1A-0000-4000-8000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v?api-version=2024-05-01",
		"https://myvault.vault.azure.net/secrets/s?api-version=7.5",
		"https://orders.westus2-1.eventgrid.azure.net/api/events",
		"https://myaccount.blob.core.windows.net/c/b",
	} {
		u, err := url.Parse(name)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(u.Host, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cloudgazure.ScopeOfURL(u)
			}
		})
	}
}

// BenchmarkScopeOf measures ScopeOf's scope of an ARM path.
func BenchmarkScopeOf(b *testing.B) {
	p := "/subscriptions/5D2C7E1A-0000-4000-8000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v"
	b.ReportAllocs()
	for b.Loop() {
		cloudgazure.ScopeOf(p)
	}
}
