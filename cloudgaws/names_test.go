package cloudgaws

import (
	"errors"
	"maps"
	"runtime/debug"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/cloudg/cloudg/resilience"
)

// An override key that names no service of the SDK, or an operation its
// service does not have, is refused by the core's configuration check
// once cloudgaws is imported, with the name meant when it is near.
func TestOverrideKeysAreCheckedAgainstTheSDK(t *testing.T) {
	for key, want := range map[string]string{
		"secretmanager":          "unknown AWS service (did you mean secretsmanager?)",
		"secrets-manager":        "unknown AWS service (did you mean secretsmanager?)",
		"cloudwatchlogs":         "unknown AWS service (did you mean logs?)",
		"elasticloadbalancingv2": "unknown AWS service (did you mean elbv2?)",
		"cloudwatch-logs":        "unknown AWS service (did you mean logs?)",
		"ec2.DescribeInstance":   "unknown operation of ec2 (did you mean DescribeInstances?)",
		"ec2.Describeinstances":  "unknown operation of ec2 (did you mean DescribeInstances?)",
		"iam.ListRolez":          "unknown operation of iam (did you mean ListRoles?)",
		"ec2.FlyToTheMoon":       "unknown operation of ec2 (ec2 v1.344.0 has no such operation)",
		"zzzzzz":                 "unknown AWS service (scopes name a service as botocore does, ec2, logs, elbv2: those of aws-sdk-go-v2 v1.48.0 and of the service modules this program links)",
	} {
		_, err := resilience.ParseConfig([]byte("aws: {services: {" + key + ": {max_rps: 2}}}\n"))
		var ce *resilience.ConfigError
		if want := "ratelimit.aws.services." + key + ": " + want; err == nil || err.Error() != want || !errors.As(err, &ce) {
			t.Errorf("%s:\n got %v\nwant %s", key, err, want)
		}
	}
	for _, key := range []string{
		"secretsmanager", "logs", "elbv2", "elb", "ec2.DescribeInstances", "iam.ListRoles", "sts.GetCallerIdentity",
		"cognito-idp", "application-autoscaling", "events", "stepfunctions",
		"s3.ListObjectsV2", "lambda.Invoke", "bedrock-runtime", "sqs.SendMessage", // no operation list for sqs: any
	} {
		if _, err := resilience.ParseConfig([]byte("aws: {services: {" + key + ": {max_rps: 2}}}\n")); err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
	// Configure refuses what ParseConfig would.
	g, _ := resilience.NewGovernor(resilience.Config{})
	if err := g.Configure(resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"secretmanager": {MaxRPS: 2}}}}); err == nil {
		t.Error("Configure accepted secretmanager")
	}
}

// Every scope name the middleware can make for the SDK's services is a
// name the check knows: the generated list holds the name of each
// service the project links, read from its module's ServiceID.
func TestGeneratedListNamesTheLinkedServices(t *testing.T) {
	if !knownNames().names[ServiceName(sts.ServiceID)] {
		t.Fatalf("%s is not known", ServiceName(sts.ServiceID))
	}
	for _, name := range []string{"ec2", "iam", "sts", "secretsmanager", "logs", "elbv2", "route53", "resourcegroupstaggingapi"} {
		if !knownNames().names[name] {
			t.Errorf("%s is not in the list", name)
		}
	}
	if n := len(sdkServices); n < 400 {
		t.Errorf("%d services in the list", n)
	}
	for name, s := range sdkOperations {
		if !sort.StringsAreSorted(s.ops) || len(s.ops) == 0 {
			t.Errorf("%s: %d operations, sorted %v", name, len(s.ops), sort.StringsAreSorted(s.ops))
		}
		if sdkServices[s.pkg] != name {
			t.Errorf("%s: package %s is named %s", name, s.pkg, sdkServices[s.pkg])
		}
	}
}

func TestNewerMinor(t *testing.T) {
	for _, c := range []struct {
		v, w string
		want bool
	}{
		{"v1.345.0", "v1.344.3", true}, {"v1.344.9", "v1.344.0", false}, {"v1.344.0", "v1.344.0", false},
		{"v2.0.0", "v1.344.0", true}, {"v1.0.0-preview.5", "v1.0.0-preview.1", false}, {"v1.300.0", "v1.344.0", false},
	} {
		if got := newerMinor(c.v, c.w); got != c.want {
			t.Errorf("newerMinor(%s, %s) = %v", c.v, c.w, got)
		}
	}
	if !strings.HasPrefix(sdkVersion, "v1.") {
		t.Errorf("sdkVersion %s", sdkVersion)
	}
}

// A scope names its service as botocore does (the spec's scopes), also for
// the services whose botocore name is not their SDK service ID lower-cased
// without spaces: most services added since 2019 are named with hyphens
// (bedrock-runtime), and a few otherwise (lexv2-models, ds-data,
// serverlessrepo). A configuration written with those names (the one the
// original cloudg reads) is accepted, and the SDK-style spelling is
// refused with the botocore name meant.
func TestServiceNamesAreBotocores(t *testing.T) {
	for id, want := range map[string]string{
		"Auto Scaling Plans":              "autoscaling-plans",
		"Bedrock Runtime":                 "bedrock-runtime",
		"Bedrock Agent Runtime":           "bedrock-agent-runtime",
		"RDS Data":                        "rds-data",
		"EC2 Instance Connect":            "ec2-instance-connect",
		"DevOps Guru":                     "devops-guru",
		"Marketplace Entitlement Service": "marketplace-entitlement",
		"IoT Jobs Data Plane":             "iot-jobs-data",
		"Lex Models V2":                   "lexv2-models",
		"Directory Service Data":          "ds-data",
		"ServerlessApplicationRepository": "serverlessrepo",
		"Resource Explorer 2":             "resource-explorer-2",
	} {
		if got := ServiceName(id); got != want {
			t.Errorf("ServiceName(%q) = %q, want botocore's %q", id, got, want)
		}
	}
	for pkg, want := range map[string]string{
		"bedrockruntime": "bedrock-runtime", "autoscalingplans": "autoscaling-plans", "directoryservicedata": "ds-data",
	} {
		if got := sdkServices[pkg]; got != want {
			t.Errorf("the generated list names package %s %q, want %q", pkg, got, want)
		}
	}
	if _, err := resilience.ParseConfig([]byte("aws: {services: {bedrock-runtime: {max_rps: 2}}}\n")); err != nil {
		t.Errorf("bedrock-runtime: %v", err)
	}
	_, err := resilience.ParseConfig([]byte("aws: {services: {bedrockruntime: {max_rps: 2}}}\n"))
	if want := "ratelimit.aws.services.bedrockruntime: unknown AWS service (did you mean bedrock-runtime?)"; err == nil || err.Error() != want {
		t.Errorf("bedrockruntime: got %v, want %s", err, want)
	}
}

// A service module replaced by a fork or a directory is the SDK's service
// still, known by the path it is imported as, at the replacement's
// version: the path of the replacement used to be read, and a service
// newer than the generated list was unknown once replaced.
func TestLinkedServicesReadReplacedModulesByTheirPath(t *testing.T) {
	deps := []*debug.Module{
		{Path: "github.com/aws/aws-sdk-go-v2/service/ec2", Version: "v1.200.0"},
		{Path: "github.com/aws/aws-sdk-go-v2/service/newsvc", Version: "v1.0.0",
			Replace: &debug.Module{Path: "github.com/me/fork/service/newsvc", Version: "v1.0.1-fork"}},
		{Path: "github.com/aws/aws-sdk-go-v2/service/localsvc", Version: "v1.0.0",
			Replace: &debug.Module{Path: "../localsvc"}},
		{Path: "github.com/aws/aws-sdk-go-v2/service/internal/s3shared", Version: "v1.0.0"},
		{Path: "github.com/aws/aws-sdk-go-v2/service/s3/internal/x", Version: "v1.0.0"},
		{Path: "example.com/other", Version: "v1.0.0",
			Replace: &debug.Module{Path: "github.com/aws/aws-sdk-go-v2/service/sqs", Version: "v1.0.0"}},
	}
	got := map[string]string{}
	for pkg, version := range linkedServices(deps) {
		got[pkg] = version
	}
	want := map[string]string{"ec2": "v1.200.0", "newsvc": "v1.0.1-fork", "localsvc": ""}
	if !maps.Equal(got, want) {
		t.Fatalf("linked services %v, want %v", got, want)
	}
}
