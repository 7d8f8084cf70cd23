package test

import (
	"context"
	"maps"
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

// iamResolver resolves every IAM endpoint to url, and records the
// endpoint the SDK's own rules resolve: where the call would go.
type iamResolver struct {
	url  string
	sent *string
}

func (r iamResolver) ResolveEndpoint(ctx context.Context, p iam.EndpointParameters) (smithyendpoints.Endpoint, error) {
	ep, err := iam.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, p)
	if err != nil {
		return smithyendpoints.Endpoint{}, err
	}
	*r.sent = ep.URI.Host
	u, err := url.Parse(r.url)
	if err != nil {
		return smithyendpoints.Endpoint{}, err
	}
	return smithyendpoints.Endpoint{URI: *u}, nil
}

// A client of a global service made in its partition's global endpoint
// name (aws-us-gov-global, aws-cn-global, aws-iso-global), or in its
// FIPS form (aws-us-gov-global-fips, fips-aws-us-gov-global), sends its
// calls to that partition's endpoint (IAM in aws-us-gov-global to
// iam.us-gov.amazonaws.com, GovCloud's), and botocore names its region
// so: it is governed there, with the partition's other regions' calls
// (IAM in us-gov-west-1), not in the aws partition's aws-global.
func TestGlobalEndpointNameIsItsPartitions(t *testing.T) {
	f := newFake(t)
	cfg, g := tcpGoverned(t, f, fastEC2)
	ctx, st := resilience.WithStats(context.Background())
	for _, c := range []struct{ region, host, want string }{
		{"us-gov-west-1", "iam.us-gov.amazonaws.com", "aws-us-gov-global"},
		{"aws-us-gov-global", "iam.us-gov.amazonaws.com", "aws-us-gov-global"},
		{"aws-us-gov-global-fips", "iam.us-gov.amazonaws.com", "aws-us-gov-global"},
		{"fips-aws-us-gov-global", "iam.us-gov.amazonaws.com", "aws-us-gov-global"},
		{"aws-cn-global", "iam.cn-north-1.amazonaws.com.cn", "aws-cn-global"},
		{"aws-iso-global", "iam.us-iso-east-1.c2s.ic.gov", "aws-iso-global"},
		{"aws-global", "iam.amazonaws.com", "aws-global"},
		{"aws-global-fips", "iam-fips.amazonaws.com", "aws-global"},
	} {
		cc := cfg.Copy()
		cc.Region = c.region
		var host string
		client := iam.NewFromConfig(cc, func(o *iam.Options) {
			o.BaseEndpoint = nil
			o.EndpointResolverV2 = iamResolver{url: *cfg.BaseEndpoint, sent: &host}
		})
		if _, err := client.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("r")}); err != nil {
			t.Fatalf("GetRole in %s: %v", c.region, err)
		}
		if host != c.host {
			t.Errorf("the SDK sends IAM's calls in %s to %s, want %s", c.region, host, c.host)
		}
		sc, err := cloudgaws.Scope(cc, iam.ServiceID, "GetRole")
		if err != nil {
			t.Fatal(err)
		}
		if sc.Region != c.want {
			t.Errorf("Scope(IAM in %s).Region = %s, want %s, the partition of %s", c.region, sc.Region, c.want, c.host)
		}
	}
	got := map[string]int64{}
	for sc, c := range g.Summary(st).Scopes {
		got[sc.String()] = c.Calls
	}
	want := map[string]int64{
		"aws/" + testAccount + "/aws-us-gov-global/iam": 4,
		"aws/" + testAccount + "/aws-cn-global/iam":     1,
		"aws/" + testAccount + "/aws-iso-global/iam":    1,
		"aws/" + testAccount + "/aws-global/iam":        2,
	}
	if !maps.Equal(got, want) {
		t.Errorf("scopes %v, want %v: a partition's IAM calls in its scope", got, want)
	}
}

// A call of a client made in a FIPS pseudo-region (fips-us-east-1)
// allocates no more, governed, than the same call ungoverned, as one in
// us-east-1 does (see TestGovernedCallAllocations, overheadClient's
// governor): the region its scope
// is governed in is not made again by every call.
func TestAFIPSPseudoRegionCallAllocatesNoMore(t *testing.T) {
	allocs := func(region string, governed bool) float64 {
		f := newFake(nil)
		f.noTimes = true
		cfg := awsConfig(f, nil)
		cfg.RetryMode = aws.RetryModeStandard
		if governed {
			installOverhead(t, &cfg)
		}
		var rules ec2.EndpointParameters
		client := ec2.NewFromConfig(cfg, func(o *ec2.Options) {
			o.Region = region
			// The endpoint rules refuse FIPS with a custom endpoint.
			o.BaseEndpoint = nil
			o.EndpointResolverV2 = fakeResolver{url: *cfg.BaseEndpoint, params: &rules}
		})
		ctx := context.Background()
		return testing.AllocsPerRun(200, func() {
			if err := describeVpcs(ctx, client); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, region := range []string{"us-east-1", "fips-us-east-1", "us-east-1-fips"} {
		bare, governed := allocs(region, false), allocs(region, true)
		if governed > bare+3+raceSlack {
			t.Errorf("a governed DescribeVpcs in %s allocates %v objects, the ungoverned one %v: want at most 3 more (%d more under -race)", region, governed, bare, raceSlack)
		}
	}
}
