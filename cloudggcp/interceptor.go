package cloudggcp

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cloudg/cloudg/internal/attemptctx"
	"github.com/cloudg/cloudg/resilience"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// ClientOption returns the client option that installs UnaryClientInterceptor
// on a gRPC-based Google client:
//
//	client, err := secretmanager.NewClient(ctx, cloudggcp.ClientOption())
//
// Only the client's unary calls are governed: the option installs no
// stream interceptor, so a streaming RPC (Pub/Sub's StreamingPull,
// BigQuery Storage's ReadRows, any server-, client- or bidirectional
// stream) is sent as it would be without it: no breaker check, token,
// slot, counted call or recorded outcome. Give the client
// StreamClientOption too for its streams to be governed.
//
// A client given the option twice (or two of the package's unary
// interceptors) governs each attempt once: the interceptor chained after
// another lets its attempts through as they are.
//
// A client without a gRPC transport (compute's NewInstancesRESTClient, and
// the REST constructors of the others) takes RESTClientOption instead.
func ClientOption(opts ...Option) option.ClientOption {
	return option.WithGRPCDialOption(grpc.WithChainUnaryInterceptor(UnaryClientInterceptor(opts...)))
}

// UnaryClientInterceptor returns a gRPC interceptor that governs every
// attempt of a unary call, gax's retries included:
//
//   - the scope is gcp/<account>/*/<service>/<Rpc>: the account from the
//     request's parent, scope, project, project_id (Dataproc's,
//     Datastore's: projects/<id>), name or resource (or the
//     x-goog-request-params metadata: a resource name, or a project_id;
//     a wildcard project, projects/_, or a project or project_id of - or
//     _, names none; so does a resource name that starts with no
//     projects/<id>, organizations/<id> or folders/<id>, such as a Cloud
//     Channel customer's parent, accounts/<a>/customers/<c>, as the same
//     request over REST names none),
//     the service from WithService, the *.googleapis.com target, or the
//     RPC's package, as the API's default endpoint names it
//     (google.cloud.asset.v1 is cloudasset,
//     google.iam.admin.v1 iam, google.spanner.admin.database.v1 spanner;
//     a package the interceptor does not know is its last name,
//     google.pubsub.v1 pubsub);
//   - before the attempt: the breaker (an open circuit returns
//     *resilience.CircuitOpenError, nothing sent, which gax does not
//     retry), one counted call, one token, one bulkhead slot, released when
//     the attempt returns (a failed attempt's once its answer is recorded,
//     so that a call waiting for the slot sees the pause a throttle set);
//     a wait longer than the context allows (resilience.WithMaxWait) is not
//     made: the attempt returns *resilience.WouldWaitError, nothing sent,
//     which gax does not retry either (its code is Unknown);
//   - after it: a success resets the breaker and feeds additive recovery; a
//     throttled attempt halves the rate and pauses it for RetryInfo's
//     delay; a transient one is counted; a fatal provider answer resets the
//     breaker.
//
// Each attempt is sent with a context that carries its call's
// *resilience.Guard (the interceptor's own, the Retry option's, or that of
// the listing or Do the attempt is made in), as package resilience looks
// for the call a governed call is nested in: a governed call that grpc,
// the connection or an interceptor after this one makes with that
// context while the attempt is sent (per-RPC credentials fetching a
// token through a governed client) borrows the slot the attempt holds
// rather than wait for it, as in a resilience.Do made
// resilience.WithNestedCalls, and goes as the probe the attempt holds
// when its breaker is half-open.
//
// The interceptor cannot see the SDK's retry loop, so each attempt is a
// call of its own: it neither charges the retry budget nor counts a breaker
// failure for a throttled or transient attempt, which gax may retry. Pass
// the Retry option to such calls for that: the interceptor then paces each
// attempt and the retry policy reports the errors, charges the budget,
// bounds the retries and records the final outcome, and sleeps the pause
// before each retry itself, ending it when the scope's breaker opens
// (see Retry); an attempt of such a call whose client gave it no timeout,
// and whose context has no deadline, is sent with the provider's deadline
// from the call's start, which the option then gives gax no timeout for,
// so that a stream is not cut (see Retry). Without the option, gax sleeps
// the client's own backoff, whole, and the next attempt's Enter asks the
// breaker after it. Calls of a paced
// listing or of Do pass through untouched: they are paced per page or call
// already. A panic under the interceptor (an interceptor after it, the
// connection), or of the governor's log handler as the interceptor
// records an attempt's answer, reaches the caller as it was, never
// recovered: the slot is given back and the call is recorded as lost to
// it (resilience.LossPanicked).
func UnaryClientInterceptor(opts ...Option) grpc.UnaryClientInterceptor {
	cfg := newConfig(opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, copts ...grpc.CallOption) error {
		if interceptedAlready(copts) {
			// The attempt of an interceptor of the package's chained
			// before this one (ClientOption given twice): governed once.
			return invoker(ctx, method, req, reply, cc, copts...)
		}
		if st := stateOf(copts); st != nil {
			if st.paced {
				// The attempt goes on the slot of the listing's or Do's
				// guard, which a call nested in it borrows while it is
				// sent.
				st.nested.Open()
				defer st.nested.Close() // a panic's too: the listing or Do ends the guard
				return invoker(st.attemptContext(ctx), method, req, reply, cc, copts...)
			}
			if st.ended != nil {
				return st.ended // the context ended the call while the Retryer slept
			}
			if !st.woke() {
				return st.ctx.Err() // the context ended the call while gax slept
			}
			if st.refusal != nil {
				// The retry the guard refused for the call's max wait: the
				// call ends with the refusal, nothing sent (see Retry).
				st.refused, st.refusal = st.refusal, nil
				return st.refused
			}
			st.intercepted, st.attemptCtx = true, ctx
			ctx, done := st.bounded(ctx)
			defer done()
			if err := st.enter(ctx); err != nil {
				return err
			}
			return st.invoke(ctx, method, req, reply, cc, invoker, copts)
		}
		target := ""
		if cc != nil && cfg.service == "" {
			target = cc.Target()
		}
		gov := cfg.governor()
		gd, err := gov.Begin(ctx, cfg.scope(ctx, method, req, target))
		if err != nil {
			return err
		}
		if err := gd.Enter(ctx); err != nil {
			return err
		}
		// The attempt's answer, and no End: a throttled or transient
		// attempt stays open, since gax may retry it and the interceptor
		// cannot tell whether it will, so no breaker failure is counted.
		return invokeAttempt(ctx, gov, gd, nil, method, req, reply, cc, invoker, copts)
	}
}

// attemptContext returns the context of an attempt of the call: ctx,
// carrying the call's Guard (an attemptctx.Context), so that a governed
// call that grpc, the connection or an interceptor after this one makes
// with it while the attempt is sent (per-RPC credentials fetching a
// token) is nested in the attempt. The Guard is read through the call's
// gate (nested), which the caller opens as it sends the attempt and
// closes as soon as the attempt returns: a call made with the context
// once the attempt is over (by a goroutine that kept it) is not nested
// in it, and reads nothing of the Guard.
func (s *callState) attemptContext(ctx context.Context) context.Context {
	if s.gov == nil || s.gd == nil {
		return ctx
	}
	return &attemptctx.Context{Context: ctx, Gov: s.gov, Guard: s.gd}
}

// sendContext returns the context an attempt of gd (of gov) is sent with,
// carrying gd (an attemptctx.Context), and the gate of gd's attempts,
// which the caller opens as it sends the attempt and closes as soon as
// it returns, before any verb of gd's: st's, for the Retry option's call
// st, or for a call of the interceptor's own (st nil), whose Guard is
// the attempt's alone, the context's, attached to gd.
func sendContext(ctx context.Context, gov *resilience.Governor, gd *resilience.Guard, st *callState) (*attemptctx.Context, *attemptctx.Gate) {
	c := &attemptctx.Context{Context: ctx, Gov: gov, Guard: gd}
	if st != nil {
		return c, &st.nested
	}
	c.Gate.Attach(gd)
	return c, &c.Gate
}

// invokeAttempt sends the attempt gd (of gov) entered, with a context
// that carries gd (an attemptctx.Context), records its answer and gives its
// slot back: a success's slot first, since After (or, for the Retry
// option's call st, succeed) records it at once; a failure's once After
// recorded it, so that a call waiting for the slot sees the pause a
// throttle's RetryInfo set (a shared store's takes a round trip). When
// code of the caller's panics meanwhile (the invoker: an interceptor
// after this one, the connection; or what After calls: the governor's
// log handler), gd ends the call as lost to the panic, which goes on, and
// gives the slot back.
func invokeAttempt(ctx context.Context, gov *resilience.Governor, gd *resilience.Guard, st *callState, method string, req, reply any,
	cc *grpc.ClientConn, invoker grpc.UnaryInvoker, copts []grpc.CallOption) error {
	actx, gate := sendContext(ctx, gov, gd, st)
	returned := false
	defer func() {
		if !returned {
			gate.Close()
			gd.EndPanicked()
		}
	}()
	gate.Open()
	err := invoker(actx, method, req, reply, cc, append(copts[:len(copts):len(copts)], intercepted)...)
	gate.Close()
	if err == nil {
		gd.Release()
		if st != nil {
			st.succeed()
		} else {
			gd.After(nil)
		}
	} else {
		gd.After(err)
		if st != nil {
			st.recorded = true
		}
		gd.Release()
	}
	returned = true
	return err
}

// interceptedCall is the call option an interceptor of the package's
// passes on with the attempt or stream it governs, so that another one
// chained after it (ClientOption or StreamClientOption given twice, as
// by a helper that adds it to options that carry it already) lets the
// attempt through as it is rather than govern it a second time: count
// it, take its token and record its answer again.
type interceptedCall struct{ grpc.EmptyCallOption }

// intercepted is the interceptedCall option.
var intercepted grpc.CallOption = interceptedCall{}

// interceptedAlready reports whether copts carry intercepted: an
// interceptor of the package's governs the attempt or stream already.
func interceptedAlready(copts []grpc.CallOption) bool {
	for _, o := range copts {
		if _, ok := o.(interceptedCall); ok {
			return true
		}
	}
	return false
}

// stateOf returns the state of a call governed by a listing, Do or the
// Retry option (the one that governs it: not a state a later option
// superseded), or nil.
func stateOf(copts []grpc.CallOption) *callState {
	for _, o := range copts {
		if g, ok := o.(governed); ok && !g.st.superseded {
			return g.st
		}
	}
	return nil
}

// enter paces an attempt of a call made with the Retry option: breaker,
// count, token, slot. A refusal is recorded by the guard, and Retry does
// not report it again.
func (s *callState) enter(ctx context.Context) error {
	if err := s.gd.Enter(ctx); err != nil {
		s.refused = err
		return err
	}
	return nil
}

// invoke sends an attempt of a call made with the Retry option, which
// enter paced: the slot goes back, and a success is reported here. A
// failure is recorded here too, before the slot goes back, so that a call
// waiting for the slot sees the pause a throttle set; Retry, which gax
// calls next, decides its retry without recording it again. When the
// invoker, or what recording the answer calls, panics, the call is lost
// to the panic, which goes on.
func (s *callState) invoke(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, copts []grpc.CallOption) error {
	return invokeAttempt(ctx, s.gov, s.gd, s, method, req, reply, cc, invoker, copts)
}

// MethodScope returns the scope in which the interceptor made with opts
// (ClientOption, UnaryClientInterceptor) governs an attempt of method (the
// RPC's full name, "/google.cloud.kms.v1.KeyManagementService/ListKeyRings")
// with request req, on a client connected to target (its endpoint,
// "cloudkms.googleapis.com:443"; "" when not known): the account from
// req's parent, scope, project, project_id, name or resource (an IAM
// policy method's; a resource name names one only when it starts with
// projects/<id>, organizations/<id> or folders/<id>), the service from WithService, the *.googleapis.com
// target, or the RPC's package. A ScopeFunc of opts is asked first, with
// a background context; so are no request metadata. MethodScope reads
// and changes nothing, so a scheduler may ask the governor how long such
// a call would wait now:
//
//	scope := cloudggcp.MethodScope("cloudkms.googleapis.com:443",
//		"/google.cloud.kms.v1.KeyManagementService/ListKeyRings", req)
//	wait, why := gov.Delay(scope)
//
// Cloud Asset's RPCs, which Do and the listings govern, have Scope.
func MethodScope(target, method string, req any, opts ...Option) resilience.Scope {
	cfg := newConfig(opts)
	return cfg.scope(context.Background(), method, req, target)
}

// scope resolves the scope of one attempt on a connection to target ("":
// unknown).
func (c *config) scope(ctx context.Context, method string, req any, target string) resilience.Scope {
	if c.scopeOf != nil {
		if s, ok := c.scopeOf(ctx, method, req); ok {
			return s
		}
	}
	service, rpc := splitMethod(method)
	if c.service != "" {
		service = c.service
	} else if target != "" {
		if s, ok := targetService(target); ok {
			service = s
		}
	}
	return resilience.Scope{Provider: "gcp", Account: requestAccount(ctx, req), Service: service, Operation: rpc}
}

// splitMethod splits "/google.cloud.asset.v1.AssetService/ListAssets" into
// the service named by its package ("cloudasset") and the RPC: the
// service of packageServices for the package or the nearest package that
// holds it, or else the package's last name that is not a version
// (google.pubsub.v1 is pubsub).
func splitMethod(method string) (service, rpc string) {
	method = strings.TrimPrefix(method, "/")
	full, rpc, _ := strings.Cut(method, "/")
	pkg := full
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		pkg = full[:i] // google.cloud.asset.v1
	}
	parts := strings.Split(pkg, ".")
	names := parts[:0:0]
	for _, p := range parts {
		if !isVersion(p) && p != "" {
			names = append(names, p)
		}
	}
	for n := len(names); n > 0; n-- {
		if s, ok := packageServices[strings.Join(names[:n], ".")]; ok {
			return s, rpc
		}
	}
	if len(names) > 0 {
		service = names[len(names)-1]
	}
	return service, rpc
}

// packageServices maps proto packages (without their version) to the
// service their clients' default endpoints name (<service>.googleapis.com)
// where the package's last name is not it, so that an API is one service
// whichever endpoint its client is pointed at. A package not listed
// takes the entry of the nearest package that holds it
// (google.spanner.admin.database is google.spanner's).
var packageServices = map[string]string{
	"google.cloud.asset":                 "cloudasset",
	"google.cloud.resourcemanager":       "cloudresourcemanager",
	"google.cloud.kms":                   "cloudkms",
	"google.iam":                         "iam",
	"google.iam.credentials":             "iamcredentials",
	"google.cloud.osconfig":              "osconfig",
	"google.spanner":                     "spanner",
	"google.firestore":                   "firestore",
	"google.datastore":                   "datastore",
	"google.bigtable.admin":              "bigtableadmin",
	"google.cloud.bigquery.storage":      "bigquerystorage",
	"google.cloud.bigquery.datatransfer": "bigquerydatatransfer",
	"google.cloud.bigquery.reservation":  "bigqueryreservation",
	"google.cloud.bigquery.connection":   "bigqueryconnection",
	"google.cloud.functions":             "cloudfunctions",
	"google.cloud.scheduler":             "cloudscheduler",
	"google.cloud.tasks":                 "cloudtasks",
	"google.cloud.billing":               "cloudbilling",
	"google.cloud.billing.budgets":       "billingbudgets",
	"google.cloud.dialogflow":            "dialogflow",
	"google.cloud.redis":                 "redis",
	"google.cloud.workflows.executions":  "workflowexecutions",
	"google.monitoring":                  "monitoring",
	"google.cloud.kms.inventory":         "kmsinventory",
	"google.cloud.talent":                "jobs",
	"google.cloud.clouddms":              "datamigration",
	"google.cloud.filestore":             "file",
	"google.cloud.translation":           "translate",
	"google.cloud.orchestration.airflow": "composer",
	"google.cloud.channel":               "cloudchannel",
	"google.cloud.deploy":                "clouddeploy",
	"google.storage":                     "storage",
	"google.cloud.beyondcorp":            "beyondcorp",
	"google.cloud.sql":                   "sqladmin",
	"google.cloud.bigquery.datapolicies": "bigquerydatapolicy",
	"google.cloud.bigquery.migration":    "bigquerymigration",
	"google.cloud.bigquery.dataexchange": "analyticshub",
	"google.cloud.datacatalog.lineage":   "datalineage",
	"google.cloud.support":               "cloudsupport",
	"google.cloud.shell":                 "cloudshell",
	"google.cloud.video.stitcher":        "videostitcher",
	"google.cloud.gkeconnect.gateway":    "connectgateway",
	"google.cloud.optimization":          "cloudoptimization",

	"google.cloud.commerce.consumer.procurement": "cloudcommerceconsumerprocurement",
}

func isVersion(p string) bool {
	return len(p) > 1 && p[0] == 'v' && p[1] >= '0' && p[1] <= '9'
}

// targetService returns "cloudasset" for targets such as
// "cloudasset.googleapis.com:443" or "dns:///cloudasset.googleapis.com:443",
// and "aiplatform" for a regional endpoint such as
// "us-central1-aiplatform.googleapis.com:443": the location before the
// last hyphen of the first label is not part of the service, whose names
// have none. A Private Service Connect endpoint,
// "storage-vialink1.p.googleapis.com", is the service's: the endpoint's
// name after the last hyphen is not part of it either. Google's shared
// front end, "www.googleapis.com" (and "www.mtls.googleapis.com"), which
// serves Drive's API and others that name themselves in the path
// (/drive/v3/...), names no service: false; nor do the virtual IPs of
// Private Google Access and VPC Service Controls, "private.googleapis.com"
// and "restricted.googleapis.com", which serve every API. A host's name is
// read in lower case, as it is case-insensitive: "PubSub.GoogleAPIs.com"
// is "pubsub".
func targetService(target string) (string, bool) {
	if i := strings.LastIndex(target, "/"); i >= 0 {
		target = target[i+1:]
	}
	host, _, _ := strings.Cut(target, ":")
	name, ok := strings.CutSuffix(strings.ToLower(host), ".googleapis.com") // a host's name is case-insensitive
	if !ok {
		return "", false
	}
	// cloudasset.mtls.googleapis.com: the first label
	first, rest, _ := strings.Cut(name, ".")
	return labelService(first, rest)
}

// labelService returns the service a host's first label names, rest the
// labels after it before the universe's domain (googleapis.com): none for
// a shared front end's (www, private, restricted); a Private Service
// Connect endpoint's (storage-vialink1, rest p) less its endpoint's name;
// a regional endpoint's (us-central1-aiplatform, eu-documentai) less its
// location.
func labelService(name, rest string) (string, bool) {
	if sharedFrontEnds[name] {
		return "", false
	}
	if rest == "p" {
		// storage-vialink1.p.googleapis.com: <service>-<endpoint>
		if i := strings.LastIndexByte(name, '-'); i >= 0 {
			name = name[:i]
		}
	}
	// us-central1-aiplatform, eu-documentai: the location's prefix
	if i := strings.LastIndexByte(name, '-'); i >= 0 {
		name = name[i+1:]
	}
	return name, name != ""
}

// sharedFrontEnds are the first labels of the hosts that serve many of
// Google's APIs at once, each under its own name in the path (or a gRPC
// method's package): www.googleapis.com, and the virtual IPs of Private
// Google Access and of VPC Service Controls, private.googleapis.com and
// restricted.googleapis.com.
var sharedFrontEnds = map[string]bool{"www": true, "private": true, "restricted": true}

// requestAccount finds the account of a request: its parent, scope,
// project, project_id, name or resource field, or the routing metadata
// gax adds (a resource name, or a project_id or project). A resource name
// (a parent, scope, name or resource, or one in the metadata) names the
// account only when it starts with projects/<id>, organizations/<id> or
// folders/<id> (knownAccount), as RESTScope reads the same request's
// path: a parent that names none (a Cloud Channel customer's,
// accounts/<a>/customers/<c>; a billing account's, billingAccounts/<id>)
// is no account, not the name itself, which would make one account per
// customer or billing account (an account bucket and a bulkhead each,
// while the quota is the caller's project's) and carry a text of any
// length into the scope; the sources after it are read then.
func requestAccount(ctx context.Context, req any) string {
	if r, ok := req.(interface{ GetParent() string }); ok && r.GetParent() != "" {
		if a, ok := knownAccount(r.GetParent()); ok {
			return a
		}
	}
	if r, ok := req.(interface{ GetScope() string }); ok && r.GetScope() != "" {
		if a, ok := knownAccount(r.GetScope()); ok {
			return a
		}
	}
	if r, ok := req.(interface{ GetProject() string }); ok && r.GetProject() != "" {
		return projectAccount(r.GetProject())
	}
	if r, ok := req.(interface{ GetProjectId() string }); ok && r.GetProjectId() != "" {
		// Dataproc's, Datastore's, Cloud Build's: the project's id.
		return projectAccount(r.GetProjectId())
	}
	if r, ok := req.(interface{ GetName() string }); ok {
		if a, ok := knownAccount(r.GetName()); ok {
			return a
		}
	}
	if r, ok := req.(interface{ GetResource() string }); ok {
		// The IAM policy methods' (GetIamPolicy, SetIamPolicy,
		// TestIamPermissions), which every Google API serves.
		if a, ok := knownAccount(r.GetResource()); ok {
			return a
		}
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	for _, v := range md.Get("x-goog-request-params") {
		for _, kv := range strings.Split(v, "&") {
			key, val, _ := strings.Cut(kv, "=")
			if val, err := url.QueryUnescape(val); err == nil {
				if a, ok := knownAccount(val); ok {
					return a
				}
				if (key == "project_id" || key == "project") && val != "" {
					return projectAccount(val)
				}
			}
		}
	}
	return ""
}

// projectAccount returns the account of a request's project field: a
// project's id or number is projects/<id>; a wildcard (- or _), or an id
// that is none by Google Cloud's grammar (validAccountID), none; a
// resource name, its account.
func projectAccount(p string) string {
	if !strings.Contains(p, "/") {
		if !validAccountID("projects", p) {
			return ""
		}
		return "projects/" + p
	}
	return Account(p)
}

// StreamClientOption returns the client option that installs
// StreamClientInterceptor on a gRPC-based Google client, beside
// ClientOption, which governs its unary calls:
//
//	client, err := pubsub.NewSubscriberClient(ctx,
//		cloudggcp.ClientOption(), cloudggcp.StreamClientOption())
//
// A client given ClientOption alone sends its streaming RPCs ungoverned.
// A client given StreamClientOption twice governs each stream once.
func StreamClientOption(opts ...Option) option.ClientOption {
	return option.WithGRPCDialOption(grpc.WithChainStreamInterceptor(StreamClientInterceptor(opts...)))
}

// StreamClientInterceptor returns a gRPC interceptor that governs the
// streaming RPCs (server-, client- and bidirectional streams) of a
// gRPC-based Google client, in the scopes UnaryClientInterceptor's are
// (a ScopeFunc is asked with a nil request: a stream's requests are sent
// once it is open). Opening a stream is paced as a call is: the breaker
// (an open circuit returns *resilience.CircuitOpenError, nothing sent),
// one counted call, one token, one bulkhead slot; the slot is given back
// as soon as the stream is open (or failed to open), so that a stream
// held open for long (a Watch, a StreamingPull) does not hold the
// account's slot for its lifetime, and the account's calls are not kept
// waiting by it. The stream's end is its outcome, recorded once, as
// grpc ends it: io.EOF (or a status OK) is a success, which resets the
// breaker; a status the stream ended with is the call's final answer,
// recorded as a unary call's last answer is when no retry follows (a
// throttled stream, ResourceExhausted or Unavailable, halves the
// scope's rate and pauses it for RetryInfo's delay, and is a give-up
// counted towards the breaker; a transient one is a failure; a fatal
// provider answer resets the breaker). A stream that had delivered a
// message and then ended as its caller cancelled it (a Watch or
// StreamingPull shut down, the way such a stream ends) or as the service
// closed it with Unavailable (a StreamingPull, which the service closes
// so from time to time by design, the client opening another) was
// served: it is a success, not a throttle or a lost call, so that a
// subscriber's streams do not halve the scope's rate and open its
// breaker, and a task holding one does not read as degraded in its
// ledger. A stream ended by its context otherwise (cancelled before it
// delivered anything, or its deadline passed, which may have cut a
// finite stream short) is lost as cancelled (resilience.LossCancelled),
// as a unary call ended by its context is.
// A stream that failed to open is recorded as a failed attempt of a
// unary call is (its answer, no breaker failure: gax may retry the
// opening). Nothing in between (the messages sent and received) is paced
// or counted.
//
// A stream's account is read, before it opens, from the x-goog-request-params
// routing header alone. A stream whose client sends none names no account
// (Pub/Sub's StreamingPull, whose subscription is in its first message,
// sent once the stream is open: every project's subscriptions share
// gcp/*/*/pubsub/StreamingPull, its rate, slot pool and breaker). Reading
// that message would mean opening the stream only at its first SendMsg,
// after the scope is known: give such a client a ScopeFunc (WithScopeFunc)
// that names the account, one client per project.
//
// Calls of a paced listing or of Do pass through untouched. A stream
// opened with the Retry option is governed on the option's guard, as
// above: the option then records nothing more of it (see Retry).
func StreamClientInterceptor(opts ...Option) grpc.StreamClientInterceptor {
	cfg := newConfig(opts)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, copts ...grpc.CallOption) (grpc.ClientStream, error) {
		if interceptedAlready(copts) {
			// The stream of an interceptor of the package's chained
			// before this one (StreamClientOption given twice): governed
			// once.
			return streamer(ctx, desc, cc, method, copts...)
		}
		if st := stateOf(copts); st != nil {
			if st.paced {
				st.nested.Open()
				defer st.nested.Close()
				return streamer(st.attemptContext(ctx), desc, cc, method, copts...)
			}
			if st.ended != nil {
				return nil, st.ended
			}
			if !st.woke() {
				return nil, st.ctx.Err()
			}
			if st.refusal != nil {
				st.refused, st.refusal = st.refusal, nil
				return nil, st.refused
			}
			st.intercepted, st.attemptCtx = true, ctx
			if err := st.enter(ctx); err != nil {
				return nil, err
			}
			return openStream(ctx, st.gov, st.gd, st, desc, cc, method, streamer, copts)
		}
		target := ""
		if cc != nil && cfg.service == "" {
			target = cc.Target()
		}
		gov := cfg.governor()
		gd, err := gov.Begin(ctx, cfg.scope(ctx, method, nil, target))
		if err != nil {
			return nil, err
		}
		if err := gd.Enter(ctx); err != nil {
			return nil, err
		}
		return openStream(ctx, gov, gd, nil, desc, cc, method, streamer, copts)
	}
}

// openStream opens the stream gd (of gov) entered, with a context that
// carries gd (an attemptctx.Context), and gives its slot back once the
// stream is open or failed to open. A stream that failed to open is
// recorded as a failed attempt (After; for the Retry option's call st,
// which Retry then reads, as invokeAttempt records one). The end of an
// open stream ends gd with the stream's final status (see streamEnd). A
// panic of the streamer ends gd as lost to it, and goes on.
func openStream(ctx context.Context, gov *resilience.Governor, gd *resilience.Guard, st *callState, desc *grpc.StreamDesc,
	cc *grpc.ClientConn, method string, streamer grpc.Streamer, copts []grpc.CallOption) (grpc.ClientStream, error) {
	end := &streamEnd{gd: gd, st: st, ctx: ctx}
	copts = append(copts[:len(copts):len(copts)], grpc.OnFinish(end.finish), intercepted)
	actx, gate := sendContext(ctx, gov, gd, st)
	returned := false
	defer func() {
		if !returned {
			gate.Close()
			gd.EndPanicked()
		}
	}()
	gate.Open()
	cs, err := streamer(actx, desc, cc, method, copts...)
	gate.Close()
	if err != nil {
		gd.After(err)
		if st != nil {
			st.recorded = true
		}
		gd.Release()
		returned = true
		return nil, err
	}
	gd.Release()
	returned = true
	end.opened()
	return &servedStream{ClientStream: cs, end: end}, nil
}

// servedEnd reports whether err, the final status of a stream that
// delivered a message, is the way a stream that served its caller ends
// rather than an answer about the scope: Canceled by its caller's
// context, or Unavailable. A long-lived stream is closed by the service
// from time to time with Unavailable (Pub/Sub's StreamingPull always
// ends with a status that is not OK, Unavailable in practice, and its
// client opens another): taken as a throttle, each such end halved the
// scope's rate and counted towards its breaker, which five of them
// opened, and the subscriber's next stream was refused for the
// cooldown. ResourceExhausted, a quota's answer, is still a throttle.
func servedEnd(ctx context.Context, err error) bool {
	switch grpcCode(err) {
	case codes.Canceled:
		return errors.Is(ctx.Err(), context.Canceled)
	case codes.Unavailable:
		return true
	}
	return false
}

// servedStream is an open stream that tells its end whether it delivered
// a message (see streamEnd.end).
type servedStream struct {
	grpc.ClientStream
	end *streamEnd
}

// RecvMsg implements grpc.ClientStream.
func (s *servedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil {
		s.end.served.Store(true)
	}
	return err
}

// streamEnd ends the guard of an open stream as grpc finishes the stream
// (grpc.OnFinish): on the goroutine that read its end, or on grpc's own
// when its context ended it, once. grpc also finishes a stream that failed
// to open, before the streamer returns: openStream records that one, and
// streamEnd nothing. The mutex orders the stream's opening before its end;
// the guard is ended outside it.
type streamEnd struct {
	gd     *resilience.Guard
	st     *callState      // the Retry option's call, or nil
	ctx    context.Context // the stream's
	served atomic.Bool     // the stream delivered a message

	mu       sync.Mutex
	open     bool  // openStream is done with the guard
	finished bool  // grpc finished the stream
	err      error // its final status, once finished
}

// finish is the stream's grpc.OnFinish callback.
func (e *streamEnd) finish(err error) {
	e.mu.Lock()
	e.finished, e.err = true, err
	open := e.open
	e.mu.Unlock()
	if open {
		e.end(err)
	}
}

// opened hands the guard of the open stream to its end, and ends it when
// the stream finished meanwhile.
func (e *streamEnd) opened() {
	e.mu.Lock()
	e.open = true
	finished, err := e.finished, e.err
	e.mu.Unlock()
	if finished {
		e.end(err)
	}
}

// end records the stream's final status: nil (io.EOF) a success, which
// the Retry option's call st reports once (its own grpc.OnFinish may
// have reported it first). A stream that delivered a message and then
// ended as its caller cancelled it (a Watch shut down, as a Watch ends)
// or as the service closed it with Unavailable (a StreamingPull, which
// ends so by design, its client opening another) was served: a success
// too (servedEnd).
func (e *streamEnd) end(err error) {
	if err != nil && e.served.Load() && servedEnd(e.ctx, err) {
		err = nil
	}
	if err == nil {
		if e.st != nil {
			e.st.succeed()
			return
		}
		e.gd.After(nil)
	}
	if cerr := e.ctx.Err(); err != nil && e.st != nil && cerr != nil {
		// The Retry option's guard, begun on the run's context, does not
		// know the stream's own, which ended it: lost as cancelled, as
		// the interceptor's own guard records it, not as the local error
		// the context's gRPC status reads as.
		if eerr := e.gd.Enter(e.ctx); eerr != nil {
			cerr = eerr
		}
		err = cerr
	}
	e.gd.End(err)
}
