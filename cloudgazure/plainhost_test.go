package cloudgazure

import (
	"net/http"
	"strings"
	"testing"
)

// A request azcosmos made on a host of no Cosmos DB account's goes in its
// host's scope, but not in a host name that is not plain (a byte that is
// not UTF-8, more than 128 bytes): that one has no account.
func TestAzcosmosRequestOfAHostThatIsNotPlain(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://ev%FFil.example.com/dbs/d", "azure/*/*/cosmosdb"},
		{"https://" + strings.Repeat("x", 120) + ".example.com/dbs/d", "azure/*/*/cosmosdb"},
		{"https://localhost:8081/dbs/d", "azure/localhost:8081/*/cosmosdb"},
		{"https://localhost:8082/dbs/d", "azure/localhost:8082/*/cosmosdb"},
		{"https://[::1]:8081/dbs/d", "azure/[::1]:8081/*/cosmosdb"},
		{"https://Cosmos.Contoso.com:443/dbs/d", "azure/cosmos.contoso.com/*/cosmosdb"},
		{"http://localhost:80/dbs/d", "azure/localhost/*/cosmosdb"},
	} {
		r, err := http.NewRequest(http.MethodGet, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set(hdrCosmosCapabilities, "1")
		if sc, _ := requestScope(r); sc.String() != tc.want {
			t.Errorf("requestScope(%.60s) = %q, want %q", tc.url, sc.String(), tc.want)
		}
	}
}

// An IPv6 host (the Cosmos DB emulator's on [::1]) is bracketed in its
// endpoint's account, whether its URL names a port or not, as a URL
// writes it: [::1] with no port or its scheme's default, [::1]:8081 with
// one, so that an account reads the same with and without its port and
// no account's colons read as a port's.
func TestAzcosmosRequestOfAnIPv6HostIsBracketed(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://[::1]/dbs/d", "azure/[::1]/*/cosmosdb"},
		{"https://[::1]:443/dbs/d", "azure/[::1]/*/cosmosdb"},
		{"https://[::1]:8081/dbs/d", "azure/[::1]:8081/*/cosmosdb"},
		{"https://[FE80::1%25eth0]/dbs/d", "azure/[fe80::1%eth0]/*/cosmosdb"},
		{"https://[fe80::1%25eth0]:8081/dbs/d", "azure/[fe80::1%eth0]:8081/*/cosmosdb"},
		{"https://localhost/dbs/d", "azure/localhost/*/cosmosdb"},
	} {
		r, err := http.NewRequest(http.MethodGet, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set(hdrCosmosCapabilities, "1")
		if sc, _ := requestScope(r); sc.String() != tc.want {
			t.Errorf("requestScope(%s) = %q, want %q", tc.url, sc.String(), tc.want)
		}
	}
}
