package test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// Every service the core's defaults table names, and Secrets Manager, get
// the botocore name the table is keyed by; other IDs follow the general
// rule or the exceptions.
func TestServiceName(t *testing.T) {
	for id, want := range map[string]string{
		// The core's built-in AWS service table.
		"EC2":                         "ec2",
		"IAM":                         "iam",
		"STS":                         "sts",
		"Organizations":               "organizations",
		"ControlTower":                "controltower",
		"Route 53":                    "route53",
		"Resource Groups Tagging API": "resourcegroupstaggingapi",
		"CloudControl":                "cloudcontrol",
		"CloudFormation":              "cloudformation",
		"Lambda":                      "lambda",
		// Others.
		"Secrets Manager":           "secretsmanager",
		"S3":                        "s3",
		"DynamoDB":                  "dynamodb",
		"Auto Scaling":              "autoscaling",
		"Elastic Load Balancing v2": "elbv2",
		"CloudWatch Logs":           "logs",
		"SFN":                       "stepfunctions",
		"EventBridge":               "events",
		"":                          "",
	} {
		if got := cloudgaws.ServiceName(id); got != want {
			t.Errorf("ServiceName(%q) = %q, want %q", id, got, want)
		}
	}
	// The names are the core's service keys: each resolves to the
	// built-in bucket rather than the provider's default leaf (20 rps,
	// burst 40). Every built-in pair differs from the default in its rate
	// or its burst (a fresh bucket's tokens), so a name the table does not
	// know fails here.
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	type leaf struct{ rate, burst float64 }
	for id, want := range map[string]leaf{
		"EC2": {20, 100}, "IAM": {10, 40}, "STS": {50, 100}, "Organizations": {5, 10}, "ControlTower": {2, 5},
		"Route 53": {5, 5}, "Resource Groups Tagging API": {5, 10}, "CloudControl": {5, 10}, "CloudFormation": {5, 10},
		"Lambda": {15, 15},
	} {
		if want == (leaf{20, 40}) {
			t.Fatalf("%s: the built-in %v is the default leaf's", id, want)
		}
		sc := resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: cloudgaws.ServiceName(id)}
		b := g.Inspect(sc).Leaf
		if got := (leaf{b.Ceiling, b.Tokens}); got != want {
			t.Errorf("%s -> %s: %v rps, burst %v, want the built-in %v rps, burst %v", id, sc.Service, got.rate, got.burst, want.rate, want.burst)
		}
	}
}

// WithServiceName names a service ServiceName does not know.
func TestWithServiceName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{}, cloudgaws.WithServiceName("EC2", "compute"))
		ctx, stats := resilience.WithStats(context.Background())
		if err := describeVpcs(ctx, ec2.NewFromConfig(cfg)); err != nil {
			t.Fatal(err)
		}
		if s := g.Summary(stats).Scopes[mustScope("aws/"+testAccount+"/"+testRegion+"/compute")]; s.Calls != 1 {
			t.Fatalf("scopes %v: the call is not under the configured name", g.Summary(stats).Scopes)
		}
	})
}
