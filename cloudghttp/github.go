package cloudghttp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudg/cloudg/internal/errread"
	"github.com/cloudg/cloudg/internal/peek"
	"github.com/cloudg/cloudg/internal/scopekey"
	"github.com/cloudg/cloudg/internal/scopenames"
	"github.com/cloudg/cloudg/internal/yamlconf"
	"github.com/cloudg/cloudg/resilience"
)

// ProviderGitHub is the provider of GitHub's scopes: github.com's API
// and GitHub Enterprise Cloud's (with data residency too, on a subdomain
// of ghe.com, whose scopes' account names it), whose limits are
// github.com's. A Transport reads GitHub's
// rate-limit headers on the answers of every scope of this provider and
// of ProviderGitHubEnterprise, whatever function made the scope.
const ProviderGitHub = "github"

// ProviderGitHubEnterprise is the provider of a GitHub Enterprise
// Server's scopes (GitHub's scope function gives it to a request under
// /api/v3/, /api/uploads/ or /api/graphql), apart from ProviderGitHub's:
// a server's limits are the ones its administrator sets, none by
// default, so that its scopes run at the governor's generic defaults
// unless ratelimit.providers.github-enterprise tunes them, and a limit
// github.com answers holds none of its calls. Its services are
// ProviderGitHub's.
const ProviderGitHubEnterprise = "github-enterprise"

// The services of GitHub's scopes: each has a rate limit of its own, the
// resource of the same name in the resources of GitHub's GET /rate_limit
// (rest's is core), which GitHub names in x-ratelimit-resource.
const (
	GitHubREST       = "rest"
	GitHubSearch     = "search"
	GitHubCodeSearch = "code_search"
	GitHubGraphQL    = "graphql"
	// GitHubIntegrationManifest is the service of POST
	// /app-manifests/{code}/conversions, a GitHub App made from a manifest.
	GitHubIntegrationManifest = "integration_manifest"
	// GitHubDependencySnapshots is the service of POST
	// /repos/{owner}/{repo}/dependency-graph/snapshots, a snapshot
	// submitted to the dependency graph.
	GitHubDependencySnapshots = "dependency_snapshots"
	// GitHubDependencySBOM is the service of the requests of a
	// repository's SBOM: GET /repos/{owner}/{repo}/dependency-graph/sbom
	// and, since GitHub made SBOMs asynchronous, its
	// dependency-graph/sbom/generate-report.
	GitHubDependencySBOM = "dependency_sbom"
	// GitHubAuditLog is the service of GET /orgs/{org}/audit-log and GET
	// /enterprises/{enterprise}/audit-log. GitHub counts that quota per
	// organisation or enterprise as well as per user, so that each
	// organisation's and each enterprise's audit log is a scope of its
	// own, its Region naming it: orgs/<org> or enterprises/<enterprise>.
	GitHubAuditLog = "audit_log"
	// GitHubSCIM is the service of GitHub's SCIM API, the paths under
	// /scim/v2/ (an organisation's or an enterprise's users and groups).
	GitHubSCIM = "scim"
	// GitHubAuditLogStreaming is the service of an enterprise's audit
	// log streams: /enterprises/{enterprise}/audit-log/streams, a
	// stream's .../streams/{stream_id} and .../audit-log/stream-key.
	GitHubAuditLogStreaming = "audit_log_streaming"
	// GitHubActionsRunnerRegistration is the service of a self-hosted
	// runner's registration: POST /actions/runner-registration, which
	// the runner's configuration (config.sh) sends with a registration
	// token. The token's own creation, POST
	// .../actions/runners/registration-token, counts against core, and
	// is in GitHubREST.
	GitHubActionsRunnerRegistration = "actions_runner_registration"
	// GitHubCodeScanningAutofix is the service of a code scanning alert's
	// autofix: /repos/{owner}/{repo}/code-scanning/alerts/{alert_number}/autofix
	// (its creation and its status) and .../autofix/commits.
	GitHubCodeScanningAutofix = "code_scanning_autofix"
)

// githubServices are GitHub's services, in the order the configuration
// check names them.
var githubServices = []string{
	GitHubREST, GitHubSearch, GitHubCodeSearch, GitHubGraphQL,
	GitHubIntegrationManifest, GitHubDependencySnapshots, GitHubDependencySBOM, GitHubAuditLog,
	GitHubSCIM, GitHubAuditLogStreaming, GitHubActionsRunnerRegistration, GitHubCodeScanningAutofix,
}

// Importing the package makes the core's configuration check refuse a
// service key of provider github that is none of GitHub's services
// (ratelimit.providers.github.services.serach: unknown GitHub service
// (did you mean search?)): GitHub's limits are per service, and a scope
// of another service would take the provider's leaf settings.
func init() {
	byName := slices.Sorted(slices.Values(githubServices)) // Nearest prefers the first in byte order
	last := len(githubServices) - 1
	unknown := "unknown GitHub service (" + strings.Join(githubServices[:last], ", ") + " or " + githubServices[last] + ")"
	check := func(service, _ string) string {
		if slices.Contains(githubServices, service) {
			return ""
		}
		if s := yamlconf.Nearest(service, slices.Values(byName)); s != "" {
			return "unknown GitHub service (did you mean " + s + "?)"
		}
		return unknown
	}
	scopenames.Register(ProviderGitHub, check)
	scopenames.Register(ProviderGitHubEnterprise, check)
}

// GitHub's rate-limit headers, in canonical form (net/http canonicalises
// what it reads), so that they are read with one map lookup.
const (
	hdrLimit      = "X-Ratelimit-Limit"
	hdrRemaining  = "X-Ratelimit-Remaining"
	hdrReset      = "X-Ratelimit-Reset"
	hdrRetryAfter = "Retry-After"
)

// lowShare: a quota is low when fewer than 1/lowShare of its requests
// are left.
const lowShare = 10

// GitHub returns the scope function of GitHub's API for account (the
// user, organisation or app installation whose token the client uses:
// GitHub's limits are per token owner). The account is put in lower case,
// as GitHub's logins are case-insensitive: GitHub("Octo") and
// GitHub("octo") make the same scopes, whose account's bucket, pauses
// and bulkhead they share:
//
//	github/<account>/*/code_search                       /search/code (10 requests a minute)
//	github/<account>/*/search                            other paths under /search/ (30 requests a minute)
//	github/<account>/*/graphql                           /graphql (points per hour)
//	github/<account>/*/integration_manifest              /app-manifests/{code}/conversions
//	github/<account>/*/dependency_snapshots              /repos/{owner}/{repo}/dependency-graph/snapshots
//	github/<account>/*/dependency_sbom                   /repos/{owner}/{repo}/dependency-graph/sbom, .../sbom/generate-report
//	github/<account>/orgs/<org>/audit_log                /orgs/{org}/audit-log
//	github/<account>/enterprises/<enterprise>/audit_log  /enterprises/{enterprise}/audit-log
//	github/<account>/*/scim                              /scim/v2/...
//	github/<account>/*/audit_log_streaming               /enterprises/{enterprise}/audit-log/streams..., .../audit-log/stream-key
//	github/<account>/*/actions_runner_registration       /actions/runner-registration (a runner's registration, not its token's creation)
//	github/<account>/*/code_scanning_autofix             /repos/{owner}/{repo}/code-scanning/alerts/{alert_number}/autofix, .../autofix/commits
//	github/<account>/*/rest                              every other path (5,000 requests an hour)
//	github-enterprise/<host>/<account>/*/<service>       an Enterprise Server's, each service as above (below)
//	github/<subdomain>.ghe.com/<account>/*/<service>     GitHub Enterprise Cloud's with data residency, each service as above (below)
//
// Each is the resource of its name in GitHub's GET /rate_limit (rest's is
// core), limited apart, so that a quota spent on one holds none of the
// others. GitHub counts the audit log's quota (1,750 queries an hour) for
// each user and organisation, or user and enterprise, apart, so that an
// organisation's or an enterprise's audit log is a scope of its own, its
// name in lower case in the scope's Region: the audit logs of several
// organisations read with one token each run at the rate of the
// audit_log service key, and one whose quota is spent holds none of the
// others back. A name that holds a character that is not printable (a
// newline, %0A; a byte that is not UTF-8), a space, or that makes the
// Region more than 128 bytes names none: /orgs/ev%0Ail/audit-log is
// github/<account>/*/audit_log, so that a request's text reaches no log
// line or metric label as it is and makes no scope without bound. The
// path is read as it was sent: a slash sent escaped (%2F) is part of its
// segment, as GitHub reads it (/orgs/acme%2Faudit-log is rest's, not
// acme's audit log). A self-hosted runner's registration token (POST
// .../actions/runners/registration-token of a repository, organisation or
// enterprise) is in rest: GitHub counts its creation against core, and
// actions_runner_registration only the runner's registration with it
// (its answer in actions/runner#1339). GitHub's other resources stay in rest: code_scanning_upload,
// which GitHub has joined to core (its changelog of 2026-05-19 removed it
// from GET /rate_limit, uploads being "governed by the standard core rate
// limit"), source_import, which no path uses any more, and
// copilot_usage_records, whose paths GitHub's documentation does not give,
// as does an asynchronous SBOM's sbom/fetch-report/{uuid}, whose quota it
// does not name. The x-ratelimit-resource of an answer names the quota its
// call counted against, but only once the call was made, in the scope
// chosen before it was sent, in which it is recorded; it moves no call,
// and does not tell the scope of the next one, whose path differs. The
// headers of an answer to a rest call that name another quota than core
// (code_scanning_upload, which GitHub counts in core's pool, is core's)
// pace nothing: that quota spent or low neither pauses nor slows rest, and
// a 403 or 429 of it spent (x-ratelimit-remaining: 0, no retry-after, no
// secondary limit's words in its body) is a fatal answer, not retried,
// whose headers tell the caller when that quota resets: the caller gets
// it with no error, and the call is lost as denied
// (resilience.LossDenied, see resilience.Guard.EndDenied) in the run's
// Stats and the task's Ledger of the scope it was made in, whose breaker
// counts no failure of it; a 429 with requests left is a throttle, as
// any 429. Every other scope holds the
// calls of one operation, which count against one quota whatever the
// server names it (an Enterprise Server counts a code search against
// search, as its other searches; an autofix's status may count in core),
// and its answers' headers pace it.
//
// A request to a GitHub Enterprise Server, told by its path (under
// /api/v3/ or /api/uploads/, or /api/graphql, which github.com's and
// ghe.com's APIs do not have), is another GitHub's, whose quotas the same
// login's on github.com do not share: its scopes are those above, of
// provider ProviderGitHubEnterprise and account <host>/<account>, the
// host it is sent to (its Host, else its URL's) in lower case, with its
// port when that is not its scheme's default
// (github-enterprise/ghe.example.com/octo/*/rest,
// github-enterprise/ghe.example.com:8443/octo/*/rest), so that a limit
// github.com answers holds none of its calls, nor one of another server,
// on another host or port; GitHub("") gives the host alone
// (github-enterprise/ghe.example.com/*/rest); a host that is not plain
// (scopekey's rule, as for an audit log's name) gives
// github-enterprise/<account>. The path is read from its start: a server
// reached under a proxy's path prefix (/github/api/v3/...) is not told
// from github.com, whose own paths may hold /api/v3/ further on (the ref
// of a branch named api/v3, /repos/{owner}/{repo}/git/refs/heads/api/v3),
// and its requests have github.com's scopes, all of them rest's.
// GitHub Enterprise Cloud's API on
// api.github.com is github.com's. With data residency, on
// api.<subdomain>.ghe.com (or uploads.<subdomain>.ghe.com), it has
// github.com's limits and its scopes are of ProviderGitHub, but it is
// another GitHub too, whose users are the enterprise's managed users
// alone: the account is <subdomain>.ghe.com/<account>
// (github/octocorp.ghe.com/octo/*/rest; <subdomain>.ghe.com for
// GitHub("")), so that a limit github.com or another enterprise answers
// holds none of its calls.
//
// The scopes run at the settings of ratelimit.providers.github
// (resilience.Config's Providers["github"]), and where it sets none at the
// governor's built-in defaults for github: GitHub's documented limits for
// search (0.5 rps, 30 requests a minute) and code_search (0.166 rps, 10 a
// minute), each with a burst of one, and the generic defaults for the
// others (20 rps, burst 40, 64 in flight), rest and graphql included,
// whose quotas depend on the token (5,000 requests or points an hour for
// a user, more for an app) and are far below them. An unauthenticated
// client (10 searches a minute) sets the service keys for its own. An
// Enterprise Server's scopes run at the settings of
// ratelimit.providers.github-enterprise, with the same service keys, and
// where it sets none at the generic defaults, search's included: a
// server's administrator sets its limits, none by default. What keeps
// the scopes under the limits in force is what the answers say, which
// the Transport reads for every scope of ProviderGitHub and
// ProviderGitHubEnterprise:
//
//   - a 403 or 429 with x-ratelimit-remaining: 0 (of the scope's quota,
//     core for rest, as every rule on x-ratelimit-remaining is) is a
//     throttle: the scope's rate is halved and the scope paused until x-ratelimit-reset (epoch
//     seconds), capped at resilience.MaxPause, or for Retry-After when the
//     answer has one;
//   - a 403 or 429 with retry-after (a secondary limit) is a throttle with
//     that delay;
//   - a 403 or 429 whose body says that a secondary rate limit was
//     exceeded (its message or documentation_url, as go-github reads
//     them; GitHub sends some without retry-after) is a throttle whose
//     retry waits a minute, as GitHub asks; the body is read for it, up to
//     4 KiB, decompressed when it is gzip-encoded, while the attempt holds
//     its slot, for a second at most (a body that has not come by then
//     decides nothing, and the answer is read as below), and given back
//     whole;
//   - any other 403 (a permission) is a fatal answer, and a 429 a throttle
//     as for any API;
//   - a GraphQL answer whose status is 200 but that says the primary rate
//     limit is exceeded (no data, an error of type RATE_LIMITED that says
//     nothing of a secondary limit, or x-ratelimit-remaining: 0 and an
//     error saying a rate limit), as GitHub answers a query made once the
//     quota is spent, or one costing more points than are left (its
//     x-ratelimit-remaining showing them), is a throttle until
//     x-ratelimit-reset, and one that says
//     a secondary limit was hit (GitHub answers those with a 200 or a
//     403) a throttle for retry-after, or for a minute without it, as
//     GitHub asks: the query, which GitHub did not run, is sent again
//     then, and one given up is recorded so (an error that points at a
//     place in the query, a parse or validation error, which may quote
//     it, is the query's own, whatever its message says). An answer
//     that holds data as well as such an error (a partial answer, which
//     GitHub ran in part) is such a throttle too, but, as GitHub acted on
//     the request, it is not sent again unless the request may be (an
//     Idempotency-Key, or WithRetryNonIdempotent): the caller gets it,
//     and the call is recorded as throttled and given up. Every GraphQL
//     200's body is read for it, decompressed when it is gzip-encoded,
//     and given back whole, but only as far as it must be: an answer
//     whose first member is its data (not null) is read no further than
//     its first bytes, which come with its headers, unless they say the
//     quota is spent or carry retry-after and its Content-Length does not
//     say it is longer than 4 KiB; any other up to 4 KiB, for a
//     second at most, as a 403's (the errors that follow the data of an
//     answer whose headers say neither, or that follow its first 4 KiB,
//     are not read: such a partial answer passes as a success). The
//     attempt's slot goes back
//     before that read when the headers say nothing of a limit (no
//     retry-after, a quota neither spent nor low), so that a slow body
//     holds no other call of the account back;
//   - any other answer, a success above all, whose x-ratelimit-remaining is
//     under a tenth of x-ratelimit-limit slows the scope before the limit
//     is hit: the scope is paused for the time left until the reset divided
//     by the requests left plus one, so that what is left lasts until the
//     reset; at 0 it is paused until the reset.
func GitHub(account string) func(*http.Request) resilience.Scope {
	account = strings.ToLower(account)
	scopes := make(map[string]resilience.Scope, len(githubServices))
	for _, s := range githubServices {
		scopes[s] = resilience.Scope{Provider: ProviderGitHub, Account: account, Service: s}
	}
	return func(r *http.Request) resilience.Scope {
		path := githubPath(r.URL)
		service, entity := githubRoute(path)
		sc := scopes[service]
		if entity != "" {
			sc.Region = entity
		}
		var instance string // another GitHub than github.com's
		if enterprisePath(path) {
			sc.Provider = ProviderGitHubEnterprise
			instance = enterpriseHost(r)
		} else {
			instance = gheComTenant(r)
		}
		switch {
		case instance == "":
		case account == "": // GitHub(""): the instance alone
			sc.Account = instance
		default:
			sc.Account = instance + "/" + account
		}
		return sc
	}
}

// gheComSuffix ends the host names of GitHub Enterprise Cloud with data
// residency: <subdomain>.ghe.com, its API's api.<subdomain>.ghe.com.
const gheComSuffix = ".ghe.com"

// gheComTenant returns the enterprise's subdomain of ghe.com,
// <subdomain>.ghe.com in lower case, of a request sent to a host of it
// (its Host, else its URL's: api.<subdomain>.ghe.com,
// uploads.<subdomain>.ghe.com), or "" for a request to another host, or
// whose subdomain is not plain (scopekey.Plain).
func gheComTenant(r *http.Request) string {
	h := r.Host
	if h == "" {
		h = r.URL.Host
	}
	name := strings.TrimSuffix((&url.URL{Host: h}).Hostname(), ".")
	if len(name) <= len(gheComSuffix) || !strings.EqualFold(name[len(name)-len(gheComSuffix):], gheComSuffix) {
		return ""
	}
	sub := name[:len(name)-len(gheComSuffix)]
	sub = sub[strings.LastIndexByte(sub, '.')+1:]
	if sub == "" {
		return ""
	}
	tenant := strings.ToLower(sub) + gheComSuffix
	if !scopekey.Plain(tenant) {
		return ""
	}
	return tenant
}

// enterprisePath reports whether path, a request's (githubPath), is a
// GitHub Enterprise Server's: under its REST API's /api/v3 or its
// uploads' /api/uploads, or its GraphQL endpoint, /api/graphql.
// github.com's and ghe.com's APIs have no path under /api.
func enterprisePath(path string) bool {
	return path == "/api/v3" || path == "/api/graphql" ||
		strings.HasPrefix(path, "/api/v3/") || strings.HasPrefix(path, "/api/uploads/")
}

// enterpriseHost returns the host of the Enterprise Server r is sent
// to: the Host it is sent with (r.Host), or its URL's, its name in lower
// case and without a final dot, with its port when that is not the
// default of r's scheme (ghe.example.com:8443; two servers on one host's
// ports are two servers, as cloudgazure has two emulators be), an IPv6
// address bracketed ([::1], [::1]:8443). A host without a name gives "",
// and so does one that is not plain (scopekey.Plain: more than 128
// bytes, a space, a character that does not print), so that a request's
// text makes no scope without bound.
func enterpriseHost(r *http.Request) string {
	h := r.Host
	if h == "" {
		h = r.URL.Host
	}
	name := scopekey.Endpoint(h, r.URL.Scheme)
	if !scopekey.Plain(name) {
		return ""
	}
	return name
}

// githubPath returns the path of u that githubRoute reads: its
// unescaped path, but for a slash sent escaped (%2F), which is part of
// its segment as GitHub reads it and stays %2F, so that
// /orgs/acme%2Faudit-log (the organisation "acme/audit-log") is no audit
// log of acme's. A path without one is u.Path, not copied.
func githubPath(u *url.URL) string {
	if u.RawPath == "" {
		return u.Path // Go writes it as it was sent: no %2F in it
	}
	ep := u.EscapedPath()
	if !strings.Contains(ep, "%2F") && !strings.Contains(ep, "%2f") {
		return u.Path
	}
	segs := strings.Split(ep, "/")
	for i, s := range segs {
		if v, err := url.PathUnescape(s); err == nil {
			segs[i] = strings.ReplaceAll(v, "/", "%2F")
		}
	}
	return strings.Join(segs, "/")
}

// githubService returns the service of a GitHub API path.
func githubService(path string) string {
	service, _ := githubRoute(path)
	return service
}

// githubRoute returns the service of a GitHub API path and, for the audit
// log's, the entity whose quota it counts against: "orgs/<org>" or
// "enterprises/<enterprise>", the name in lower case (GitHub's names are
// case-insensitive), or "" when that is not plain (scopekey.Plain); "" for
// the other services.
func githubRoute(path string) (service, entity string) {
	switch path {
	case "/graphql", "/api/graphql":
		return GitHubGraphQL, ""
	}
	path = strings.TrimPrefix(path, "/api/v3")
	if path == "/search/code" {
		// Limited apart from the other searches (x-ratelimit-resource
		// code_search).
		return GitHubCodeSearch, ""
	}
	if strings.HasPrefix(path, "/search/") {
		return GitHubSearch, ""
	}
	first, path := pathSegment(path)
	switch first {
	case "app-manifests": // /app-manifests/{code}/conversions
		if code, path := pathSegment(path); code != "" && path == "/conversions" {
			return GitHubIntegrationManifest, ""
		}
	case "actions": // /actions/runner-registration
		if path == "/runner-registration" {
			return GitHubActionsRunnerRegistration, ""
		}
	case "scim": // /scim/v2/...
		if strings.HasPrefix(path, "/v2/") {
			return GitHubSCIM, ""
		}
	case "orgs", "enterprises": // /orgs/{org}/..., /enterprises/{enterprise}/...
		name, path := pathSegment(path)
		switch {
		case name == "":
		case path == "/audit-log":
			// An entity is a name read from the path: one that is not
			// plain (a newline, a byte that is not UTF-8, a space, too
			// long) names none.
			// A slash sent escaped (githubPath keeps it %2F) is in
			// no name GitHub gives either.
			if entity := first + "/" + strings.ToLower(name); scopekey.Plain(entity) && !strings.Contains(entity, "%2f") {
				return GitHubAuditLog, entity
			}
			return GitHubAuditLog, ""
		case first == "enterprises" && (path == "/audit-log/streams" || path == "/audit-log/stream-key" ||
			strings.HasPrefix(path, "/audit-log/streams/")):
			return GitHubAuditLogStreaming, ""
		}
	case "repos": // /repos/{owner}/{repo}/...
		owner, path := pathSegment(path)
		repo, path := pathSegment(path)
		if owner == "" || repo == "" {
			break
		}
		switch path {
		case "/dependency-graph/snapshots":
			return GitHubDependencySnapshots, ""
		case "/dependency-graph/sbom", "/dependency-graph/sbom/generate-report":
			return GitHubDependencySBOM, ""
		}
		if alert, ok := strings.CutPrefix(path, "/code-scanning/alerts/"); ok {
			// .../code-scanning/alerts/{alert_number}/autofix[/commits]
			if n, rest, _ := strings.Cut(alert, "/"); n != "" && (rest == "autofix" || rest == "autofix/commits") {
				return GitHubCodeScanningAutofix, ""
			}
		}
	}
	return GitHubREST, ""
}

// pathSegment splits the first segment off a path that begins with a
// slash: "/repos/octo/hello" gives "repos" and "/octo/hello". A path
// without its slash gives "" and the path.
func pathSegment(path string) (string, string) {
	if !strings.HasPrefix(path, "/") {
		return "", path
	}
	seg, _, found := strings.Cut(path[1:], "/")
	if !found {
		return seg, ""
	}
	return seg, path[len(seg)+1:]
}

// refusal reports whether code is the status of GitHub's refusal for a
// rate limit: 403 or 429.
func refusal(code int) bool {
	return code == http.StatusForbidden || code == http.StatusTooManyRequests
}

// githubAnswer applies GitHub's rules to an error answer (see GitHub) to
// a request of path.
func githubAnswer(e *StatusError, path string, now time.Time) {
	if !refusal(e.code) {
		return
	}
	h := e.header
	if n, ok := headerInt(h, hdrRemaining); ok && n == 0 && !otherQuota(h, path) {
		e.kind = errread.Throttled
		e.hint, e.hasHint = resetIn(h, now)
		return
	}
	if len(h[hdrRetryAfter]) > 0 {
		e.kind = errread.Throttled // the core reads the delay from the header
	}
}

// hdrResource names the quota an answer's x-ratelimit-* headers count.
const hdrResource = "X-Ratelimit-Resource"

// otherQuota reports whether h, the headers of an answer to a request of
// path, count another quota than the one path's calls count against:
// path's scope is rest, whose quota is core, and their
// x-ratelimit-resource names another than core (code_scanning_upload,
// which GitHub counts in core's pool, is core's). Such headers pace none
// of rest's calls, most of which do not count against that quota. Every
// other scope holds the calls of one operation (githubRoute), which all
// count against one quota, whatever the server names it (search for a
// code search on an Enterprise Server, which limits it as its other
// searches; core where a server counts an operation in core): its
// answers' headers are that quota's, and pace it.
func otherQuota(h http.Header, path string) bool {
	v := h[hdrResource]
	if len(v) == 0 || githubService(path) != GitHubREST {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(v[0])) {
	case "", "core", "code_scanning_upload":
		return false
	}
	return true
}

// githubSecondaryWait is the wait of a secondary rate limit that gives
// none: GitHub asks for at least a minute.
const githubSecondaryWait = time.Minute

// maxPeek bounds what is read of the body of a GitHub 403 or 429 whose
// headers say nothing of a limit: GitHub's error bodies are a few hundred
// bytes of JSON.
const maxPeek = 4 << 10

// githubSecondary reads the body of a 403 or 429 whose headers decided
// nothing (no retry-after, a primary quota not spent) for GitHub's words
// for a secondary rate limit, which it may answer with no header of its
// own: such an answer is a throttle whose retry waits githubSecondaryWait.
// The body is read up to maxPeek bytes, in a goroutine of its own
// (peek.Body), and waited for at most drainGrace or until
// ctx ends, since the attempt holds its slot meanwhile: a body that has
// not come by then decides nothing; a gzip-encoded one (a client that
// asked for gzip itself) is read decompressed. Either way it is given
// back to resp whole (what was read, then the rest, once that read has ended), so that
// the client reads it as it came; closing it closes the body.
func githubSecondary(ctx context.Context, e *StatusError, resp *http.Response) {
	if e.kind != errread.None || !refusal(e.code) {
		return
	}
	b, _ := peek.Body(ctx, resp, maxPeek, drainGrace)
	if text, _ := decoded(contentEncoding(resp), b); secondaryWords(text) {
		e.kind, e.hint, e.hasHint = errread.Throttled, githubSecondaryWait, true
	}
}

// secondaryWords reports whether the body of an error answer says that a
// secondary rate limit was exceeded: its message ("You have exceeded a
// secondary rate limit", "You have triggered an abuse detection
// mechanism", as GitHub said before) or its documentation_url
// ("#about-secondary-rate-limits", "#abuse-rate-limits"), as go-github
// reads them.
func secondaryWords(body []byte) bool {
	body = bytes.ToLower(body)
	for _, w := range [...]string{"secondary rate limit", "secondary-rate-limits", "abuse detection", "abuse-rate-limits"} {
		if bytes.Contains(body, []byte(w)) {
			return true
		}
	}
	return false
}

// githubGraphQLLimited reports whether resp, a success's status answered
// to a GraphQL request of GitHub's, says that a rate limit is exceeded,
// as GitHub answers a query it did not run for it: a 200 whose body holds
// errors, one of them GitHub's that a rate limit was hit
// (graphQLError's rateLimited: of type RATE_LIMITED, or saying that a
// rate limit is exceeded and pointing at no place in the query); partial
// reports that the body holds data as well (not null), a request GitHub
// ran in part before the limit held the rest back. With
// x-ratelimit-remaining: 0, or an error whose type says a rate limit and
// whose message says nothing of a secondary one (GitHub's answer to a
// query that costs more points than are left, whose
// x-ratelimit-remaining shows them), the primary quota is spent (primary
// reports it, and the wait is until x-ratelimit-reset); otherwise a
// secondary limit was hit, which GitHub answers with a 200 or
// a 403, with retry-after when it says how long to wait (the core reads
// it from the header) and without it when the client is to wait a minute
// at least (secondary reports that: the wait is githubSecondaryWait).
// The body is read for it in a goroutine of its own (peek.Until) only
// until its first member decides: an answer whose first member is its
// data, not null, is a query's answer, and its body is read no further
// than its first bytes, which come with the headers, unless those headers
// say that the quota is spent (x-ratelimit-remaining: 0) or when to retry
// (retry-after), when the errors of a partial answer may follow its data,
// and its Content-Length (unknown, -1, for a body net/http decompressed)
// is not longer than maxPeek;
// any other is read up to maxPeek bytes (a rate limit's answer is a few
// hundred bytes of JSON; a longer one is a query's, whose errors, if any,
// are not read). The read is waited for, for a
// second at most or until the request's context ends (a body that has
// not come by then decides nothing), the attempt's slot given back
// before it when the headers say nothing of a limit (githubHeadersQuiet),
// and the body is given back whole; a gzip-encoded body (a client that asked
// for gzip itself) is read decompressed, and given back as it came.
func githubGraphQLLimited(req *http.Request, resp *http.Response) (limited, primary, secondary, partial bool) {
	if githubService(githubPath(req.URL)) != GitHubGraphQL {
		return false, false, false, false
	}
	// The encoding is read before the read ahead, which may go on, past
	// the wait for it, in a goroutine that must not read resp, the
	// caller's by then.
	enc := contentEncoding(resp)
	// An answer whose headers say that the quota is spent, or when to
	// retry, may be a partial one whose errors follow its data: it is
	// read on past its data, unless its Content-Length says that it is
	// longer than maxPeek, when its end, and its errors, would not be
	// read.
	n, ok := headerInt(resp.Header, hdrRemaining)
	spent := (ok && n == 0 || len(resp.Header[hdrRetryAfter]) > 0) && resp.ContentLength <= maxPeek
	b, whole := peek.Until(req.Context(), resp, maxPeek, drainGrace, func(b []byte) bool {
		if !readableEncoding(enc) {
			return true // nothing more to learn from it
		}
		if spent {
			return false
		}
		text, _ := decoded(enc, b)
		return graphQLAnswered(text)
	})
	if !whole {
		return false, false, false, false
	}
	if b, whole = decoded(enc, b); !whole {
		return false, false, false, false
	}
	var answer struct {
		Data   json.RawMessage `json:"data"`
		Errors []graphQLError  `json:"errors"`
	}
	if json.Unmarshal(b, &answer) != nil {
		return false, false, false, false
	}
	partial = jsonSet(answer.Data)
	for _, e := range answer.Errors {
		if e.rateLimited() {
			primary = ok && n == 0 || e.typed() && !secondaryWords([]byte(e.Message))
			return true, primary, !primary && len(resp.Header[hdrRetryAfter]) == 0, partial
		}
	}
	return false, false, false, false
}

// graphQLError is an error of a GraphQL answer, as GitHub writes it.
type graphQLError struct {
	Type      string          `json:"type"`
	Code      string          `json:"code"`
	Message   string          `json:"message"`
	Locations json.RawMessage `json:"locations"`
	Path      json.RawMessage `json:"path"`
}

// rateLimited reports whether e says that a rate limit of GitHub's was
// hit: its type is RATE_LIMITED (or RATE_LIMIT, as GitHub has also sent
// it, its code graphql_rate_limit), or its message says "rate limit" and
// it points at no place in the query (no locations, no path). An error
// that does (a parse or validation error, a field's) is the query's own,
// whose message may quote the query: Parse error on "rate limit" (STRING)
// at [1, 17].
func (e *graphQLError) rateLimited() bool {
	return e.typed() || !jsonSet(e.Locations) && !jsonSet(e.Path) && strings.Contains(strings.ToLower(e.Message), "rate limit")
}

// typed reports whether e's type (RATE_LIMITED, RATE_LIMIT) or code
// (graphql_rate_limit) says that it is a rate limit's. Such an error is
// the primary limit's unless its message says that the limit is a
// secondary one: GitHub answers so a query that costs more points than
// are left, while x-ratelimit-remaining still shows those points.
func (e *graphQLError) typed() bool {
	switch strings.ToUpper(e.Type) {
	case "RATE_LIMITED", "RATE_LIMIT":
		return true
	}
	return strings.EqualFold(e.Code, "graphql_rate_limit")
}

// jsonSet reports whether v, a member of a JSON object, was there and not
// null.
func jsonSet(v json.RawMessage) bool {
	return len(v) > 0 && string(v) != "null"
}

// graphQLAnswered reports whether text, the start of a GraphQL answer's
// body, already says that the answer is no rate limit's: it is no JSON
// object, or its first member is data whose value is not null. An answer
// whose first member is another (errors) is not decided by its start.
func graphQLAnswered(text []byte) bool {
	const space = " \t\r\n"
	t := bytes.TrimLeft(text, space)
	if len(t) == 0 {
		return false
	}
	if t[0] != '{' {
		return true
	}
	t = bytes.TrimLeft(t[1:], space)
	const data = `"data"`
	if len(t) < len(data) {
		return false
	}
	if !bytes.HasPrefix(t, []byte(data)) {
		return false
	}
	t = bytes.TrimLeft(t[len(data):], space)
	if len(t) == 0 || t[0] != ':' {
		return len(t) > 0 // no JSON after all
	}
	t = bytes.TrimLeft(t[1:], space)
	return len(t) > 0 && t[0] != 'n'
}

// decoded is b, the start of a response's body that peek.Body or
// peek.Until read, as its server wrote it before compressing it, enc
// being the response's contentEncoding: b itself when the response has no
// Content-Encoding (net/http removes it from an answer it decompressed),
// b gunzipped, up to maxPeek bytes, when it is gzip (what b holds of it
// when b is its start only), as GitHub answers a
// client that asks for gzip itself (Accept-Encoding: gzip, which net/http
// then leaves compressed); nil for an encoding it cannot read. whole
// reports that the text is all b holds (for b itself, always; for a gzip
// body, one that b holds to its end). The body the caller reads is left
// as it came.
func decoded(enc string, b []byte) (text []byte, whole bool) {
	switch enc {
	case "", "identity":
		return b, true
	case "gzip", "x-gzip":
	default:
		return nil, false
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, false
	}
	text, err = io.ReadAll(io.LimitReader(zr, maxPeek+1))
	if len(text) > maxPeek {
		return text[:maxPeek], false
	}
	return text, err == nil
}

// readableEncoding reports whether decoded reads a body of encoding enc
// (contentEncoding's): none, identity, or gzip.
func readableEncoding(enc string) bool {
	switch enc {
	case "", "identity", "gzip", "x-gzip":
		return true
	}
	return false
}

// contentEncoding is resp's one Content-Encoding, lower-case, "" when it
// has none and "," when it has several (no encoding's name).
func contentEncoding(resp *http.Response) string {
	enc := resp.Header.Values("Content-Encoding")
	switch {
	case len(enc) == 0:
		return ""
	case len(enc) > 1 || strings.Contains(enc[0], ","):
		return ","
	}
	return strings.ToLower(strings.TrimSpace(enc[0]))
}

// githubQuota slows a scope whose quota runs low (see GitHub); h are the
// headers of an answer to a request of path that was not a throttle. The
// headers of another quota than path's (otherQuota) slow nothing.
func githubQuota(gd *resilience.Guard, h http.Header, path string, now time.Time) {
	if !quotaLow(h) || otherQuota(h, path) {
		return
	}
	left, _ := headerInt(h, hdrRemaining)
	reset, ok := resetIn(h, now)
	if !ok {
		return
	}
	gd.Pause(reset / time.Duration(left+1)) // left+1 cannot overflow: quotaLow
}

// quotaLow reports whether h, an answer's headers, say that its quota is
// spent (x-ratelimit-remaining: 0) or low (under a tenth of
// x-ratelimit-limit), for which githubQuota pauses the scope.
func quotaLow(h http.Header) bool {
	left, ok := headerInt(h, hdrRemaining)
	if !ok {
		return false
	}
	// left*lowShare < limit, written so that no header value overflows it.
	limit, ok := headerInt(h, hdrLimit)
	return left == 0 || ok && left <= (limit-1)/lowShare
}

// githubHeadersQuiet reports whether h, the headers of a GitHub answer
// whose status is a success's, say nothing of a limit: no retry-after,
// and a quota neither spent nor low. Such an answer sets no pause, so
// that the attempt's slot may go back before its body is read.
func githubHeadersQuiet(h http.Header) bool {
	return len(h[hdrRetryAfter]) == 0 && !quotaLow(h)
}

// resetIn returns the time from now until x-ratelimit-reset (0 when it
// has passed). A reset past maxResetEpoch, which a time.Time cannot hold
// (time.Unix wraps it around to a date in the past), is read as
// maxResetEpoch: far away, not passed.
func resetIn(h http.Header, now time.Time) (time.Duration, bool) {
	epoch, ok := headerInt(h, hdrReset)
	if !ok {
		return 0, false
	}
	return max(0, time.Unix(min(epoch, maxResetEpoch), 0).Sub(now)), true
}

// maxResetEpoch is the latest x-ratelimit-reset read as it is: 2^53
// seconds, some 285 million years from 1970, which time.Unix holds and
// Time.Sub saturates to the longest Duration.
const maxResetEpoch = 1 << 53

// headerInt reads a non-negative integer header.
func headerInt(h http.Header, key string) (int64, bool) {
	v := h[key]
	if len(v) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v[0]), 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
