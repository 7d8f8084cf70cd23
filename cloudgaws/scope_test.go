package cloudgaws

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/cloudg/cloudg/cloudgaws/internal/awsname"
	"github.com/cloudg/cloudg/resilience"
)

// Scope reads the account Install recorded, the config's region and the
// service's name as the middleware computes it; a botocore name names
// itself; a copy installed again has its own account and the original
// keeps its own; a config never installed, or whose Install failed, has
// no scope.
func TestScope(t *testing.T) {
	var cfg aws.Config
	if _, err := Scope(cfg, "EC2", "DescribeVpcs"); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("not installed: %v", err)
	}
	if Install(&cfg, "", WithMaxRetries(-1)) == nil {
		t.Fatal("an invalid option installed")
	}
	if _, err := Scope(cfg, "EC2", "DescribeVpcs"); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("after a failed install: %v", err)
	}

	cfg = aws.Config{Region: "eu-west-1", ConfigSources: []any{"a source of the SDK's"}}
	if err := Install(&cfg, "111111111111", WithServiceName("Fancy Service", "fancy")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ service, want string }{
		{"EC2", "aws/111111111111/eu-west-1/ec2/DescribeVpcs"},
		{"Secrets Manager", "aws/111111111111/eu-west-1/secretsmanager/DescribeVpcs"},
		{"secretsmanager", "aws/111111111111/eu-west-1/secretsmanager/DescribeVpcs"},
		{"Elastic Load Balancing v2", "aws/111111111111/eu-west-1/elbv2/DescribeVpcs"},
		{"elbv2", "aws/111111111111/eu-west-1/elbv2/DescribeVpcs"},
		{"Fancy Service", "aws/111111111111/eu-west-1/fancy/DescribeVpcs"},
	} {
		s, err := Scope(cfg, tc.service, "DescribeVpcs")
		if err != nil || s.String() != tc.want {
			t.Errorf("Scope(%q) = %v, %v; want %s", tc.service, s, err, tc.want)
		}
	}
	if len(cfg.ConfigSources) != 2 || cfg.ConfigSources[0] != "a source of the SDK's" {
		t.Fatalf("sources %v", cfg.ConfigSources)
	}

	assumed := cfg.Copy()
	assumed.Region = "us-east-2"
	if err := Install(&assumed, "*"); err != nil {
		t.Fatal(err)
	}
	if s, _ := Scope(assumed, "STS", "GetCallerIdentity"); s != (resilience.Scope{Provider: "aws", Region: "us-east-2", Service: "sts", Operation: "GetCallerIdentity"}) {
		t.Fatalf("the copy: %v", s)
	}
	if len(assumed.ConfigSources) != 2 {
		t.Fatalf("installed twice, the copy has sources %v", assumed.ConfigSources)
	}
	if s, _ := Scope(cfg, "STS", "GetCallerIdentity"); s.Account != "111111111111" {
		t.Fatalf("the original: %v", s)
	}
}

// Every botocore name of the table names itself, so that Scope takes a
// scope's service name as well as the SDK's service ID.
func TestServiceNameOfANameIsTheName(t *testing.T) {
	for id, name := range awsname.Exceptions() {
		if got := ServiceName(name); got != name {
			t.Errorf("ServiceName(%q) = %q; %q's name is %q", name, got, id, name)
		}
	}
}

// A service name that is not plain text, or names no service, is refused
// as an account id that is not plain is: Install fails, leaving the
// config as it was, rather than putting a newline in every scope of the
// service (a name read from a file) or merging the service with the
// scopes of no service.
func TestAServiceNameThatIsNotPlainIsRefused(t *testing.T) {
	for _, name := range []string{"", "*", "fancy\n", "fancy service", "\xff", strings.Repeat("x", 129)} {
		cfg := aws.Config{Region: "eu-west-1"}
		err := Install(&cfg, "111111111111", WithServiceName("Fancy Service", name))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("service name %q of \"Fancy Service\"", name)) {
			t.Errorf("WithServiceName(%q): Install = %v; want an error naming the name", name, err)
		}
		if _, err := Scope(cfg, "Fancy Service", "Get"); !errors.Is(err, ErrNotInstalled) {
			t.Errorf("WithServiceName(%q): after the refused install, Scope = %v; want ErrNotInstalled", name, err)
		}
	}
	cfg := aws.Config{Region: "eu-west-1"}
	if err := Install(&cfg, "111111111111", WithServiceName("Fancy Service", strings.Repeat("x", 128))); err != nil {
		t.Fatalf("a name of 128 bytes: %v", err)
	}
}
