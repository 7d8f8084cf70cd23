package cloudgaws_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		max  *int
		mode aws.RetryMode
	}{
		{"empty", "", nil, ""},
		{"no aws section", "ratelimit:\n  aws:\n    max_retries: 4\n", nil, ""},
		{"yaml", "aws:\n  max_retries: 3\n  retry_mode: standard\n  profile: prod\nratelimit:\n  aws:\n    max_retries: 8\n", ptr(3), aws.RetryModeStandard},
		{"json", `{"aws": {"max_retries": 0, "retry_mode": "adaptive"}, "ratelimit": {"aws": {"max_rps": 5}}}`, ptr(0), aws.RetryModeAdaptive},
		{"mode case and spaces", "aws:\n  retry_mode: ' Standard '\n", nil, aws.RetryModeStandard},
		{"null values", "aws:\n  max_retries: null\n  retry_mode: ~\n", nil, ""},
		{"null section", "aws:\n", nil, ""},
		{"whole float", "aws: {max_retries: 2.0}", ptr(2), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := cloudgaws.ParseConfig([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if (c.MaxRetries == nil) != (tc.max == nil) || (c.MaxRetries != nil && *c.MaxRetries != *tc.max) || c.RetryMode != tc.mode {
				t.Fatalf("got %+v (max %v), want max %v mode %q", c, c.MaxRetries, tc.max, tc.mode)
			}
			// The core reads the same document's ratelimit section, not
			// the aws one.
			if _, err := resilience.ParseConfig([]byte(tc.doc)); err != nil && strings.Contains(tc.doc, "ratelimit") {
				t.Fatalf("the core rejects the document: %v", err)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		doc, want string
	}{
		{"aws:\n  max_retries: three\n", `aws.max_retries: "three" is not a number`},
		{"aws:\n  max_retries: 2.5\n", `aws.max_retries: "2.5" is not a whole number`},
		{"aws:\n  max_retries: -1\n", "aws.max_retries: must be >= 0"},
		{"aws:\n  max_retries: [1]\n", "aws.max_retries: must be a single value"},
		{"aws:\n  retry_mode: legacy\n", `aws.retry_mode: unknown retry mode "legacy" (standard or adaptive)`},
		{"aws:\n  retry_mode: 3\n", `aws.retry_mode: "3" is not a string`},
		{"aws:\n  max_retries: 1\n  max_retries: 2\n", "aws.max_retries: duplicate key"},
		{"aws: [1, 2]\n", "aws: must be a mapping"},
		{"- 1\n", "aws: must be a mapping"},
		{"aws: {max_retries: 1\n", "aws: "},
	} {
		_, err := cloudgaws.ParseConfig([]byte(tc.doc))
		var ce *resilience.ConfigError
		if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.doc, err, tc.want)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cloudg.yaml")
	if err := os.WriteFile(path, []byte("aws:\n  max_retries: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := cloudgaws.LoadConfig(path)
	if err != nil || c.MaxRetries == nil || *c.MaxRetries != 3 {
		t.Fatalf("LoadConfig = %+v, %v", c, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("aws:\n  retry_mode: fast\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cloudgaws.LoadConfig(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": aws.retry_mode:") {
		t.Fatalf("err = %v", err)
	}
	if _, err := cloudgaws.LoadConfig(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

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
		if got := g.BucketState(sc).CeilingRPS; got != rate {
			t.Errorf("%s -> %s: ceiling %v rps, want the built-in %v", id, sc.Service, got, rate)
		}
	}
}
