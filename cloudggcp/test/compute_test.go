package test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"

	"github.com/cloudg/cloudg/cloudggcp"
	"github.com/cloudg/cloudg/resilience"
)

// The real Compute Engine REST client, governed with RESTClientOption,
// against a fake Compute API on 127.0.0.1. Sockets cannot be inside a
// synctest bubble, so the delays here are 0 (Retry-After: 0) and the
// governor's backoff a millisecond; the waits themselves are tested in
// virtual time in package cloudghttp.

// reply is one scripted error answer of the fake.
type reply struct {
	status     int
	reason     string
	retryAfter string
	message    string // the error's message; the reason when empty
	retryDelay string // a google.rpc.RetryInfo's retryDelay in the error's details ("30s"); none when empty
}

type hit struct{ route, method, body string }

// fakeCompute answers instances.get, list and insert for any project and
// zone, with scripted error answers per route first.
type fakeCompute struct {
	mu    sync.Mutex
	queue map[string][]reply
	hits  []hit
}

func (f *fakeCompute) script(route string, rs ...reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queue == nil {
		f.queue = map[string][]reply{}
	}
	f.queue[route] = append(f.queue[route], rs...)
}

func (f *fakeCompute) hitsOf(route string) []hit {
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

func (f *fakeCompute) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// /compute/v1/projects/{p}/zones/{z}/instances[/{name}]
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	route := ""
	switch {
	case len(segs) == 7 && segs[6] == "instances" && r.Method == http.MethodGet:
		route = "list"
	case len(segs) == 7 && segs[6] == "instances" && r.Method == http.MethodPost:
		route = "insert"
	case len(segs) == 8 && segs[6] == "instances" && r.Method == http.MethodGet:
		route = "get"
	default:
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.hits = append(f.hits, hit{route: route, method: r.Method, body: string(body)})
	var rp *reply
	if q := f.queue[route]; len(q) > 0 {
		rp, f.queue[route] = &q[0], q[1:]
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if rp != nil {
		if rp.retryAfter != "" {
			w.Header().Set("Retry-After", rp.retryAfter)
		}
		w.WriteHeader(rp.status)
		msg := rp.message
		if msg == "" {
			msg = rp.reason
		}
		e := map[string]any{
			"code": rp.status, "message": msg,
			"errors": []any{map[string]any{"domain": "usageLimits", "reason": rp.reason, "message": msg}},
		}
		if rp.retryDelay != "" {
			// As Google's front ends answer a rate quota: the delay in the
			// error's details, no Retry-After header.
			e["status"] = "RESOURCE_EXHAUSTED"
			e["details"] = []any{
				map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": rp.retryDelay},
				map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED", "domain": "googleapis.com"},
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
		return
	}
	var out any
	switch route {
	case "get":
		out = map[string]any{"name": segs[7], "id": "1", "status": "RUNNING"}
	case "list":
		out = map[string]any{"items": []any{map[string]any{"name": "vm-a"}, map[string]any{"name": "vm-b"}}}
	case "insert":
		out = map[string]any{"name": "op-1", "status": "DONE", "operationType": "insert"}
	}
	_ = json.NewEncoder(w).Encode(out)
}

func scope(op string) resilience.Scope {
	return resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "compute", Operation: op}
}

// setup returns a governed compute REST client for a fresh fake. The
// governor gives instances.get and instances.list leaves of their own
// (ceilings 7 and 3 rps), so that a test can tell which scope a request
// went to, and backs off a millisecond; with changes made by each of
// configure.
func setup(t *testing.T, configure ...func(*resilience.ProviderConfig)) (*fakeCompute, *compute.InstancesClient, *resilience.Governor) {
	t.Helper()
	f := &fakeCompute{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	pc := resilience.ProviderConfig{
		BaseDelaySeconds: 0.001, MaxBackoffSeconds: 0.01,
		Services: map[string]resilience.ServiceConfig{
			"compute.instances_get":  {MaxRPS: 7, Burst: 20},
			"compute.instances_list": {MaxRPS: 3, Burst: 20},
		},
	}
	for _, c := range configure {
		c(&pc)
	}
	gov, err := resilience.NewGovernor(resilience.Config{GCP: pc})
	if err != nil {
		t.Fatal(err)
	}
	return f, restInstances(t, gov, srv.URL, option.WithoutAuthentication()), gov
}

// restInstances is compute's REST instances client at endpoint, built
// with cloudggcp.RESTClientOption on gov and the authentication auth says
// (option.WithoutAuthentication, or a service account whose token
// endpoint a test serves), closed when the test ends.
func restInstances(t *testing.T, gov *resilience.Governor, endpoint string, auth ...option.ClientOption) *compute.InstancesClient {
	t.Helper()
	ctx := context.Background()
	rest, err := cloudggcp.RESTClientOption(ctx, auth, cloudggcp.WithGovernor(gov))
	if err != nil {
		t.Fatal(err)
	}
	c, err := compute.NewInstancesRESTClient(ctx, rest, option.WithEndpoint(endpoint))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A throttled get is paced in its own scope
// (gcp/projects/p1/*/compute/instances_get) and retried by the Transport.
func TestRESTGetIsGovernedPerMethod(t *testing.T) {
	f, c, gov := setup(t)
	f.script("get", reply{status: http.StatusTooManyRequests, reason: "rateLimitExceeded", retryAfter: "0"})
	ctx, stats := resilience.WithStats(context.Background())
	inst, err := c.Get(ctx, &computepb.GetInstanceRequest{Project: "p1", Zone: "europe-west1-b", Instance: "vm-1"})
	if err != nil {
		t.Fatal(err)
	}
	if inst.GetName() != "vm-1" || len(f.hitsOf("get")) != 2 {
		t.Fatalf("instance %q after %d requests, want vm-1 after 2", inst.GetName(), len(f.hitsOf("get")))
	}
	if tot := gov.Summary(stats).Totals; tot.Throttled != 1 || tot.Retries != 1 || tot.Calls != 2 {
		t.Fatalf("totals %v, want 2 calls, 1 throttle, 1 retry", tot)
	}
	if leaf := gov.Inspect(scope("instances_get")).Leaf; leaf.Ceiling != 7 || leaf.Rate >= 7 {
		t.Fatalf("instances_get leaf %+v, want its own (ceiling 7) and slowed", leaf)
	}
	// The list is a scope of its own, untouched by the get's throttle.
	it := c.List(ctx, &computepb.ListInstancesRequest{Project: "p1", Zone: "europe-west1-b"})
	var names []string
	for {
		inst, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, inst.GetName())
	}
	if len(names) != 2 {
		t.Fatalf("listed %v", names)
	}
	if leaf := gov.Inspect(scope("instances_list")).Leaf; leaf.Ceiling != 3 || leaf.Rate != 3 {
		t.Fatalf("instances_list leaf %+v, want its own (ceiling 3) at full rate", leaf)
	}
	if m := stats.Messages(); len(m) != 1 || !strings.HasPrefix(m[0], "gcp/projects/p1/*/compute: throttled 1x") {
		t.Fatalf("messages %q", m)
	}
}

// A throttled insert (a POST) is sent again with its body: a 429 says
// Compute did not act on it. (A 503 does not: the insert is not sent
// again after one, as compute's own client does not retry it.)
func TestRESTInsertThrottleIsResent(t *testing.T) {
	f, c, _ := setup(t)
	f.script("insert", reply{status: http.StatusTooManyRequests, reason: "rateLimitExceeded", retryAfter: "0"})
	op, err := c.Insert(context.Background(), &computepb.InsertInstanceRequest{
		Project: "p1", Zone: "europe-west1-b",
		InstanceResource: &computepb.Instance{Name: proto.String("vm-new"), MachineType: proto.String("e2-small")},
	})
	if err != nil {
		t.Fatal(err)
	}
	hits := f.hitsOf("insert")
	if op.Name() != "op-1" || len(hits) != 2 || hits[0].body != hits[1].body || !strings.Contains(hits[0].body, "vm-new") {
		t.Fatalf("operation %q after %+v, want op-1 after the same body twice", op.Name(), hits)
	}
}

// An insert answered 503 is not sent again (Compute may have acted on it
// behind the front end that answered): the client gets the 503, and the
// scope is slowed as by a throttle.
func TestRESTInsertUnavailableIsNotResent(t *testing.T) {
	f, c, _ := setup(t)
	f.script("insert", reply{status: http.StatusServiceUnavailable, reason: "backendError", retryAfter: "0"})
	_, err := c.Insert(context.Background(), &computepb.InsertInstanceRequest{
		Project: "p1", Zone: "europe-west1-b",
		InstanceResource: &computepb.Instance{Name: proto.String("vm-new"), MachineType: proto.String("e2-small")},
	})
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != http.StatusServiceUnavailable {
		t.Fatalf("err %v, want a *googleapi.Error 503", err)
	}
	if n := len(f.hitsOf("insert")); n != 1 {
		t.Fatalf("%d inserts sent, want 1", n)
	}
}

// A 403 is the client's own error, sent once: the Transport hands the
// response back and the client's error handling makes it a
// *googleapi.Error.
func TestRESTForbiddenReachesTheClient(t *testing.T) {
	f, c, gov := setup(t)
	f.script("get", reply{status: http.StatusForbidden, reason: "forbidden"})
	_, err := c.Get(context.Background(), &computepb.GetInstanceRequest{Project: "p1", Zone: "z", Instance: "vm-1"})
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != http.StatusForbidden {
		t.Fatalf("err %v, want a *googleapi.Error 403", err)
	}
	if n := len(f.hitsOf("get")); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	if snap := gov.Inspect(scope("instances_get")); snap.Leaf.Rate != 7 || snap.Breaker.Failures != 0 {
		t.Fatalf("scope %+v, want untouched", snap)
	}
}

// Compute answers a request past a rate quota with a 403 whose reason is
// rateLimitExceeded, and a message that names the quota, not a rate
// limit. The client's *googleapi.Error, after the Transport's retries,
// classifies as throttling, and reads so in a coverage record; a 403 for
// a missing permission stays fatal.
func TestRESTRateLimitExceededIsThrottling(t *testing.T) {
	retries := 1
	f, c, _ := setup(t, func(pc *resilience.ProviderConfig) { pc.MaxRetries = &retries })
	const quota = "Quota exceeded for quota group 'ReadGroup' and limit 'Read requests per 100 seconds' of service " +
		"'compute.googleapis.com' for consumer 'project_number:123456'."
	attempts := retries + 1
	for range attempts {
		f.script("get", reply{status: http.StatusForbidden, reason: "rateLimitExceeded", message: quota})
	}
	_, err := c.Get(context.Background(), &computepb.GetInstanceRequest{Project: "p1", Zone: "z", Instance: "vm-1"})
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != http.StatusForbidden || len(f.hitsOf("get")) != attempts {
		t.Fatalf("err %v after %d requests, want a *googleapi.Error 403 after %d", err, len(f.hitsOf("get")), attempts)
	}
	if k := resilience.Classify(err); k != resilience.Throttled {
		t.Errorf("Classify(%v) = %v, want Throttled", err, k)
	}
	if d := resilience.DescribeError(err); !strings.HasPrefix(d, "throttled: ") {
		t.Errorf("DescribeError = %q, want it throttled", d)
	}
	f.script("get", reply{status: http.StatusForbidden, reason: "forbidden", message: "Required 'compute.instances.get' permission"})
	_, err = c.Get(context.Background(), &computepb.GetInstanceRequest{Project: "p1", Zone: "z", Instance: "vm-1"})
	if k := resilience.Classify(err); k != resilience.Fatal || !resilience.IsProviderAnswer(err) {
		t.Errorf("Classify(%v) = %v, want a fatal answer", err, k)
	}
}

// The governor reads Compute's 403 rateLimitExceeded as the throttle it
// is, as resilience.Classify reads the client's error: the Transport
// halves the scope's rate, pauses it and retries the request, rather than
// take the answer for a fatal one (not retried, and proof that the scope
// is healthy). A 403 for a missing permission stays a fatal answer, sent
// once.
func TestRESTRateLimitExceededIsRetriedAsAThrottle(t *testing.T) {
	f, c, gov := setup(t)
	const quota = "Quota exceeded for quota group 'ReadGroup' and limit 'Read requests per 100 seconds' of service " +
		"'compute.googleapis.com' for consumer 'project_number:123456'."
	f.script("get", reply{status: http.StatusForbidden, reason: "rateLimitExceeded", message: quota})
	ctx, stats := resilience.WithStats(context.Background())
	inst, err := c.Get(ctx, &computepb.GetInstanceRequest{Project: "p1", Zone: "z", Instance: "vm-1"})
	if err != nil || inst.GetName() != "vm-1" {
		t.Fatalf("instance %q, err %v, want vm-1 after a retry", inst.GetName(), err)
	}
	if n := len(f.hitsOf("get")); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	if tot := gov.Summary(stats).Totals; tot.Throttled != 1 || tot.Retries != 1 || tot.Calls != 2 {
		t.Fatalf("totals %+v, want 2 calls, 1 throttle, 1 retry", tot)
	}
	if leaf := gov.Inspect(scope("instances_get")).Leaf; leaf.Rate >= 7 {
		t.Fatalf("instances_get leaf %+v, want it slowed", leaf)
	}
	f.script("get", reply{status: http.StatusForbidden, reason: "forbidden", message: "Required 'compute.instances.get' permission"})
	if _, err := c.Get(ctx, &computepb.GetInstanceRequest{Project: "p1", Zone: "z", Instance: "vm-1"}); err == nil {
		t.Fatal("a 403 for a permission succeeded")
	}
	if n := len(f.hitsOf("get")); n != 3 {
		t.Fatalf("%d requests, want 3: the permission's 403 sent once", n)
	}
}
