package cloudggcp

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/resilience"
)

// The scopes RESTScope reads from REST URLs, compute's and AIP-style
// APIs'.
func TestRESTScope(t *testing.T) {
	gcp := func(account, service, op string) resilience.Scope {
		return resilience.Scope{Provider: "gcp", Account: account, Service: service, Operation: op}
	}
	const ce = "https://compute.googleapis.com/compute/v1/projects/p1"
	cases := []struct {
		method, url string
		want        resilience.Scope
	}{
		{"GET", ce + "/zones/z/instances/vm1", gcp("projects/p1", "compute", "instances_get")},
		{"GET", ce + "/zones/z/instances", gcp("projects/p1", "compute", "instances_list")},
		{"POST", ce + "/zones/z/instances", gcp("projects/p1", "compute", "instances_insert")},
		{"DELETE", ce + "/zones/z/instances/vm1", gcp("projects/p1", "compute", "instances_delete")},
		{"POST", ce + "/zones/z/instances/vm1/start", gcp("projects/p1", "compute", "instances_start")},
		{"GET", ce + "/zones/z/instances/vm1/getSerialPortOutput", gcp("projects/p1", "compute", "instances_getSerialPortOutput")},
		{"GET", ce + "/aggregated/instances", gcp("projects/p1", "compute", "instances_aggregatedList")},
		{"GET", ce + "/global/networks", gcp("projects/p1", "compute", "networks_list")},
		{"POST", ce + "/global/networks/n1/addPeering", gcp("projects/p1", "compute", "networks_addPeering")},
		{"GET", ce + "/regions/r/subnetworks/s1", gcp("projects/p1", "compute", "subnetworks_get")},
		{"GET", ce, gcp("projects/p1", "compute", "projects_get")},
		// A fake endpoint: the service from the path.
		{"GET", "http://127.0.0.1:8080/compute/v1/projects/p2/zones/z/instances", gcp("projects/p2", "compute", "instances_list")},
		// AIP-style APIs: colon verbs, nested collections, create.
		{"POST", "https://secretmanager.googleapis.com/v1/projects/p1/secrets/s:addVersion", gcp("projects/p1", "secretmanager", "secrets_addVersion")},
		{"GET", "https://secretmanager.googleapis.com/v1/projects/p1/secrets/s/versions/latest:access", gcp("projects/p1", "secretmanager", "versions_access")},
		{"GET", "https://cloudkms.googleapis.com/v1/projects/p1/locations/l/keyRings/k/cryptoKeys", gcp("projects/p1", "cloudkms", "cryptoKeys_list")},
		{"POST", "https://cloudkms.googleapis.com/v1/projects/p1/locations/l/keyRings/k/cryptoKeys", gcp("projects/p1", "cloudkms", "cryptoKeys_create")},
		{"PATCH", "https://run.googleapis.com/v2/projects/p1/locations/l/services/s", gcp("projects/p1", "run", "services_patch")},
		{"POST", "https://compute.googleapis.com/compute/v1/projects/p1/zones/z/instances:bulkInsert", gcp("projects/p1", "compute", "instances_bulkInsert")},
		{"GET", "https://cloudresourcemanager.googleapis.com/v3/folders/42", gcp("folders/42", "cloudresourcemanager", "folders_get")},
		// The account from the project query parameter.
		{"GET", "https://storage.googleapis.com/storage/v1/b?project=p3", gcp("projects/p3", "storage", "b_list")},
	}
	for _, tc := range cases {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := restScope(req, ""); got != tc.want {
			t.Errorf("%s %s: scope %v, want %v", tc.method, tc.url, got, tc.want)
		}
	}
	req, _ := http.NewRequest("GET", "http://127.0.0.1/v1/projects/p1/things/t", nil)
	if got := RESTScope(WithService("things"))(req); got != gcp("projects/p1", "things", "things_get") {
		t.Errorf("WithService: scope %v", got)
	}
}

// A 403 whose JSON error names rateLimitExceeded says so in its status
// line, which the cloudghttp Transport reads; every body reaches the
// client whole, one longer than what is read ahead too, and other answers
// are left as they are.
func TestRateReasonsMarksTheStatusLine(t *testing.T) {
	pad := strings.Repeat("x", maxReasonBody)
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{http.StatusForbidden, `{"error":{"code":403,"errors":[{"reason":"rateLimitExceeded"}],"message":"quota"}}`,
			"403 Forbidden; rate limit exceeded (rateLimitExceeded)"},
		// Longer than what is read ahead: not read for its reason.
		{http.StatusForbidden, `{"error":{"code":403,"errors":[{"reason":"rateLimitExceeded"}],"message":"` + pad + `"}}`,
			"403 Forbidden"},
		{http.StatusBadRequest, `{"error":{"code":400,"errors":[{"reason":"userRateLimitExceeded"}]}}`,
			"400 Bad Request; rate limit exceeded (userRateLimitExceeded)"},
		{http.StatusForbidden, `{"error":{"code":403,"errors":[{"reason":"forbidden"}]}}`, "403 Forbidden"},
		{http.StatusTooManyRequests, `{"error":{"code":429,"errors":[{"reason":"rateLimitExceeded"}]}}`, "429 Too Many Requests"},
		{http.StatusForbidden, `not json`, "403 Forbidden"},
	} {
		base := roundTripper(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: tc.status, Status: strconv.Itoa(tc.status) + " " + http.StatusText(tc.status),
				Body: io.NopCloser(strings.NewReader(tc.body)), Request: r}, nil
		})
		req, _ := http.NewRequest("GET", "https://compute.googleapis.com/compute/v1/projects/p1", nil)
		resp, err := rateReasons{base}.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.Status != tc.want || string(b) != tc.body {
			t.Errorf("%d %.40q: status %q, body of %d bytes; want %q and the body whole (%d)", tc.status, tc.body, resp.Status, len(b), tc.want, len(tc.body))
		}
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A segment's escaped slash (%2F, as clients escape a Cloud Storage
// object's name) is part of the segment, not a separator: an object is
// read in the operation o_get whatever its name, rather than in one that
// names a piece of it.
func TestRESTScopeKeepsEscapedSlashesInTheirSegment(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "https://storage.googleapis.com/storage/v1/b/bkt/o/file.txt", "gcp/*/*/storage/o_get"},
		{"GET", "https://storage.googleapis.com/storage/v1/b/bkt/o/dir%2Ffile.txt", "gcp/*/*/storage/o_get"},
		{"DELETE", "https://storage.googleapis.com/storage/v1/b/bkt/o/logs%2F2026%2F12%2Fx.json", "gcp/*/*/storage/o_delete"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// The APIs that Google serves from its shared front end,
// www.googleapis.com (Drive's, and some fifty others of
// google.golang.org/api), name themselves in the path before the version,
// not in the host: each is its own service, never "www", which would put
// Drive and every other such API in one scope.
func TestRESTScopeOfTheSharedFrontEndIsThePathsService(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "https://www.googleapis.com/drive/v3/files/f1", "gcp/*/*/drive/files_get"},
		{"GET", "https://www.googleapis.com/drive/v3/files", "gcp/*/*/drive/files_list"},
		{"POST", "https://www.googleapis.com/upload/drive/v3/files", "gcp/*/*/drive/files_insert"},
		{"GET", "https://www.mtls.googleapis.com/drive/v3/files/f1", "gcp/*/*/drive/files_get"},
		{"GET", "https://www.googleapis.com/groups/v1/groups/g1", "gcp/*/*/groups/groups_get"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// Cloud Storage's JSON API names the collections a bucket holds after
// its id (/storage/v1/b/<bucket>/o, acl, defaultObjectAcl, ...), in an
// API whose paths name it before the version, where a segment after a
// resource is otherwise the resource's verb (compute's instances/i/start):
// an object listing (objects.list) and an upload (objects.insert, at
// /upload/storage/v1/b/<bucket>/o) are each an operation of the objects'
// collection, o_list and o_insert, not one operation b_o for both; an
// object's ACL is acl_list; a bucket's own verbs (lockRetentionPolicy,
// restore) stay b_<verb>.
func TestRESTScopeOfAStorageBucketsCollections(t *testing.T) {
	const st = "https://storage.googleapis.com/storage/v1/b/bkt"
	for _, tc := range []struct{ method, url, want string }{
		{"GET", st + "/o", "gcp/*/*/storage/o_list"},
		{"GET", st + "/o?prefix=logs%2F&pageToken=x", "gcp/*/*/storage/o_list"},
		{"POST", "https://storage.googleapis.com/upload/storage/v1/b/bkt/o?uploadType=multipart", "gcp/*/*/storage/o_insert"},
		{"POST", "https://storage.mtls.googleapis.com/upload/storage/v1/b/bkt/o?uploadType=resumable", "gcp/*/*/storage/o_insert"},
		{"GET", "https://storage.googleapis.com/download/storage/v1/b/bkt/o/dir%2Ffile.txt?alt=media", "gcp/*/*/storage/o_get"},
		{"GET", st + "/acl", "gcp/*/*/storage/acl_list"},
		{"POST", st + "/defaultObjectAcl", "gcp/*/*/storage/defaultObjectAcl_insert"},
		{"GET", st + "/notificationConfigs", "gcp/*/*/storage/notificationConfigs_list"},
		{"GET", st + "/managedFolders", "gcp/*/*/storage/managedFolders_list"},
		{"GET", st + "/anywhereCaches", "gcp/*/*/storage/anywhereCaches_list"},
		{"POST", st + "/folders", "gcp/*/*/storage/folders_insert"},
		{"GET", st + "/o/file.txt/acl", "gcp/*/*/storage/acl_list"},
		{"POST", st + "/o/dst.txt/compose", "gcp/*/*/storage/o_compose"},
		{"POST", st + "/lockRetentionPolicy?ifMetagenerationMatch=3", "gcp/*/*/storage/b_lockRetentionPolicy"},
		{"POST", st + "/restore?generation=1", "gcp/*/*/storage/b_restore"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// A Cloud Storage folder (of a bucket with a hierarchical namespace,
// /storage/v1/b/<bucket>/folders/<folder>) is no Resource Manager folder:
// its name is no account, or every folder of a bucket would be an
// account of its own, with its own concurrency cap and buckets. Resource
// Manager's folders and organizations have numeric ids; a storage
// folder's name (dir%2F) is not one.
func TestRESTScopeOfAStorageFolderNamesNoAccount(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "https://storage.googleapis.com/storage/v1/b/bkt/folders/logs%2F", "gcp/*/*/storage/folders_get"},
		{"DELETE", "https://storage.googleapis.com/storage/v1/b/bkt/folders/a%2Fb%2F", "gcp/*/*/storage/folders_delete"},
		{"POST", "https://storage.googleapis.com/storage/v1/b/bkt/folders/logs%2F/deleteRecursive", "gcp/*/*/storage/folders_deleteRecursive"},
		{"GET", "https://cloudresourcemanager.googleapis.com/v3/folders/42", "gcp/folders/42/*/cloudresourcemanager/folders_get"},
		{"GET", "https://cloudresourcemanager.googleapis.com/v1/organizations/123:getIamPolicy", "gcp/organizations/123/*/cloudresourcemanager/organizations_getIamPolicy"},
		{"GET", "https://cloudasset.googleapis.com/v1/folders/9/assets", "gcp/folders/9/*/cloudasset/assets_list"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// Cloud Storage's copy, rewrite and rename name a second resource after
// their verb (/b/<bucket>/o/<object>/rewriteTo/b/<bucket>/o/<object>, as
// the storage client's Copier sends): the operation is the verb of the
// first resource's collection, o_rewriteTo, whatever the objects' names,
// not one read off the destination's bucket and object (one operation,
// one leaf bucket and one breaker per object copied).
func TestRESTScopeOfAStorageCopyIsItsVerb(t *testing.T) {
	const st = "https://storage.googleapis.com/storage/v1/b/"
	for _, tc := range []struct{ method, url, want string }{
		{"POST", st + "src/o/a.txt/rewriteTo/b/dst/o/b.txt", "gcp/*/*/storage/o_rewriteTo"},
		{"POST", st + "src/o/a.txt/rewriteTo/b/dst/o/dir%2Fc.txt?rewriteToken=t", "gcp/*/*/storage/o_rewriteTo"},
		{"POST", st + "src/o/a.txt/copyTo/b/dst/o/b.txt", "gcp/*/*/storage/o_copyTo"},
		{"POST", st + "bkt/o/a.txt/moveTo/o/b.txt", "gcp/*/*/storage/o_moveTo"},
		{"POST", st + "bkt/folders/a%2F/renameTo/folders/b%2F", "gcp/*/*/storage/folders_renameTo"},
		// An object named as a verb is an object.
		{"GET", st + "bkt/o/rewriteTo", "gcp/*/*/storage/o_get"},
		{"DELETE", st + "bkt/o/copyTo", "gcp/*/*/storage/o_delete"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// The storage client (cloud.google.com/go/storage) reads an object's
// content through Cloud Storage's XML API, https://storage.googleapis.com/
// <bucket>/<object> (GET, or HEAD for a zero-length read), with the
// object's name unescaped, slashes and all; a client's XML requests name
// no version. The operation is the object's or the bucket's, as the JSON
// API names them (o_get, o_insert, o_delete; o_list for a bucket's
// listing), whatever the bucket's and the object's names, never one read
// off them (an operation, a leaf bucket and a breaker per object read).
func TestRESTScopeOfStoragesXMLAPI(t *testing.T) {
	for _, tc := range []struct {
		method, url string
		opts        []Option
		want        string
	}{
		{"GET", "https://storage.googleapis.com/bkt/file.txt", nil, "gcp/*/*/storage/o_get"},
		{"GET", "https://storage.googleapis.com/bkt/logs/2026/12/x.json?generation=7", nil, "gcp/*/*/storage/o_get"},
		{"HEAD", "https://storage.googleapis.com/bkt/logs/x.json", nil, "gcp/*/*/storage/o_get"},
		{"GET", "https://storage.mtls.googleapis.com/other-bkt/a/b", nil, "gcp/*/*/storage/o_get"},
		{"PUT", "https://storage.googleapis.com/bkt/dir/new.txt", nil, "gcp/*/*/storage/o_insert"},
		{"DELETE", "https://storage.googleapis.com/bkt/dir/old.txt", nil, "gcp/*/*/storage/o_delete"},
		{"GET", "https://storage.googleapis.com/bkt", nil, "gcp/*/*/storage/o_list"},
		{"GET", "https://storage.googleapis.com/bkt/", nil, "gcp/*/*/storage/o_list"},
		{"GET", "https://storage.googleapis.com/v1/x", nil, "gcp/*/*/storage/o_get"}, // a bucket named v1
		{"GET", "http://127.0.0.1:9000/bkt/dir/file.txt", []Option{WithService("storage")}, "gcp/*/*/storage/o_get"},
		// The JSON API's, unchanged.
		{"GET", "https://storage.googleapis.com/storage/v1/b/bkt/o/dir%2Ffile.txt", nil, "gcp/*/*/storage/o_get"},
		{"GET", "https://storage.googleapis.com/storage/v1/b?project=p3", nil, "gcp/projects/p3/*/storage/b_list"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope(tc.opts...)(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// Cloud Storage's XML API is served virtual-hosted style too, the bucket
// in the host (https://<bucket>.storage.googleapis.com/<object>: a V4
// signed URL of storage.VirtualHostedStyle, a client of one's own): the
// service is storage and the operation the object's or the bucket's, as
// for path-style requests, never one read off the bucket's name (a
// service per bucket) or the object's (an operation per object).
func TestRESTScopeOfStoragesXMLAPIVirtualHosted(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "https://bkt.storage.googleapis.com/file.txt", "gcp/*/*/storage/o_get"},
		{"GET", "https://bkt.storage.googleapis.com/logs/2026/x.json?X-Goog-Signature=abc", "gcp/*/*/storage/o_get"},
		{"HEAD", "https://bkt.storage.googleapis.com/logs/x.json", "gcp/*/*/storage/o_get"},
		{"PUT", "https://bkt.storage.googleapis.com/dir/new.txt", "gcp/*/*/storage/o_insert"},
		{"DELETE", "https://bkt.storage.googleapis.com/old.txt", "gcp/*/*/storage/o_delete"},
		{"GET", "https://bkt.storage.googleapis.com/", "gcp/*/*/storage/o_list"},
		{"GET", "https://bkt.storage.googleapis.com", "gcp/*/*/storage/o_list"},
		{"HEAD", "https://bkt.storage.googleapis.com/", "gcp/*/*/storage/b_get"},
		// A bucket named as a domain, dots and all; one named v1.
		{"GET", "https://www.example.com.storage.googleapis.com/a/b.txt", "gcp/*/*/storage/o_get"},
		{"GET", "https://v1.storage.googleapis.com/projects/p1", "gcp/*/*/storage/o_get"},
		// Not a bucket: Cloud Storage's own hosts.
		{"GET", "https://storage.mtls.googleapis.com/bkt/a", "gcp/*/*/storage/o_get"},
		{"GET", "https://storage.us-east1.rep.googleapis.com/bkt/a", "gcp/*/*/storage/o_get"},
		// Another universe's (option.WithUniverseDomain), as
		// googleapis.com's.
		{"GET", "https://bkt.storage.s3nsapis.fr/file.txt", "gcp/*/*/storage/o_get"},
		{"PUT", "https://bkt.storage.s3nsapis.fr/dir/new.txt", "gcp/*/*/storage/o_insert"},
		{"GET", "https://bkt.storage.s3nsapis.fr/", "gcp/*/*/storage/o_list"},
		{"GET", "https://bkt.storage.apis-berlin-build0.goog/logs/v1/x.json", "gcp/*/*/storage/o_get"},
		{"GET", "https://www.example.com.storage.s3nsapis.fr/a/b.txt", "gcp/*/*/storage/o_get"},
		{"GET", "https://v1.storage.s3nsapis.fr/projects/p1", "gcp/*/*/storage/o_get"},
		{"GET", "https://storage.mtls.s3nsapis.fr/bkt/a", "gcp/*/*/storage/o_get"},
		// Not a bucket: another universe's other services.
		{"GET", "https://pubsub.s3nsapis.fr/v1/projects/p1/topics", "gcp/projects/p1/*/pubsub/topics_list"},
		{"GET", "https://pubsub-ep1.p.s3nsapis.fr/v1/projects/p1/topics", "gcp/projects/p1/*/pubsub/topics_list"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// A host's name is case-insensitive (RFC 4343): a client pointed at
// PubSub.GoogleAPIs.com reaches pubsub.googleapis.com, and its requests
// are Pub/Sub's, in the service pubsub that the configuration's service
// keys name, never a service PubSub of their own; so for a regional
// endpoint, Cloud Storage's hosts, a virtual-hosted bucket and the shared
// front end, and for a gRPC client's target.
func TestRESTScopeReadsAHostWhateverItsCase(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "https://PubSub.GoogleAPIs.com/v1/projects/p1/topics", "gcp/projects/p1/*/pubsub/topics_list"},
		{"GET", "https://PUBSUB.GOOGLEAPIS.COM:443/v1/projects/p1/topics/t1", "gcp/projects/p1/*/pubsub/topics_get"},
		{"GET", "https://US-Central1-AIPlatform.googleapis.com/v1/projects/p1/locations/us-central1/endpoints", "gcp/projects/p1/*/aiplatform/endpoints_list"},
		{"GET", "https://PubSub.S3nsAPIs.fr/v1/projects/p1/topics", "gcp/projects/p1/*/pubsub/topics_list"},
		{"GET", "https://Storage.GoogleAPIs.com/bkt/a.txt", "gcp/*/*/storage/o_get"},
		{"GET", "https://Storage.GoogleAPIs.com/storage/v1/b/bkt/o", "gcp/*/*/storage/o_list"},
		{"GET", "https://Bkt.Storage.GoogleAPIs.com/file.txt", "gcp/*/*/storage/o_get"},
		{"GET", "https://Storage.S3nsAPIs.fr/bkt/backups/v2/data.json", "gcp/*/*/storage/o_get"},
		{"GET", "https://WWW.GoogleAPIs.com/drive/v3/files/f1", "gcp/*/*/drive/files_get"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
	for target, want := range map[string]string{
		"PubSub.GoogleAPIs.com:443":             "pubsub",
		"dns:///CloudKMS.googleapis.com:443":    "cloudkms",
		"US-Central1-AIPlatform.googleapis.com": "aiplatform",
		"Storage-VIALink1.p.GoogleAPIs.com:443": "storage",
		"Restricted.GoogleAPIs.com:443":         "",
	} {
		if got, _ := targetService(target); got != want {
			t.Errorf("targetService(%q) = %q, want %q", target, got, want)
		}
	}
}

// BigQuery's REST API (which cloud.google.com/go/bigquery calls) names the
// collections a dataset holds after its id
// (/bigquery/v2/projects/p/datasets/d/tables, models, routines) and those
// a table holds after its (.../tables/t/data, rowAccessPolicies): listing
// a dataset's tables (tables.list) and creating one (tables.insert) are
// operations of the tables' collection, tables_list and tables_insert, not
// one operation datasets_tables for both; a table's rows (tabledata.list)
// are data_list. A table's verb (insertAll) and a job's (cancel) stay
// their resource's.
func TestRESTScopeOfBigQuerysCollections(t *testing.T) {
	const bq = "https://bigquery.googleapis.com/bigquery/v2/projects/p1"
	for _, tc := range []struct{ method, url, want string }{
		{"GET", bq + "/datasets/d1/tables", "gcp/projects/p1/*/bigquery/tables_list"},
		{"POST", bq + "/datasets/d1/tables", "gcp/projects/p1/*/bigquery/tables_insert"},
		{"GET", bq + "/datasets/d1/models", "gcp/projects/p1/*/bigquery/models_list"},
		{"GET", bq + "/datasets/d1/routines", "gcp/projects/p1/*/bigquery/routines_list"},
		{"GET", bq + "/datasets/d1/tables/t1/data?maxResults=10", "gcp/projects/p1/*/bigquery/data_list"},
		{"GET", bq + "/datasets/d1/tables/t1/rowAccessPolicies", "gcp/projects/p1/*/bigquery/rowAccessPolicies_list"},
		{"POST", bq + "/datasets/d1/tables/t1/insertAll", "gcp/projects/p1/*/bigquery/tables_insertAll"},
		{"POST", bq + "/jobs/j1/cancel", "gcp/projects/p1/*/bigquery/jobs_cancel"},
		{"GET", bq + "/datasets/d1/tables/t1", "gcp/projects/p1/*/bigquery/tables_get"},
		{"GET", bq + "/datasets", "gcp/projects/p1/*/bigquery/datasets_list"},
		{"POST", "https://bigquery.googleapis.com/upload/bigquery/v2/projects/p1/jobs?uploadType=resumable", "gcp/projects/p1/*/bigquery/jobs_insert"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// The collections other Google Cloud APIs whose paths name the API before
// the version nest under a resource: Cloud DNS's (a managed zone's
// changes and rrsets, a response policy's rules), Cloud SQL Admin's
// (/sql/v1beta4/projects/p/instances/i/databases, users, sslCerts,
// backupRuns), compute's (an instance group manager's resizeRequests, a
// cross-site network's wireGroups) and Cloud Storage's rapidCaches:
// listing and creating are two operations, <collection>_list and
// <collection>_insert, not one <parent>_<collection> for both. A DNS
// record set, rrsets/<name>/<type>, is one resource: its get is
// rrsets_get whatever its type, not an operation per record type.
func TestRESTScopeOfNestedCollections(t *testing.T) {
	const (
		dns = "https://dns.googleapis.com/dns/v1/projects/p1"
		sql = "https://sqladmin.googleapis.com/sql/v1beta4/projects/p1/instances/db1"
		ce  = "https://compute.googleapis.com/compute/v1/projects/p1"
	)
	for _, tc := range []struct{ method, url, want string }{
		{"GET", dns + "/managedZones/z1/changes", "gcp/projects/p1/*/dns/changes_list"},
		{"POST", dns + "/managedZones/z1/changes", "gcp/projects/p1/*/dns/changes_insert"},
		{"GET", dns + "/managedZones/z1/changes/42", "gcp/projects/p1/*/dns/changes_get"},
		{"GET", dns + "/managedZones/z1/rrsets", "gcp/projects/p1/*/dns/rrsets_list"},
		{"POST", dns + "/managedZones/z1/rrsets", "gcp/projects/p1/*/dns/rrsets_insert"},
		{"GET", dns + "/managedZones/z1/rrsets/www.example.com./A", "gcp/projects/p1/*/dns/rrsets_get"},
		{"DELETE", dns + "/managedZones/z1/rrsets/www.example.com./CNAME", "gcp/projects/p1/*/dns/rrsets_delete"},
		{"GET", dns + "/responsePolicies/rp1/rules", "gcp/projects/p1/*/dns/rules_list"},
		{"GET", dns + "/managedZones/z1", "gcp/projects/p1/*/dns/managedZones_get"},
		// A zone named as the collection is a zone.
		{"GET", dns + "/managedZones/rrsets/changes/42", "gcp/projects/p1/*/dns/changes_get"},
		{"GET", sql + "/databases", "gcp/projects/p1/*/sqladmin/databases_list"},
		{"POST", sql + "/databases", "gcp/projects/p1/*/sqladmin/databases_insert"},
		{"GET", sql + "/users", "gcp/projects/p1/*/sqladmin/users_list"},
		{"DELETE", sql + "/users?name=u&host=%25", "gcp/projects/p1/*/sqladmin/users_delete"},
		{"GET", sql + "/sslCerts", "gcp/projects/p1/*/sqladmin/sslCerts_list"},
		{"POST", sql + "/backupRuns", "gcp/projects/p1/*/sqladmin/backupRuns_insert"},
		{"POST", sql + "/restart", "gcp/projects/p1/*/sqladmin/instances_restart"},
		{"GET", ce + "/zones/z/instanceGroupManagers/m1/resizeRequests", "gcp/projects/p1/*/compute/resizeRequests_list"},
		{"POST", ce + "/zones/z/instanceGroupManagers/m1/resizeRequests", "gcp/projects/p1/*/compute/resizeRequests_insert"},
		{"POST", ce + "/zones/z/instanceGroupManagers/m1/resizeRequests/r1/cancel", "gcp/projects/p1/*/compute/resizeRequests_cancel"},
		{"GET", ce + "/global/crossSiteNetworks/n1/wireGroups", "gcp/projects/p1/*/compute/wireGroups_list"},
		{"POST", ce + "/zones/z/instanceGroupManagers/m1/resize", "gcp/projects/p1/*/compute/instanceGroupManagers_resize"},
		{"GET", "https://storage.googleapis.com/storage/v1/b/bkt/rapidCaches", "gcp/*/*/storage/rapidCaches_list"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// compute's beta and alpha APIs (cloud.google.com/go/compute/apiv1beta,
// google.golang.org/api/compute/v0.beta) name their version beta or
// alpha, /compute/beta/projects/p1/...: their methods are named as v1's
// are, a verb segment after a resource the resource's verb
// (instances_start) and a POST on a collection an insert, not a
// collection of the verb's name created (start_create), which gave every
// verb of every resource (setLabels of a disk, of an instance, ...) one
// operation.
func TestRESTScopeOfComputeBeta(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"POST", "https://compute.googleapis.com/compute/beta/projects/p1/zones/z/instances/vm1/start", "gcp/projects/p1/*/compute/instances_start"},
		{"POST", "https://compute.googleapis.com/compute/beta/projects/p1/zones/z/disks/d1/setLabels", "gcp/projects/p1/*/compute/disks_setLabels"},
		{"POST", "https://compute.googleapis.com/compute/alpha/projects/p1/zones/z/instances/vm1/setLabels", "gcp/projects/p1/*/compute/instances_setLabels"},
		{"POST", "https://compute.googleapis.com/compute/beta/projects/p1/zones/z/instances", "gcp/projects/p1/*/compute/instances_insert"},
		{"GET", "https://compute.googleapis.com/compute/beta/projects/p1/zones/z/instances", "gcp/projects/p1/*/compute/instances_list"},
		{"GET", "https://compute.googleapis.com/compute/beta/projects/p1/zones/z/instances/vm1", "gcp/projects/p1/*/compute/instances_get"},
		{"GET", "https://compute.googleapis.com/compute/beta/projects/p1/aggregated/instances", "gcp/projects/p1/*/compute/instances_aggregatedList"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// RESTScope skips compute's /global/ scope segment (/projects/p/global/
// networks), but global is also a location's id, in any API's resource
// names (Cloud KMS's /v1/projects/p/locations/global/keyRings/k, IAM's
// workload identity pools, compute's organization firewall policies and
// operations under /compute/v1/locations/global/...): skipped there, it
// shifted every segment after it, so that ids were read as collections
// and the operation named a key ring, a key, a policy or an operation
// (k1_get, c1_encrypt, fp-1_list, operation-123_list): scopes without
// bound, that no service key reaches. An image family,
// /projects/p/global/images/family/<family>, is images.getFromFamily,
// whatever the family, not images_<family>.
func TestRESTScopeOfTheLocationGlobal(t *testing.T) {
	const ce = "https://compute.googleapis.com/compute/v1"
	for _, tc := range []struct{ method, url, want string }{
		{"GET", ce + "/locations/global/firewallPolicies/fp-1", "gcp/*/*/compute/firewallPolicies_get"},
		{"POST", ce + "/locations/global/firewallPolicies/fp-1/addRule", "gcp/*/*/compute/firewallPolicies_addRule"},
		{"GET", ce + "/locations/global/firewallPolicies?parentId=organizations%2F123", "gcp/organizations/123/*/compute/firewallPolicies_list"}, // the account: TestRESTScopeOfAnOrganizationInTheQuery
		{"GET", ce + "/locations/global/operations/operation-123", "gcp/*/*/compute/operations_get"},
		{"GET", ce + "/locations/global/securityPolicies/sp-1", "gcp/*/*/compute/securityPolicies_get"},
		{"GET", ce + "/projects/debian-cloud/global/images/family/debian-12", "gcp/projects/debian-cloud/*/compute/images_getFromFamily"},
		{"GET", ce + "/projects/p1/global/images/img-1", "gcp/projects/p1/*/compute/images_get"},
		{"GET", ce + "/projects/p1/global/networks", "gcp/projects/p1/*/compute/networks_list"},
		// The location global of any API's resource names.
		{"GET", "https://cloudkms.googleapis.com/v1/projects/p1/locations/global/keyRings/k1/cryptoKeys", "gcp/projects/p1/*/cloudkms/cryptoKeys_list"},
		{"GET", "https://cloudkms.googleapis.com/v1/projects/p1/locations/global/keyRings/k1", "gcp/projects/p1/*/cloudkms/keyRings_get"},
		{"POST", "https://cloudkms.googleapis.com/v1/projects/p1/locations/global/keyRings/k1/cryptoKeys/c1:encrypt", "gcp/projects/p1/*/cloudkms/cryptoKeys_encrypt"},
		{"GET", "https://iam.googleapis.com/v1/projects/p1/locations/global/workloadIdentityPools/pool-1", "gcp/projects/p1/*/iam/workloadIdentityPools_get"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// The names RESTScope knows (compute's global and aggregated, the
// collections projects, organizations and folders of an account, an image
// family) are read only where a collection comes, never where an id does:
// a bucket, a dataset, a key ring, a Pub/Sub topic may be named so.
func TestRESTScopeReadsNoIDAsACollection(t *testing.T) {
	const bq = "https://bigquery.googleapis.com/bigquery/v2/projects/p1"
	for _, tc := range []struct{ method, url, want string }{
		{"GET", bq + "/datasets/global/tables", "gcp/projects/p1/*/bigquery/tables_list"},
		{"GET", bq + "/jobs/global", "gcp/projects/p1/*/bigquery/jobs_get"},
		{"POST", bq + "/datasets/aggregated/routines", "gcp/projects/p1/*/bigquery/routines_insert"},
		{"PATCH", "https://pubsub.googleapis.com/v1/projects/global/topics/t1", "gcp/projects/global/*/pubsub/topics_patch"},
		{"GET", "https://cloudkms.googleapis.com/v1/projects/p1/locations/global/keyRings/global/cryptoKeys", "gcp/projects/p1/*/cloudkms/cryptoKeys_list"},
		{"GET", "https://storage.googleapis.com/storage/v1/b/global/o", "gcp/*/*/storage/o_list"},
		{"GET", "https://storage.googleapis.com/storage/v1/b/aggregated/anywhereCaches", "gcp/*/*/storage/anywhereCaches_list"},
		// A bucket named projects names no account.
		{"GET", "https://storage.googleapis.com/storage/v1/b/projects/o/x.txt", "gcp/*/*/storage/o_get"},
		{"GET", "https://iam.googleapis.com/v1/locations/global/workforcePools/projects/providers", "gcp/*/*/iam/providers_list"},
		{"POST", "https://storage.googleapis.com/storage/v1/b/src/o/a.txt/rewriteTo/b/projects/o/b.txt", "gcp/*/*/storage/o_rewriteTo"},
		// An image named family.
		{"GET", "https://compute.googleapis.com/compute/v1/projects/p1/global/images/family", "gcp/projects/p1/*/compute/images_get"},
		{"POST", "https://compute.googleapis.com/compute/v1/projects/p1/global/images/family/setLabels", "gcp/projects/p1/*/compute/images_setLabels"},
		{"GET", "https://compute.googleapis.com/compute/v1/projects/p1/global/images/family/global", "gcp/projects/p1/*/compute/images_getFromFamily"},
		{"GET", "https://compute.googleapis.com/compute/beta/organizations/123/global/rolloutPlans", "gcp/organizations/123/*/compute/rolloutPlans_list"},
		// compute's own still are.
		{"GET", "https://compute.googleapis.com/compute/v1/projects/p1/aggregated/instances", "gcp/projects/p1/*/compute/instances_aggregatedList"},
		{"GET", "https://compute.googleapis.com/compute/v1/projects/global/global/networks", "gcp/projects/global/*/compute/networks_list"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// A custom method follows a colon as sent, in the path's last segment: an
// escaped colon (%3A, in an object's name) is part of its id, and so is a
// colon in a segment before the last (a domain-scoped project's id,
// example.com:proj, as a resource name sends it).
func TestRESTScopeOfAColonInAnID(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "https://storage.googleapis.com/storage/v1/b/bkt/o/a%3Ab", "gcp/*/*/storage/o_get"},
		{"DELETE", "https://dns.googleapis.com/dns/v1/projects/p1/managedZones/z%3A1", "gcp/projects/p1/*/dns/managedZones_delete"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/example.com:proj-1/topics/t1", "gcp/projects/example.com:proj-1/*/pubsub/topics_get"},
		{"POST", "https://pubsub.googleapis.com/v1/projects/example.com:proj-1/topics/t1:publish", "gcp/projects/example.com:proj-1/*/pubsub/topics_publish"},
		{"GET", "https://compute.googleapis.com/compute/v1/projects/example.com%3Aproj-1/zones/z/instances", "gcp/projects/example.com:proj-1/*/compute/instances_list"},
		{"GET", "https://cloudresourcemanager.googleapis.com/v3:fetchResourceSemantics", "gcp/*/*/cloudresourcemanager/fetchResourceSemantics"},
		{"POST", "https://secretmanager.googleapis.com/v1/projects/p1/secrets/s:addVersion", "gcp/projects/p1/*/secretmanager/secrets_addVersion"},
		{"POST", "https://compute.googleapis.com/compute/v1/projects/p1/zones/z/instances:bulkInsert", "gcp/projects/p1/*/compute/instances_bulkInsert"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// A POST to a segment after one of compute's collections, where an id
// would come, is the collection's verb (disks/bulkInsert,
// advice/calendarMode) when it has an upper-case letter, as no compute
// name has: a POST to a reservation slot's name updates it.
func TestRESTScopeOfACollectionsVerbSegment(t *testing.T) {
	const ce = "https://compute.googleapis.com/compute/v1/projects/p1"
	for _, tc := range []struct{ method, url, want string }{
		{"POST", ce + "/zones/z/disks/bulkInsert", "gcp/projects/p1/*/compute/disks_bulkInsert"},
		{"POST", ce + "/zones/z/disks/bulkSetLabels", "gcp/projects/p1/*/compute/disks_bulkSetLabels"},
		{"POST", ce + "/zones/z/disks/stopGroupAsyncReplication", "gcp/projects/p1/*/compute/disks_stopGroupAsyncReplication"},
		{"POST", ce + "/regions/r/advice/calendarMode", "gcp/projects/p1/*/compute/advice_calendarMode"},
		{"GET", ce + "/zones/z/disks/d1", "gcp/projects/p1/*/compute/disks_get"},
		{"POST", ce + "/zones/z/reservations/r1/reservationBlocks/b1/reservationSubBlocks/s1/reservationSlots/slot-1", "gcp/projects/p1/*/compute/reservationSlots_post"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// A resource name sent escaped in one segment where a collection comes
// (compute's host of a reservation sub-block: the client's {association}
// is reservations/r/reservationBlocks/b/reservationSubBlocks/s) is its
// collections and ids, so that what follows it is read in its place.
func TestRESTScopeOfAnEscapedResourceName(t *testing.T) {
	const hosts = "https://compute.googleapis.com/compute/v1/projects/p1/zones/z/reservations%2Fr1%2FreservationBlocks%2Fb1%2FreservationSubBlocks%2Fs1/hosts"
	for _, tc := range []struct{ method, url, want string }{
		{"GET", hosts, "gcp/projects/p1/*/compute/hosts_list"},
		{"GET", hosts + "/h1", "gcp/projects/p1/*/compute/hosts_get"},
		{"POST", hosts + "/h1/getVersion", "gcp/projects/p1/*/compute/hosts_getVersion"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// compute's verbs of a collection that a GET reads
// (backendServices/listUsable, sslPolicies/listAvailableFeatures), and an
// image named family's (getIamPolicy), are theirs, not a get of a resource
// so named or of an image family: compute's names are lower case. Another
// API's id may not be (a BigQuery table T1).
func TestRESTScopeOfComputesGetVerbOfACollection(t *testing.T) {
	const ce = "https://compute.googleapis.com/compute/v1/projects/p1"
	for _, tc := range []struct{ method, url, want string }{
		{"GET", ce + "/global/backendServices/listUsable", "gcp/projects/p1/*/compute/backendServices_listUsable"},
		{"GET", ce + "/regions/r/backendBuckets/listUsable", "gcp/projects/p1/*/compute/backendBuckets_listUsable"},
		{"GET", ce + "/global/sslPolicies/listAvailableFeatures", "gcp/projects/p1/*/compute/sslPolicies_listAvailableFeatures"},
		{"GET", ce + "/global/firewallPolicies/fp1", "gcp/projects/p1/*/compute/firewallPolicies_get"},
		{"GET", "https://compute.googleapis.com/compute/v1/locations/global/firewallPolicies/listAssociations", "gcp/*/*/compute/firewallPolicies_listAssociations"},
		{"GET", ce + "/global/images/family/getIamPolicy", "gcp/projects/p1/*/compute/images_getIamPolicy"},
		{"GET", "https://bigquery.googleapis.com/bigquery/v2/projects/p1/datasets/D1/tables/T1", "gcp/projects/p1/*/bigquery/tables_get"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// The IAM policy of a Cloud Storage bucket, object or managed folder
// (.../iam) is read (GET) and set (PUT) in two operations, and its
// permissions tested (.../iam/testPermissions) in a third of the
// resource's, named as compute names them (b_getIamPolicy,
// b_setIamPolicy, b_testIamPermissions).
func TestRESTScopeOfAStorageIAMPolicy(t *testing.T) {
	const st = "https://storage.googleapis.com/storage/v1/b/bkt"
	for _, tc := range []struct{ method, url, want string }{
		{"GET", st + "/iam", "gcp/*/*/storage/b_getIamPolicy"},
		{"PUT", st + "/iam", "gcp/*/*/storage/b_setIamPolicy"},
		{"GET", st + "/iam/testPermissions?permissions=storage.buckets.get", "gcp/*/*/storage/b_testIamPermissions"},
		{"GET", st + "/o/dir%2Fa.txt/iam", "gcp/*/*/storage/o_getIamPolicy"},
		{"PUT", st + "/o/dir%2Fa.txt/iam", "gcp/*/*/storage/o_setIamPolicy"},
		{"GET", st + "/o/dir%2Fa.txt/iam/testPermissions", "gcp/*/*/storage/o_testIamPermissions"},
		{"GET", st + "/managedFolders/mf/iam/testPermissions", "gcp/*/*/storage/managedFolders_testIamPermissions"},
		{"GET", st + "/o/iam", "gcp/*/*/storage/o_get"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// A resumable upload's chunks, each a PUT to the session URI the upload's
// POST was answered with (its path and an upload_id), as Cloud Storage's
// and BigQuery's upload protocols send them, are the upload's method:
// o_insert and jobs_insert, not a PUT of the collection (Google's Go
// clients send their chunks with POST, which is o_insert already).
func TestRESTScopeOfAResumableUploadsChunk(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"POST", "https://storage.googleapis.com/upload/storage/v1/b/bkt/o?uploadType=resumable&name=dir%2Fa.txt", "gcp/*/*/storage/o_insert"},
		{"PUT", "https://storage.googleapis.com/upload/storage/v1/b/bkt/o?uploadType=resumable&name=dir%2Fa.txt&upload_id=ADPycdu", "gcp/*/*/storage/o_insert"},
		{"PUT", "https://bigquery.googleapis.com/upload/bigquery/v2/projects/p1/jobs?uploadType=resumable&upload_id=ADPycdu", "gcp/projects/p1/*/bigquery/jobs_insert"},
		{"POST", "https://storage.googleapis.com/upload/storage/v1/b/bkt/o?uploadType=resumable&upload_id=ADPycdu", "gcp/*/*/storage/o_insert"},
		{"PUT", "https://storage.googleapis.com/storage/v1/b/bkt/o/a.txt", "gcp/*/*/storage/o_update"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// A Cloud Storage object of the XML API whose name holds storage and a
// version (/<bucket>/backups/storage/v1/data.json, as the storage client
// reads it, slashes and all) is the XML API's: the JSON API's paths start
// /storage/<version>, or /upload, /download, /batch or /resumable/upload
// before it.
func TestRESTScopeOfAStorageObjectNamedAsTheJSONAPI(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "https://storage.googleapis.com/bkt/backups/storage/v1/data.json", "gcp/*/*/storage/o_get"},
		{"PUT", "https://storage.googleapis.com/bkt/mirror/storage/v1/b/x/o", "gcp/*/*/storage/o_insert"},
		{"GET", "https://storage.googleapis.com/bkt/storage/beta/x", "gcp/*/*/storage/o_get"},
		// The JSON API's paths.
		{"GET", "https://storage.googleapis.com/storage/v1/b/bkt/o", "gcp/*/*/storage/o_list"},
		{"POST", "https://storage.googleapis.com/upload/storage/v1/b/bkt/o", "gcp/*/*/storage/o_insert"},
		{"POST", "https://storage.googleapis.com/resumable/upload/storage/v1/b/bkt/o", "gcp/*/*/storage/o_insert"},
		{"GET", "https://storage.googleapis.com/download/storage/v1/b/bkt/o/a.txt?alt=media", "gcp/*/*/storage/o_get"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// A singleton resource (AIP-156: one per parent, named by a literal where
// a collection comes, Dialogflow ES's projects/<p>/agent, Vertex AI's
// .../locations/<l>/ragEngineConfig) that holds collections is its
// collection and its id at once: the ids after it are the ids of its
// collections, never part of an operation (one leaf bucket and breaker
// per id, scopes without bound). An id so named stays an id.
func TestRESTScopeOfASingletonsCollections(t *testing.T) {
	const df = "https://dialogflow.googleapis.com/v2/projects/p1"
	const vx = "https://us-central1-aiplatform.googleapis.com/v1/projects/p1/locations/us-central1"
	const scc = "https://securitycenter.googleapis.com/v1/organizations/123"
	for _, tc := range []struct{ method, url, want string }{
		{"GET", df + "/agent/intents/i1", "gcp/projects/p1/*/dialogflow/intents_get"},
		{"PATCH", df + "/agent/intents/i2", "gcp/projects/p1/*/dialogflow/intents_patch"},
		{"GET", df + "/agent/intents", "gcp/projects/p1/*/dialogflow/intents_list"},
		{"POST", df + "/agent/intents:batchUpdate", "gcp/projects/p1/*/dialogflow/intents_batchUpdate"},
		{"GET", df + "/agent/sessions/s1/contexts/c1", "gcp/projects/p1/*/dialogflow/contexts_get"},
		{"POST", df + "/agent/sessions/s1:detectIntent", "gcp/projects/p1/*/dialogflow/sessions_detectIntent"},
		{"GET", df + "/locations/global/agent/entityTypes/e1", "gcp/projects/p1/*/dialogflow/entityTypes_get"},
		{"GET", df + "/agent", "gcp/projects/p1/*/dialogflow/agent_get"},
		{"POST", df + "/agent:train", "gcp/projects/p1/*/dialogflow/agent_train"},
		{"GET", vx + "/ragEngineConfig/operations/op-123", "gcp/projects/p1/*/aiplatform/operations_get"},
		{"GET", vx + "/ragEngineConfig/operations/op-456", "gcp/projects/p1/*/aiplatform/operations_get"},
		{"GET", vx + "/ragEngineConfig", "gcp/projects/p1/*/aiplatform/ragEngineConfig_get"},
		{"PATCH", vx + "/ragEngineConfig", "gcp/projects/p1/*/aiplatform/ragEngineConfig_patch"},
		{"DELETE", scc + "/securityHealthAnalyticsSettings/customModules/m1", "gcp/organizations/123/*/securitycenter/customModules_delete"},
		{"GET", "https://appengine.googleapis.com/v1/apps/a1/firewall/ingressRules/r1", "gcp/*/*/appengine/ingressRules_get"},
		// An id named as a singleton is an id.
		{"GET", df + "/agent/intents/agent", "gcp/projects/p1/*/dialogflow/intents_get"},
		{"GET", "https://secretmanager.googleapis.com/v1/projects/p1/secrets/agent", "gcp/projects/p1/*/secretmanager/secrets_get"},
		{"GET", "https://secretmanager.googleapis.com/v1/projects/agent/secrets/s1", "gcp/projects/agent/*/secretmanager/secrets_get"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// Discovery Engine's target sites, a collection of the singleton
// siteSearchEngine, have long-running operations of their own, a
// collection after the collection's name with no id between
// (.../siteSearchEngine/targetSites/operations/<op>): those operations
// are the collection's, read as operations_get and operations_list, never
// an operation named after each long-running operation's id (one leaf
// bucket and breaker per operation) nor the list read as a target site's
// get. A Dialogflow session named operations, whose contexts come where
// an operation's id would, is still a session.
func TestRESTScopeOfACollectionsOwnOperations(t *testing.T) {
	const ds = "/projects/p1/locations/global/collections/default_collection/dataStores/ds1/siteSearchEngine"
	const df = "https://dialogflow.googleapis.com/v2/projects/p1"
	var cases []struct{ method, url, want string }
	for _, v := range []string{"v1", "v1alpha", "v1beta"} {
		de := "https://discoveryengine.googleapis.com/" + v + ds
		cases = append(cases, []struct{ method, url, want string }{
			{"GET", de + "/targetSites/operations/op-123", "gcp/projects/p1/*/discoveryengine/operations_get"},
			{"GET", de + "/targetSites/operations/op-456", "gcp/projects/p1/*/discoveryengine/operations_get"},
			{"GET", de + "/targetSites/operations", "gcp/projects/p1/*/discoveryengine/operations_list"},
			{"GET", de + "/targetSites/ts-1", "gcp/projects/p1/*/discoveryengine/targetSites_get"},
			{"GET", de + "/targetSites", "gcp/projects/p1/*/discoveryengine/targetSites_list"},
			{"POST", de + "/targetSites:batchCreate", "gcp/projects/p1/*/discoveryengine/targetSites_batchCreate"},
			{"GET", de + "/operations/op-123", "gcp/projects/p1/*/discoveryengine/operations_get"},
		}...)
	}
	cases = append(cases, []struct{ method, url, want string }{
		// A session named operations is a session.
		{"GET", df + "/agent/sessions/operations/contexts", "gcp/projects/p1/*/dialogflow/contexts_list"},
		{"GET", df + "/agent/sessions/operations/contexts/c1", "gcp/projects/p1/*/dialogflow/contexts_get"},
		{"DELETE", df + "/agent/sessions/operations/contexts", "gcp/projects/p1/*/dialogflow/contexts_delete"},
	}...)
	for _, tc := range cases {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// A client of another universe (Google Cloud Dedicated, a Trusted Partner
// Cloud: option.WithUniverseDomain, the endpoint <service>.<universe
// domain>) sends an AIP-style API's paths, which start with the version,
// to a host that is not googleapis.com: the host's first label is the
// service, as on googleapis.com, never "" (which would put every API of
// the universe in one scope per operation). A host that names no service
// that way (an emulator on localhost or an IP, a name of two labels)
// still names none; a path that names its API before the version names
// it whatever the host.
func TestRESTScopeOfAnotherUniverse(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "https://pubsub.s3nsapis.fr/v1/projects/p1/topics/t1", "gcp/projects/p1/*/pubsub/topics_get"},
		{"POST", "https://secretmanager.apis-berlin-build0.goog/v1/projects/p1/secrets/s1:addVersion", "gcp/projects/p1/*/secretmanager/secrets_addVersion"},
		{"GET", "https://us-central1-aiplatform.s3nsapis.fr/v1/projects/p1/locations/us-central1/endpoints", "gcp/projects/p1/*/aiplatform/endpoints_list"},
		{"GET", "https://pubsub.mtls.s3nsapis.fr:443/v1/projects/p1/topics", "gcp/projects/p1/*/pubsub/topics_list"},
		{"GET", "https://pubsub-ep1.p.s3nsapis.fr/v1/projects/p1/topics", "gcp/projects/p1/*/pubsub/topics_list"},
		{"GET", "https://storage.s3nsapis.fr/bkt/dir/a.txt", "gcp/*/*/storage/o_get"},
		// An object's name that holds a version, as on googleapis.com.
		{"GET", "https://storage.s3nsapis.fr/bkt/v1/x", "gcp/*/*/storage/o_get"},
		{"GET", "https://storage.s3nsapis.fr/bkt/backups/v2/data.json", "gcp/*/*/storage/o_get"},
		{"PUT", "https://storage.mtls.s3nsapis.fr/bkt/mirror/storage/v1/b/x/o", "gcp/*/*/storage/o_insert"},
		{"GET", "https://storage.s3nsapis.fr/storage/v1/b/bkt/o", "gcp/*/*/storage/o_list"},
		{"POST", "https://storage.s3nsapis.fr/upload/storage/v1/b/bkt/o?uploadType=media&name=a", "gcp/*/*/storage/o_insert"},
		{"GET", "https://compute.s3nsapis.fr/compute/v1/projects/p1/zones/z/instances", "gcp/projects/p1/*/compute/instances_list"},
		{"GET", "https://www.s3nsapis.fr/drive/v3/files/f1", "gcp/*/*/drive/files_get"},
		// No service in the host.
		{"GET", "http://localhost:8085/v1/projects/p1/topics/t1", "gcp/projects/p1/*/*/topics_get"},
		{"GET", "http://127.0.0.1:8085/v1/projects/p1/topics/t1", "gcp/projects/p1/*/*/topics_get"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// compute's organization-level resources (hierarchical firewall policies,
// organization security policies) are created and listed under the
// organization or folder their parentId query parameter names
// (POST /compute/v1/locations/global/firewallPolicies?parentId=organizations/123),
// and Resource Manager lists a folder's or an organization's children
// with a parent query parameter (GET /v3/projects?parent=folders/456): that
// organization or folder is the call's account, as a project query
// parameter's project is. A parameter that names none (a number alone, a
// name that is no organization's or folder's) gives none, nor does a
// move's, which names the destination (POST
// .../firewallPolicies/<id>/move?parentId=folders/789).
func TestRESTScopeOfAnOrganizationInTheQuery(t *testing.T) {
	const fp = "https://compute.googleapis.com/compute/v1/locations/global/firewallPolicies"
	for _, tc := range []struct{ method, url, want string }{
		{"POST", fp + "?parentId=organizations%2F123", "gcp/organizations/123/*/compute/firewallPolicies_insert"},
		{"GET", fp + "?parentId=organizations/123", "gcp/organizations/123/*/compute/firewallPolicies_list"},
		{"GET", fp + "?parentId=folders/456", "gcp/folders/456/*/compute/firewallPolicies_list"},
		{"POST", "https://compute.googleapis.com/compute/v1/locations/global/securityPolicies?parentId=organizations/123", "gcp/organizations/123/*/compute/securityPolicies_insert"},
		{"GET", "https://cloudresourcemanager.googleapis.com/v3/projects?parent=folders/456", "gcp/folders/456/*/cloudresourcemanager/projects_list"},
		{"GET", "https://cloudresourcemanager.googleapis.com/v3/tagKeys?parent=organizations/123", "gcp/organizations/123/*/cloudresourcemanager/tagKeys_list"},
		// No organization or folder named.
		{"GET", fp + "?parentId=123", "gcp/*/*/compute/firewallPolicies_list"},
		{"GET", fp + "?parentId=folders/logs", "gcp/*/*/compute/firewallPolicies_list"},
		{"GET", fp + "/fp-1", "gcp/*/*/compute/firewallPolicies_get"},
		// A move's parentId names the policy's new parent, its
		// destination, which never names the account.
		{"POST", fp + "/fp-1/move?parentId=folders/789", "gcp/*/*/compute/firewallPolicies_move"},
		{"POST", fp + "/123456/move?parentId=organizations%2F123", "gcp/*/*/compute/firewallPolicies_move"},
		{"POST", "https://compute.googleapis.com/compute/v1/locations/global/securityPolicies/sp-1/move?parentId=folders/789", "gcp/*/*/compute/securityPolicies_move"},
		{"POST", "https://compute.googleapis.com/compute/beta/locations/global/firewallPolicies/fp-1/move?parentId=folders/789", "gcp/*/*/compute/firewallPolicies_move"},
		// The path's account comes first.
		{"GET", "https://compute.googleapis.com/compute/v1/projects/p1/global/firewalls?parentId=organizations/123", "gcp/projects/p1/*/compute/firewalls_list"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("%s %s: scope %s, want %s", tc.method, tc.url, got, tc.want)
		}
	}
}

// A service or an operation read from a URL (a host's label, a path's
// segment, unescaped) that holds a character that is not printable (a
// newline, a byte that is not UTF-8, a bidirectional override), a space,
// or more than 128 bytes is none: such a part would carry the request's
// text into logs, metrics labels and the status page, and make scopes
// without bound. The account is read by Google Cloud's grammar
// (TestAnInvalidAccountIDIsNoAccount); the other parts keep their
// reading.
func TestRESTScopeTakesNoPartThatIsNotPlain(t *testing.T) {
	long := strings.Repeat("x", 129)
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "https://www.googleapis.com/dri%0Ave/v3/files/f1", "gcp/*/*/*/files_get"},
		{"GET", "https://www.googleapis.com/dri%20ve/v3/files/f1", "gcp/*/*/*/files_get"},
		{"GET", "https://www.googleapis.com/dri%FFve/v3/files/f1", "gcp/*/*/*/files_get"},
		{"GET", "https://www.googleapis.com/" + long + "/v3/files/f1", "gcp/*/*/*/files_get"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/p1/top%0Aics", "gcp/projects/p1/*/pubsub"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/p1/top%E2%80%AEics", "gcp/projects/p1/*/pubsub"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/p1/top%C2%85ics", "gcp/projects/p1/*/pubsub"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/p1/" + long, "gcp/projects/p1/*/pubsub"},
		{"POST", "https://compute.googleapis.com/compute/v1/projects/p1/zones/z/instances/i/st%0Aart", "gcp/projects/p1/*/compute"},
		{"GET", "https://%FF.googleapis.com/v1/projects/p1/topics", "gcp/projects/p1/*/*/topics_list"},
		{"GET", "https://" + long + ".googleapis.com/v1/projects/p1/topics", "gcp/projects/p1/*/*/topics_list"},
		{"GET", "https://ev%FFil.s3nsapis.fr/v1/projects/p1/topics", "gcp/projects/p1/*/*/topics_list"},
		// Plain parts, up to 128 bytes, stay.
		{"GET", "https://www.googleapis.com/drive/v3/files/f1", "gcp/*/*/drive/files_get"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/p1/" + long[:123], "gcp/projects/p1/*/pubsub/" + long[:123] + "_list"},
	} {
		r, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(r).String(); got != tc.want {
			t.Errorf("RESTScope(%s %.80s) = %q, want %q", tc.method, tc.url, got, tc.want)
		}
	}
}

// Cloud Healthcare's FHIR paths (.../fhirStores/<s>/fhir/<type>/<id>)
// follow FHIR's REST API, not Google's: a resource's type and id, its
// versions (_history/<vid>), operations ($everything), searches. Their
// operation is the kind of FHIR request Cloud Healthcare's quotas count
// (fhir_read, fhir_write, fhir_search), or, for an interaction of no
// documented kind, the fhirStores.fhir method's name (fhir_history,
// fhir_capabilities, fhir_executeBundle; an operation fhir_$<name>),
// never a resource's type, id or version: one leaf bucket and breaker
// per patient would be scopes without bound, while Cloud Healthcare's
// quotas are a project's in a region, per kind of FHIR request,
// whatever the resource.
func TestRESTScopeOfAFHIRStoresResources(t *testing.T) {
	const st = "https://healthcare.googleapis.com/v1/projects/p1/locations/us-central1/datasets/d1/fhirStores/s1/fhir"
	const beta = "https://healthcare.googleapis.com/v1beta1/projects/p1/locations/us/datasets/d1/fhirStores/s1/fhir"
	const want = "gcp/projects/p1/*/healthcare/"
	for _, tc := range []struct{ method, url, op string }{
		{"GET", st + "/Patient/pat-123", "fhir_read"},
		{"GET", st + "/Patient/pat-456", "fhir_read"},
		{"HEAD", st + "/Patient/pat-456", "fhir_read"},
		{"GET", st + "/Observation/obs-9", "fhir_read"},
		{"PUT", st + "/Patient/pat-123", "fhir_write"},
		{"PATCH", st + "/Patient/pat-123", "fhir_write"},
		{"DELETE", st + "/Patient/pat-123", "fhir_write"},
		{"GET", st + "/Patient/pat-123/_history/7", "fhir_read"},
		{"GET", st + "/Patient/pat-123/_history", "fhir_history"},
		{"GET", st + "/Patient/_history", "fhir_history"},
		{"GET", st + "/_history", "fhir_history"},
		{"GET", st + "/Patient/pat-123/$everything", "fhir_$everything"},
		{"GET", st + "/Patient/pat-456/$everything?_count=10", "fhir_$everything"},
		{"DELETE", st + "/Patient/pat-123/$purge", "fhir_$purge"},
		{"POST", st + "/Patient/$validate", "fhir_$validate"},
		{"GET", st + "/$export", "fhir_$export"},
		{"GET", st + "/Patient?_id=pat-123", "fhir_search"},
		{"GET", st + "/Patient?name=smith", "fhir_search"},
		{"POST", st + "/Patient/_search", "fhir_search"},
		{"POST", st + "/_search", "fhir_search"},
		{"GET", st + "/Patient/pat-123/Observation?code=x", "fhir_search"},
		{"POST", st + "/Patient", "fhir_write"},
		{"PUT", st + "/Patient?identifier=x", "fhir_write"},
		{"PATCH", st + "/Patient?identifier=x", "fhir_write"},
		{"DELETE", st + "/Patient?identifier=x", "fhir_write"},
		{"POST", st, "fhir_executeBundle"},
		{"GET", st + "/metadata", "fhir_capabilities"},
		{"GET", beta + "/Patient/pat-123", "fhir_read"},
		// A resource whose type or id is named as a FHIR keyword or a
		// collection is still read by its place.
		{"GET", st + "/Patient/metadata", "fhir_read"},
		{"GET", st + "/projects/agent", "fhir_read"},
		// The FHIR store's own methods are Google's.
		{"GET", "https://healthcare.googleapis.com/v1/projects/p1/locations/us-central1/datasets/d1/fhirStores/s1", "fhirStores_get"},
		{"GET", "https://healthcare.googleapis.com/v1/projects/p1/locations/us-central1/datasets/d1/fhirStores", "fhirStores_list"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != want+tc.op {
			t.Errorf("RESTScope(%s %s) = %q, want %q", tc.method, tc.url, got, want+tc.op)
		}
	}
}

// TestRESTScopeOfAFirestoreDocument states that a path of Firestore's
// documents (.../databases/<db>/documents/<collection>/<doc>/..., a
// collection and a document in turn, as deep as the user nests them)
// names its method, never a collection's or a document's id: one
// operation per method, however many documents and collections a
// program reads (each a leaf bucket and breaker of its own otherwise).
func TestRESTScopeOfAFirestoreDocument(t *testing.T) {
	const db = "https://firestore.googleapis.com/v1/projects/p1/databases/(default)/documents"
	const want = "gcp/projects/p1/*/firestore/"
	for _, tc := range []struct{ method, url, op string }{
		{"GET", db + "/users/alice", "documents_get"},
		{"GET", db + "/users/bob", "documents_get"},
		{"GET", db + "/users/alice/orders/o-17", "documents_get"},
		{"PATCH", db + "/users/alice?updateMask.fieldPaths=name", "documents_patch"},
		{"DELETE", db + "/users/alice/orders/o-17", "documents_delete"},
		{"GET", db + "/users", "documents_list"},
		{"GET", db + "/users/alice/orders?pageSize=10", "documents_list"},
		{"POST", db + "/users?documentId=carol", "documents_createDocument"},
		{"POST", db + "/users/alice/orders", "documents_createDocument"},
		{"POST", db + "/users/alice:listCollectionIds", "documents_listCollectionIds"},
		{"POST", db + "/users/alice:runQuery", "documents_runQuery"},
		{"POST", db + "/users/alice/orders/o-17:runAggregationQuery", "documents_runAggregationQuery"},
		{"POST", db + ":runQuery", "documents_runQuery"},
		{"POST", db + ":commit", "documents_commit"},
		{"POST", db + ":batchGet", "documents_batchGet"},
		{"GET", "https://firestore.googleapis.com/v1beta1/projects/p1/databases/(default)/documents/users/alice", "documents_get"},
		// A collection or a document named as a collection or a verb
		// RESTScope knows is still read by its place.
		{"GET", db + "/projects/agent", "documents_get"},
		{"GET", db + "/operations/o1/databases", "documents_list"},
		{"GET", db + "/users/documents", "documents_get"},
		// The database's own methods are Google's.
		{"GET", "https://firestore.googleapis.com/v1/projects/p1/databases/(default)", "databases_get"},
		{"POST", "https://firestore.googleapis.com/v1/projects/p1/databases/(default):exportDocuments", "databases_exportDocuments"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != want+tc.op {
			t.Errorf("RESTScope(%s %s) = %q, want %q", tc.method, tc.url, got, want+tc.op)
		}
	}
}

// TestRESTScopeOfCloudRunsKnativeAPI states that Cloud Run's Knative API
// (run/v1, /apis/serving.knative.dev/v1/namespaces/<project>/services, a
// path that names the API before the version) names a namespace's
// collections as collections: a list and a create are two methods, two
// operations, not the namespace's verb shared by both.
func TestRESTScopeOfCloudRunsKnativeAPI(t *testing.T) {
	const ns = "https://us-central1-run.googleapis.com/apis/serving.knative.dev/v1/namespaces/p1"
	for _, tc := range []struct{ method, url, want string }{
		{"GET", ns + "/services", "gcp/*/*/run/services_list"},
		{"POST", ns + "/services", "gcp/*/*/run/services_insert"},
		{"GET", ns + "/services/svc-1", "gcp/*/*/run/services_get"},
		{"PUT", ns + "/services/svc-1", "gcp/*/*/run/services_update"},
		{"DELETE", ns + "/services/svc-1", "gcp/*/*/run/services_delete"},
		{"GET", "https://us-central1-run.googleapis.com/apis/run.googleapis.com/v1/namespaces/p1/jobs", "gcp/*/*/run/jobs_list"},
		{"POST", "https://us-central1-run.googleapis.com/apis/run.googleapis.com/v1/namespaces/p1/jobs", "gcp/*/*/run/jobs_insert"},
		{"POST", "https://us-central1-run.googleapis.com/apis/run.googleapis.com/v1/namespaces/p1/jobs/j1:run", "gcp/*/*/run/jobs_run"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != tc.want {
			t.Errorf("RESTScope(%s %s) = %q, want %q", tc.method, tc.url, got, tc.want)
		}
	}
}

// TestRESTScopeOfManagedPrometheusQueries states that the Prometheus HTTP
// API that Cloud Monitoring serves for Managed Service for Prometheus
// (.../location/<l>/prometheus/api/v1/<endpoint>, a second version in the
// path, then Prometheus's endpoints) names the endpoint, never a label's
// name: the values of every label are one operation, not one per label
// (each a leaf bucket and breaker of its own, at the whole rate of the
// project's query quota), and a query is not a series lookup.
func TestRESTScopeOfManagedPrometheusQueries(t *testing.T) {
	const api = "https://monitoring.googleapis.com/v1/projects/p1/location/global/prometheus/api/v1/"
	const want = "gcp/projects/p1/*/monitoring/"
	for _, tc := range []struct{ method, path, op string }{
		{"GET", "query?query=up", "prometheus_query"},
		{"POST", "query", "prometheus_query"},
		{"POST", "query_range", "prometheus_query_range"},
		{"POST", "query_exemplars", "prometheus_query_exemplars"},
		{"GET", "series?match[]=up", "prometheus_series"},
		{"GET", "labels", "prometheus_labels"},
		{"GET", "metadata", "prometheus_metadata"},
		{"GET", "label/job/values", "prometheus_labelValues"},
		{"GET", "label/instance/values", "prometheus_labelValues"},
		{"GET", "label/query/values", "prometheus_labelValues"},
	} {
		req, err := http.NewRequest(tc.method, api+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != want+tc.op {
			t.Errorf("RESTScope(%s .../prometheus/api/v1/%s) = %q, want %q", tc.method, tc.path, got, want+tc.op)
		}
	}
}

// TestRESTScopeAfterASecondVersion states that a path with a second
// version where a collection comes (Vertex AI's OpenAI-compatible
// Responses API, .../publishers/<p>/v1/responses/<id>) names its method
// by what follows that version, never a response's id: every response's
// get is one operation, not one per response, and a response's creation
// is not a publisher's.
func TestRESTScopeAfterASecondVersion(t *testing.T) {
	const pub = "https://us-central1-aiplatform.googleapis.com/v1/projects/p1/locations/us-central1/publishers/openai/v1/responses"
	const want = "gcp/projects/p1/*/aiplatform/"
	for _, tc := range []struct{ method, url, op string }{
		{"POST", pub, "responses_create"},
		{"GET", pub + "/resp_0a1b2c", "responses_get"},
		{"GET", pub + "/resp_9z8y7x", "responses_get"},
		{"DELETE", pub + "/resp_0a1b2c", "responses_delete"},
		// Ids named as versions, singletons or collections are ids.
		{"GET", pub + "/v1", "responses_get"},
		{"GET", pub + "/agent", "responses_get"},
		{"GET", pub + "/projects", "responses_get"},
		{"GET", "https://aiplatform.googleapis.com/v1/projects/p1/locations/us-central1/publishers/v1/v1/responses/r1", "responses_get"},
		{"GET", "https://aiplatform.googleapis.com/v1/projects/p1/locations/us-central1/endpoints/v1", "endpoints_get"},
		{"GET", "https://aiplatform.googleapis.com/v1/projects/p1/locations/v2/endpoints", "endpoints_list"},
	} {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(req).String(); got != want+tc.op {
			t.Errorf("RESTScope(%s %s) = %q, want %q", tc.method, tc.url, got, want+tc.op)
		}
	}
}
