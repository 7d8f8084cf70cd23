package test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// hostTransport answers a data-plane request by its host: 503 ServerBusy
// with a Retry-After of 30 s for a host that starts with "busy", 200
// otherwise. It records the hosts it was sent, in order.
type hostTransport struct{ hosts *[]string }

func (h hostTransport) Do(req *http.Request) (*http.Response, error) {
	*h.hosts = append(*h.hosts, req.URL.Host)
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}
	if strings.HasPrefix(req.URL.Host, "busy") {
		resp.StatusCode = http.StatusServiceUnavailable
		resp.Header.Set("Retry-After", "30")
		resp.Header.Set("x-ms-error-code", "ServerBusy")
	}
	return resp, nil
}

// A data-plane request (a storage account's blob, a key vault's secret)
// is governed in a scope of its own resource: the storage account's or
// the vault's, by its host. Storage and Key Vault throttle per account and
// per vault, so one busy storage account must not pause another account,
// a vault, or the tenant's ARM calls (/subscriptions, a token's tenant),
// which, with a path that names no subscription, all mapped to
// azure/*/*/resources.
func TestDataPlaneRequestsAreScopedByTheirResource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{})
		var hosts []string
		ctx, stats := resilience.WithStats(context.Background())
		send := governedSend(t, ctx, gov, hostTransport{&hosts})
		if st, _ := send("https://busyacct.blob.core.windows.net/c/b"); st != http.StatusServiceUnavailable {
			t.Fatalf("busy account answered %d", st)
		}
		for _, url := range []string{
			"https://otheracct.blob.core.windows.net/c/b",
			"https://myvault.vault.azure.net/secrets/s?api-version=7.4",
			"https://management.azure.com/subscriptions?api-version=2022-12-01",
		} {
			if st, took := send(url); st != http.StatusOK || took != 0 {
				t.Errorf("%s: %d after %v, want 200 at once: another storage account's 503 ServerBusy held it", url, st, took)
			}
		}
		want := map[resilience.Scope]bool{
			{Provider: "azure", Account: "busyacct", Service: "blob"}:    true,
			{Provider: "azure", Account: "otheracct", Service: "blob"}:   true,
			{Provider: "azure", Account: "myvault", Service: "keyvault"}: true,
			{Provider: "azure", Service: "resources"}:                    true,
		}
		got := gov.Summary(stats).Scopes
		for sc := range got {
			if !want[sc] {
				t.Errorf("calls recorded in scope %v, want only %v", sc, want)
			}
		}
		for sc := range want {
			if got[sc].Calls != 1 {
				t.Errorf("scope %v: %d calls, want 1", sc, got[sc].Calls)
			}
		}
	})
}

func TestScopeOfURL(t *testing.T) {
	checkScopeOfURL(t, []scopeCase{
		{"https://acct.blob.core.windows.net/c/b", az("acct", "blob")},
		{"https://ACCT.Blob.Core.Windows.Net/c/b", az("acct", "blob")},
		{"https://acct-secondary.blob.core.windows.net/c/b", az("acct", "blob")},
		{"https://acct.queue.core.chinacloudapi.cn/q/messages", az("acct", "queue")},
		{"https://acct.table.core.usgovcloudapi.net/t", az("acct", "table")},
		{"https://acct.file.core.windows.net/s/d", az("acct", "file")},
		{"https://acct.dfs.core.windows.net:443/fs/p", az("acct", "dfs")},
		{"https://MyVault.vault.azure.net/secrets/s", az("myvault", "keyvault")},
		{"https://v.vault.usgovcloudapi.net/keys/k", az("v", "keyvault")},
		{"https://hsm.managedhsm.azure.net/keys/k", az("hsm", "managedhsm")},
		{"https://v.vault.azure.cn/secrets/s", az("v", "keyvault")},
		{"https://hsm.managedhsm.azure.cn/keys/k", az("hsm", "managedhsm")},
		{"https://hsm.managedhsm.chinacloudapi.cn/keys/k", az("hsm", "managedhsm")},
		{"https://hsm.managedhsm.usgovcloudapi.net/keys/k", az("hsm", "managedhsm")},
		{"https://acct.blob.core.windows.net./c/b", az("acct", "blob")},
		// Resource Manager, and any host it cannot tell from it: the path.
		{"https://management.azure.com/subscriptions/" + subA + "/providers/Microsoft.Network/x", az(subALower, "network")},
		{"http://127.0.0.1:1/subscriptions/" + subB + "/resourcegroups", az(subB, "resources")},
		{"https://management.azure.com/providers/Microsoft.ResourceGraph/resources", az("", "resourcegraph")},
		{"https://login.microsoftonline.com/tenant/oauth2/v2.0/token", az("", "resources")},
		// Not a storage or vault host: a label named so elsewhere.
		{"https://blob.core.windows.net/c", az("", "resources")},
		{"https://acct.blob.example.com/subscriptions/" + subB, az(subB, "resources")},
		{"https://acct.vault/x", az("", "resources")},
		// A host of the user's own, under no suffix of Azure's clouds: by
		// its path, however its labels are named.
		{"https://foo.vault.example.com/subscriptions/" + subB, az(subB, "resources")},
		{"https://a.blob.core.mycorp.internal/c/b", az("", "resources")},
		{"https://hsm.managedhsm.example.com/keys/k", az("", "resources")},
		{"https://acct.blob.core.windows.net.example.com/c/b", az("", "resources")},
		{"https://v.vault.azure.net.example.com/secrets/s", az("", "resources")},
		{"https://acct.blob.core.windows.nett/c/b", az("", "resources")},
		{"https://acct.blob.core.chinacloudapi.cn.evil/c/b", az("", "resources")},
		{"https://v.vault.core.windows.net/secrets/s", az("", "resources")},
		{"https://acct.web.core.windows.net/index.html", az("", "resources")},
		// A static website's host is no data plane of the account's API.
		{"https://acct.z13.web.core.windows.net/index.html", az("", "resources")},
		{"http://[::1]:8080/subscriptions/" + subB, az(subB, "resources")},
	})
	checkNoAllocs(t, "https://acct.blob.core.windows.net/c/b")
}

func FuzzScopeOfURL(f *testing.F) {
	f.Add("acct.blob.core.windows.net", "/c/b")
	f.Add("MyVault.vault.azure.net", "/secrets/s")
	f.Add("Topic.WestUS2-1.eventgrid.azure.net", "/api/events")
	f.Add("orders-WestUS.documents.azure.com", "/dbs/d")
	f.Add("management.azure.com", "/subscriptions/"+subA+"/providers/Microsoft.Network/x")
	f.Fuzz(func(t *testing.T, host, path string) {
		s := cloudgazure.ScopeOfURL(&url.URL{Scheme: "https", Host: host, Path: path})
		// Only a host that names its region (an Event Grid topic's) gives
		// the scope a region.
		if s.Provider != "azure" || s.Service == "" || s.Operation != "" ||
			s.Region != "" && s.Service != cloudgazure.ServiceEventGrid {
			t.Fatalf("ScopeOfURL(%q, %q) = %#v", host, path, s)
		}
		for _, c := range s.Account + s.Region + s.Service {
			if c >= 'A' && c <= 'Z' {
				t.Fatalf("ScopeOfURL(%q, %q) = %#v: not lower-case", host, path, s)
			}
		}
	})
}

// A storage account made with Azure DNS zone endpoints has hosts of
// another form, <account>.z<00-99>.<service>.storage.azure.net
// ("Query for a Blob Storage endpoint using the Azure Storage management
// library", learn.microsoft.com): its requests are the account's, as its
// standard endpoint's are, so that one such account's 503 ServerBusy
// holds back neither another account nor the tenant's Resource Manager
// calls, which, with a path that names no subscription, all shared
// azure/*/*/resources.
func TestDNSZoneEndpointsAreScopedByTheirAccount(t *testing.T) {
	checkScopeOfURL(t, []scopeCase{
		{"https://acct.z24.blob.storage.azure.net/c/b", az("acct", "blob")},
		{"https://ACCT.Z00.Queue.Storage.Azure.Net/q/messages", az("acct", "queue")},
		{"https://acct.z99.table.storage.azure.net/t", az("acct", "table")},
		{"https://acct.z07.file.storage.azure.net/s/d", az("acct", "file")},
		{"https://acct.z50.dfs.storage.azure.net:443/fs/p", az("acct", "dfs")},
		{"https://acct-secondary.z24.blob.storage.azure.net/c/b", az("acct", "blob")},
		{"https://acct.z24.blob.storage.azure.net./c/b", az("acct", "blob")},
		// Not a DNS zone endpoint: by its path.
		{"https://acct.z24.web.storage.azure.net/index.html", az("", "resources")},
		{"https://acct.zz.blob.storage.azure.net/c/b", az("", "resources")},
		{"https://acct.z100.blob.storage.azure.net/c/b", az("", "resources")},
		{"https://acct.z2.blob.storage.azure.net/c/b", az("", "resources")},
		{"https://acct.z24.blob.storage.azure.net.example.com/c/b", az("", "resources")},
		{"https://z24.blob.storage.azure.net/c/b", az("", "resources")},
	})
	checkNoAllocs(t, "https://acct.z24.blob.storage.azure.net/c/b")

	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{})
		var hosts []string
		send := governedSend(t, context.Background(), gov, hostTransport{&hosts})
		if st, _ := send("https://busyacct.z24.blob.storage.azure.net/c/b"); st != http.StatusServiceUnavailable {
			t.Fatalf("busy account answered %d", st)
		}
		for _, url := range []string{
			"https://otheracct.z24.blob.storage.azure.net/c/b",
			"https://management.azure.com/subscriptions?api-version=2022-12-01",
		} {
			if st, took := send(url); st != http.StatusOK || took != 0 {
				t.Errorf("%s: %d after %v, want 200 at once: a DNS zone endpoint's 503 ServerBusy held it", url, st, took)
			}
		}
	})
}

// governedOptions are client options over transport with both of
// cloudgazure's policies for gov, installed as opts names: "Policies",
// the two Policies returns in the per-call and per-retry stages (azcore's
// retry options its defaults), or "ClientOptions", the options
// ClientOptions returns (its retry options too).
func governedOptions(gov *resilience.Governor, opts string, transport policy.Transporter) *policy.ClientOptions {
	var o policy.ClientOptions
	if opts == "Policies" {
		perCall, perRetry := cloudgazure.Policies(cloudgazure.WithGovernor(gov))
		o = policy.ClientOptions{PerCallPolicies: []policy.Policy{perCall}, PerRetryPolicies: []policy.Policy{perRetry}}
	} else {
		o = cloudgazure.ClientOptions(nil, cloudgazure.WithGovernor(gov)).ClientOptions
	}
	o.Transport = transport
	return &o
}

// newRequest makes a request of method on url with ctx; an error fails
// the test.
func newRequest(t *testing.T, ctx context.Context, method, url string) *policy.Request {
	t.Helper()
	req, err := runtime.NewRequest(ctx, method, url)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// governedSend returns a send of a GET of a URL with ctx through a
// pipeline with both of cloudgazure's policies for gov, over transport,
// azcore's own retries off: the answer's status and how long it took. A
// request that fails before it is answered fails the test.
func governedSend(t *testing.T, ctx context.Context, gov *resilience.Governor, transport policy.Transporter) func(url string) (int, time.Duration) {
	o := governedOptions(gov, "Policies", transport)
	o.Retry = policy.RetryOptions{MaxRetries: -1}
	pl := runtime.NewPipeline("cloudgazure.test", "v0.0.1", runtime.PipelineOptions{}, o)
	return func(url string) (int, time.Duration) {
		t.Helper()
		req := newRequest(t, ctx, http.MethodGet, url)
		start := time.Now()
		resp, err := pl.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		return resp.StatusCode, time.Since(start)
	}
}

// az is the Azure scope of account and service, of no region and no
// operation, as ScopeOfURL reads a data plane's host.
func az(account, svc string) resilience.Scope {
	return resilience.Scope{Provider: "azure", Account: account, Service: svc}
}

// azIn is the Azure scope of account and service in region, as ScopeOfURL
// reads a data plane's host that names its region.
func azIn(account, region, svc string) resilience.Scope {
	return resilience.Scope{Provider: "azure", Account: account, Region: region, Service: svc}
}

// A scopeCase is a URL and the scope ScopeOfURL must read from it.
type scopeCase struct {
	url  string
	want resilience.Scope
}

// checkScopeOfURL fails t for each case whose URL ScopeOfURL reads as
// another scope.
func checkScopeOfURL(t *testing.T, cases []scopeCase) {
	t.Helper()
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := cloudgazure.ScopeOfURL(u); got != c.want {
			t.Errorf("ScopeOfURL(%q) = %v, want %v", c.url, got, c.want)
		}
	}
}

// checkNoAllocs fails t for each of urls ScopeOfURL allocates to read.
func checkNoAllocs(t *testing.T, urls ...string) {
	t.Helper()
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { cloudgazure.ScopeOfURL(u) }); n != 0 {
			t.Errorf("ScopeOfURL(%q) allocates %v times", s, n)
		}
	}
}

// checkOwnSlots checks that two hosts are two accounts of the provider:
// with one slot per Azure account, a GET of other, sent while one of held
// (answered in 10 s) is in flight, is answered at once, not held back by
// held's slot, and each request is recorded in its own scope, heldScope
// and otherScope.
func checkOwnSlots(t *testing.T, held, other string, heldScope, otherScope resilience.Scope) {
	t.Helper()
	heldURL, err := url.Parse(held)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{MaxConcurrency: 1}})
		slow := transportFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Host == heldURL.Host {
				time.Sleep(10 * time.Second)
			}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		})
		ctx, stats := resilience.WithStats(context.Background())
		send := governedSend(t, ctx, gov, slow)
		done := make(chan struct{})
		go func() {
			defer close(done)
			send(held)
		}()
		synctest.Wait()
		if st, took := send(other); st != http.StatusOK || took != 0 {
			t.Errorf("%s: %d after %v, want 200 at once: %s's request held its slot", other, st, took, held)
		}
		<-done
		got := gov.Summary(stats).Scopes
		for _, sc := range []resilience.Scope{heldScope, otherScope} {
			if got[sc].Calls != 1 {
				t.Errorf("scope %v: %d calls, want 1 (scopes: %v)", sc, got[sc].Calls, got)
			}
		}
	})
}
