package cloudggcp

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"github.com/cloudg/cloudg/resilience"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

func TestScope(t *testing.T) {
	if s := Scope("projects/p1", RPCListAssets).String(); s != "gcp/projects/p1/*/cloudasset/ListAssets" {
		t.Error(s)
	}
	if s := Scope("organizations/1", RPCListAssets); s.Provider != "gcp" || s.Account != "organizations/1" || s.Region != "" || s.Service != "cloudasset" {
		t.Errorf("%+v", s)
	}
	for in, want := range map[string]string{
		"projects/p1":          "projects/p1",
		"projects/p1/feeds/f1": "projects/p1",
		"organizations/123":    "organizations/123",
		"folders/9/x":          "folders/9",
		"//cloudresourcemanager.googleapis.com/projects/p1": "projects/p1",
		"p1":             "p1",
		"locations/eu/x": "locations/eu/x",
		"":               "",
	} {
		if got := Account(in); got != want {
			t.Errorf("Account(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestInterceptorScopeResolution(t *testing.T) {
	for method, want := range map[string][2]string{
		"/google.cloud.asset.v1.AssetService/BatchGetAssetsHistory": {"cloudasset", "BatchGetAssetsHistory"},
		"/google.cloud.compute.v1.Instances/List":                   {"compute", "List"},
		"/google.pubsub.v1.Publisher/ListTopics":                    {"pubsub", "ListTopics"},
		"/google.cloud.resourcemanager.v3.Projects/GetProject":      {"cloudresourcemanager", "GetProject"},
	} {
		if s, r := splitMethod(method); s != want[0] || r != want[1] {
			t.Errorf("%s: %s %s", method, s, r)
		}
	}
	for target, want := range map[string]string{
		"cloudasset.googleapis.com:443":      "cloudasset",
		"dns:///compute.googleapis.com:443":  "compute",
		"cloudasset.mtls.googleapis.com:443": "cloudasset",
		"127.0.0.1:4567":                     "",
		"passthrough:///bufconn":             "",
	} {
		if got, _ := targetService(target); got != want {
			t.Errorf("%s: %q", target, got)
		}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		req  any
		want string
	}{
		{&assetpb.ListAssetsRequest{Parent: "projects/p1"}, "projects/p1"},
		{&assetpb.SearchAllResourcesRequest{Scope: "organizations/1"}, "organizations/1"},
		{&assetpb.GetFeedRequest{Name: "folders/9/feeds/f"}, "folders/9"},
		{&assetpb.GetFeedRequest{Name: "feeds/f"}, ""},
	} {
		if got := requestAccount(ctx, tc.req); got != tc.want {
			t.Errorf("%T: %q, want %q", tc.req, got, tc.want)
		}
	}
	md := metadata.AppendToOutgoingContext(ctx, "x-goog-request-params", "parent=organizations%2F7")
	if got := requestAccount(md, struct{}{}); got != "organizations/7" {
		t.Errorf("from metadata: %q", got)
	}
}

type parentReq struct{ parent string }

func (r parentReq) GetParent() string { return r.parent }

// MethodScope is the interceptor's scope: the account from the request,
// the service from WithService, the target, or the RPC's package.
func TestMethodScope(t *testing.T) {
	const method = "/google.cloud.kms.v1.KeyManagementService/ListKeyRings"
	req := parentReq{"projects/p1/locations/global"}
	for _, tc := range []struct {
		target string
		opts   []Option
		want   string
	}{
		{"cloudkms.googleapis.com:443", nil, "gcp/projects/p1/*/cloudkms/ListKeyRings"},
		{"dns:///cloudkms.googleapis.com:443", nil, "gcp/projects/p1/*/cloudkms/ListKeyRings"},
		{"", nil, "gcp/projects/p1/*/cloudkms/ListKeyRings"},
		{"127.0.0.1:9000", nil, "gcp/projects/p1/*/cloudkms/ListKeyRings"},
		{"cloudkms.googleapis.com:443", []Option{WithService("keys")}, "gcp/projects/p1/*/keys/ListKeyRings"},
	} {
		if got := MethodScope(tc.target, method, req, tc.opts...).String(); got != tc.want {
			t.Errorf("MethodScope(%q) = %s, want %s", tc.target, got, tc.want)
		}
	}
}

// A regional endpoint (<location>-<service>.googleapis.com, as Vertex AI,
// Dialogflow, Speech and Document AI clients are pointed at) names the
// same service as the global one: the location is not part of it, so the
// configuration's limits of the service apply, and one service is one
// service key whichever region a client calls.
func TestRegionalEndpointNamesTheService(t *testing.T) {
	req := parentReq{"projects/p1/locations/us-central1"}
	for _, tc := range []struct{ target, method, want string }{
		{"us-central1-aiplatform.googleapis.com:443", "/google.cloud.aiplatform.v1.PredictionService/Predict", "gcp/projects/p1/*/aiplatform/Predict"},
		{"dns:///europe-west4-aiplatform.googleapis.com:443", "/google.cloud.aiplatform.v1.JobService/ListCustomJobs", "gcp/projects/p1/*/aiplatform/ListCustomJobs"},
		{"eu-documentai.googleapis.com:443", "/google.cloud.documentai.v1.DocumentProcessorService/ProcessDocument", "gcp/projects/p1/*/documentai/ProcessDocument"},
		{"us-central1-dialogflow.googleapis.com:443", "/google.cloud.dialogflow.cx.v3.Sessions/DetectIntent", "gcp/projects/p1/*/dialogflow/DetectIntent"},
	} {
		if got := MethodScope(tc.target, tc.method, req).String(); got != tc.want {
			t.Errorf("MethodScope(%q) = %s, want %s", tc.target, got, tc.want)
		}
	}
	r, err := http.NewRequest("POST", "https://us-central1-aiplatform.googleapis.com/v1/projects/p1/locations/us-central1/endpoints/e1:predict", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := RESTScope()(r).String(), "gcp/projects/p1/*/aiplatform/endpoints_predict"; got != want {
		t.Errorf("RESTScope = %s, want %s", got, want)
	}
}

// A Private Service Connect endpoint for Google APIs is named
// <service>-<endpoint>.p.googleapis.com (storage-vialink1,
// bigtable-adsteam): the service is the label before the endpoint's name,
// so that two services reached through one endpoint keep scopes of their
// own, and one service keeps its scope whichever endpoint it goes through.
func TestPrivateServiceConnectEndpointNamesTheService(t *testing.T) {
	for target, want := range map[string]string{
		"storage-vialink1.p.googleapis.com:443":        "storage",
		"dns:///bigtable-adsteam.p.googleapis.com:443": "bigtable",
		"cloudasset-ep1.p.googleapis.com":              "cloudasset",
	} {
		if got, _ := targetService(target); got != want {
			t.Errorf("targetService(%q) = %q, want %q", target, got, want)
		}
	}
	r, err := http.NewRequest("GET", "https://compute-ep1.p.googleapis.com/compute/v1/projects/p1/zones/z/instances/vm1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := RESTScope()(r).String(), "gcp/projects/p1/*/compute/instances_get"; got != want {
		t.Errorf("RESTScope = %s, want %s", got, want)
	}
	r, err = http.NewRequest("POST", "https://secretmanager-ep1.p.googleapis.com/v1/projects/p1/secrets/s:addVersion", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := RESTScope()(r).String(), "gcp/projects/p1/*/secretmanager/secrets_addVersion"; got != want {
		t.Errorf("RESTScope = %s, want %s", got, want)
	}
}

// The service read from an RPC's proto package, when the connection's
// target names none (an emulator, a proxy on an address, a universe
// other than googleapis.com: iam.UNIVERSE_DOMAIN:443), is the service
// the client's default endpoint names, so that one API is one service key
// whichever endpoint its client is pointed at. Before, it was the
// package's last name: IAM's admin API, Firestore's, Datastore's and
// Spanner's were all "admin", "database" or "instance", sharing a scope
// and missing their own service keys, and IAM Credentials (the token
// exchange of impersonated credentials) was "credentials". The default
// endpoints of IAM, IAM Credentials and OS Config's agent endpoint are
// those of their clients in cloud.google.com/go/iam v1.14.0 and
// cloud.google.com/go/osconfig v1.22.0.
func TestPackageNamesTheServiceOfItsEndpoint(t *testing.T) {
	for _, tc := range []struct{ method, endpoint string }{
		{"/google.iam.admin.v1.IAM/ListServiceAccounts", "iam.googleapis.com:443"},
		{"/google.iam.credentials.v1.IAMCredentials/GenerateAccessToken", "iamcredentials.googleapis.com:443"},
		{"/google.cloud.osconfig.agentendpoint.v1.AgentEndpointService/ReceiveTaskNotification", "osconfig.googleapis.com:443"},
		{"/google.cloud.osconfig.v1.OsConfigService/ListPatchJobs", "osconfig.googleapis.com:443"},
		{"/google.iam.v2.Policies/ListPolicies", "iam.googleapis.com:443"},
		{"/google.cloud.kms.v1.KeyManagementService/ListKeyRings", "cloudkms.googleapis.com:443"},
		{"/google.spanner.admin.database.v1.DatabaseAdmin/ListDatabases", "spanner.googleapis.com:443"},
		{"/google.spanner.admin.instance.v1.InstanceAdmin/ListInstances", "spanner.googleapis.com:443"},
		{"/google.spanner.v1.Spanner/ExecuteSql", "spanner.googleapis.com:443"},
		{"/google.firestore.admin.v1.FirestoreAdmin/ListIndexes", "firestore.googleapis.com:443"},
		{"/google.datastore.admin.v1.DatastoreAdmin/ListIndexes", "datastore.googleapis.com:443"},
		{"/google.bigtable.admin.v2.BigtableInstanceAdmin/ListInstances", "bigtableadmin.googleapis.com:443"},
		{"/google.cloud.bigquery.storage.v1.BigQueryRead/CreateReadSession", "bigquerystorage.googleapis.com:443"},
		{"/google.cloud.bigquery.datatransfer.v1.DataTransferService/ListTransferConfigs", "bigquerydatatransfer.googleapis.com:443"},
		{"/google.cloud.bigquery.reservation.v1.ReservationService/ListReservations", "bigqueryreservation.googleapis.com:443"},
		{"/google.cloud.bigquery.connection.v1.ConnectionService/ListConnections", "bigqueryconnection.googleapis.com:443"},
		{"/google.cloud.functions.v2.FunctionService/ListFunctions", "cloudfunctions.googleapis.com:443"},
		{"/google.cloud.scheduler.v1.CloudScheduler/ListJobs", "cloudscheduler.googleapis.com:443"},
		{"/google.cloud.tasks.v2.CloudTasks/ListQueues", "cloudtasks.googleapis.com:443"},
		{"/google.cloud.billing.v1.CloudBilling/ListBillingAccounts", "cloudbilling.googleapis.com:443"},
		{"/google.cloud.billing.budgets.v1.BudgetService/ListBudgets", "billingbudgets.googleapis.com:443"},
		{"/google.cloud.dialogflow.cx.v3.Sessions/DetectIntent", "dialogflow.googleapis.com:443"},
		{"/google.cloud.redis.cluster.v1.CloudRedisCluster/ListClusters", "redis.googleapis.com:443"},
		{"/google.cloud.workflows.executions.v1.Executions/ListExecutions", "workflowexecutions.googleapis.com:443"},
		{"/google.monitoring.dashboard.v1.DashboardsService/ListDashboards", "monitoring.googleapis.com:443"},
		{"/google.cloud.asset.v1.AssetService/ListFeeds", "cloudasset.googleapis.com:443"},
		{"/google.pubsub.v1.Publisher/ListTopics", "pubsub.googleapis.com:443"},
		// A package under one the table names that its API serves from
		// an endpoint of its own, and packages whose last name is not
		// their endpoint's.
		{"/google.cloud.kms.inventory.v1.KeyDashboardService/ListCryptoKeys", "kmsinventory.googleapis.com:443"},
		{"/google.cloud.talent.v4.JobService/ListJobs", "jobs.googleapis.com:443"},
		{"/google.cloud.clouddms.v1.DataMigrationService/ListMigrationJobs", "datamigration.googleapis.com:443"},
		{"/google.cloud.filestore.v1.CloudFilestoreManager/ListInstances", "file.googleapis.com:443"},
		{"/google.cloud.translation.v3.TranslationService/TranslateText", "translate.googleapis.com:443"},
		{"/google.cloud.orchestration.airflow.service.v1.Environments/ListEnvironments", "composer.googleapis.com:443"},
		{"/google.cloud.channel.v1.CloudChannelService/ListCustomers", "cloudchannel.googleapis.com:443"},
		{"/google.cloud.deploy.v1.CloudDeploy/ListTargets", "clouddeploy.googleapis.com:443"},
		{"/google.storage.control.v2.StorageControl/ListFolders", "storage.googleapis.com:443"},
		{"/google.cloud.beyondcorp.appconnections.v1.AppConnectionsService/ListAppConnections", "beyondcorp.googleapis.com:443"},
		{"/google.cloud.sql.v1.SqlInstancesService/List", "sqladmin.googleapis.com:443"},
		{"/google.cloud.bigquery.datapolicies.v1.DataPolicyService/ListDataPolicies", "bigquerydatapolicy.googleapis.com:443"},
		{"/google.cloud.bigquery.migration.v2.MigrationService/ListMigrationWorkflows", "bigquerymigration.googleapis.com:443"},
		{"/google.cloud.bigquery.dataexchange.v1beta1.AnalyticsHubService/ListDataExchanges", "analyticshub.googleapis.com:443"},
		{"/google.cloud.datacatalog.lineage.v1.Lineage/ListProcesses", "datalineage.googleapis.com:443"},
		{"/google.cloud.support.v2.CaseService/ListCases", "cloudsupport.googleapis.com:443"},
		{"/google.cloud.shell.v1.CloudShellService/GetEnvironment", "cloudshell.googleapis.com:443"},
		{"/google.cloud.video.stitcher.v1.VideoStitcherService/ListCdnKeys", "videostitcher.googleapis.com:443"},
		{"/google.cloud.gkeconnect.gateway.v1beta1.GatewayService/GetResource", "connectgateway.googleapis.com:443"},
		{"/google.cloud.optimization.v1.FleetRouting/OptimizeTours", "cloudoptimization.googleapis.com:443"},
		{"/google.cloud.commerce.consumer.procurement.v1.ConsumerProcurementService/ListOrders", "cloudcommerceconsumerprocurement.googleapis.com:443"},
	} {
		req := parentReq{"projects/p1"}
		want := MethodScope(tc.endpoint, tc.method, req)
		for _, target := range []string{"", "127.0.0.1:9000", "dns:///api.example.internal:443"} {
			if got := MethodScope(target, tc.method, req); got != want {
				t.Errorf("%s on %q: %s, want %s, as on its default endpoint %s", tc.method, target, got, want, tc.endpoint)
			}
		}
	}
}

type resourceReq struct{ resource string }

func (r resourceReq) GetResource() string { return r.resource }

// MethodScope gives the scope the interceptor governs an attempt in, for
// the IAM policy methods every Google API serves too (GetIamPolicy,
// SetIamPolicy, TestIamPermissions), whose requests name their resource
// in a resource field: the interceptor read the account from the routing
// metadata gax adds ("resource=projects%2Fp1%2F..."), which MethodScope
// is not given, so a scheduler asking the governor how long such a call
// would wait asked about the scope gcp//*/iam/GetIamPolicy, never used.
func TestMethodScopeReadsTheResourceOfAnIAMPolicyCall(t *testing.T) {
	const method = "/google.iam.v1.IAMPolicy/GetIamPolicy"
	req := resourceReq{"projects/p1/secrets/s1"}
	gov := newGov(t, resilience.Config{})
	ctx, stats := resilience.WithStats(context.Background())
	ctx = metadata.AppendToOutgoingContext(ctx, "x-goog-request-params", "resource="+url.QueryEscape(req.resource))
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	if err := UnaryClientInterceptor(WithGovernor(gov))(ctx, method, req, nil, nil, invoker); err != nil {
		t.Fatal(err)
	}
	want := MethodScope("", method, req)
	service := want
	service.Operation = ""
	if c := scopeStats(gov, stats, service.String()); c.Calls != 1 {
		t.Fatalf("MethodScope = %s, where the interceptor governed nothing; want gcp/projects/p1/*/iam/GetIamPolicy", want)
	}
}

type projectIDReq struct{ project, region string }

func (r projectIDReq) GetProjectId() string { return r.project }
func (r projectIDReq) GetRegion() string    { return r.region }

// The APIs whose REST paths name the project by its id
// (/v1/projects/{project_id}/regions/{region}/clusters: Dataproc's,
// Datastore's /v1/projects/{project_id}:lookup, Cloud Build's) name it in
// their requests' project_id field (GetProjectId), and gax routes them
// with x-goog-request-params project_id=<id>: that is the project the
// call is made in, its account, as a project field's is. Without it
// every such call of every project was in the account "", one
// concurrency cap and one account bucket for all projects.
func TestTheAccountOfARequestThatNamesItsProjectID(t *testing.T) {
	const method = "/google.cloud.dataproc.v1.ClusterController/ListClusters"
	req := projectIDReq{"p1", "us-central1"}
	if got, want := MethodScope("dataproc.googleapis.com:443", method, req).String(), "gcp/projects/p1/*/dataproc/ListClusters"; got != want {
		t.Errorf("MethodScope = %s, want %s", got, want)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-goog-request-params", "project_id=p2&region=us-central1")
	if got := requestAccount(ctx, struct{}{}); got != "projects/p2" {
		t.Errorf("from metadata project_id=p2&region=us-central1: account %q, want projects/p2", got)
	}
	ctx = metadata.AppendToOutgoingContext(context.Background(), "x-goog-request-params", "project_id=p3&database_id=")
	if got := requestAccount(ctx, struct{}{}); got != "projects/p3" {
		t.Errorf("from metadata project_id=p3&database_id=: account %q, want projects/p3", got)
	}
}

// private.googleapis.com and restricted.googleapis.com are the virtual
// IPs of Private Google Access and of VPC Service Controls: one front end
// for every Google API, each under its own name (a REST path's
// /compute/v1, a gRPC method's package). A client pointed at one by
// name names no service in the host: its scope's service is the path's
// or the package's, never "private" or "restricted", which would put
// every API reached through the VIP in one scope.
func TestPrivateAccessVIPsNameNoService(t *testing.T) {
	for _, target := range []string{"private.googleapis.com:443", "dns:///restricted.googleapis.com:443", "restricted.googleapis.com"} {
		if got, ok := targetService(target); ok {
			t.Errorf("targetService(%q) = %q, want none", target, got)
		}
	}
	if got, want := MethodScope("restricted.googleapis.com:443", "/google.cloud.kms.v1.KeyManagementService/ListKeyRings",
		parentReq{"projects/p1/locations/global"}).String(), "gcp/projects/p1/*/cloudkms/ListKeyRings"; got != want {
		t.Errorf("MethodScope = %s, want %s", got, want)
	}
	for _, tc := range []struct{ url, want string }{
		{"https://restricted.googleapis.com/compute/v1/projects/p1/zones/z/instances", "gcp/projects/p1/*/compute/instances_list"},
		{"https://private.googleapis.com/storage/v1/b/bkt/o", "gcp/*/*/storage/o_list"},
	} {
		r, err := http.NewRequest("GET", tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(r).String(); got != tc.want {
			t.Errorf("RESTScope(GET %s) = %s, want %s", tc.url, got, tc.want)
		}
	}
}

// bucketReq is a request of Cloud Storage's gRPC API that names its
// bucket only (google.storage.v2's ReadObjectRequest, GetBucketRequest's
// name).
type bucketReq struct{ bucket string }

func (r bucketReq) GetBucket() string { return r.bucket }

// projectReq is a request that names its project by its id alone
// (compute's gRPC requests' project field).
type projectReq struct{ project string }

func (r projectReq) GetProject() string { return r.project }

// nameReq is a request that names its resource (a Get).
type nameReq struct{ name string }

func (r nameReq) GetName() string { return r.name }

// A wildcard project, projects/_ (Cloud Storage's gRPC API names every
// bucket projects/_/buckets/<bucket>, in the request and in its routing
// header) or
// projects/- (IAM's projects/-/serviceAccounts/<email>: the project is
// inferred from the resource), is no project: it names no account, never
// the account projects/_ or projects/-, which no configuration can key
// and which is no project's; nor does a project field, a project_id
// field, a routing header's project or project_id, or a REST request's
// project query parameter that is a wildcard alone (- or _).
func TestAWildcardProjectIsNoAccount(t *testing.T) {
	for _, tc := range []struct {
		method string
		req    any
		md     string
		want   string
	}{
		{"/google.storage.v2.Storage/ListObjects", parentReq{"projects/_/buckets/bkt"}, "", "gcp/*/*/storage/ListObjects"},
		{"/google.storage.v2.Storage/ReadObject", bucketReq{"projects/_/buckets/bkt"}, "bucket=projects%2F_%2Fbuckets%2Fbkt", "gcp/*/*/storage/ReadObject"},
		{"/google.iam.admin.v1.IAM/GetServiceAccount", nameReq{"projects/-/serviceAccounts/sa@p1.iam.gserviceaccount.com"}, "", "gcp/*/*/iam/GetServiceAccount"},
		// A project or project_id field, or a routing header's, that
		// is a wildcard alone.
		{"/google.cloud.compute.v1.Instances/List", projectReq{"-"}, "", "gcp/*/*/compute/List"},
		{"/google.cloud.compute.v1.Instances/List", projectReq{"_"}, "", "gcp/*/*/compute/List"},
		{"/google.cloud.dataproc.v1.ClusterController/ListClusters", projectIDReq{"-", "us-central1"}, "", "gcp/*/*/dataproc/ListClusters"},
		{"/google.cloud.dataproc.v1.ClusterController/ListClusters", projectIDReq{"_", "us-central1"}, "", "gcp/*/*/dataproc/ListClusters"},
		{"/google.cloud.dataproc.v1.ClusterController/ListClusters", struct{}{}, "project_id=-&region=us-central1", "gcp/*/*/dataproc/ListClusters"},
		{"/google.cloud.compute.v1.Instances/List", struct{}{}, "project=_&zone=z", "gcp/*/*/compute/List"},
		// A project that is one stays one.
		{"/google.storage.v2.Storage/ListBuckets", parentReq{"projects/p1"}, "", "gcp/projects/p1/*/storage/ListBuckets"},
		{"/google.cloud.compute.v1.Instances/List", projectReq{"p1"}, "", "gcp/projects/p1/*/compute/List"},
	} {
		ctx := context.Background()
		if tc.md != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "x-goog-request-params", tc.md)
		}
		cfg := newConfig(nil)
		if got := cfg.scope(ctx, tc.method, tc.req, "").String(); got != tc.want {
			t.Errorf("%s %+v: scope %s, want %s", tc.method, tc.req, got, tc.want)
		}
	}
	if got := Account("projects/_/buckets/bkt"); got != "" {
		t.Errorf("Account(projects/_/buckets/bkt) = %q, want none", got)
	}
	for _, tc := range []struct{ url, want string }{
		{"https://iam.googleapis.com/v1/projects/-/serviceAccounts/sa@p1.iam.gserviceaccount.com", "gcp/*/*/iam/serviceAccounts_get"},
		// A project query parameter that is a wildcard.
		{"https://storage.googleapis.com/storage/v1/b?project=-", "gcp/*/*/storage/b_list"},
		{"https://storage.googleapis.com/storage/v1/b?project=_", "gcp/*/*/storage/b_list"},
		{"https://storage.googleapis.com/storage/v1/b?project=p1", "gcp/projects/p1/*/storage/b_list"},
	} {
		r, err := http.NewRequest("GET", tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(r).String(); got != tc.want {
			t.Errorf("RESTScope(GET %s) = %s, want %s", tc.url, got, tc.want)
		}
	}
}

// An account's id, read from a REST path (unescaped), a query parameter,
// a routing header or a request's field, is an account only when it is
// one by Google Cloud's grammar: a project's id (lower-case letters,
// digits and hyphens, a letter first, no hyphen last, 30 characters at
// most), a legacy domain-scoped project's (example.com:my-project), or a
// project's, organization's or folder's number. Anything else (a newline,
// a space, an upper-case letter, a slash escaped into the id) names no
// account, never one that carries it into logs, metrics labels and the
// status page.
func TestAnInvalidAccountIDIsNoAccount(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"GET", "https://pubsub.googleapis.com/v1/projects/p1%0Aevil/topics", "gcp/*/*/pubsub/topics_list"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/p1%20evil/topics", "gcp/*/*/pubsub/topics_list"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/P1/topics", "gcp/*/*/pubsub/topics_list"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/1p/topics", "gcp/*/*/pubsub/topics_list"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/p1-/topics", "gcp/*/*/pubsub/topics_list"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/a-project-id-of-more-than-thirty/topics", "gcp/*/*/pubsub/topics_list"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/example.com%3Ap1%0A/topics", "gcp/*/*/pubsub/topics_list"},
		{"GET", "https://compute.googleapis.com/compute/v1/projects/p1%2Fx/zones/z/instances", "gcp/*/*/compute/instances_list"},
		{"GET", "https://cloudresourcemanager.googleapis.com/v3/folders/456%0A/tagBindings", "gcp/*/*/cloudresourcemanager/tagBindings_list"},
		{"GET", "https://storage.googleapis.com/storage/v1/b?project=p1%0Aevil", "gcp/*/*/storage/b_list"},
		{"GET", "https://storage.googleapis.com/storage/v1/b?project=Evil", "gcp/*/*/storage/b_list"},
		{"GET", "https://compute.googleapis.com/compute/v1/locations/global/firewallPolicies?parentId=projects/p1%0Aevil", "gcp/*/*/compute/firewallPolicies_list"},
		{"GET", "https://cloudresourcemanager.googleapis.com/v3/projects?parent=organizations/123%0A", "gcp/*/*/cloudresourcemanager/projects_list"},
		// Accounts that are ones.
		{"GET", "https://pubsub.googleapis.com/v1/projects/p1/topics", "gcp/projects/p1/*/pubsub/topics_list"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/my-project-123/topics", "gcp/projects/my-project-123/*/pubsub/topics_list"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/a-project-id-of-thirty-chars-x/topics", "gcp/projects/a-project-id-of-thirty-chars-x/*/pubsub/topics_list"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/123456789012/topics", "gcp/projects/123456789012/*/pubsub/topics_list"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/example.com:my-project/topics", "gcp/projects/example.com:my-project/*/pubsub/topics_list"},
		{"GET", "https://pubsub.googleapis.com/v1/projects/example.com%3Amy-project/topics", "gcp/projects/example.com:my-project/*/pubsub/topics_list"},
		{"GET", "https://storage.googleapis.com/storage/v1/b?project=my-project", "gcp/projects/my-project/*/storage/b_list"},
		{"GET", "https://compute.googleapis.com/compute/v1/locations/global/firewallPolicies?parentId=folders/789", "gcp/folders/789/*/compute/firewallPolicies_list"},
	} {
		r, err := http.NewRequest(tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(r).String(); got != tc.want {
			t.Errorf("RESTScope(%s %s) = %q, want %q", tc.method, tc.url, got, tc.want)
		}
	}
	for _, tc := range []struct {
		method string
		req    any
		md     string
		want   string
	}{
		{"/google.pubsub.v1.Publisher/ListTopics", parentReq{"projects/p1\nevil"}, "", "gcp/*/*/pubsub/ListTopics"},
		{"/google.cloud.kms.v1.KeyManagementService/ListKeyRings", parentReq{"projects/p1\nevil/locations/global"}, "", "gcp/*/*/cloudkms/ListKeyRings"},
		{"/google.cloud.asset.v1.AssetService/SearchAllResources", parentReq{"organizations/12a"}, "", "gcp/*/*/cloudasset/SearchAllResources"},
		{"/google.pubsub.v1.Publisher/ListTopics", parentReq{"evil\nparent"}, "", "gcp/*/*/pubsub/ListTopics"},
		{"/google.pubsub.v1.Publisher/GetTopic", nameReq{"projects/P1/topics/t1"}, "", "gcp/*/*/pubsub/GetTopic"},
		{"/google.iam.v1.IAMPolicy/GetIamPolicy", resourceReq{"projects/p1 evil/secrets/s1"}, "", "gcp/*/*/iam/GetIamPolicy"},
		{"/google.cloud.compute.v1.Instances/List", projectReq{"p1\nevil"}, "", "gcp/*/*/compute/List"},
		{"/google.cloud.dataproc.v1.ClusterController/ListClusters", projectIDReq{"P1", "us-central1"}, "", "gcp/*/*/dataproc/ListClusters"},
		{"/google.cloud.dataproc.v1.ClusterController/ListClusters", struct{}{}, "project_id=p1%0Aevil&region=us-central1", "gcp/*/*/dataproc/ListClusters"},
		{"/google.pubsub.v1.Publisher/ListTopics", struct{}{}, "parent=projects%2Fp1%0Aevil", "gcp/*/*/pubsub/ListTopics"},
		// Accounts that are ones.
		{"/google.cloud.compute.v1.Instances/List", projectReq{"example.com:my-project"}, "", "gcp/projects/example.com:my-project/*/compute/List"},
		{"/google.cloud.dataproc.v1.ClusterController/ListClusters", struct{}{}, "project_id=123456789012&region=us-central1", "gcp/projects/123456789012/*/dataproc/ListClusters"},
		{"/google.pubsub.v1.Publisher/GetTopic", nameReq{"projects/my-project/topics/t1"}, "", "gcp/projects/my-project/*/pubsub/GetTopic"},
	} {
		ctx := context.Background()
		if tc.md != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "x-goog-request-params", tc.md)
		}
		cfg := newConfig(nil)
		if got := cfg.scope(ctx, tc.method, tc.req, "").String(); got != tc.want {
			t.Errorf("%s %+q %q: scope %q, want %q", tc.method, tc.req, tc.md, got, tc.want)
		}
	}
	for in, want := range map[string]string{
		"projects/p1\nevil/feeds/f": "",
		"folders/9\n":               "",
		"evil\nname":                "",
		"projects/example.com:p1":   "projects/example.com:p1",
	} {
		if got := Account(in); got != want {
			t.Errorf("Account(%q) = %q, want %q", in, got, want)
		}
	}
}

// A project's, an organization's or a folder's number is an account up
// to the largest 64-bit number, 18446744073709551615 (Google Cloud's APIs
// give them as int64s, Compute's a project's as a uint64); a larger one
// (one more, or 21 digits) is no number Google Cloud gives, and names no
// account.
func TestANumberPastTheLargest64BitNumberIsNoAccount(t *testing.T) {
	maxN, over, n21 := "18446744073709551615", "18446744073709551616", strings.Repeat("9", 21)
	for in, want := range map[string]string{
		"projects/" + maxN:                 "projects/" + maxN,
		"organizations/" + maxN:            "organizations/" + maxN,
		"folders/" + maxN + "/tagBindings": "folders/" + maxN,
		"projects/" + over:                 "",
		"organizations/" + over:            "",
		"folders/" + over + "/tagBindings": "",
		"projects/" + n21:                  "",
	} {
		if got := Account(in); got != want {
			t.Errorf("Account(%q) = %q, want %q", in, got, want)
		}
	}
}

type scopeReq struct{ scope string }

func (r scopeReq) GetScope() string { return r.scope }

// A request's parent or scope that names no project, organization or
// folder (a Cloud Channel customer's, accounts/<a>/customers/<c>; a
// billing account's, billingAccounts/<id>) names no account, as the same
// request sent over REST names none (RESTScope reads projects,
// organizations and folders alone) and as its name or resource would name
// none: the account is not the parent itself, one per customer or
// billing account (each an account bucket and bulkhead of its own, every
// customer's calls at the whole rate of a quota that is the caller's
// project's), nor a text of any length.
func TestAParentThatNamesNoProjectNamesNoAccount(t *testing.T) {
	long := "accounts/C0123/customers/" + strings.Repeat("c", 300)
	for _, tc := range []struct {
		target, method string
		req            any
		want           string
	}{
		{"cloudchannel.googleapis.com:443", "/google.cloud.channel.v1.CloudChannelService/ListEntitlements",
			parentReq{"accounts/C0123/customers/S0001"}, "gcp/*/*/cloudchannel/ListEntitlements"},
		{"cloudchannel.googleapis.com:443", "/google.cloud.channel.v1.CloudChannelService/ListEntitlements",
			parentReq{"accounts/C0123/customers/S0002"}, "gcp/*/*/cloudchannel/ListEntitlements"},
		{"cloudchannel.googleapis.com:443", "/google.cloud.channel.v1.CloudChannelService/ListEntitlements",
			parentReq{long}, "gcp/*/*/cloudchannel/ListEntitlements"},
		{"billingbudgets.googleapis.com:443", "/google.cloud.billing.budgets.v1.BudgetService/ListBudgets",
			parentReq{"billingAccounts/0123AB-4567CD-89EF01"}, "gcp/*/*/billingbudgets/ListBudgets"},
		{"cloudasset.googleapis.com:443", "/google.cloud.asset.v1.AssetService/SearchAllResources",
			scopeReq{"locations/eu/x"}, "gcp/*/*/cloudasset/SearchAllResources"},
		// Parents that name one.
		{"cloudkms.googleapis.com:443", "/google.cloud.kms.v1.KeyManagementService/ListKeyRings",
			parentReq{"projects/p1/locations/global"}, "gcp/projects/p1/*/cloudkms/ListKeyRings"},
		{"cloudasset.googleapis.com:443", "/google.cloud.asset.v1.AssetService/SearchAllResources",
			scopeReq{"organizations/123"}, "gcp/organizations/123/*/cloudasset/SearchAllResources"},
	} {
		if got := MethodScope(tc.target, tc.method, tc.req).String(); got != tc.want {
			t.Errorf("MethodScope(%s, %+q) = %q, want %q", tc.method, tc.req, got, tc.want)
		}
	}
	// The same call over REST.
	r, err := http.NewRequest("GET", "https://cloudchannel.googleapis.com/v1/accounts/C0123/customers/S0001/entitlements", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := RESTScope()(r).Account, ""; got != want {
		t.Errorf("RESTScope(GET .../accounts/C0123/customers/S0001/entitlements).Account = %q, want %q", got, want)
	}
}
