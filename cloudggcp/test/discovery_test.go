package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/cloudggcp"
	"github.com/cloudg/cloudg/resilience"
)

// discoveryAPIs are the APIs whose discovery documents, as
// google.golang.org/api ships them (<dir>/<name>-api.json), are read
// through RESTScope by TestRESTScopeReadsEveryDiscoveredMethod: those
// RESTScope's godoc and the README name (Cloud Storage, BigQuery, Compute
// Engine v1, beta and alpha, Cloud DNS, Cloud SQL Admin, Cloud KMS), and a
// sample of other AIP-style APIs and of the shared front end's (Drive),
// and APIs whose singletons hold collections (Dialogflow ES's
// projects/<p>/agent/intents/<i>, Security Command Center's
// .../securityHealthAnalyticsSettings/customModules/<m>, App Engine's
// apps/<a>/firewall/ingressRules/<r>: RESTScope's singletons), and Cloud
// Healthcare's, whose FHIR stores' paths follow FHIR's REST API
// (.../fhir/<type>/<id>/_history/<vid>).
// And Firestore's, whose documents' paths name collections and
// documents the user chose (.../documents/<collection>/<doc>), which
// RESTScope reads by their place (firestoreOperation), and Cloud Run's v1
// (Knative) API, whose namespaces hold collections
// (/apis/serving.knative.dev/v1/namespaces/<p>/services), and Cloud
// Monitoring v1's, whose Prometheus HTTP API follows a second version
// (.../prometheus/api/v1/label/<name>/values: prometheusOperation), and
// Vertex AI's, whose paths hold a second version
// (.../publishers/<p>/v1/responses/<id>: afterVersion). Not Discovery
// Engine's, whose target sites' own operations
// (.../siteSearchEngine/targetSites/operations) cannot be told from a
// target site named operations, an adversarial id. Vertex AI's
// ragEngineConfig is read by TestRESTScopeOfASingletonsCollections, and
// every singleton of every shipped document, Discovery Engine's among
// them, by TestRESTScopeReadsEverySingletonsCollections.
var discoveryAPIs = []string{
	"storage/v1", "bigquery/v2", "compute/v1", "compute/v0.beta", "compute/v0.alpha", "dns/v1",
	"sqladmin/v1beta4", "sqladmin/v1", "cloudkms/v1",
	"secretmanager/v1", "pubsub/v1", "run/v2", "container/v1", "iam/v1",
	"cloudresourcemanager/v3", "logging/v2", "artifactregistry/v1", "spanner/v1", "drive/v3",
	"dialogflow/v2", "dialogflow/v3", "securitycenter/v1", "appengine/v1", "healthcare/v1", "firestore/v1", "run/v1", "monitoring/v1", "aiplatform/v1",
}

// A discovery document: its API's name and URLs, and its resources'
// methods.
type discoveryDoc struct {
	Name        string                       `json:"name"`
	RootURL     string                       `json:"rootUrl"`
	ServicePath string                       `json:"servicePath"`
	Resources   map[string]discoveryResource `json:"resources"`
	Methods     map[string]discoveryMethod   `json:"methods"`
}

type discoveryResource struct {
	Resources map[string]discoveryResource `json:"resources"`
	Methods   map[string]discoveryMethod   `json:"methods"`
}

type discoveryMethod struct {
	ID         string `json:"id"`
	Path       string `json:"path"`
	FlatPath   string `json:"flatPath"`
	HTTPMethod string `json:"httpMethod"`
	Parameters map[string]struct {
		Location string `json:"location"`
		Required bool   `json:"required"`
	} `json:"parameters"`
	MediaUpload *struct {
		Protocols map[string]struct {
			Path string `json:"path"`
		} `json:"protocols"`
	} `json:"mediaUpload"`
}

// discoveryDir is where the module cache holds google.golang.org/api, the
// version this module requires.
func discoveryDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "google.golang.org/api").Output()
	if err != nil {
		t.Fatalf("go list -m google.golang.org/api: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("go list -m google.golang.org/api: no directory (the module is not downloaded)")
	}
	return dir
}

// A method of a discovery document, as its client sends it: its HTTP
// method, its URL's host and path template, and its required query
// parameters.
type discoveredMethod struct {
	api   string // storage/v1
	id    string // storage.objects.list; storage.objects.insert/upload for its upload path
	http  string
	host  string // https://storage.googleapis.com
	tmpl  string // /storage/v1/b/{bucket}/o
	flat  bool   // tmpl is a flatPath: its variables are sent as one {+name}
	query []string
}

// A path variable of a method: its name, the literal segment before it
// (projects for projects/{project}), and how it is escaped.
type pathVar struct {
	name, kind string
	reserved   bool // escaped as {+var}: reserved characters, : and / among them, kept
	last       bool // in the path's last segment
}

// A request of a method, with the ids in its path.
type discoveredCall struct {
	method  string
	http    string
	url     string
	ids     []string // the ids given to the path's variables (idsOf)
	account string   // the account the path names: projects/<id>, ...
}

// vars returns m's path variables, in order.
func (m discoveredMethod) vars() []pathVar {
	var vs []pathVar
	tmpl := m.tmpl
	var done strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			return vs
		}
		j := strings.IndexByte(tmpl[i:], '}') + i
		done.WriteString(tmpl[:i])
		name := tmpl[i+1 : j]
		prefix := strings.TrimSuffix(done.String(), "/")
		vs = append(vs, pathVar{
			name:     strings.TrimPrefix(name, "+"),
			kind:     prefix[strings.LastIndexByte(prefix, '/')+1:],
			reserved: m.flat || strings.HasPrefix(name, "+"),
			last:     !strings.Contains(tmpl[j+1:], "/"),
		})
		done.WriteString("{}")
		tmpl = tmpl[j+1:]
	}
}

// call returns the request of m whose variables have the values value
// gives them, escaped as the generated clients escape them
// (googleapi.Expand: a simple variable's reserved characters too; not a
// {+variable}'s, nor a flat path's, which the clients send as one
// {+name}), and the account of its first projects/<id>,
// organizations/<id> or folders/<id> (a project's id by
// projectIDGrammar, the other ids numbers, as Resource Manager's are), or
// of its project query parameter.
func (m discoveredMethod) call(value func(i int, v pathVar) string) discoveredCall {
	c := discoveredCall{method: m.id, http: m.http}
	var b strings.Builder
	tmpl := m.tmpl
	prev, prevStructural := "", false
	for i, v := range m.vars() {
		at := strings.IndexByte(tmpl, '{')
		end := strings.IndexByte(tmpl, '}')
		b.WriteString(tmpl[:at])
		if v.kind == "{}" && prevStructural {
			// A flat path's {v2Id}/{v2Id1} (logging's parent): the
			// first the collection, the second its id.
			v.kind = prev
		}
		id := value(i, v)
		prev, prevStructural = id, structural(v)
		c.ids = append(c.ids, idsOf(v, id)...)
		if c.account == "" && (v.kind == "projects" && projectIDGrammar.MatchString(id) || (v.kind == "organizations" || v.kind == "folders") && isNumber(id)) {
			c.account = v.kind + "/" + id
		}
		b.WriteString(escapeValue(id, v.reserved))
		tmpl = tmpl[end+1:]
	}
	b.WriteString(tmpl)
	c.url = m.host + b.String()
	if len(m.query) > 0 {
		q := url.Values{}
		for _, name := range m.query {
			id := realID(pathVar{name: name})
			q.Set(name, id)
			if name == "project" && c.account == "" {
				c.account = "projects/" + id
			}
		}
		c.url += "?" + q.Encode()
	}
	return c
}

// projectIDGrammar is Google Cloud's grammar of a project's id (a
// lower-case letter, then lower-case letters, digits and hyphens, not
// ending with a hyphen, 30 characters at most; RESTScope takes ids
// shorter than the 6 characters new projects are given), a legacy
// domain-scoped project's (example.com:my-project), or a project's
// number: a path's projects/<id> names an account only then
// (defaultObjectAcl, an adversarial id, names none).
var projectIDGrammar = regexp.MustCompile(`^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)+:)?(?:[a-z](?:[a-z0-9-]{0,28}[a-z0-9])?)$|^[0-9]{1,30}$`)

// structural reports whether v is no id but a collection's name: the
// first of a flat path's {v2Id}/{v2Id1} (logging's parent,
// projects/<id>, folders/<id>, ...), after the version.
func structural(v pathVar) bool {
	return len(v.kind) > 1 && v.kind[0] == 'v' && v.kind[1] >= '0' && v.kind[1] <= '9'
}

// catchAll reports whether v is a part of a resource name that is more
// than one segment, sent as it is ({+name} of a flat path's
// .../{locationsId}/{locationsId1}:exportImage, Cloud Run's) or escaped in
// one segment (compute's {association} of a host,
// reservations/r/reservationBlocks/b/reservationSubBlocks/s); not Cloud
// Healthcare's {fhirId}/{fhirId1}, a FHIR resource's type and id, one
// segment each, nor Firestore's {documentsId}/{documentsId1}, a
// collection and a document of it (or, nested, a document's
// subcollection's document, as deep as the user nests them: given one
// segment here, so that a document's path is a collection and its id).
func catchAll(v pathVar) bool {
	return v.name == "association" || strings.HasSuffix(v.name, "Id1") && v.kind == "{}" &&
		v.name != "fhirId1" && v.name != "documentsId1"
}

// idsOf returns the ids that id, the value of v, holds, which no
// operation may: none of a structural variable; of a resource name of
// several segments (catchAll), the ids after its collections; of a Cloud
// Storage object's name, the name and its last part; the value itself
// otherwise.
func idsOf(v pathVar, id string) []string {
	switch {
	case structural(v):
		return nil
	case catchAll(v):
		var ids []string
		for i, p := range strings.Split(id, "/") {
			if i%2 == 1 {
				ids = append(ids, p)
			}
		}
		return ids
	case isObject(v):
		return []string{id, id[strings.LastIndexByte(id, '/')+1:]}
	}
	return []string{id}
}

func isNumber(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// escapeValue escapes v as RFC 6570's simple expansion does (all but the
// unreserved characters), or as its reserved expansion does ({+var}: the
// reserved characters kept).
func escapeValue(v string, reserved bool) string {
	var b strings.Builder
	for _, c := range []byte(v) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~", c) >= 0:
			b.WriteByte(c)
		case reserved && strings.IndexByte(":/?#[]@!$&'()*+,;=", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// discoveredMethods reads the methods of api's discovery document in dir
// (a method with a media upload also as its upload), and the API's name.
func discoveredMethods(t *testing.T, dir, api string) (string, []discoveredMethod) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(api), "*-api.json"))
	if len(files) != 1 {
		t.Fatalf("%s: discovery documents %q, want one", api, files)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var doc discoveryDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	root, err := url.Parse(doc.RootURL)
	if err != nil {
		t.Fatal(err)
	}
	host := root.Scheme + "://" + root.Host
	var ms []discoveredMethod
	var walk func(map[string]discoveryMethod, map[string]discoveryResource)
	walk = func(methods map[string]discoveryMethod, rs map[string]discoveryResource) {
		for _, m := range methods {
			var query []string
			for name, p := range m.Parameters {
				if p.Location == "query" && p.Required {
					query = append(query, name)
				}
			}
			sort.Strings(query)
			dm := discoveredMethod{api: api, id: m.ID, http: m.HTTPMethod, host: host, query: query}
			if m.FlatPath != "" && strings.Contains(m.Path, "{+") {
				// The client sends a {+name}, which its flat path spells.
				dm.tmpl, dm.flat = "/"+doc.ServicePath+m.FlatPath, true
			} else {
				dm.tmpl = "/" + doc.ServicePath + m.Path
			}
			ms = append(ms, dm)
			if m.MediaUpload != nil {
				// Not a {+parent} of an upload path (Artifact
				// Registry's), which no flat path spells.
				if s, ok := m.MediaUpload.Protocols["simple"]; ok && !strings.Contains(s.Path, "{+") {
					up := dm
					up.id, up.tmpl, up.flat = m.ID+"/upload", s.Path, false
					ms = append(ms, up)
				}
			}
		}
		for _, r := range rs {
			walk(r.Methods, r.Resources)
		}
	}
	walk(doc.Methods, doc.Resources)
	sort.Slice(ms, func(i, j int) bool { return ms[i].id < ms[j].id })
	return doc.Name, ms
}

// realID is an id like a real one of v's kind, and unlike any name of a
// collection or a verb, so that an operation holding it is seen to.
func realID(v pathVar) string {
	switch {
	case structural(v):
		return "projects"
	case isObject(v):
		return "dir/sub/obj-7a1.txt"
	case v.name == "association":
		return "reservations/res-7a1/reservationBlocks/blk-7a1/reservationSubBlocks/sub-7a1"
	case catchAll(v):
		return "services/svc-7a1"
	}
	switch v.kind {
	case "projects":
		return "proj-7a1"
	case "organizations":
		return "4471"
	case "folders":
		return "8812"
	case "locations", "regions":
		return "us-east7"
	case "zones":
		return "us-east7-b"
	}
	switch v.name {
	case "project", "projectId":
		return "proj-7a1"
	}
	return strings.ToLower(v.name) + "-7a1"
}

// isObject reports whether v is a Cloud Storage object's or folder's
// name, which may hold slashes (escaped in its one segment).
func isObject(v pathVar) bool {
	switch v.name {
	case "object", "sourceObject", "destinationObject", "folder", "sourceFolder", "destinationFolder", "managedFolder":
		return true
	}
	return false
}

// adversarialIDs are ids a variable is given in turn, the others real
// ones: names of collections and verbs that RESTScope knows, a location
// named global, a version's name, a singleton's name (an agent named
// agent, an ingress rule named firewall).
var adversarialIDs = []string{
	"agent", "firewall",
	"o", "b", "acl", "defaultObjectAcl", "folders", "managedFolders", "tables", "data", "models",
	"rrsets", "changes", "rules", "users", "databases", "sslCerts", "backupRuns", "resizeRequests",
	"projects", "organizations", "locations", "zones", "regions", "global", "aggregated", "family",
	"images", "instances", "operations", "rewriteTo", "copyTo", "moveTo", "renameTo", "start",
	"setLabels", "v1", "beta", "storage", "upload", "download", "batch",
}

// adversarialObjects are Cloud Storage objects' names, each escaped as
// one segment: slashes, dots, empty segments, a colon, a percent sign.
var adversarialObjects = []string{
	"../x", "a//b", "dir/", "/lead", "a/b/rewriteTo/b/c/o/d", "50%", "a:b", "x?y#z", "o/b", "b/bkt/o",
}

// adversarialFor returns the adversarial ids of v, a variable of api.
func adversarialFor(api string, v pathVar) []string {
	switch {
	case structural(v), catchAll(v), v.kind == "organizations", v.kind == "folders" && !isObject(v), v.name == "type":
		// No id, a name of several segments, a Resource Manager id (a
		// number), a DNS record type (A, AAAA, CNAME, ...).
		return nil
	}
	words := slices.Clone(adversarialIDs)
	if strings.HasPrefix(api, "compute/") {
		// compute's names are lower case (RFC 1035).
		words = slices.DeleteFunc(words, func(w string) bool { return strings.ToLower(w) != w })
	}
	if isObject(v) {
		words = append(words, adversarialObjects...)
	}
	if v.kind == "projects" || v.name == "project" || v.name == "projectId" {
		// A domain-scoped project (example.com:proj-7a1), but not as a
		// {+name}'s last segment, where its colon is a custom method's.
		if !v.reserved || !v.last {
			words = append(words, "example.com:proj-7a1")
		}
	} else if !v.reserved {
		words = append(words, "a:b") // escaped: %3A
	}
	return words
}

// methodName is the collection and verb a method's id names (the last
// two names of storage.objects.list, objects.list), which the operation
// names too, so that the same collection's methods under different
// parents share it: the verb alone of a method of a parent (Cloud KMS's
// projects.getAutokeyConfig and folders.getAutokeyConfig, logging's
// getSettings of every parent and its own), and compute's zonal,
// regional, global, folder's, organization's and network's collections
// as theirs (disks.get and regionDisks.get, operations.get and
// globalOrganizationOperations.get, firewallPolicies.get and
// networkFirewallPolicies.get are disks.get, operations.get and
// firewallPolicies.get).
func methodName(id string) string {
	id = strings.TrimSuffix(id, "/upload")
	parts := strings.Split(id, ".")
	parts = parts[max(0, len(parts)-2):]
	if len(parts) < 2 {
		return id
	}
	switch parts[0] {
	case "projects", "organizations", "folders", "billingAccounts", "locations", strings.Split(id, ".")[0]:
		return parts[1]
	}
	if strings.HasPrefix(id, "compute.") {
		c := parts[0]
		for again := true; again; {
			again = false
			for _, p := range []string{"folder", "global", "region", "zone", "organization", "network"} {
				if rest, ok := strings.CutPrefix(c, p); ok && rest != "" && rest[0] >= 'A' && rest[0] <= 'Z' {
					c, again = strings.ToLower(rest[:1])+rest[1:], true
				}
			}
		}
		if c == "endpointGroups" { // networkEndpointGroups, not network's
			c = "networkEndpointGroups"
		}
		parts[0] = c
	}
	return strings.Join(parts, ".")
}

// TestRESTScopeReadsEveryDiscoveredMethod reads every method of the
// discovery documents of discoveryAPIs (those of the google.golang.org/api
// this module requires) through RESTScope, its path's variables given real
// ids and then each, in turn, adversarial ones (adversarialFor), and
// states RESTScope's rules: the scope's service is the API's name; the
// account is the first project, organization or folder the path names (or
// its project query parameter); there is an operation, no id is part of
// it, and it is the same whatever the ids; and two methods of different
// collections or verbs never share an operation, but for the known
// exceptions (sharedOperations), listed with why.
func TestRESTScopeReadsEveryDiscoveredMethod(t *testing.T) {
	dir := discoveryDir(t)
	scope := cloudggcp.RESTScope()
	read := func(c discoveredCall) resilience.Scope {
		req, err := http.NewRequest(c.http, c.url, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.method, err)
		}
		return scope(req)
	}
	for _, api := range discoveryAPIs {
		name, methods := discoveredMethods(t, dir, api)
		if len(methods) == 0 {
			t.Fatalf("%s: no methods", api)
		}
		ops := map[string][]string{} // operation -> the methods named so
		var errs []string
		for _, m := range methods {
			c := m.call(func(_ int, v pathVar) string { return realID(v) })
			s := read(c)
			if s.Service != name {
				errs = append(errs, fmt.Sprintf("%s %s %s: service %q, want %q", m.id, c.http, c.url, s.Service, name))
			}
			if s.Account != c.account {
				errs = append(errs, fmt.Sprintf("%s %s %s: account %q, want %q", m.id, c.http, c.url, s.Account, c.account))
			}
			if s.Operation == "" {
				errs = append(errs, fmt.Sprintf("%s %s %s: no operation", m.id, c.http, c.url))
			}
			for _, id := range c.ids {
				if strings.Contains(s.Operation, id) {
					errs = append(errs, fmt.Sprintf("%s %s %s: operation %q holds the id %q", m.id, c.http, c.url, s.Operation, id))
				}
			}
			if n := methodName(m.id); !slices.Contains(ops[s.Operation], n) {
				ops[s.Operation] = append(ops[s.Operation], n)
			}
			if strings.HasPrefix(api, "compute/v0.") {
				continue // v1's paths, read with adversarial ids once
			}
			for k, v := range m.vars() {
				for _, w := range adversarialFor(api, v) {
					adv := m.call(func(i int, v pathVar) string {
						if i == k {
							return w
						}
						return realID(v)
					})
					got := read(adv)
					if got.Operation != s.Operation || got.Service != s.Service || got.Account != adv.account {
						errs = append(errs, fmt.Sprintf("%s %s %s: scope %s %s %s, want %s %s %s, as with real ids",
							m.id, adv.http, adv.url, got.Account, got.Service, got.Operation, adv.account, s.Service, s.Operation))
					}
				}
			}
		}
		for op, names := range ops {
			sort.Strings(names)
			if len(names) > 1 && !slices.Equal(sharedOperations[api+" "+op], names) {
				errs = append(errs, fmt.Sprintf("%s: methods %q share the operation %q", api, names, op))
			}
		}
		sort.Strings(errs)
		for i, e := range errs {
			if i == 40 {
				t.Errorf("%s: and %d more", api, len(errs)-i)
				break
			}
			t.Error(e)
		}
	}
}

// sharedOperations are the operations that methods of different
// collections or verbs share, by API and operation: their paths do not
// tell them apart, and RESTScope reads nothing else.
var sharedOperations = map[string][]string{
	// A bucket's ACL and an object's are each acl in the path
	// (.../b/<bucket>/acl/<entity>, .../o/<object>/acl/<entity>): the
	// operation names the collection, not its parent's kind.
	"storage/v1 acl_delete": {"bucketAccessControls.delete", "objectAccessControls.delete"},
	"storage/v1 acl_get":    {"bucketAccessControls.get", "objectAccessControls.get"},
	"storage/v1 acl_insert": {"bucketAccessControls.insert", "objectAccessControls.insert"},
	"storage/v1 acl_list":   {"bucketAccessControls.list", "objectAccessControls.list"},
	"storage/v1 acl_patch":  {"bucketAccessControls.patch", "objectAccessControls.patch"},
	"storage/v1 acl_update": {"bucketAccessControls.update", "objectAccessControls.update"},
	// A managed zone's operations and a location's are operations in
	// the path.
	"dns/v1 operations_get": {"managedZoneOperations.get", "operations.get"},
	// Their {+name} is a resource name of any kind and length
	// (catchAll gives both services/<id>): the operation names its
	// last collection.
	"run/v2 services_exportStatus": {"executions.exportStatus", "revisions.exportStatus"},
	// A database's scans (v1/<database>/scans) and the project's
	// (v1/scans) are scans in the path.
	"spanner/v1 scans_list": {"databases.getScans", "scans.list"},
	// An API whose paths start with the version: a GET verb after a
	// collection (v3/tagKeys/namespaced?name=...) is read as a get of
	// a resource so named, as an id would be.
	"cloudresourcemanager/v3 tagKeys_get":   {"tagKeys.get", "tagKeys.getNamespaced"},
	"cloudresourcemanager/v3 tagValues_get": {"tagValues.get", "tagValues.getNamespaced"},
	// Drive's collections nested in a file (files/<id>/comments,
	// permissions, replies) are read as the file's verbs, and its
	// verbs of the collection (files/generateIds, files/trash) as a
	// file: RESTScope's godoc says to govern such an API with a scope
	// function of one's own.
	"drive/v3 files_comments":    {"comments.create", "comments.list"},
	"drive/v3 files_delete":      {"files.delete", "files.emptyTrash"},
	"drive/v3 files_get":         {"files.generateCseToken", "files.generateIds", "files.get"},
	"drive/v3 files_permissions": {"permissions.create", "permissions.list"},
	"drive/v3 comments_replies":  {"replies.create", "replies.list"},
	// A session's contexts deleted at once (DELETE .../sessions/<s>/contexts)
	// and one of them: a DELETE of the collection and of its resource.
	"dialogflow/v2 contexts_delete": {"contexts.delete", "sessions.deleteContexts"},
	// An agent's validation result and a flow's are each the singleton
	// validationResult in the path, as a bucket's ACL and an object's.
	"dialogflow/v3 validationResult_list": {"agents.getValidationResult", "flows.getValidationResult"},
	// An asset's security marks and a finding's alike.
	"securitycenter/v1 securityMarks_patch": {"assets.updateSecurityMarks", "findings.updateSecurityMarks"},
	// A FHIR store's interactions are named by the kind of FHIR request
	// Cloud Healthcare's quotas count, a project's in a region per kind
	// (read, write, search), whatever the resource's type
	// (fhir/<type>/<id>) or the method: Binary is one type, its methods
	// the read, create, update and vread of a resource; a vread is a
	// read; a create, an update, a patch and a delete, conditional or
	// not, are writes; a type's search and the store's are one
	// interaction. An operation ($export, $consent-enforcement-status)
	// is its name at every level (the store's, a group's, a patient's or
	// a consent's).
	"healthcare/v1 fhir_read": {"fhir.Binary-read", "fhir.Binary-vread", "fhir.read", "fhir.vread"},
	"healthcare/v1 fhir_write": {"fhir.Binary-create", "fhir.Binary-update", "fhir.conditionalDelete", "fhir.conditionalPatch",
		"fhir.conditionalUpdate", "fhir.create", "fhir.delete", "fhir.patch", "fhir.update"},
	"healthcare/v1 fhir_search":                      {"fhir.search", "fhir.search-type"},
	"healthcare/v1 fhir_$consent-enforcement-status": {"fhir.Consent-enforcement-status", "fhir.Patient-consent-enforcement-status"},
	"healthcare/v1 fhir_$export":                     {"fhir.bulk-export", "fhirStores.bulk-export-group"},
	// DICOMweb's searches and retrievals of a store's, a study's or a
	// series' instances, series, metadata or rendering are each the
	// same collection in the path, as a bucket's ACL and an object's.
	"healthcare/v1 instances_list": {"dicomStores.searchForInstances", "series.searchForInstances", "studies.searchForInstances"},
	"healthcare/v1 series_list":    {"dicomStores.searchForSeries", "studies.searchForSeries"},
	"healthcare/v1 metadata_list":  {"instances.retrieveMetadata", "series.retrieveMetadata", "studies.retrieveMetadata"},
	"healthcare/v1 rendered_list":  {"frames.retrieveRendered", "instances.retrieveRendered"},
	// A database's collection of documents and a document's
	// subcollection are each a collection of documents in the path
	// (.../documents/<collection>, .../documents/<collection>/<doc>/<collection>),
	// listed alike.
	"firestore/v1 documents_list": {"documents.list", "documents.listDocuments"},
	// A response's creation through the OpenAI-compatible endpoint
	// (.../endpoints/openapi/responses) and through a publisher's
	// (.../publishers/<p>/v1/responses) are the responses' create in
	// the path; an operation's wait asked with a GET (listWait) and
	// with a POST alike.
	"aiplatform/v1 responses_create": {"openapi.responses", "v1.responses"},
	"aiplatform/v1 operations_wait":  {"operations.listWait", "operations.wait"},
	// A FHIR store's long-running operation is an operation, read as
	// a get whether its status is asked of the dataset's operations
	// or the store's.
	"healthcare/v1 operations_get": {"operations.get", "operations.get-fhir-operation-status"},
}

// singletonExceptions are the literals after an id, then a collection and
// its id, in the shipped discovery documents whose paths start with the
// version, that RESTScope does not read as singletons, with why: a second
// version (Vertex AI's publishers/<p>/v1/responses, Service Broker's
// brokers/<b>/v2/service_instances), compute-style global (read already),
// and names that are a collection of ids too in some API (apps,
// documents) or whose next segment is an id or a name alike (Cloud
// Healthcare's fhir/<type>/<id> and fhir/<id>, Firebase Data Connect's
// postgrest/<id> and postgrest/rpc/<rpc>).
var singletonExceptions = map[string]bool{
	"v1": true, "v2": true, "global": true, "apps": true, "documents": true, "fhir": true, "postgrest": true,
}

// TestRESTScopeReadsEverySingletonsCollections reads through RESTScope
// every method of every discovery document google.golang.org/api ships
// whose path starts with the version and names, after an id, a singleton
// of its document that holds a collection (singletonAt: Dialogflow ES's
// projects/{p}/agent/intents/{i}, Vertex AI's
// .../locations/{l}/ragEngineConfig/operations/{op}, Discovery Engine's
// .../siteSearchEngine/targetSites/operations/{op}, a collection's own
// operations): the singleton's own methods, its collections' lists and
// its collections' resources alike, its variables given real ids. It
// states that no id is part of the operation (one leaf bucket and breaker
// per id would be scopes without bound), and that a standard method (get,
// list, create, patch, delete) is read as its collection's
// (operations.list is operations_list, never a target site's get).
func TestRESTScopeReadsEverySingletonsCollections(t *testing.T) {
	dir := discoveryDir(t)
	docs, _ := filepath.Glob(filepath.Join(dir, "*", "*", "*-api.json"))
	scope := cloudggcp.RESTScope()
	seen := map[string]bool{}
	read := 0
	for _, f := range docs {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !namesSingleton(raw) {
			continue // no path of the document names one: not decoded, which is most of the test's time
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(f))
		api := filepath.ToSlash(rel)
		_, methods := discoveredMethods(t, dir, api)
		var reads []discoveredMethod
		singletons := map[string]bool{}
		for _, m := range methods {
			if strings.Contains(m.tmpl, "{+") {
				continue // a path spelled by its {+name}s alone, which no flat path spells
			}
			segs := strings.Split(strings.TrimPrefix(m.tmpl, "/"), "/")
			if len(segs) == 0 || len(segs[0]) < 2 || segs[0][0] != 'v' || segs[0][1] < '0' || segs[0][1] > '9' {
				continue // not a path that starts with the version
			}
			if singleton, ok := singletonAt(segs); ok {
				singletons[singleton] = true
			}
			reads = append(reads, m)
		}
		for _, m := range reads {
			segs := strings.Split(strings.TrimPrefix(m.tmpl, "/"), "/")
			singleton, ok := singletonIn(segs, singletons)
			if !ok {
				continue
			}
			seen[singleton] = true
			c := m.call(func(_ int, v pathVar) string { return realID(v) })
			req, err := http.NewRequest(c.http, c.url, nil)
			if err != nil {
				t.Fatalf("%s: %v", m.id, err)
			}
			read++
			s := scope(req)
			for _, id := range c.ids {
				if strings.Contains(s.Operation, id) {
					t.Errorf("%s %s %s: operation %q holds the id %q", m.id, c.http, c.url, s.Operation, id)
				}
			}
			parts := strings.Split(m.id, ".")
			switch verb := parts[len(parts)-1]; verb {
			case "get", "list", "create", "patch", "delete":
				if want := parts[len(parts)-2] + "_" + verb; s.Operation != want {
					t.Errorf("%s %s %s: operation %q, want %q", m.id, c.http, c.url, s.Operation, want)
				}
			}
		}
	}
	for _, name := range []string{"agent", "ragEngineConfig", "securityHealthAnalyticsSettings", "siteSearchEngine"} {
		if !seen[name] {
			t.Errorf("no method of a singleton %s among %d documents: the test reads none", name, len(docs))
		}
	}
	t.Logf("%d methods of %d singletons in %d documents", read, len(seen), len(docs))
}

// namesSingleton reports whether a discovery document (raw, its JSON) has
// a path or flat path with a singleton in it (singletonAt), as a scan of
// its "path" and "flatPath" values: a document with none has no method
// TestRESTScopeReadsEverySingletonsCollections reads, and is not decoded.
// It scans the document's bytes for those keys rather than match a
// regular expression against them or decode them, which, under the race
// detector, took most of the test's time (143 MB of documents).
func namesSingleton(raw []byte) bool {
	for _, key := range []string{`"path":`, `"flatPath":`} {
		for rest := raw; ; {
			i := bytes.Index(rest, []byte(key))
			if i < 0 {
				break
			}
			rest = bytes.TrimLeft(rest[i+len(key):], " \t\r\n")
			if len(rest) == 0 || rest[0] != '"' {
				continue
			}
			j := bytes.IndexByte(rest[1:], '"')
			if j < 0 {
				break
			}
			if _, ok := singletonAt(strings.Split(string(rest[1:1+j]), "/")); ok {
				return true
			}
			rest = rest[1+j:]
		}
	}
	return false
}

// singletonAt returns the first singleton of a path template's segments:
// a literal after an id, then a literal and an id (a collection of the
// singleton's and its id), or then a literal, operations and an id or the
// path's end (a collection of the singleton's and that collection's own
// operations, with no id between: Discovery Engine's
// siteSearchEngine/targetSites/operations/{op}, not the location global's
// operations, locations/global/operations/{op}); not one of
// singletonExceptions.
func singletonAt(segs []string) (string, bool) {
	for i := 1; i+2 < len(segs); i++ {
		if !isVar(segs[i-1]) || isVar(segs[i]) || isVar(segs[i+1]) || singletonExceptions[segs[i]] {
			continue
		}
		if isVar(segs[i+2]) || segs[i+1] != "global" && segs[i+2] == "operations" && (i+3 == len(segs) || isVar(segs[i+3])) {
			return segs[i], true
		}
	}
	return "", false
}

// singletonIn returns the first of singletons a path template's segments
// name after an id: its own methods' paths (.../{p}/agent,
// .../{p}/agent:train), its collections' lists and its collections'
// resources.
func singletonIn(segs []string, singletons map[string]bool) (string, bool) {
	for i := 1; i < len(segs); i++ {
		name, _, _ := strings.Cut(segs[i], ":")
		if isVar(segs[i-1]) && singletons[name] {
			return name, true
		}
	}
	return "", false
}

// isVar reports whether a segment of a path template is a variable.
func isVar(seg string) bool { return strings.HasPrefix(seg, "{") }
