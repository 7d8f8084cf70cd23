package awsname

import (
	"regexp"
	"strings"

	"github.com/cloudg/cloudg/internal/cowmap"
	"github.com/cloudg/cloudg/internal/scopekey"
)

// The tables partitions and globalServices are generated from botocore
// (globalregions.py, which checks them against the region name botocore's
// clients report):
//
//go:generate sh -c "python3 globalregions.py > globalregions_gen.go"

// partition is one of botocore's partitions: its name, the pattern of its
// region names, and the regions it lists.
type partition struct {
	name, pattern string
	regions       []string
}

// globalEndpoint is a global service's endpoint in a partition: botocore
// names a client made in any region of the partition after the endpoint
// (aws-global), except in the regions the service serves by an endpoint of
// their own (kept).
type globalEndpoint struct {
	partition, name string
	kept            []string
}

// patterns are the compiled patterns of partitions, in order.
var patterns = func() []*regexp.Regexp {
	rx := make([]*regexp.Regexp, len(partitions))
	for i, p := range partitions {
		rx[i] = regexp.MustCompile(p.pattern)
	}
	return rx
}()

// Region returns the region under which botocore names a client of the
// service (its scope name: iam, route53) made in region, the client's
// meta.region_name: the name of its partition's global endpoint for a
// global service (iam in eu-west-1 or us-east-1 is aws-global, in
// cn-north-1 aws-cn-global, in us-gov-west-1 aws-us-gov-global), region
// itself for every other service (ec2, and s3 and sts, which are regional
// with a global endpoint) and for a region the global service serves by an
// endpoint of its own (health in us-east-2). A region of no partition
// (none, "local") is in the aws partition, as botocore falls back to it;
// the pseudo-regions some services list as endpoints (iam-govcloud) are
// not in the table and are taken for such regions, and so is a
// partition's global endpoint name a service lists as an endpoint but not
// as its global one (health's aws-us-gov-global): botocore names a
// client made in either after the region given, Region gives aws-global.
// The name of one of the service's global endpoints (aws-us-gov-global,
// aws-cn-global) is that endpoint's region, in its partition, as botocore
// names a client made in it and the SDK sends its calls there (IAM in
// aws-us-gov-global to GovCloud's), not a region of no partition, in the
// aws one.
//
// A region that is not plain text (scopekey.Plain: a newline, a space, a
// control character, more than 128 bytes; one read from a file with its
// newline) is "", no region: a scope's parts reach log lines, metric
// labels and the status page, and the SDK sends no call in such a region.
//
// A FIPS pseudo-region (fips-us-east-1, us-east-1-fips,
// fips-us-gov-west-1) is first read as its region (see FIPSRegion), as
// the SDK reads it: the FIPS endpoint of the region's service, under the
// account's limits in that region.
func Region(service, region string) string {
	if !scopekey.Plain(region) {
		return "" // no region a scope may name (see above)
	}
	region = FIPSRegion(region)
	eps, ok := globalServices[service]
	if !ok {
		return region
	}
	for _, ep := range eps {
		if ep.name == region {
			return region // a partition's global endpoint names itself
		}
	}
	part := partitionOf(region)
	for _, ep := range eps {
		if ep.partition != part {
			continue
		}
		for _, r := range ep.kept {
			if r == region {
				return region
			}
		}
		return ep.name
	}
	return region
}

// FIPSRegion returns the region a FIPS pseudo-region names, the rule of
// aws-sdk-go-v2's MapFIPSRegion (internal/endpoints), by which every
// client resolves its endpoint in the region with UseFIPSEndpoint:
// "-fips-" is "-", and a "fips-" prefix or a "-fips" suffix is dropped
// (fips-us-east-1 and us-east-1-fips are us-east-1). Any other region is
// returned as it is. Neither allocates, but for the first
// maxFIPSRegions pseudo-regions of the process, the first time each is
// read: every governed call of a client made in one reads it.
func FIPSRegion(region string) string {
	const fipsInfix, fipsPrefix, fipsSuffix = "-fips-", "fips-", "-fips"
	if !strings.Contains(region, fipsInfix) && !strings.Contains(region, fipsPrefix) && !strings.Contains(region, fipsSuffix) {
		return region
	}
	if r, ok := fipsRegions.Load(region); ok {
		return r
	}
	pseudo := region
	region = strings.ReplaceAll(region, fipsInfix, "-")
	region = strings.ReplaceAll(region, fipsPrefix, "")
	region = strings.ReplaceAll(region, fipsSuffix, "")
	if fipsRegions.Len() < maxFIPSRegions {
		fipsRegions.Store(pseudo, region)
	}
	return region
}

// fipsRegions holds the regions of the FIPS pseudo-regions FIPSRegion
// has read, up to about maxFIPSRegions of them (writers racing past the
// bound add one each): the partitions' regions in their few FIPS forms,
// whatever region names a program makes up.
var fipsRegions cowmap.Map[string, string]

const maxFIPSRegions = 64

// partitionOf returns the partition of region, as botocore finds it: the
// first that lists the region or whose pattern it matches, else aws.
func partitionOf(region string) string {
	for i, p := range partitions {
		for _, r := range p.regions {
			if r == region {
				return p.name
			}
		}
		if patterns[i].MatchString(region) {
			return p.name
		}
	}
	return "aws"
}
