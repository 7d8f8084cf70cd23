package cloudggcp

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/api/option/internaloption"
	htransport "google.golang.org/api/transport/http"

	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/internal/hint"
	"github.com/cloudg/cloudg/internal/peek"
	"github.com/cloudg/cloudg/internal/scopekey"
	"github.com/cloudg/cloudg/resilience"
)

// cloudPlatform is the OAuth scope RESTClientOption authenticates with
// unless the client options name others: it covers every Google Cloud API.
const cloudPlatform = "https://www.googleapis.com/auth/cloud-platform"

// RESTClientOption returns the client option that governs a REST-based
// Google client (one that has no gRPC transport, such as compute's):
//
//	rest, err := cloudggcp.RESTClientOption(ctx, nil)
//	if err != nil { ... }
//	client, err := compute.NewInstancesRESTClient(ctx, rest)
//
// It is option.WithHTTPClient with an HTTP client whose transport is a
// cloudghttp.Transport (see RESTTransport) around an authenticated one.
// option.WithHTTPClient makes a client ignore its other options for
// authentication, so RESTClientOption authenticates itself, as the client
// would: clientOpts say how (credentials, quota project,
// option.WithoutAuthentication); none means Application Default
// Credentials with the cloud-platform scope. The client's endpoint
// options still go to the client. opts are WithGovernor and WithService.
//
// Each HTTP request is one governed call in the scope RESTScope gives it,
// retried by the Transport as cloudghttp retries (429 and 503 throttle,
// paced and retried no sooner than Retry-After, or than the retryDelay of
// a google.rpc.RetryInfo in the JSON error's details when the answer has
// no Retry-After (see RESTTransport), a 503 only when the request is
// idempotent; 408, 500, 502 and 504 and connection errors
// retried when the request is idempotent). A client
// whose own retry settings retry 503 and 504 (compute's gets and lists)
// retries the Transport's last answer again, each time as a new call.
// A request whose token could not be had (its token endpoint refused the
// connection, or answered 429 "Rate exceeded") was not sent to the API:
// the Transport records it as a local error of its call, not as the
// scope's transient error or throttle. It sends it again when the failure
// passes (a refused connection, a 429, a 500 or 503), after a backoff,
// within the policy's attempts and deadline, as no retry of the scope's.
func RESTClientOption(ctx context.Context, clientOpts []option.ClientOption, opts ...Option) (option.ClientOption, error) {
	all := make([]option.ClientOption, 0, len(clientOpts)+2)
	all = append(all, internaloption.WithDefaultScopes(cloudPlatform), internaloption.EnableNewAuthLibrary())
	all = append(all, clientOpts...)
	auth, err := htransport.NewTransport(ctx, http.DefaultTransport, all...)
	if err != nil {
		return nil, err
	}
	return option.WithHTTPClient(&http.Client{Transport: RESTTransport(auth, opts...)}), nil
}

// RESTTransport returns a cloudghttp.Transport that sends with base
// (authenticated: it adds nothing) and governs each request in the scope
// RESTScope gives it, with the governor of WithGovernor. For a client
// option of one's own:
//
//	option.WithHTTPClient(&http.Client{Transport: cloudggcp.RESTTransport(authenticated)})
//
// An error answer whose status is on none of the governor's lists (a 400
// or a 403) and whose JSON error names the reason rateLimitExceeded or
// userRateLimitExceeded (Compute answers a rate quota with such a 403) is
// the throttle resilience.Classify reads in the client's
// *googleapi.Error: its status line gains "; rate limit exceeded
// (<reason>)", which the Transport reads as throttling, so that the scope
// is slowed and the request retried as after a 429. An error answer whose
// JSON error's details hold a google.rpc.RetryInfo, whatever its status,
// asks for its retryDelay, as Google's front ends ask with a rate quota's
// 429 RESOURCE_EXHAUSTED: the Transport reads it as the answer's hint
// when it has no Retry-After header, pausing the scope and waiting at
// least that long before the retry, as for a Retry-After. The body of an
// error answer (never a success's) is read ahead for both: up to 64 KiB,
// waited for a second at most while the attempt holds its slot (a longer
// body, or one not in by then, decides nothing), and given to the client
// whole.
func RESTTransport(base http.RoundTripper, opts ...Option) *cloudghttp.Transport {
	cfg := newConfig(opts)
	var topts []cloudghttp.Option
	if cfg.gov != nil {
		topts = append(topts, cloudghttp.WithGovernor(cfg.gov))
	}
	return cloudghttp.NewTransport(rateReasons{base}, RESTScope(opts...), topts...)
}

// rateReasons reads what a Google error answer says in its JSON body for
// the cloudghttp Transport above it, which reads the status line and the
// headers only: a rate-limit reason (see rateLimited), which it marks in
// the status line, since the status alone (a 403) would be a fatal answer
// to the Transport, never retried, and proof that the scope is well; and
// the delay of a google.rpc.RetryInfo among the error's details, which it
// gives the Transport as the answer's hint (a Retry-After header still
// comes first). Only error answers' bodies are read, never a success's.
type rateReasons struct{ base http.RoundTripper }

// maxReasonBody bounds the body of an error answer read for its reason
// and its RetryInfo.
const maxReasonBody = 64 << 10

// reasonGrace bounds the wait for an error answer's body, which the
// attempt holds its slot for: a second, as cloudghttp's Transport waits
// for a GitHub error's body.
const reasonGrace = time.Second

func (t rateReasons) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil || resp == nil || resp.StatusCode < http.StatusBadRequest {
		return resp, err
	}
	b, whole := peek.Body(req.Context(), resp, maxReasonBody, reasonGrace)
	if !whole {
		return resp, nil // the client reads the body, and its error, as it would have
	}
	var e struct {
		Error struct {
			Errors []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) != nil {
		return resp, nil
	}
	if byReason(resp.StatusCode) {
		for _, it := range e.Error.Errors {
			if rateLimitReason(it.Reason) {
				if resp.Status == "" {
					resp.Status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
				}
				resp.Status += "; rate limit exceeded (" + it.Reason + ")"
				break
			}
		}
	}
	for _, d := range e.Error.Details {
		if d.Type != retryInfoType {
			continue
		}
		if delay, ok := parseRetryDelay(d.RetryDelay); ok {
			resp.Body = hintedBody{resp.Body, delay}
		}
		break
	}
	return resp, nil
}

// retryInfoType is the type URL of a google.rpc.RetryInfo in a JSON error's
// details, whose retryDelay is a protobuf Duration in JSON ("30s",
// "1.500s").
const retryInfoType = "type.googleapis.com/google.rpc.RetryInfo"

// hintedBody is the body of an error answer whose RetryInfo asks for
// delay: the cloudghttp Transport reads it as the answer's hint
// (hint.Body).
type hintedBody struct {
	io.ReadCloser
	delay time.Duration
}

func (b hintedBody) BodyRetryAfter() time.Duration { return b.delay }

// byReason reports whether an answer of status is classified by what it
// says rather than by its status: an error status on none of the
// governor's lists (429 and 503 throttling; 408, 500, 502, 504
// transient).
func byReason(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusRequestTimeout,
		http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
		return false
	}
	return status >= http.StatusBadRequest
}

// RESTScope returns the scope function of Google's REST APIs: the scope
// of a request is gcp/<account>/*/<service>/<collection>_<method>, read
// from its URL:
//
//   - the account is the path's first projects/<id>, organizations/<id>
//     or folders/<id> where a collection comes (not an id so named: a
//     bucket named projects names none), before any verb that names a
//     second resource, an organization's or folder's id a number, as
//     Resource Manager's are (a Cloud Storage folder,
//     /b/<bucket>/folders/logs%2F, names none), a domain-scoped project's
//     id whole (projects/example.com:p1), not a wildcard project
//     (projects/-, projects/_), nor an id that is none by Google
//     Cloud's grammar, as unescaped (a newline, %0A, a space, an
//     upper-case letter, an escaped slash: a project's id is lower-case
//     letters, digits and hyphens, a letter first, 30 characters at
//     most, or a number); or projects/<project> from a project query
//     parameter, not a wildcard (?project=-) nor an invalid id; or the
//     organization, folder or project a parentId or parent query
//     parameter names (compute's organization-level
//     firewall policies, ?parentId=organizations/123; Resource Manager's
//     ?parent=folders/456), but a move's, whose parentId names the
//     destination (.../firewallPolicies/<id>/move?parentId=folders/789:
//     no account);
//   - the service is WithService's, or the host's first label
//     (compute.googleapis.com; a host is read in lower case, as its
//     name is case-insensitive: PubSub.GoogleAPIs.com is pubsub), less a regional endpoint's location
//     (us-central1-aiplatform.googleapis.com is aiplatform) or a Private
//     Service Connect endpoint's name (compute-ep1.p.googleapis.com is
//     compute), or the segment before the version in the path
//     (/compute/v1/..., or compute's /compute/beta/... and
//     /compute/alpha/...), as for the APIs of Google's shared front end,
//     www.googleapis.com (/drive/v3/... is drive), and of the virtual IPs
//     private.googleapis.com and restricted.googleapis.com; or, for a host
//     of another universe (option.WithUniverseDomain: pubsub.s3nsapis.fr)
//     and a path that starts with the version, the host's first label, as
//     for googleapis.com (a host of two labels or fewer, localhost, or an
//     IP address, an emulator's, names none; a proxy's of three or more
//     names its first label), and Cloud Storage's host of another
//     universe (storage.s3nsapis.fr) whatever the path, an XML API
//     object's name holding a version or not;
//   - the operation is the method as the REST reference names it
//     (instances.get), with an underscore for the dot, which the
//     configuration's service keys keep for "<service>.<operation>"
//     (compute.instances_get): a custom method after a colon in the
//     path's last segment (secrets_addVersion from
//     .../secrets/s:addVersion; an escaped colon, %3A, is part of an
//     id), or a verb segment after a resource in an API whose paths name
//     the API before the version (compute: instances_start from
//     .../instances/i/start; compute's verb of a collection where an id
//     would come, a name with an upper-case letter, which compute's names
//     have not: disks_bulkInsert from .../disks/bulkInsert,
//     backendServices_listUsable; a Cloud Storage bucket's, object's or
//     managed folder's IAM policy, b_getIamPolicy (GET .../b/<bucket>/iam),
//     b_setIamPolicy (PUT), b_testIamPermissions (.../iam/testPermissions);
//     not the collections a Cloud Storage bucket or object holds, o, acl,
//     defaultObjectAcl, notificationConfigs, folders, managedFolders,
//     anywhereCaches: /storage/v1/b/<bucket>/o is o_list, an upload to
//     /upload/storage/v1/b/<bucket>/o o_insert, and so is each chunk of a
//     resumable one, a PUT to its session URI (an upload_id); nor those a BigQuery
//     dataset or table holds, tables, models, routines, data,
//     rowAccessPolicies: .../datasets/d/tables is tables_list; nor Cloud
//     DNS's changes, rrsets (a record set, rrsets/<name>/<type>, is one
//     resource) and rules, Cloud SQL Admin's databases, users, sslCerts
//     and backupRuns, compute's resizeRequests, wireGroups and hosts,
//     nor any collection after the id of a project, an organization, a
//     folder, a billing account, a location, a zone, a region or Cloud
//     Run's Knative namespace (/apis/serving.knative.dev/v1/namespaces/<p>/services
//     is services_list, a POST services_insert);
//     and a verb that names a second resource after it, Cloud Storage's copyTo,
//     rewriteTo, moveTo and renameTo, whatever follows: o_rewriteTo from
//     .../o/<object>/rewriteTo/b/<bucket>/o/<object>), or aggregatedList,
//     or compute's images_getFromFamily (.../images/family/<family>);
//     otherwise the HTTP method on the last collection:
//     get, update (PUT), patch and delete on a resource, list and insert
//     (create, in an API whose paths start with the version) on a
//     collection.
//
// A service or an operation so read that holds a character that is not
// printable (a newline, %0A; a byte that is not UTF-8), a space, or more
// than 128 bytes is none (*), so that a request's text reaches no log
// line or metric label as it is and makes no scope without bound:
// www.googleapis.com/dri%0Ave/v3/files/f1 is gcp/*/*/*/files_get. A
// service WithService names is the program's, not read from the request,
// and is the scope's as it is.
//
// So compute's InstancesClient.Get is gcp/projects/p1/*/compute/instances_get
// and List gcp/projects/p1/*/compute/instances_list. In an API whose paths start
// with the version, a singleton resource that holds collections (AIP-156:
// agent, ragEngineConfig, securityHealthAnalyticsSettings,
// eventThreatDetectionSettings, siteSearchEngine, dataConnector, firewall,
// analytics, traceConfig, dicomWeb, iap_tunnel, telemetry, where a
// collection comes) is its collection and its id at once, so that no id
// after it is part of the operation: Dialogflow ES's
// /v2/projects/<p>/agent/intents/<i> is intents_get, Vertex AI's
// .../ragEngineConfig/operations/<op> operations_get, /v2/projects/<p>/agent
// agent_get; and so is a singleton's collection whose own long-running
// operations follow it with no id between (Discovery Engine's
// .../siteSearchEngine/targetSites/operations/<op> is operations_get,
// .../targetSites/operations operations_list), read so after its
// singleton only: a target site named operations would read as that
// list. A path of a Cloud Healthcare FHIR store's resources
// (.../fhirStores/<s>/fhir/<type>/<id>, where a collection and its id
// come) follows FHIR's REST API: its operation is the FHIR interaction
// (see fhirOperation), never a resource's type, id or version, and an
// interaction of a kind Cloud Healthcare's quotas count (read, write,
// search) is named by its kind: .../fhir/Patient/<id> is fhir_read, and
// so is .../Patient/<id>/_history/<vid>; a PUT of it fhir_write,
// .../Patient?_id=<id> fhir_search, .../Patient/<id>/$everything
// fhir_$everything. A path of a Firestore database's documents
// (.../databases/<db>/documents/<collection>/<doc>/..., collections and
// documents in turn, as deep as the user nests them) names the method as
// Firestore's REST reference does (see firestoreOperation), never a
// collection's or a document's id: .../documents/users/alice is
// documents_get, .../users/alice/orders documents_list (POST:
// documents_createDocument), .../users/alice:runQuery
// documents_runQuery. A path of the Prometheus HTTP API Cloud Monitoring
// serves for Managed Service for Prometheus
// (.../location/<l>/prometheus/api/v1/<endpoint>) names the endpoint (see
// prometheusOperation): .../api/v1/query is prometheus_query, and a
// label's values, .../label/<name>/values, prometheus_labelValues,
// never a label's name. In an API whose paths start with the version, a
// second version where a collection comes begins the method's
// collections again (see afterVersion): Vertex AI's OpenAI-compatible
// Responses API, .../publishers/<p>/v1/responses/<id>, is responses_get,
// never a response's id. A request of Cloud
// Storage's XML API (a path that is not /storage/<version>, nor one
// after /upload, /download or /batch: /<bucket>/<object>, as the storage
// client reads an object's content, whatever the object's name; or a
// virtual-hosted one, the bucket in the host, <bucket>.storage.googleapis.com/<object>,
// as a V4 signed URL of storage.VirtualHostedStyle names it, or
// <bucket>.storage.<universe domain>/<object> of another universe) names the
// object's or the bucket's operation as the JSON API names it, never a
// name of theirs: o_get (GET, HEAD), o_insert (PUT, POST) and o_delete
// for an object, o_list (GET) for a bucket, in no account. No call of a
// bucket (nor its gRPC API's, whose buckets are projects/_/buckets/<b>)
// names the project that owns the bucket, so none has an account but a
// bucket's insert and the bucket list (?project=): not the userProject
// query parameter, nor the x-goog-user-project header, which name the
// project billed for the call (a requester-pays bucket's caller, the
// client's quota project), not the bucket's, while Cloud Storage's
// request rates are a bucket's and an object's whoever pays; and the
// storage client is given no project of its own. compute's /global/ segment
// after a project, an organization or a folder
// (/projects/p/global/networks) is skipped, but not the location global
// of a resource name (/projects/p/locations/global/keyRings/k). The names
// RESTScope knows (global, aggregated, the collections above, the verbs
// that name a second resource, an image's family) are read only where a
// collection or a verb comes, never where an id does: a bucket, dataset,
// key ring or object may be named so. The path is read segment by segment
// as it was escaped: an escaped slash (a Cloud Storage object's name,
// dir%2Ffile) is part of its segment, but for a resource name sent
// escaped in one segment where a collection comes (compute's host
// association, reservations%2Fr%2FreservationBlocks%2Fb), which is its
// collections and ids. The operation is a reading of the path, not the
// API's schema: an API with nested collections and verbs in path segments
// alike (Drive's files/<id>/comments) may name a collection as a verb, and
// a GET verb after a collection (Resource Manager's tagKeys/namespaced)
// reads as a get; govern such an API with a scope function of your own.
func RESTScope(opts ...Option) func(*http.Request) resilience.Scope {
	cfg := newConfig(opts)
	return func(r *http.Request) resilience.Scope {
		return restScope(r, cfg.service)
	}
}

func restScope(r *http.Request, service string) resilience.Scope {
	given := service != "" // WithService's: the program's, not read from r
	segs, verb := pathSegments(r.URL)
	// A host's name is case-insensitive: PubSub.GoogleAPIs.com is
	// pubsub.googleapis.com (ToLower allocates only for an upper-case one).
	host := strings.ToLower(r.URL.Hostname())
	if bucket, ok := virtualHostedBucket(host); ok && (service == "" || service == storageService) {
		// Cloud Storage's XML API, virtual-hosted style: the bucket in
		// the host is the path's first segment of path style.
		service = storageService
		segs = append([]string{bucket}, segs...)
	}
	// The API's own prefix (/compute/v1/...) and the version.
	ver := -1
	for i, s := range segs {
		if isVersion(s) || i > 0 && (s == "beta" || s == "alpha") {
			// compute's beta and alpha: /compute/beta/projects/...
			ver = i
			break
		}
	}
	pathVerbs := ver > 0
	if service == "" {
		if s, ok := targetService(r.URL.Host); ok {
			service = s
		} else if s, ok := universeService(host); ok && s == storageService {
			// Cloud Storage's host of another universe, whose XML
			// API's paths hold an object's name, a version and all
			// (/<bucket>/backups/v2/data.json), where another API's
			// name comes: storageJSON tells the two APIs apart.
			service = s
		} else if pathVerbs {
			service = segs[ver-1]
		} else if s, ok := universeService(host); ok {
			service = s
		}
	}
	if service == storageService && !storageJSON(segs, ver) {
		// Cloud Storage's XML API: /<bucket>/<object>.
		if verb != "" {
			segs[len(segs)-1] += ":" + verb // an object's name
		}
		return resilience.Scope{Provider: "gcp", Service: service, Operation: xmlOperation(r.Method, segs)}
	}
	method := r.Method
	if method == http.MethodPut && r.URL.Query().Has("upload_id") {
		// a resumable upload's chunk, PUT to its session URI: the
		// upload's own method
		method = http.MethodPost
	}
	t := restTokens(segs[ver+1:], pathVerbs)
	op, read := "", false
	if !pathVerbs && verb == "" {
		op, read = fhirOperation(method, segs[ver+1:])
	}
	if !pathVerbs && !read {
		op, read = firestoreOperation(method, segs[ver+1:], verb)
	}
	if !pathVerbs && !read && verb == "" {
		op, read = prometheusOperation(segs[ver+1:])
	}
	if !read {
		op = restOperation(method, afterVersion(t, pathVerbs), verb, pathVerbs, service)
	}
	account := restAccount(r, t, op)
	// A service or an operation read from a host or a path segment that
	// holds a character that is not printable, a space, or more than
	// scopekey.MaxPlain bytes is none; the service WithService names is
	// the program's and stays as it is.
	if !given && !scopekey.Plain(service) {
		service = ""
	}
	if !scopekey.Plain(op) {
		op = ""
	}
	return resilience.Scope{Provider: "gcp", Account: account, Service: service, Operation: op}
}

// universeService returns the service a host of another universe than
// googleapis.com names (Google Cloud Dedicated, a Trusted Partner Cloud:
// option.WithUniverseDomain, the endpoint <service>.<universe domain>,
// pubsub.s3nsapis.fr), as targetService reads a googleapis.com host: its
// first label, less a regional endpoint's location
// (us-central1-aiplatform) or a Private Service Connect endpoint's name
// (pubsub-ep1.p.s3nsapis.fr). A host of fewer than three labels
// (localhost, an emulator's), an IP address, or a shared front end's
// (www) names none.
func universeService(host string) (string, bool) {
	if net.ParseIP(host) != nil || strings.Count(host, ".") < 2 {
		return "", false
	}
	name, rest, _ := strings.Cut(host, ".")
	second, _, _ := strings.Cut(rest, ".")
	return labelService(name, second)
}

// virtualHostedBucket returns the bucket a host (in lower case) of Cloud
// Storage's XML API in virtual-hosted style names
// (<bucket>.storage.googleapis.com, a bucket's name dots and all: a V4
// signed URL of storage.VirtualHostedStyle; or
// <bucket>.storage.<universe domain> of another universe,
// bkt.storage.s3nsapis.fr), and whether host is one: the labels before
// its last storage label, which a universe's domain of two labels or
// more follows; not Cloud Storage's own hosts, which start with storage
// (storage.googleapis.com, storage.mtls.s3nsapis.fr, a regional
// endpoint's storage.<region>.rep.googleapis.com).
func virtualHostedBucket(host string) (string, bool) {
	host = strings.TrimSuffix(host, ".")
	i := strings.LastIndex(host, ".storage.")
	if i <= 0 {
		return "", false
	}
	return host[:i], strings.Contains(host[i+len(".storage."):], ".")
}

// storageService is Cloud Storage's service, whose JSON API's paths
// start /storage/v1 (after /upload, /download or /batch: storageJSON),
// and whose XML API's, which the storage client reads objects' content
// with, name a bucket and an object, and no version.
const storageService = "storage"

// computeService is Compute Engine's service, whose resources' names are
// lower case (RFC 1035), so that a segment with an upper-case letter
// where an id comes is a verb (.../backendServices/listUsable).
const computeService = "compute"

// storageJSON reports whether a Cloud Storage path (segs, its version at
// ver) is the JSON API's: /storage/<version>, after nothing but /upload,
// /download, /batch or /resumable/upload; not an object of the XML API's
// whose name holds storage and a version (/<bucket>/backups/storage/v1/x).
func storageJSON(segs []string, ver int) bool {
	if ver < 1 || segs[ver-1] != storageService {
		return false
	}
	switch strings.Join(segs[:ver-1], "/") {
	case "", "upload", "download", "batch", "resumable/upload":
		return true
	}
	return false
}

// xmlOperation names a request of Cloud Storage's XML API by what its
// path (segs) names, as the JSON API names its methods: an object
// (/<bucket>/<object>, its name unescaped, slashes and all) o_get (GET,
// HEAD), o_insert (PUT, POST) or o_delete; a bucket (/<bucket>) o_list
// (GET, the listing of its objects), or b_get (HEAD), b_insert (PUT),
// b_delete; the service (/) b_list. No name of a bucket or an object is
// part of it.
func xmlOperation(method string, segs []string) string {
	if method == "" {
		method = http.MethodGet
	}
	n := 0
	for _, s := range segs {
		if s != "" {
			n++
		}
	}
	switch {
	case n >= 2:
		switch method {
		case http.MethodGet, http.MethodHead:
			return "o" + opSep + "get"
		case http.MethodPut, http.MethodPost:
			return "o" + opSep + "insert"
		}
		return "o" + opSep + strings.ToLower(method)
	case n == 1 && method == http.MethodGet:
		return "o" + opSep + "list"
	case n == 1:
		switch method {
		case http.MethodHead:
			return "b" + opSep + "get"
		case http.MethodPut:
			return "b" + opSep + "insert"
		}
		return "b" + opSep + strings.ToLower(method)
	case method == http.MethodGet:
		return "b" + opSep + "list"
	}
	return "b" + opSep + strings.ToLower(method)
}

// pathSegments returns the segments of u's path, each unescaped, and the
// custom method after a colon in the last (secrets_addVersion from
// .../secrets/s:addVersion), unescaped as the segments are
// (s:addVer%73ion is s:addVersion's; s:add%0AVersion holds a newline, so
// that RESTScope finds its operation not plain), the colon as sent: an
// escaped slash or colon (%2F, %3A: a Cloud Storage object's name,
// dir%2Ffile, a domain-scoped project's id, example.com%3Aproj) is part
// of its segment, and a colon in a segment before the last (a
// domain-scoped project's id, sent as is in a resource name) is no
// method's either.
func pathSegments(u *url.URL) (segs []string, verb string) {
	segs = strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	last := len(segs) - 1
	if head, v, ok := strings.Cut(segs[last], ":"); ok {
		segs[last], verb = head, v
		if strings.IndexByte(verb, '%') >= 0 {
			if v, err := url.PathUnescape(verb); err == nil {
				verb = v
			}
		}
	}
	for i, s := range segs {
		if strings.IndexByte(s, '%') >= 0 {
			if v, err := url.PathUnescape(s); err == nil {
				segs[i] = v
			}
		}
	}
	return segs, verb
}

// restTokens returns the segments of a REST path after the version that
// name collections and ids, in turn: not the empty ones, nor compute's
// /global/ after a project, an organization or a folder
// (/projects/p/global/networks; an id global, the location of
// /locations/global/keyRings, a bucket, a dataset or an image family so
// named, stays); and a resource name sent escaped in one
// segment where a collection would come (compute's host association,
// .../zones/z/reservations%2Fr%2FreservationBlocks%2Fb/hosts) is its
// collections and ids; and in an API whose paths start with the version,
// a singleton where a collection comes (Dialogflow ES's
// projects/<p>/agent/intents/<i>: singletons) is its collection and its
// id at once, so that the collections it holds come where collections
// do, and so is a singleton's collection whose own operations follow it
// (siteSearchEngine/targetSites/operations/<op>: ownOperations).
func restTokens(toks []string, pathVerbs bool) []string {
	var t []string
	for _, s := range toks {
		switch {
		case s == "" || s == "global" && len(t) >= 2 && len(t)%2 == 0 && accountKinds[t[len(t)-2]]:
		case !pathVerbs && len(t)%2 == 0 && (singletons[s] || isVersion(s)):
			// a singleton, or a second version (Vertex AI's
			// publishers/<p>/v1/responses/<id>), after which the
			// collections and ids begin again: a pair of its own
			t = append(t, s, s)
		case !pathVerbs && s == "operations" && len(t) >= 3 && len(t)%2 == 1 && ownOperations[t[len(t)-1]] &&
			singletons[t[len(t)-2]] && t[len(t)-3] == t[len(t)-2]:
			// a singleton's collection's own operations
			// (siteSearchEngine/targetSites/operations/<op>): the
			// collection is a singleton of its own there
			t = append(t, t[len(t)-1], s)
		case len(t)%2 == 0 && strings.IndexByte(s, '/') >= 0:
			for _, p := range strings.Split(s, "/") {
				if p != "" {
					t = append(t, p)
				}
			}
		default:
			t = append(t, s)
		}
	}
	return t
}

// restAccount finds the account of a REST request: the first
// projects/<id>, organizations/<id> or folders/<id> where a collection and
// its id come in t (see restTokens), so that an id so named (a bucket
// named projects, /b/projects/o) is none, and before a verb that names a
// second resource (a copy's destination bucket, .../rewriteTo/b/projects),
// but a wildcard project (IAM's projects/-/serviceAccounts/<email>) or an
// id that is none by Google Cloud's grammar (validAccountID); or the
// project query parameter's project, but a wildcard (?project=-) or an
// invalid id; or the organization, folder or project a parentId or
// parent query parameter names (queryAccount), but in a move (op, the
// request's operation, is a move: compute's
// firewallPolicies/<id>/move?parentId=folders/789), whose parentId names
// the resource's new parent, its destination, which never names the
// account.
func restAccount(r *http.Request, t []string, op string) string {
	for i := 0; i+1 < len(t) && !destinationVerbs[t[i]]; i += 2 {
		if accountKinds[t[i]] && validAccountID(t[i], t[i+1]) {
			return t[i] + "/" + t[i+1]
		}
	}
	q := r.URL.Query()
	if p := q.Get("project"); validAccountID("projects", p) {
		return "projects/" + p
	}
	if strings.HasSuffix(op, opSep+"move") {
		return "" // the destination
	}
	for _, k := range []string{"parentId", "parent"} {
		if a := queryAccount(q.Get(k)); a != "" {
			return a
		}
	}
	return ""
}

// queryAccount returns the account a parentId or parent query parameter
// names (compute's organization-level firewall and security policies,
// ?parentId=organizations/123; Resource Manager's lists of a folder's or
// an organization's children, ?parent=folders/456): its
// projects/<id>, or organizations/<id> or folders/<id> with a numeric
// id, each valid by Google Cloud's grammar (validAccountID); "" for any
// other value.
func queryAccount(v string) string {
	a, _ := knownAccount(v)
	return a
}

// resourceManagerID reports whether id, after a segment kind, can be the
// id of a resource of that collection: only a number for an organization
// or a folder, whose Resource Manager ids are numbers, so that a segment
// of another API's that has the same name (a Cloud Storage folder,
// /b/<bucket>/folders/logs%2F) is not read as one; any id otherwise.
func resourceManagerID(kind, id string) bool {
	return kind != "organizations" && kind != "folders" || validAccountID(kind, id)
}

// opSep joins a REST method's collection and verb in an operation name
// (instances_get): not a dot, which separates a service from its
// operation in the configuration's service keys (compute.instances_get).
const opSep = "_"

// accountKinds are the collections whose resources are accounts:
// projects, organizations and folders.
var accountKinds = map[string]bool{"projects": true, "organizations": true, "folders": true}

// parents are the collections whose resources hold other collections
// (a segment after one of their ids is a collection, never a verb):
// Resource Manager's, locations, compute's zones and regions, and Cloud
// Run's Knative namespaces (/apis/serving.knative.dev/v1/namespaces/<project>/services,
// in an API whose paths name it before the version, where a segment
// after an id is otherwise a verb: a namespace's services, jobs and
// domain mappings are collections, listed and created).
var parents = map[string]bool{
	"projects": true, "organizations": true, "folders": true, "billingAccounts": true,
	"locations": true, "zones": true, "regions": true, "namespaces": true,
}

// collections are the collections that a resource of an API whose paths
// name the API before the version holds, where a segment after a
// resource's id is otherwise the resource's verb (compute's
// instances/i/start): Cloud Storage's, which a bucket
// (/storage/v1/b/<bucket>/o) or an object (.../o/<object>/acl) holds;
// BigQuery's, which a dataset (/bigquery/v2/projects/p/datasets/d/tables)
// or a table (.../tables/t/data) holds; Cloud DNS's, which a managed zone
// (/dns/v1/projects/p/managedZones/z/rrsets) or a response policy holds;
// Cloud SQL Admin's, which an instance holds
// (/sql/v1beta4/projects/p/instances/i/databases); and compute's, which an
// instance group manager, a cross-site network or a reservation's sub-block
// holds.
var collections = map[string]bool{
	"o": true, "acl": true, "defaultObjectAcl": true, "notificationConfigs": true,
	"folders": true, "managedFolders": true, "anywhereCaches": true, "rapidCaches": true,
	"tables": true, "models": true, "routines": true, "data": true, "rowAccessPolicies": true,
	"changes": true, "rrsets": true, "rules": true,
	"databases": true, "users": true, "sslCerts": true, "backupRuns": true,
	"resizeRequests": true, "wireGroups": true, "hosts": true,
}

// singletons are the singleton resources (AIP-156: one per parent, named
// by a literal segment where a collection comes) that hold collections of
// resources with ids, in the APIs whose paths start with the version, as
// the discovery documents google.golang.org/api ships name them (a literal
// after an id, then a collection and its id): Dialogflow ES's agent
// (projects/<p>/agent/intents/<i>), Vertex AI's ragEngineConfig
// (.../ragEngineConfig/operations/<op>), Security Command Center's
// securityHealthAnalyticsSettings and eventThreatDetectionSettings
// (.../customModules/<m>), Discovery Engine's siteSearchEngine and
// dataConnector, App Engine's firewall (apps/<a>/firewall/ingressRules/<r>),
// Apigee's analytics and traceConfig, Cloud Healthcare's dicomWeb, IAP's
// iap_tunnel and Chrome Management's telemetry. Not names that are a
// collection of ids too in some API (apps, documents, and Cloud
// Healthcare's fhir and Firebase Data Connect's postgrest, whose next
// segment is an id or a name alike).
var singletons = map[string]bool{
	"agent": true, "ragEngineConfig": true,
	"securityHealthAnalyticsSettings": true, "eventThreatDetectionSettings": true,
	"siteSearchEngine": true, "dataConnector": true, "firewall": true,
	"analytics": true, "traceConfig": true, "dicomWeb": true, "iap_tunnel": true, "telemetry": true,
}

// ownOperations are the collections of a singleton that have
// long-running operations of their own, a collection named operations
// right after the collection's name, with no id between, as the
// discovery documents google.golang.org/api ships name them: Discovery
// Engine's target sites
// (.../siteSearchEngine/targetSites/operations/<op>). There, and only
// after the singleton, operations is that collection, not a target
// site's id (which Discovery Engine generates); elsewhere an id so named
// stays an id (a Dialogflow session named operations,
// .../agent/sessions/operations/contexts).
var ownOperations = map[string]bool{"targetSites": true}

// pairKeyed are the collections whose resources are named by two
// segments: Cloud DNS's record sets, rrsets/<name>/<type>.
var pairKeyed = map[string]bool{"rrsets": true}

// destinationVerbs are the verbs after a resource that name a second
// resource after them, in an API whose paths name it before the version:
// Cloud Storage's copy, rewrite and move of an object, and rename of a
// folder (/b/<bucket>/o/<object>/rewriteTo/b/<bucket>/o/<object>).
var destinationVerbs = map[string]bool{
	"copyTo": true, "rewriteTo": true, "moveTo": true, "renameTo": true,
}

// restOperation names the method of a REST path of service (see
// RESTScope): t are its collections and ids after the version
// (restTokens), verb the custom method after its colon.
func restOperation(method string, t []string, verb string, pathVerbs bool, service string) string {
	n := len(t)
	if verb != "" {
		switch {
		case n == 0: // a method of the API's own: /v3:fetchResourceSemantics
			return verb
		case n%2 == 1: // a collection's custom method (instances:batchGet)
			return t[n-1] + opSep + verb
		}
		return t[n-2] + opSep + verb // a resource's
	}
	if n == 0 {
		return ""
	}
	// Each name below is read only where a collection comes (an even
	// index of t), never where an id does: a resource may be named so.
	if pathVerbs && n >= 3 && n%2 == 1 && t[n-3] == "images" && t[n-2] == "family" && (method == "" || method == http.MethodGet) && !hasUpper(t[n-1]) {
		// compute's images/family/<family>, not the verb (getIamPolicy,
		// upper case, as no compute name is) of an image named family
		return "images" + opSep + "getFromFamily"
	}
	if pathVerbs {
		// storage's /b/<bucket>/o/<object>/rewriteTo/b/<bucket>/o/<object>:
		// the first resource's verb, whatever the second's name; a verb
		// comes after a collection and an id, where a name (an object
		// named rewriteTo) does not.
		for i := 2; i < n; i += 2 {
			if destinationVerbs[t[i]] {
				return t[i-2] + opSep + t[i]
			}
		}
	}
	if n >= 2 && n%2 == 0 && t[n-2] == "aggregated" {
		return t[n-1] + opSep + "aggregatedList"
	}
	if n >= 3 && n%2 == 1 && pairKeyed[t[n-3]] { // rrsets/www.example.com./A, not a zone named rrsets
		return t[n-3] + opSep + resourceVerb(method)
	}
	if service == storageService && pathVerbs {
		// a bucket's, an object's or a managed folder's IAM policy,
		// .../b/<bucket>/iam, named as compute names its methods
		switch {
		case n >= 3 && n%2 == 1 && t[n-1] == "iam" && (method == "" || method == http.MethodGet):
			return t[n-3] + opSep + "getIamPolicy"
		case n >= 3 && n%2 == 1 && t[n-1] == "iam" && method == http.MethodPut:
			return t[n-3] + opSep + "setIamPolicy"
		case n >= 4 && n%2 == 0 && t[n-2] == "iam" && t[n-1] == "testPermissions":
			return t[n-4] + opSep + "testIamPermissions"
		}
	}
	if service == computeService && pathVerbs && n%2 == 0 && hasUpper(t[n-1]) {
		// compute's verb of a collection where an id comes
		// (.../zones/z/disks/bulkInsert, .../backendServices/listUsable):
		// compute's names are lower case (RFC 1035), as its reservation
		// slot's is, which it posts to update.
		return t[n-2] + opSep + t[n-1]
	}
	if n%2 == 0 { // ends on a resource id
		return t[n-2] + opSep + resourceVerb(method)
	}
	if pathVerbs && n >= 3 && !(parents[t[n-3]] && resourceManagerID(t[n-3], t[n-2])) && !collections[t[n-1]] {
		return t[n-3] + opSep + t[n-1] // instances/i/start
	}
	return t[n-1] + opSep + collectionVerb(method, pathVerbs)
}

// fhirOperation names the FHIR interaction of a path of Cloud Healthcare's
// FHIR API, segs its segments after the version
// (projects/<p>/locations/<l>/datasets/<d>/fhirStores/<s>/fhir/...), and
// reports whether segs is one: fhir and the collection fhirStores where
// a collection comes. After fhir, the path follows FHIR's REST API
// (http://hl7.org/fhir/http.html), and the operation is never a
// resource's type, id or version. Cloud Healthcare counts a project's
// FHIR requests in a region against one quota per kind of request
// (reads, writes, searches), whatever the resource and whatever the
// method, so that an interaction of one of those kinds is named by its
// kind: fhir_read for a read (<type>/<id>, GET or HEAD) and a vread
// (<type>/<id>/_history/<vid>); fhir_write for a create (<type>, POST),
// an update (PUT), a patch and a delete, on a resource or conditional
// (<type>?<criteria>); fhir_search for a search (GET on a type or the
// store, _search at the end, a compartment's <type>/<id>/<type>). With
// an operation per method, per_operation would give each method of a
// kind a leaf bucket at the whole quota's rate. An interaction whose
// kind Cloud Healthcare does not document is named as the REST
// reference names its fhirStores.fhir method: fhir_history (_history at
// the end), fhir_capabilities (metadata), fhir_executeBundle (POST on
// the store; its entries are of every kind), and fhir_$<name> for an
// operation, $<name> at the end (fhir_$everything).
func fhirOperation(method string, segs []string) (string, bool) {
	var rest []string
	found := false
	for i := 0; i+2 < len(segs); i += 2 {
		if segs[i] == "fhirStores" && segs[i+2] == "fhir" {
			rest, found = segs[i+3:], true
			break
		}
	}
	if !found {
		return "", false
	}
	if method == "" || method == http.MethodHead {
		method = http.MethodGet
	}
	const pre = "fhir" + opSep
	n, last := len(rest), ""
	if n > 0 {
		last = rest[n-1]
	}
	switch {
	case len(last) > 1 && last[0] == '$':
		return pre + last, true
	case last == "_search":
		return pre + "search", true
	case n <= 3 && last == "_history":
		return pre + "history", true
	case n == 4 && rest[2] == "_history":
		return pre + "read", true // a vread
	case n == 0:
		switch method {
		case http.MethodPost:
			return pre + "executeBundle", true
		case http.MethodGet:
			return pre + "search", true
		case http.MethodDelete:
			return pre + "write", true
		}
		return pre + strings.ToLower(method), true
	case n == 1 && rest[0] == "metadata":
		return pre + "capabilities", true
	case n == 1:
		switch method {
		case http.MethodGet:
			return pre + "search", true
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			// a create, a conditional update, patch or delete
			return pre + "write", true
		}
		return pre + strings.ToLower(method), true
	case n == 2:
		switch method {
		case http.MethodGet:
			return pre + "read", true
		case http.MethodPut, http.MethodPatch, http.MethodDelete:
			return pre + "write", true
		}
		return pre + strings.ToLower(method), true
	}
	return pre + "search", true // a compartment's: <type>/<id>/<type>
}

// firestoreOperation names the method of a path of Firestore's documents,
// segs its segments after the version
// (projects/<p>/databases/<db>/documents/...), verb its custom method,
// and reports whether segs is one: databases, an id and documents where
// a collection comes. After documents, the path is a document's name,
// collections and documents in turn as deep as the user nests them
// (users/alice/orders/o-17), all ids: the operation is the method as
// Firestore's REST reference names it, never an id, so that a program
// that reads many documents makes one scope per method, not one per
// document (each with a leaf bucket and breaker of its own):
// documents_get, documents_patch and documents_delete on a document;
// documents_list (list and listDocuments) and documents_createDocument
// (POST) on a collection; documents_<verb> for a custom method, of the
// database's documents (documents:commit, documents:runQuery) or of a
// document (users/alice:listCollectionIds, users/alice:runQuery). A
// collection or a document named as a collection or a verb RESTScope
// knows elsewhere (projects, agent, operations, documents) is read by
// its place.
func firestoreOperation(method string, segs []string, verb string) (string, bool) {
	var rest []string
	found := false
	for i := 0; i+2 < len(segs); i += 2 {
		if segs[i] == "databases" && segs[i+2] == "documents" {
			rest, found = segs[i+3:], true
			break
		}
	}
	if !found {
		return "", false
	}
	const pre = "documents" + opSep
	if verb != "" {
		return pre + verb, true
	}
	n := 0
	for _, s := range rest {
		if s != "" {
			n++
		}
	}
	if method == "" || method == http.MethodHead {
		method = http.MethodGet
	}
	if n%2 == 1 { // a collection
		switch method {
		case http.MethodGet:
			return pre + "list", true
		case http.MethodPost:
			return pre + "createDocument", true
		}
		return pre + strings.ToLower(method), true
	}
	if n == 0 { // the database's documents, no method of their own
		return pre + collectionVerb(method, false), true
	}
	return pre + resourceVerb(method), true // a document
}

// afterVersion returns the collections and ids of t (restTokens) that
// name a REST method's operation: those after the last second version
// where a collection comes, in an API whose paths start with the version
// (Vertex AI's OpenAI-compatible Responses API,
// projects/<p>/locations/<l>/publishers/<p>/v1/responses/<id>, whose
// method is the responses' get; restTokens makes the version a pair), or
// all of t. A version where an id comes (an endpoint or a response named
// v1) is an id.
func afterVersion(t []string, pathVerbs bool) []string {
	if pathVerbs {
		return t
	}
	from := 0
	for i := 0; i+1 < len(t); i += 2 {
		if isVersion(t[i]) && t[i+1] == t[i] {
			from = i + 2
		}
	}
	return t[from:]
}

// prometheusOperation names the endpoint of a path of the Prometheus HTTP
// API that Cloud Monitoring serves for Managed Service for Prometheus,
// segs its segments after the version
// (projects/<p>/location/<l>/prometheus/api/v1/<endpoint>), and reports
// whether segs is one: prometheus, api and a version where a collection
// comes. After the second version, the path is Prometheus's: the
// operation is prometheus_<endpoint> (prometheus_query,
// prometheus_query_range, prometheus_series, prometheus_labels,
// prometheus_metadata), and a label's values,
// label/<name>/values, are prometheus_labelValues whatever the label,
// never an operation per label's name (a leaf bucket and breaker of its
// own each, at the whole rate of the project's query quota).
func prometheusOperation(segs []string) (string, bool) {
	var rest []string
	found := false
	for i := 0; i+2 < len(segs); i += 2 {
		if segs[i] == "prometheus" && segs[i+1] == "api" && isVersion(segs[i+2]) {
			rest, found = segs[i+3:], true
			break
		}
	}
	if !found {
		return "", false
	}
	const pre = "prometheus" + opSep
	switch {
	case len(rest) == 0 || rest[0] == "":
		return "prometheus", true
	case rest[0] == "label":
		return pre + "labelValues", true
	}
	return pre + rest[0], true
}

// hasUpper reports whether s holds an upper-case ASCII letter.
func hasUpper(s string) bool {
	for _, c := range []byte(s) {
		if 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

func resourceVerb(method string) string {
	switch method {
	case "", http.MethodGet:
		return "get"
	case http.MethodPut:
		return "update"
	}
	return strings.ToLower(method)
}

func collectionVerb(method string, pathVerbs bool) string {
	switch method {
	case "", http.MethodGet:
		return "list"
	case http.MethodPost:
		if pathVerbs {
			return "insert"
		}
		return "create"
	}
	return strings.ToLower(method)
}

var _ hint.Body = hintedBody{}
