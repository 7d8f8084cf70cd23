package cloudggcp

import (
	"strings"

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
// wildcard id (projects/_/buckets/<bucket>, projects/-/...), or name
// itself when it starts otherwise. A full resource name
// ("//cloudresourcemanager.googleapis.com/projects/p1") loses its host.
func Account(name string) string {
	if a, ok := knownAccount(name); ok {
		return a
	}
	return name
}

// knownAccount returns the leading projects/<id>, organizations/<id> or
// folders/<id> of name; "" for a wildcard id, projects/_ (Cloud Storage's
// gRPC API's projects/_/buckets/<bucket>) or projects/- (a project
// inferred from the resource, IAM's projects/-/serviceAccounts/<email>),
// which names no account.
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
	if wildcardID(id) {
		return "", true
	}
	return name, true
}

// wildcardID reports whether id, after projects/, organizations/ or
// folders/, is a wildcard that names no resource: _ or -.
func wildcardID(id string) bool { return id == "_" || id == "-" }
