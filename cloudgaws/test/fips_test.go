package test

import (
	"context"
	"net/url"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// fakeResolver resolves every EC2 endpoint to url, and records the
// parameters the SDK resolved it with.
type fakeResolver struct {
	url    string
	params *ec2.EndpointParameters
}

func (r fakeResolver) ResolveEndpoint(_ context.Context, p ec2.EndpointParameters) (smithyendpoints.Endpoint, error) {
	*r.params = p
	u, err := url.Parse(r.url)
	if err != nil {
		return smithyendpoints.Endpoint{}, err
	}
	return smithyendpoints.Endpoint{URI: *u}, nil
}

// A FIPS pseudo-region (fips-us-east-1, us-east-1-fips), which the SDK's
// clients read as the region with its FIPS endpoint (every client's
// finalizeClientEndpointResolverOptions, and the endpoint rules' region
// through the SDK's MapFIPSRegion), is governed in the region's scope:
// the FIPS endpoint is the same service in the same region, under the
// account's one limit, so one bucket and one breaker carry its calls and
// those of a client made in us-east-1, with UseFIPSEndpoint or without.
// Scope says what the middleware does.
func TestFIPSPseudoRegionIsItsRegion(t *testing.T) {
	f := newFake(t)
	cfg, g := tcpGoverned(t, f, fastEC2)
	ctx, st := resilience.WithStats(context.Background())
	for _, c := range []struct {
		region string
		fips   aws.FIPSEndpointState
	}{
		{"us-east-1", aws.FIPSEndpointStateUnset},
		{"us-east-1", aws.FIPSEndpointStateEnabled},
		{"fips-us-east-1", aws.FIPSEndpointStateUnset},
		{"us-east-1-fips", aws.FIPSEndpointStateUnset},
	} {
		var rules ec2.EndpointParameters
		client := ec2.NewFromConfig(cfg, func(o *ec2.Options) {
			o.Region = c.region
			o.EndpointOptions.UseFIPSEndpoint = c.fips
			// The endpoint rules refuse FIPS with a custom endpoint: the
			// rules' parameters are recorded, and the call goes to the fake.
			o.BaseEndpoint = nil
			o.EndpointResolverV2 = fakeResolver{url: *cfg.BaseEndpoint, params: &rules}
		})
		if err := describeVpcs(ctx, client); err != nil {
			t.Fatalf("DescribeVpcs in %s: %v", c.region, err)
		}
		if wantFIPS := c.region != "us-east-1" || c.fips == aws.FIPSEndpointStateEnabled; aws.ToString(rules.Region) != "us-east-1" || aws.ToBool(rules.UseFIPS) != wantFIPS {
			t.Errorf("the SDK resolved the endpoint of %s in region %s, FIPS %v; want us-east-1, FIPS %v", c.region, aws.ToString(rules.Region), aws.ToBool(rules.UseFIPS), wantFIPS)
		}
		cc := cfg.Copy()
		cc.Region = c.region
		sc, err := cloudgaws.Scope(cc, ec2.ServiceID, "DescribeVpcs")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sc.String(), "aws/"+testAccount+"/us-east-1/ec2/DescribeVpcs"; got != want {
			t.Errorf("Scope(EC2 in %s) = %s, want %s", c.region, got, want)
		}
	}
	got := map[string]int64{}
	for sc, c := range g.Summary(st).Scopes {
		got[sc.String()] = c.Calls
	}
	if want := map[string]int64{ec2Key: 4}; len(got) != 1 || got[ec2Key] != 4 {
		t.Errorf("scopes %v, want %v: one region's calls in one scope", got, want)
	}
	// A global service's FIPS endpoint is its partition's global one: IAM
	// in fips-us-gov-west-1 is GovCloud's, not the aws partition's.
	for region, want := range map[string]string{
		"fips-us-gov-west-1": "aws-us-gov-global",
		"us-gov-west-1-fips": "aws-us-gov-global",
		"fips-us-east-1":     "aws-global",
	} {
		cc := cfg.Copy()
		cc.Region = region
		sc, err := cloudgaws.Scope(cc, iam.ServiceID, "GetRole")
		if err != nil {
			t.Fatal(err)
		}
		if sc.Region != want {
			t.Errorf("Scope(IAM in %s).Region = %s, want %s", region, sc.Region, want)
		}
	}
}
