package test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// A global service is governed once per account, as botocore names its
// clients' region (meta.region_name): IAM made in eu-west-1 or in
// us-east-1 is aws-global, so a scan over many regions shares one IAM
// bucket and breaker per account, where AWS limits IAM. A regional
// service (ec2) keeps a scope per region. Scope says what the middleware
// does.
func TestGlobalServiceOneScopePerAccount(t *testing.T) {
	f := newFake(t)
	cfg, g := tcpGoverned(t, f, fastEC2)
	ctx, st := resilience.WithStats(context.Background())
	for _, region := range []string{"us-east-1", "eu-west-1"} {
		c := cfg.Copy()
		c.Region = region
		if _, err := iam.NewFromConfig(c).ListRoles(ctx, &iam.ListRolesInput{}); err != nil {
			t.Fatalf("ListRoles in %s: %v", region, err)
		}
		if err := describeVpcs(ctx, ec2.NewFromConfig(c)); err != nil {
			t.Fatalf("DescribeVpcs in %s: %v", region, err)
		}
		sc, err := cloudgaws.Scope(c, iam.ServiceID, "ListRoles")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sc.String(), "aws/"+testAccount+"/aws-global/iam/ListRoles"; got != want {
			t.Errorf("Scope(IAM in %s) = %s, want %s", region, got, want)
		}
		sc, err = cloudgaws.Scope(c, ec2.ServiceID, "DescribeVpcs")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sc.String(), "aws/"+testAccount+"/"+region+"/ec2/DescribeVpcs"; got != want {
			t.Errorf("Scope(EC2 in %s) = %s, want %s", region, got, want)
		}
	}
	// The summary counts service scopes.
	want := map[string]int64{
		"aws/" + testAccount + "/aws-global/iam": 2,
		"aws/" + testAccount + "/us-east-1/ec2":  1,
		"aws/" + testAccount + "/eu-west-1/ec2":  1,
	}
	sum := g.Summary(st)
	got := map[string]int64{}
	for sc, c := range sum.Scopes {
		got[sc.String()] = c.Calls
	}
	if len(got) != len(want) {
		t.Errorf("scopes %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d calls, want %d (scopes %v)", k, got[k], n, got)
		}
	}
	// The other partitions' global endpoints.
	for region, want := range map[string]string{
		"cn-north-1":    "aws-cn-global",
		"us-gov-west-1": "aws-us-gov-global",
		"us-gov-east-1": "aws-us-gov-global",
		"ap-south-2":    "aws-global",
	} {
		c := cfg.Copy()
		c.Region = region
		sc, err := cloudgaws.Scope(c, iam.ServiceID, "GetRole")
		if err != nil {
			t.Fatal(err)
		}
		if sc.Region != want {
			t.Errorf("Scope(IAM in %s).Region = %s, want %s", region, sc.Region, want)
		}
	}
}
