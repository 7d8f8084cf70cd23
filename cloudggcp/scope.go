package cloudggcp

import (
	"strings"

	"github.com/cloudg/cloudg/internal/gcpaccount"
	"github.com/cloudg/cloudg/resilience"
)

// The Cloud Asset RPCs with their own leaf buckets in the core's defaults
// (ListAssets 1.5 rps, burst 10; the searches 6 rps, burst 20).
const (
	RPCListAssets           = "ListAssets"
	RPCSearchAllResources   = "SearchAllResources"
	RPCSearchAllIamPolicies = "SearchAllIamPolicies"
)

// Service is the scope service of Cloud Asset Inventory.
const Service = "cloudasset"

// Scope returns the scope of a Cloud Asset call, gcp/<parent>/*/cloudasset/<rpc>:
// parent is a request's parent or scope ("projects/p1",
// "organizations/123", "folders/9"; anything after the id is dropped) and
// rpc the RPC name (ListAssets).
func Scope(parent, rpc string) resilience.Scope {
	return resilience.Scope{Provider: "gcp", Account: Account(parent), Service: Service, Operation: rpc}
}

// Account returns the scope account of a resource name: its leading
// projects/<id>, organizations/<id> or folders/<id>, none ("") for a
// wildcard id (projects/_/buckets/<bucket>, projects/-/...) or an id that
// is none by Google Cloud's grammar (see validAccountID: projects/P1,
// an id with a newline or a space), or name itself when it starts
// otherwise, unless it holds a byte that is no printable ASCII
// character, or a space (none then). A full resource name
// ("//cloudresourcemanager.googleapis.com/projects/p1") loses its host.
func Account(name string) string {
	if a, ok := knownAccount(name); ok {
		return a
	}
	for _, c := range []byte(name) {
		if c <= ' ' || c > '~' {
			return ""
		}
	}
	return name
}

// knownAccount returns the leading projects/<id>, organizations/<id> or
// folders/<id> of name; "" for a wildcard id, projects/_ (Cloud Storage's
// gRPC API's projects/_/buckets/<bucket>) or projects/- (a project
// inferred from the resource, IAM's projects/-/serviceAccounts/<email>),
// or an id that is none by Google Cloud's grammar (validAccountID), which
// names no account.
func knownAccount(name string) (string, bool) {
	if strings.HasPrefix(name, "//") {
		if i := strings.IndexByte(name[2:], '/'); i >= 0 {
			name = name[2+i+1:]
		}
	}
	kind, rest, ok := strings.Cut(name, "/")
	if !ok || rest == "" {
		return "", false
	}
	switch kind {
	case "projects", "organizations", "folders":
	default:
		return "", false
	}
	id := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		if i == 0 {
			return "", false
		}
		id, name = rest[:i], name[:len(kind)+1+i]
	}
	if !validAccountID(kind, id) {
		return "", true
	}
	return name, true
}

// validAccountID reports whether id is, by Google Cloud's grammar
// (gcpaccount.ValidID, the one rule the mcpscan example checks accounts
// with too), the id of a resource of kind (projects, organizations,
// folders): an organization's or a folder's number; a project's number,
// its id (a lower-case letter, then lower-case letters, digits and
// hyphens, not ending with a hyphen, 30 characters at most), or a legacy
// domain-scoped project's id (example.com:my-project); a number is 20
// digits at most. A wildcard (- or _) is none, nor is an id that holds
// anything else: a newline, a space, an upper-case letter, a slash, which
// would carry it into logs, metrics labels and the status page. Short ids
// (p1, test) are taken, though Google Cloud gives new projects 6
// characters at least: where a project comes is decided by its place,
// not its length, an emulator (Pub/Sub's, Firestore's) answers any
// project id, and a local run's short id would otherwise put all its
// calls in no account. No id of another shape is taken so.
func validAccountID(kind, id string) bool {
	return gcpaccount.ValidID(kind, id, true)
}
