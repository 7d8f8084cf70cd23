package test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

func TestScopeOf(t *testing.T) {
	az := func(sub, svc string) resilience.Scope {
		return resilience.Scope{Provider: "azure", Account: sub, Service: svc}
	}
	cases := []struct {
		path string
		want resilience.Scope
	}{
		{"/subscriptions/" + subA + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v", az(subALower, "network")},
		{"/subscriptions/" + subB + "/providers/Microsoft.Compute/virtualMachines", az(subB, "compute")},
		{"/subscriptions/" + subB + "/resourcegroups", az(subB, "resources")},
		{"/subscriptions/" + subB, az(subB, "resources")},
		{"/SUBSCRIPTIONS/" + subA + "/RESOURCEGROUPS/rg/PROVIDERS/MICROSOFT.STORAGE/storageAccounts/s", az(subALower, "storage")},
		// The last namespace wins: an extension resource under another.
		{"/subscriptions/" + subB + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/n/providers/Microsoft.Insights/diagnosticSettings/d", az(subB, "insights")},
		{"/subscriptions/" + subB + "/providers/Microsoft.Network/", az(subB, "network")},
		{"//subscriptions//" + subB + "//providers/Microsoft.Web/sites", az(subB, "web")},
		{"/providers/Microsoft.ResourceGraph/resources", az("", "resourcegraph")},
		// Resource Graph has no subscription, even where a path names one.
		{"/subscriptions/" + subB + "/providers/Microsoft.ResourceGraph/resources", az("", "resourcegraph")},
		{"/providers/Microsoft.Management/managementGroups/mg", az("", "management")},
		{"/subscriptions", az("", "resources")},
		{"/tenants", az("", "resources")},
		{"", az("", "resources")},
		{"/subscriptions/" + subB + "/resourceGroups/Microsoft.", az(subB, "resources")},
		{"/subscriptions/" + subB + "/providers/Dynatrace.Observability/monitors", az(subB, "resources")},
	}
	for _, c := range cases {
		if got := cloudgazure.ScopeOf(c.path); got != c.want {
			t.Errorf("ScopeOf(%q) = %v, want %v", c.path, got, c.want)
		}
	}
	if got := cloudgazure.GraphScope().String(); got != "azure/*/*/resourcegraph" {
		t.Errorf("GraphScope() = %s", got)
	}
	if got := cloudgazure.ScopeOf(cases[0].path).String(); got != "azure/"+subALower+"/*/network" {
		t.Errorf("scope string %s", got)
	}
}

// After the first time, resolving a scope allocates nothing, also for an
// upper-case subscription and namespace.
func TestScopeOfDoesNotAllocate(t *testing.T) {
	p := "/subscriptions/" + subA + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v"
	cloudgazure.ScopeOf(p)
	if n := testing.AllocsPerRun(100, func() { cloudgazure.ScopeOf(p) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func FuzzScopeOf(f *testing.F) {
	f.Add("/subscriptions/" + subA + "/providers/Microsoft.Network/x")
	f.Add("/providers/Microsoft.ResourceGraph/resources")
	f.Fuzz(func(t *testing.T, path string) {
		s := cloudgazure.ScopeOf(path)
		if s.Provider != "azure" || s.Service == "" || s.Region != "" || s.Operation != "" {
			t.Fatalf("ScopeOf(%q) = %#v", path, s)
		}
		for _, c := range s.Account + s.Service {
			if c >= 'A' && c <= 'Z' {
				t.Fatalf("ScopeOf(%q) = %#v: not lower-case", path, s)
			}
		}
	})
}

// Only the segment after a providers segment names a namespace: the
// portal names its deployments Microsoft.Template-<time>, and a resource
// group or a Linux VM may be named Microsoft.<anything>. Those names must
// not become services of their own, one scope per deployment.
func TestScopeOfNamespaceFollowsProviders(t *testing.T) {
	az := func(sub, svc string) resilience.Scope {
		return resilience.Scope{Provider: "azure", Account: sub, Service: svc}
	}
	cases := []struct {
		path string
		want resilience.Scope
	}{
		{"/subscriptions/" + subB + "/resourcegroups/rg/providers/Microsoft.Resources/deployments/Microsoft.Template-20250101120000", az(subB, "resources")},
		{"/subscriptions/" + subB + "/resourcegroups/rg/providers/Microsoft.Resources/deployments/Microsoft.VirtualNetwork-20250101120000/operations", az(subB, "resources")},
		{"/subscriptions/" + subB + "/resourceGroups/Microsoft.Prod", az(subB, "resources")},
		{"/subscriptions/" + subB + "/resourceGroups/Microsoft.Prod/resources", az(subB, "resources")},
		{"/subscriptions/" + subB + "/resourceGroups/Microsoft.Prod/providers/Microsoft.Network/virtualNetworks/v", az(subB, "network")},
		{"/subscriptions/" + subB + "/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/microsoft.web01", az(subB, "compute")},
		{"/subscriptions/" + subB + "/resourceGroups/providers/providers/Microsoft.Network/virtualNetworks/v", az(subB, "network")},
	}
	for _, c := range cases {
		if got := cloudgazure.ScopeOf(c.path); got != c.want {
			t.Errorf("ScopeOf(%q) = %v, want %v", c.path, got, c.want)
		}
	}
}

// A part read from a URL (a host's label, a path's segment, unescaped)
// that holds a character that is not printable (a newline, a byte that is
// not UTF-8, a bidirectional override), a space, or more than 128 bytes
// gives the part's fallback: no account, no region, and for a namespace
// Resource Manager's generic service, resources. Such a part would carry
// the request's text into logs, metrics labels and the status page, and
// make scopes without bound.
func TestScopeOfURLTakesNoPartThatIsNotPlain(t *testing.T) {
	long := strings.Repeat("x", 129)
	const arm = "https://management.azure.com"
	for _, tc := range []struct{ url, want string }{
		{arm + "/subscriptions/ab%0Acd/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v", "azure/*/*/network"},
		{arm + "/subscriptions/ab%20cd/providers/Microsoft.Network/virtualNetworks", "azure/*/*/network"},
		{arm + "/subscriptions/ab%FFcd/providers/Microsoft.Network/virtualNetworks", "azure/*/*/network"},
		{arm + "/subscriptions/" + long + "/providers/Microsoft.Network/virtualNetworks", "azure/*/*/network"},
		{arm + "/subscriptions/" + subB + "/providers/Microsoft.Net%0Awork/virtualNetworks", "azure/" + subB + "/*/resources"},
		{arm + "/subscriptions/" + subB + "/providers/Microsoft.Net%E2%80%AEwork/virtualNetworks", "azure/" + subB + "/*/resources"},
		{arm + "/subscriptions/" + subB + "/providers/Microsoft." + long + "/x", "azure/" + subB + "/*/resources"},
		{"https://%FF.vault.azure.net/secrets/s", "azure/*/*/keyvault"},
		{"https://" + long + ".blob.core.windows.net/c/b", "azure/*/*/blob"},
		{"https://" + long + ".westus2-1.eventgrid.azure.net/api/events", "azure/*/westus2/eventgrid"},
		{"https://orders." + long + "-1.eventgrid.azure.net/api/events", "azure/*/*/eventgrid"},
		{"https://ev%FFil.documents.azure.com/dbs/d", "azure/*/*/cosmosdb"},
		// Plain parts stay.
		{"https://orders.westus2-1.eventgrid.azure.net/api/events", "azure/orders.westus2/westus2/eventgrid"},
		{"https://" + long[:24] + ".vault.azure.net/secrets/s", "azure/" + long[:24] + "/*/keyvault"},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := cloudgazure.ScopeOfURL(u).String(); got != tc.want {
			t.Errorf("ScopeOfURL(%.90s) = %q, want %q", tc.url, got, tc.want)
		}
	}
}
