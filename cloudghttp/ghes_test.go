//go:build go1.25

package cloudghttp_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// ghesClients serves a github.com stand-in and a GitHub Enterprise
// Server stand-in on 127.0.0.1, and returns a client of each with
// GitHub("octo") on one governor, as a process that talks to both with
// the same login does: the github.com client sends paths as
// api.github.com has them, the Enterprise Server's under /api/v3.
func ghesClients(t *testing.T, gov *resilience.Governor, opts ...cloudghttp.Option) (dotcom, ghes *http.Client, dotcomURL, ghesURL string, dotcomAPI, ghesAPI *fakeAPI) {
	t.Helper()
	dotcomAPI, ghesAPI = &fakeAPI{}, &fakeAPI{}
	opts = append([]cloudghttp.Option{cloudghttp.WithGovernor(gov)}, opts...)
	dotcom = &http.Client{Transport: cloudghttp.NewTransport(nil, cloudghttp.GitHub("octo"), opts...)}
	ghes = &http.Client{Transport: cloudghttp.NewTransport(nil, cloudghttp.GitHub("octo"), opts...)}
	return dotcom, ghes, loopback(t, dotcomAPI).URL, loopback(t, ghesAPI).URL + "/api/v3", dotcomAPI, ghesAPI
}

// getNow sends a GET of u that may not wait (resilience.WithMaxWait of
// 0): the error is the governor's refusal when the call would wait.
func getNow(c *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(resilience.WithMaxWait(context.Background(), 0), http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}

// A GitHub Enterprise Server is another GitHub than github.com: the same
// login on both is two token owners, with two quotas. A rate limit
// github.com answers (its primary quota spent, an hour to its reset)
// pauses github.com's calls, and no call to the Enterprise Server, which
// is sent at once.
func TestGitHubEnterpriseServerIsNotHeldByGitHubComsPause(t *testing.T) {
	gov := newGov(t, resilience.Config{})
	dotcom, ghes, dotcomURL, ghesURL, dotcomAPI, ghesAPI := ghesClients(t, gov, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
	dotcomAPI.script(status(http.StatusForbidden, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0",
		"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10), "X-RateLimit-Resource", "core"))
	readAll(t, do(t, dotcom, http.MethodGet, dotcomURL+"/repos/octo/hello", nil))
	if _, err := getNow(dotcom, dotcomURL+"/repos/octo/hello"); err == nil {
		t.Fatal("github.com's next call went at once, want it held by the spent quota's pause")
	}
	resp, err := getNow(ghes, ghesURL+"/repos/octo/hello")
	if err != nil {
		t.Fatalf("the Enterprise Server's call was held by github.com's pause: %v", err)
	}
	readAll(t, resp)
	if n := len(ghesAPI.recorded()); n != 1 {
		t.Fatalf("the Enterprise Server received %d requests, want 1", n)
	}
}

// GitHub Enterprise Server has no API rate limit unless its
// administrator sets one ("API rate limits are disabled by default for
// GitHub Enterprise Server", GitHub's "Rate limits for the REST API"):
// a governor with no configuration does not pace its searches at
// github.com's 30 a minute (one every 2 s, a burst of one), while
// github.com's searches keep that pace.
func TestGitHubEnterpriseServerSearchIsNotPacedAtGitHubComsLimit(t *testing.T) {
	gov := newGov(t, resilience.Config{})
	dotcom, ghes, dotcomURL, ghesURL, _, ghesAPI := ghesClients(t, gov)
	for i := range 35 {
		resp, err := getNow(ghes, ghesURL+"/search/issues?q=bug")
		if err != nil {
			t.Fatalf("search %d of a scan of the Enterprise Server: %v", i+1, err)
		}
		readAll(t, resp)
	}
	if n := len(ghesAPI.recorded()); n != 35 {
		t.Fatalf("the Enterprise Server received %d searches, want 35", n)
	}
	resp, err := getNow(dotcom, dotcomURL+"/search/issues?q=bug")
	if err != nil {
		t.Fatalf("github.com's first search: %v", err)
	}
	readAll(t, resp)
	if _, err := getNow(dotcom, dotcomURL+"/search/issues?q=bug"); err == nil {
		t.Fatal("github.com's second search went at once, want it paced at 30 a minute")
	}
}

// onGHES is want, the scope GitHub("octo") gives a request to
// api.github.com, as it gives the same request sent to the Enterprise
// Server ghe.example.com under /api/v3.
func onGHES(want string) string {
	return strings.Replace(want, "github/octo/", "github-enterprise/ghe.example.com/octo/", 1)
}

// GitHub's scope function tells an Enterprise Server's request by its
// path (/api/v3/, /api/uploads/, /api/graphql), whatever its host, and
// gives it provider github-enterprise and the account <host>/<login>:
// the host it is sent to (its Host, else its URL's), in lower case,
// without a final dot, with its port when that is not its scheme's
// default and an IPv6 address bracketed (as cloudgazure writes an
// emulator's endpoint), so that two servers are apart, and one whose
// name is not plain (over 128 bytes) the login alone. github.com's
// requests, on api.github.com or uploads.github.com, keep provider
// github and the login, and GitHub Enterprise Cloud's with data
// residency (api.<subdomain>.ghe.com, whose limits are github.com's)
// provider github (TestGHEComScopeIsItsSubdomainsAndLogins). The path
// is read from its start: github.com's paths that hold /api/v3/ or end
// in /api/graphql further on (a branch named api/v3, an owner named api)
// are github.com's.
func TestGitHubEnterpriseServerScopeIsItsHostsAndLogins(t *testing.T) {
	long := strings.Repeat("x", 63) + "." + strings.Repeat("y", 63) + ".example" // 135 bytes
	for _, c := range []struct{ url, host, want string }{
		{"https://api.github.com/repos/octo/hello", "", "github/octo/*/rest"},
		{"https://api.github.com/repos/octo/hello/git/refs/heads/api/v3", "", "github/octo/*/rest"},
		{"https://api.github.com/repos/api/v3/issues", "", "github/octo/*/rest"},
		{"https://api.github.com/repos/octo/api/graphql", "", "github/octo/*/rest"},
		{"https://uploads.github.com/repos/octo/hello/releases/1/assets?name=a.zip", "", "github/octo/*/rest"},
		{"https://api.octocorp.ghe.com/search/issues?q=bug", "", "github/octocorp.ghe.com/octo/*/search"},
		{"https://api.octocorp.ghe.com/graphql", "", "github/octocorp.ghe.com/octo/*/graphql"},
		{"https://ghe.example.com/api/v3/repos/octo/hello", "", "github-enterprise/ghe.example.com/octo/*/rest"},
		{"https://ghe.example.com/api/v3/search/issues?q=bug", "", "github-enterprise/ghe.example.com/octo/*/search"},
		{"https://ghe.example.com/api/v3/search/code?q=x", "", "github-enterprise/ghe.example.com/octo/*/code_search"},
		{"https://ghe.example.com/api/v3/orgs/Acme/audit-log", "", "github-enterprise/ghe.example.com/octo/orgs/acme/audit_log"},
		{"https://ghe.example.com/api/graphql", "", "github-enterprise/ghe.example.com/octo/*/graphql"},
		{"https://ghe.example.com/api/uploads/repos/octo/hello/releases/1/assets?name=a.zip", "", "github-enterprise/ghe.example.com/octo/*/rest"},
		{"https://GHE.Example.com:8443/api/v3/repos/octo/hello", "", "github-enterprise/ghe.example.com:8443/octo/*/rest"},
		{"https://ghe.example.com:443/api/v3/repos/octo/hello", "", "github-enterprise/ghe.example.com/octo/*/rest"},
		{"http://ghe.example.com:80/api/v3/repos/octo/hello", "", "github-enterprise/ghe.example.com/octo/*/rest"},
		{"http://ghe.example.com:443/api/v3/repos/octo/hello", "", "github-enterprise/ghe.example.com:443/octo/*/rest"},
		{"https://ghe.example.com./api/v3/repos/octo/hello", "", "github-enterprise/ghe.example.com/octo/*/rest"},
		{"https://10.0.0.5/api/v3/repos/octo/hello", "GHE.example.com.:443", "github-enterprise/ghe.example.com/octo/*/rest"},
		{"https://10.0.0.5/api/v3/repos/octo/hello", "ghe.example.com:8443", "github-enterprise/ghe.example.com:8443/octo/*/rest"},
		{"https://ghe2.example.com/api/v3/repos/octo/hello", "", "github-enterprise/ghe2.example.com/octo/*/rest"},
		{"https://10.0.0.5/api/v3/repos/octo/hello", "ghe.example.com", "github-enterprise/ghe.example.com/octo/*/rest"},
		{"https://[::1]:8443/api/v3/repos/octo/hello", "", "github-enterprise/[::1]:8443/octo/*/rest"},
		{"https://[::1]/api/v3/repos/octo/hello", "", "github-enterprise/[::1]/octo/*/rest"},
		{"https://" + long + "/api/v3/repos/octo/hello", "", "github-enterprise/octo/*/rest"},
	} {
		req, err := http.NewRequest(http.MethodGet, c.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.host != "" {
			req.Host = c.host
		}
		if got := cloudghttp.GitHub("Octo")(req).String(); got != c.want {
			t.Errorf("GET %.60s (Host %q): scope %s, want %s", c.url, c.host, got, c.want)
		}
	}
}

// An Enterprise Server's scopes are tuned under their own provider,
// ratelimit.providers.github-enterprise, with GitHub's service keys
// (a misspelt one refused as under github), and github's settings and
// built-in search limits stay github.com's.
func TestGitHubEnterpriseServerIsTunedUnderItsOwnProvider(t *testing.T) {
	cfg, err := resilience.ParseConfig([]byte("ratelimit: {providers: {github-enterprise: {max_rps: 5, services: {search: {max_rps: 2}}}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	gov := newGov(t, cfg)
	scope := cloudghttp.GitHub("octo")
	for u, want := range map[string]float64{
		"https://ghe.example.com/api/v3/search/issues?q=bug": 2,
		"https://ghe.example.com/api/v3/search/code?q=x":     5,
		"https://ghe.example.com/api/v3/repos/octo/hello":    5,
		"https://api.github.com/search/issues?q=bug":         0.5,
		"https://api.github.com/repos/octo/hello":            20,
	} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if got := gov.Inspect(scope(req)).Leaf.Ceiling; got != want {
			t.Errorf("GET %s: %v rps, want %v", u, got, want)
		}
	}
	_, err = resilience.ParseConfig([]byte("ratelimit: {providers: {github-enterprise: {services: {serach: {max_rps: 2}}}}}\n"))
	if err == nil || !strings.Contains(err.Error(), "did you mean search?") {
		t.Errorf("a misspelt service key of github-enterprise: %v, want it refused as an unknown GitHub service", err)
	}
}

// Two Enterprise Servers on one host, on two ports (a test setup, two
// tunnels on localhost), are two servers, as cloudgazure's rule has two
// emulators on one host's ports be two endpoints: a quota the one says
// is spent pauses its calls and none of the other's.
func TestTwoEnterpriseServersOnOneHostsPortsAreApart(t *testing.T) {
	gov := newGov(t, resilience.Config{})
	first, second := &fakeAPI{}, &fakeAPI{}
	c := &http.Client{Transport: cloudghttp.NewTransport(nil, cloudghttp.GitHub("octo"),
		cloudghttp.WithGovernor(gov), cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))}
	firstURL, secondURL := loopback(t, first).URL+"/api/v3", loopback(t, second).URL+"/api/v3"
	first.script(status(http.StatusForbidden, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0",
		"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10), "X-RateLimit-Resource", "core"))
	readAll(t, do(t, c, http.MethodGet, firstURL+"/repos/octo/hello", nil))
	if _, err := getNow(c, firstURL+"/repos/octo/hello"); err == nil {
		t.Fatal("the first server's next call went at once, want it held by its spent quota's pause")
	}
	resp, err := getNow(c, secondURL+"/repos/octo/hello")
	if err != nil {
		t.Fatalf("the second server's call was held by the first's pause: %v", err)
	}
	readAll(t, resp)
	if n := len(second.recorded()); n != 1 {
		t.Fatalf("the second server received %d requests, want 1", n)
	}
}

// GitHub("") names no login: github.com's scopes have no account
// (github/*/*/rest), and an Enterprise Server's have the server's host
// alone for theirs, not the host and an empty login after a slash.
func TestGitHubEnterpriseServerWithoutALoginIsItsHost(t *testing.T) {
	for u, want := range map[string]string{
		"https://api.github.com/repos/octo/hello":               "github/*/*/rest",
		"https://ghe.example.com/api/v3/repos/octo/hello":       "github-enterprise/ghe.example.com/*/rest",
		"https://ghe.example.com:8443/api/v3/search/issues?q=x": "github-enterprise/ghe.example.com:8443/*/search",
	} {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		sc := cloudghttp.GitHub("")(req)
		if got := sc.String(); got != want {
			t.Errorf("GET %s: scope %s (account %q), want %s", u, got, sc.Account, want)
		}
	}
}

// GitHub Enterprise Cloud with data residency is another GitHub than
// github.com, on a subdomain of ghe.com (its API on
// api.<subdomain>.ghe.com): its users are the enterprise's managed users,
// who "can only interact with resources that belong to your enterprise"
// (GitHub's "About GitHub Enterprise Cloud with data residency"), so the
// same login on github.com and on ghe.com is two token owners, two
// quotas. A rate limit github.com answers (its primary quota spent, an
// hour to its reset) pauses github.com's calls, and no call to ghe.com,
// which is sent at once; a limit one ghe.com enterprise answers holds no
// other's.
func TestGHEComIsNotHeldByGitHubComsPause(t *testing.T) {
	gov := newGov(t, resilience.Config{})
	dotcom, gheCom, dotcomURL, _, dotcomAPI, _ := ghesClients(t, gov, cloudghttp.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
	tenantAPI, otherAPI := &fakeAPI{}, &fakeAPI{}
	tenantURL, otherURL := loopback(t, tenantAPI).URL, loopback(t, otherAPI).URL
	spent := status(http.StatusForbidden, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0",
		"X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10), "X-RateLimit-Resource", "core")
	dotcomAPI.script(spent)
	readAll(t, do(t, dotcom, http.MethodGet, dotcomURL+"/repos/octo/hello", nil))
	if _, err := getNow(dotcom, dotcomURL+"/repos/octo/hello"); err == nil {
		t.Fatal("github.com's next call went at once, want it held by the spent quota's pause")
	}
	// The ghe.com client's requests are sent to a fake on 127.0.0.1 with
	// the Host ghe.com's API has.
	get := func(u, host string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(resilience.WithMaxWait(context.Background(), 0), http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		req.Host = host
		return gheCom.Do(req)
	}
	resp, err := get(tenantURL+"/repos/octo/hello", "api.octocorp.ghe.com")
	if err != nil {
		t.Fatalf("ghe.com's call was held by github.com's pause: %v", err)
	}
	readAll(t, resp)
	if n := len(tenantAPI.recorded()); n != 1 {
		t.Fatalf("ghe.com received %d requests, want 1", n)
	}
	tenantAPI.script(spent)
	resp, err = get(tenantURL+"/repos/octo/hello", "api.octocorp.ghe.com")
	if err == nil {
		readAll(t, resp)
	}
	if _, err := get(tenantURL+"/repos/octo/hello", "api.octocorp.ghe.com"); err == nil {
		t.Fatal("octocorp.ghe.com's next call went at once, want it held by its spent quota's pause")
	}
	resp, err = get(otherURL+"/repos/octo/hello", "api.acme.ghe.com")
	if err != nil {
		t.Fatalf("acme.ghe.com's call was held by octocorp.ghe.com's pause: %v", err)
	}
	readAll(t, resp)
}

// ghe.com's scopes are github's, at github.com's limits, with the
// account <subdomain>.ghe.com/<login> (the enterprise's subdomain of
// ghe.com, whatever host of it the request is sent to: api., uploads.),
// and github.com's scopes are unchanged.
func TestGHEComScopeIsItsSubdomainsAndLogins(t *testing.T) {
	for _, c := range []struct{ account, url, host, want string }{
		{"Octo", "https://api.github.com/repos/octo/hello", "", "github/octo/*/rest"},
		{"Octo", "https://uploads.github.com/repos/octo/hello/releases/1/assets?name=a.zip", "", "github/octo/*/rest"},
		{"Octo", "https://api.octocorp.ghe.com/repos/octo/hello", "", "github/octocorp.ghe.com/octo/*/rest"},
		{"Octo", "https://API.OctoCorp.GHE.com./search/issues?q=bug", "", "github/octocorp.ghe.com/octo/*/search"},
		{"Octo", "https://api.octocorp.ghe.com/search/code?q=x", "", "github/octocorp.ghe.com/octo/*/code_search"},
		{"Octo", "https://api.octocorp.ghe.com/graphql", "", "github/octocorp.ghe.com/octo/*/graphql"},
		{"Octo", "https://api.octocorp.ghe.com/orgs/Acme/audit-log", "", "github/octocorp.ghe.com/octo/orgs/acme/audit_log"},
		{"Octo", "https://uploads.octocorp.ghe.com/repos/octo/hello/releases/1/assets?name=a.zip", "", "github/octocorp.ghe.com/octo/*/rest"},
		{"Octo", "https://127.0.0.1:8443/repos/octo/hello", "api.octocorp.ghe.com", "github/octocorp.ghe.com/octo/*/rest"},
		{"Octo", "https://api.acme.ghe.com/repos/octo/hello", "", "github/acme.ghe.com/octo/*/rest"},
		{"", "https://api.octocorp.ghe.com/repos/octo/hello", "", "github/octocorp.ghe.com/*/rest"},
		{"Octo", "https://ghe.com/repos/octo/hello", "", "github/octo/*/rest"},
		{"Octo", "https://api.notghe.com/repos/octo/hello", "", "github/octo/*/rest"},
	} {
		req, err := http.NewRequest(http.MethodGet, c.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.host != "" {
			req.Host = c.host
		}
		if got := cloudghttp.GitHub(c.account)(req).String(); got != c.want {
			t.Errorf("GitHub(%q): GET %.60s (Host %q): scope %s, want %s", c.account, c.url, c.host, got, c.want)
		}
	}
}
