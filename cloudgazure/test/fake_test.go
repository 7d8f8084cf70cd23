package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// Subscriptions of the tests. subA is upper-case in the URLs the clients
// build; its scopes are lower-case.
const (
	subA      = "0B1F6471-1BF0-4DDA-AEC3-CB9272F09590"
	subALower = "0b1f6471-1bf0-4dda-aec3-cb9272f09590"
	subB      = "5d2c7e1a-8f3b-4c6d-9e0f-a1b2c3d4e5f6"
)

var (
	networkA   = resilience.Scope{Provider: "azure", Account: subALower, Service: "network"}
	resourcesA = resilience.Scope{Provider: "azure", Account: subALower, Service: "resources"}
	resourcesB = resilience.Scope{Provider: "azure", Account: subB, Service: "resources"}
	graphScope = resilience.Scope{Provider: "azure", Service: "resourcegraph"}
)

// Routes of the fake ARM server.
const (
	routeGroupList = "groups.list"   // GET /subscriptions/{sub}/resourcegroups
	routeGroupGet  = "groups.get"    // GET /subscriptions/{sub}/resourcegroups/{rg}
	routeVnetGet   = "vnets.get"     // GET .../providers/Microsoft.Network/virtualNetworks/{name}
	routeVnetList  = "vnets.listall" // GET /subscriptions/{sub}/providers/Microsoft.Network/virtualNetworks
	routeGraph     = "graph"         // POST /providers/Microsoft.ResourceGraph/resources
	routeGroupPut  = "groups.put"    // PUT /subscriptions/{sub}/resourcegroups/{rg}
	routeGroupDel  = "groups.delete" // DELETE /subscriptions/{sub}/resourcegroups/{rg}
	routeProvider  = "providers.get" // GET /providers/{namespace}, a tenant-level request
	// GET /providers, the tenant's resource providers: a tenant-level
	// request of no namespace (azure/*/*/resources)
	routeProviderList = "providers.list"
	// POST /providers/Microsoft.Management/managementGroups/{group}/providers/{namespace}/register,
	// a tenant-level write
	routeRegister = "providers.register"
)

// reply is one scripted answer of the fake server.
type reply struct {
	status int         // 0: 200 with the route's body
	header http.Header // added to the answer
	code   string      // error code in the body of an error answer
	msg    string      // its message; "scripted answer" when empty
	noCode bool        // the error body names no code
	block  bool        // hold the request until its context ends
	fail   error       // in-memory transport only: fail the attempt with this error
	// in-memory transport only: answer 200 with a body that breaks off,
	// and count its closing in *closed.
	brokenBody *atomic.Int32
}

func throttled(retryAfter string) reply {
	r := reply{status: http.StatusTooManyRequests, code: "SubscriptionRequestsThrottled"}
	if retryAfter != "" {
		r.header = http.Header{"Retry-After": {retryAfter}}
	}
	return r
}

func withHeader(r reply, kv ...string) reply {
	h := http.Header{}
	for k, v := range r.header {
		h[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	r.header = h
	return r
}

// hit is one request the fake server received.
type hit struct {
	route string
	sub   string
	at    time.Time
	skip  string // the page asked for
}

// fakeARM is an ARM endpoint good enough for the real clients: resource
// groups (get, create, delete, paged list), resource providers at the
// tenant's scope (get, and registration at a management group's), virtual
// networks (get, list all) and Resource Graph queries (paged with skip
// tokens). Replies are scripted per route: a queue, then a reply that
// repeats, then success.
type fakeARM struct {
	mu      sync.Mutex
	queue   map[string][]reply
	always  map[string]*reply
	onOK    map[string]http.Header // headers of successes
	hits    []hit
	entered chan string // receives the route of every request, if set

	groups     int // resource groups in the list
	groupPage  int // per page
	graphPages int // pages of a Resource Graph query, two rows each
	// graphNext, when set, is the skip token of the answer to a page
	// asked with a skip token ("" for the first page): none when absent.
	graphNext map[string]string
	// graphTruncated answers every page with resultTruncated true;
	// graphTotal, when set, is every page's totalRecords (else two rows
	// a page).
	graphTruncated bool
	graphTotal     int
	// graphEdit, when set, edits the answer to a Resource Graph page
	// asked with a skip token ("" for the first page) before it is sent.
	graphEdit func(skip string, page map[string]any)
}

func newFakeARM() *fakeARM {
	return &fakeARM{
		queue:      map[string][]reply{},
		always:     map[string]*reply{},
		onOK:       map[string]http.Header{},
		groups:     5,
		groupPage:  2,
		graphPages: 3,
	}
}

// script queues replies for a route, answered in order.
func (f *fakeARM) script(route string, rs ...reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue[route] = append(f.queue[route], rs...)
}

// forever answers every request of a route with r once its queue is empty.
func (f *fakeARM) forever(route string, r reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.always[route] = &r
}

// okHeaders adds headers to the successes of a route.
func (f *fakeARM) okHeaders(route string, kv ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	f.onOK[route] = h
}

func (f *fakeARM) hitsOf(route string) []hit {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []hit
	for _, h := range f.hits {
		if h.route == route {
			out = append(out, h)
		}
	}
	return out
}

func (f *fakeARM) count(route string) int { return len(f.hitsOf(route)) }

func (f *fakeARM) next(route string) (reply, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q := f.queue[route]; len(q) > 0 {
		f.queue[route] = q[1:]
		return q[0], true
	}
	if r := f.always[route]; r != nil {
		return *r, true
	}
	return reply{}, false
}

func route(method, path string) (name, sub, rest string) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	low := make([]string, len(segs))
	for i, s := range segs {
		low[i] = strings.ToLower(s)
	}
	switch {
	case method == http.MethodPost && len(low) == 3 && low[0] == "providers" && low[1] == "microsoft.resourcegraph" && low[2] == "resources":
		return routeGraph, "", ""
	case len(low) == 3 && low[0] == "subscriptions" && low[2] == "resourcegroups":
		return routeGroupList, segs[1], ""
	case method == http.MethodPut && len(low) == 4 && low[0] == "subscriptions" && low[2] == "resourcegroups":
		return routeGroupPut, segs[1], segs[3]
	case method == http.MethodDelete && len(low) == 4 && low[0] == "subscriptions" && low[2] == "resourcegroups":
		return routeGroupDel, segs[1], segs[3]
	case len(low) == 4 && low[0] == "subscriptions" && low[2] == "resourcegroups":
		return routeGroupGet, segs[1], segs[3]
	case method == http.MethodGet && len(low) == 1 && low[0] == "providers":
		return routeProviderList, "", ""
	case method == http.MethodGet && len(low) == 2 && low[0] == "providers":
		return routeProvider, "", segs[1]
	case method == http.MethodPost && len(low) == 7 && low[0] == "providers" && low[1] == "microsoft.management" &&
		low[2] == "managementgroups" && low[4] == "providers" && low[6] == "register":
		return routeRegister, "", segs[5]
	case len(low) == 5 && low[0] == "subscriptions" && low[3] == "microsoft.network" && low[4] == "virtualnetworks":
		return routeVnetList, segs[1], ""
	case len(low) == 8 && low[0] == "subscriptions" && low[5] == "microsoft.network" && low[6] == "virtualnetworks":
		return routeVnetGet, segs[1], segs[7]
	}
	return "", "", ""
}

func (f *fakeARM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, sub, rest := route(r.Method, r.URL.Path)
	if name == "" {
		writeError(w, http.StatusNotFound, "InvalidResourceType", "no route for "+r.URL.Path)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		writeError(w, http.StatusUnauthorized, "AuthenticationFailed", "no bearer token")
		return
	}
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
	}
	skip := r.URL.Query().Get("$skiptoken")
	graphFormat := ""
	if name == routeGraph {
		var q struct {
			Options struct {
				SkipToken    string `json:"$skipToken"`
				ResultFormat string `json:"resultFormat"`
			} `json:"options"`
		}
		_ = json.Unmarshal(body, &q)
		skip = q.Options.SkipToken
		graphFormat = q.Options.ResultFormat
	}
	f.mu.Lock()
	f.hits = append(f.hits, hit{route: name, sub: sub, at: time.Now(), skip: skip})
	entered := f.entered
	f.mu.Unlock()
	if entered != nil {
		entered <- name
	}
	rp, scripted := f.next(name)
	if scripted && rp.block {
		<-r.Context().Done()
		return
	}
	for k, v := range rp.header {
		w.Header()[k] = v
	}
	if scripted && rp.status >= 300 {
		code, msg := rp.code, rp.msg
		if code == "" && !rp.noCode {
			code = http.StatusText(rp.status)
		}
		if msg == "" {
			msg = "scripted answer"
		}
		writeError(w, rp.status, code, msg)
		return
	}
	f.mu.Lock()
	for k, v := range f.onOK[name] {
		w.Header()[k] = v
	}
	f.mu.Unlock()
	if name == routeGroupDel {
		w.WriteHeader(http.StatusOK) // deleted: no body, nothing to poll
		return
	}
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	base := "http://" + host
	w.Header().Set("Content-Type", "application/json")
	var out any
	switch name {
	case routeGroupGet, routeGroupPut:
		out = group(sub, rest)
	case routeProvider, routeRegister:
		out = map[string]any{"id": "/providers/" + rest, "namespace": rest, "registrationState": "Registered"}
	case routeProviderList:
		out = map[string]any{"value": []any{map[string]any{"id": "/providers/Microsoft.Compute", "namespace": "Microsoft.Compute"}}}
	case routeGroupList:
		from, _ := strconv.Atoi(skip)
		var items []any
		for i := from; i < min(from+f.groupPage, f.groups); i++ {
			items = append(items, group(sub, fmt.Sprintf("rg-%d", i)))
		}
		page := map[string]any{"value": items}
		if from+f.groupPage < f.groups {
			page["nextLink"] = fmt.Sprintf("%s/subscriptions/%s/resourcegroups?api-version=2021-04-01&$skiptoken=%d", base, sub, from+f.groupPage)
		}
		out = page
	case routeVnetGet:
		out = vnet(sub, rest)
	case routeVnetList:
		out = map[string]any{"value": []any{vnet(sub, "vnet-0"), vnet(sub, "vnet-1")}}
	case routeGraph:
		p := 0
		if skip != "" {
			p, _ = strconv.Atoi(strings.TrimPrefix(skip, "p"))
		}
		var rows any = []any{
			map[string]any{"id": fmt.Sprintf("/r/%d-0", p)},
			map[string]any{"id": fmt.Sprintf("/r/%d-1", p)},
		}
		if graphFormat == "table" {
			rows = map[string]any{
				"columns": []any{map[string]any{"name": "id", "type": "string"}},
				"rows":    []any{[]any{fmt.Sprintf("/r/%d-0", p)}, []any{fmt.Sprintf("/r/%d-1", p)}},
			}
		}
		total, truncated := 2*f.graphPages, "false"
		if f.graphTotal != 0 {
			total = f.graphTotal
		}
		if f.graphTruncated {
			truncated = "true"
		}
		page := map[string]any{"totalRecords": total, "count": 2, "data": rows, "resultTruncated": truncated}
		next := ""
		if p+1 < f.graphPages {
			next = fmt.Sprintf("p%d", p+1)
		}
		if f.graphNext != nil {
			next = f.graphNext[skip]
		}
		if next != "" {
			page["$skipToken"] = next
		}
		f.mu.Lock()
		edit := f.graphEdit
		f.mu.Unlock()
		if edit != nil {
			edit(skip, page)
		}
		out = page
	}
	_ = json.NewEncoder(w).Encode(out)
}

func group(sub, name string) map[string]any {
	return map[string]any{
		"id":       "/subscriptions/" + sub + "/resourceGroups/" + name,
		"name":     name,
		"location": "westeurope",
	}
}

func vnet(sub, name string) map[string]any {
	return map[string]any{
		"id":         "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/" + name,
		"name":       name,
		"location":   "westeurope",
		"properties": map[string]any{"addressSpace": map[string]any{"addressPrefixes": []string{"10.0.0.0/16"}}},
	}
}

// writeError writes ARM's error body; one without code when code is "".
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body := map[string]any{"message": msg}
	if code != "" {
		body["code"] = code
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": body})
}
