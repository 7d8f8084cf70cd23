package awsname

import "testing"

// What botocore 1.43.11 reports as client.meta.region_name for a client
// made (no network) in each region: every service whose name differs
// from the client's region in us-east-1, eu-west-1, cn-north-1 or
// us-gov-west-1, and a few that keep it.
func TestRegion(t *testing.T) {
	global := map[string]map[string]string{
		"account":               {"us-east-1": "aws-global", "eu-west-1": "aws-global", "cn-north-1": "aws-cn-global"},
		"billingconductor":      {"us-east-1": "aws-global", "eu-west-1": "aws-global"},
		"budgets":               {"us-east-1": "aws-global", "eu-west-1": "aws-global", "cn-north-1": "aws-cn-global"},
		"ce":                    {"us-east-1": "aws-global", "eu-west-1": "aws-global", "cn-north-1": "aws-cn-global"},
		"chime":                 {"us-east-1": "aws-global", "eu-west-1": "aws-global"},
		"cloudfront":            {"us-east-1": "aws-global", "eu-west-1": "aws-global", "cn-north-1": "aws-cn-global"},
		"codecatalyst":          {"us-east-1": "aws-global", "eu-west-1": "aws-global"},
		"health":                {"us-east-1": "aws-global", "eu-west-1": "aws-global", "cn-north-1": "aws-cn-global"},
		"iam":                   {"us-east-1": "aws-global", "eu-west-1": "aws-global", "cn-north-1": "aws-cn-global", "us-gov-west-1": "aws-us-gov-global"},
		"importexport":          {"us-east-1": "aws-global", "eu-west-1": "aws-global"},
		"networkmanager":        {"us-east-1": "aws-global", "eu-west-1": "aws-global", "us-gov-west-1": "aws-us-gov-global"},
		"notificationscontacts": {"us-east-1": "aws-global", "eu-west-1": "aws-global"},
		"organizations":         {"us-east-1": "aws-global", "eu-west-1": "aws-global", "cn-north-1": "aws-cn-global", "us-gov-west-1": "aws-us-gov-global"},
		"route53":               {"us-east-1": "aws-global", "eu-west-1": "aws-global", "cn-north-1": "aws-cn-global", "us-gov-west-1": "aws-us-gov-global"},
		"savingsplans":          {"us-east-1": "aws-global", "eu-west-1": "aws-global"},
		"shield":                {"us-east-1": "aws-global", "eu-west-1": "aws-global"},
		"taxsettings":           {"us-east-1": "aws-global", "eu-west-1": "aws-global"},
		"waf":                   {"us-east-1": "aws-global", "eu-west-1": "aws-global"},
	}
	if len(globalServices) != len(global) {
		t.Errorf("%d global services, botocore has %d", len(globalServices), len(global))
	}
	regions := []string{"us-east-1", "eu-west-1", "cn-north-1", "us-gov-west-1"}
	for svc, byRegion := range global {
		for _, r := range regions {
			want, ok := byRegion[r]
			if !ok {
				want = r
			}
			if got := Region(svc, r); got != want {
				t.Errorf("Region(%s, %s) = %s, want %s", svc, r, got, want)
			}
		}
	}
	for _, c := range []struct{ svc, region, want string }{
		// Regional, with a global endpoint: botocore keeps the region.
		{"s3", "us-east-1", "us-east-1"},
		{"s3", "eu-west-1", "eu-west-1"},
		{"sts", "us-east-1", "us-east-1"},
		{"sts", "eu-west-1", "eu-west-1"},
		// STS's global endpoint names itself, as botocore does: AWS serves
		// it in the caller's region or in us-east-1, by where the call
		// comes from, which the client does not know (see the README).
		{"sts", "aws-global", "aws-global"},
		{"ec2", "eu-west-1", "eu-west-1"},
		// A region a global service serves by an endpoint of its own.
		{"health", "us-east-2", "us-east-2"},
		{"health", "us-gov-west-1", "us-gov-west-1"},
		{"budgets", "us-isob-east-1", "us-isob-east-1"},
		{"budgets", "us-isob-west-1", "aws-iso-b-global"},
		// The other partitions.
		{"iam", "us-iso-east-1", "aws-iso-global"},
		{"iam", "us-isof-south-1", "aws-iso-f-global"},
		{"route53", "eu-isoe-west-1", "aws-iso-e-global"},
		{"iam", "eusc-de-east-1", "eusc-de-east-1"},
		// A region botocore does not list, by its partition's pattern.
		{"iam", "us-east-99", "aws-global"},
		{"iam", "cn-south-7", "aws-cn-global"},
		// No partition: botocore's fallback, the aws partition.
		{"iam", "", "aws-global"},
		{"iam", "local", "aws-global"},
		{"ec2", "local", "local"},
		{"health", "local", "aws-global"},
	} {
		if got := Region(c.svc, c.region); got != c.want {
			t.Errorf("Region(%s, %s) = %s, want %s", c.svc, c.region, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = Region("iam", "eu-west-1"); _ = Region("ec2", "eu-west-1") }); n != 0 {
		t.Errorf("Region allocates %v times a call", n)
	}
}

// A FIPS pseudo-region is its region, by the SDK's rule (MapFIPSRegion),
// before the global services' rule.
func TestFIPSRegion(t *testing.T) {
	for _, c := range []struct{ svc, region, want string }{
		{"ec2", "fips-us-east-1", "us-east-1"},
		{"ec2", "us-east-1-fips", "us-east-1"},
		{"ec2", "us-gov-fips-west-1", "us-gov-west-1"},
		{"ec2", "us-east-1", "us-east-1"},
		{"iam", "fips-us-gov-west-1", "aws-us-gov-global"},
		{"iam", "us-gov-west-1-fips", "aws-us-gov-global"},
		{"iam", "fips-us-east-1", "aws-global"},
	} {
		if got := Region(c.svc, c.region); got != c.want {
			t.Errorf("Region(%s, %s) = %s, want %s", c.svc, c.region, got, c.want)
		}
	}
	// Every governed call of a client made in a pseudo-region reads it:
	// the region it names is not made again each time.
	if n := testing.AllocsPerRun(100, func() { _ = Region("ec2", "fips-us-east-1"); _ = Region("ec2", "us-east-1-fips") }); n != 0 {
		t.Errorf("Region of a FIPS pseudo-region allocates %v times a call", n)
	}
}

// The name of a global service's endpoint in a partition is that
// endpoint's region, as botocore names a client made in it, in its FIPS
// form too; it is no region of no partition (the aws partition's).
func TestGlobalEndpointNameRegion(t *testing.T) {
	for _, c := range []struct{ svc, region, want string }{
		{"iam", "aws-global", "aws-global"},
		{"iam", "aws-us-gov-global", "aws-us-gov-global"},
		{"iam", "aws-us-gov-global-fips", "aws-us-gov-global"},
		{"iam", "fips-aws-us-gov-global", "aws-us-gov-global"},
		{"iam", "aws-cn-global", "aws-cn-global"},
		{"iam", "aws-iso-global", "aws-iso-global"},
		{"iam", "aws-iso-b-global", "aws-iso-b-global"},
		{"iam", "aws-iso-f-global", "aws-iso-f-global"},
		{"route53", "aws-iso-e-global", "aws-iso-e-global"},
		{"organizations", "aws-us-gov-global-fips", "aws-us-gov-global"},
		// Not an endpoint of the service's: botocore's aws partition.
		{"iam", "aws-iso-e-global", "aws-global"},
		{"cloudfront", "aws-us-gov-global", "aws-global"},
		// A regional service keeps it.
		{"ec2", "aws-us-gov-global", "aws-us-gov-global"},
	} {
		if got := Region(c.svc, c.region); got != c.want {
			t.Errorf("Region(%s, %s) = %s, want %s", c.svc, c.region, got, c.want)
		}
	}
}

// The two names botocore 1.43.11 reports otherwise than Region (of all its
// services, in every partition's global endpoint name and iam-govcloud;
// globalregions.py does not check them), as the README says: both are
// taken for regions of no partition, in the aws one.
func TestNamesBotocoreReportsOtherwise(t *testing.T) {
	for _, c := range []struct{ svc, region, botocore string }{
		{"iam", "iam-govcloud", "iam-govcloud"},
		{"health", "aws-us-gov-global", "aws-us-gov-global"},
	} {
		if got := Region(c.svc, c.region); got != "aws-global" {
			t.Errorf("Region(%s, %s) = %s, want aws-global (botocore: %s)", c.svc, c.region, got, c.botocore)
		}
	}
}
