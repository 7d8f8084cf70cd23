package test

import (
	"net/url"
	"testing"

	"github.com/cloudg/cloudg/cloudgazure"
)

// TestScopeOfURLReadsAnEscapedSlashAsPartOfItsSegment states that
// ScopeOfURL reads a Resource Manager path's segments as they were sent:
// a slash sent escaped (%2F) is part of its segment, not a boundary, so
// that /subscriptions/<id>%2Fx names no subscription (a subscription's id
// holds no slash; Resource Manager finds none), not subscription <id>, a
// namespace Microsoft.Net%2Fwork none, and a resource group's name that
// holds %2Fproviders%2FMicrosoft.Evil names no namespace.
func TestScopeOfURLReadsAnEscapedSlashAsPartOfItsSegment(t *testing.T) {
	const arm = "https://management.azure.com"
	for _, tc := range []struct{ url, want string }{
		{arm + "/subscriptions/" + subB + "%2Fx/providers/Microsoft.Network/virtualNetworks", "azure/*/*/network"},
		{arm + "/subscriptions/" + subB + "/resourceGroups/rg%2Fproviders%2FMicrosoft.Evil/providers/Microsoft.Network/virtualNetworks/v", "azure/" + subB + "/*/network"},
		{arm + "/subscriptions/" + subB + "/resourceGroups/rg%2Fproviders%2FMicrosoft.Evil", "azure/" + subB + "/*/resources"},
		{arm + "/subscriptions/" + subB + "/providers/Microsoft.Net%2Fwork/virtualNetworks", "azure/" + subB + "/*/resources"},
		// An escape of a character that needs none reads as the character.
		{arm + "/subscriptions/" + subB + "/provid%65rs/Microsoft.N%65twork/virtualNetworks", "azure/" + subB + "/*/network"},
		{arm + "/subscriptions/" + subB + "/providers/Microsoft.Network/virtualNetworks/a%2Fb", "azure/" + subB + "/*/network"},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := cloudgazure.ScopeOfURL(u).Key(); got != tc.want {
			t.Errorf("ScopeOfURL(%s) = %q, want %q", tc.url, got, tc.want)
		}
	}
	// A path sent as Go writes it keeps allocating nothing.
	u, _ := url.Parse(arm + "/subscriptions/" + subB + "/providers/Microsoft.Network/virtualNetworks/a%20b")
	if n := testing.AllocsPerRun(100, func() { cloudgazure.ScopeOfURL(u) }); n != 0 {
		t.Errorf("ScopeOfURL allocates %v times, want 0", n)
	}
}
