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
	// built-in bucket rather than the provider's default leaf (20 rps).
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for id, rate := range map[string]float64{
		"EC2": 20, "IAM": 10, "STS": 50, "Organizations": 5, "ControlTower": 2, "Route 53": 5,
		"Resource Groups Tagging API": 5, "CloudControl": 5, "CloudFormation": 5, "Lambda": 15,
	} {
		sc := resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: cloudgaws.ServiceName(id)}
		if got := g.Inspect(sc).Leaf.Ceiling; got != rate {
			t.Errorf("%s -> %s: ceiling %v rps, want the built-in %v", id, sc.Service, got, rate)
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
