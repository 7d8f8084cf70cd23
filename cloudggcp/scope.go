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
// projects/<id>, organizations/<id> or folders/<id>, or name itself when it
// starts otherwise. A full resource name
// ("//cloudresourcemanager.googleapis.com/projects/p1") loses its host.
func Account(name string) string {
	if a, ok := knownAccount(name); ok {
		return a
	}
	return name
}

// knownAccount returns the leading projects/<id>, organizations/<id> or
// folders/<id> of name.
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
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		if i == 0 {
			return "", false
		}
		return name[:len(kind)+1+i], true
	}
	return name, true
}
