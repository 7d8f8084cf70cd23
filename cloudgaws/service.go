package cloudgaws

import (
	"github.com/cloudg/cloudg/cloudgaws/internal/awsname"
	"github.com/cloudg/cloudg/internal/cowmap"
)

// ServiceName returns the botocore-style service name of an SDK service ID
// (the ServiceID constant of each aws-sdk-go-v2 service package): "EC2" is
// ec2, "Secrets Manager" is secretsmanager, "Route 53" is route53, "Elastic
// Load Balancing v2" is elbv2. Scopes, configuration keys
// (ratelimit.aws.services.<name>) and telemetry use that name. An empty ID
// is "".
func ServiceName(serviceID string) string { return awsname.Name(serviceID) }

// nameCache holds every service name resolved so far, so that a call finds
// its service's name with one map read and no allocation. The SDK has a
// few hundred service IDs, so it stays small, and a copy-on-write map
// suits it.
type nameCache struct{ m cowmap.Map[string, string] }

// lookup returns the name of id under the installation's overrides.
func (c *nameCache) lookup(id string, overrides map[string]string) string {
	return c.m.LoadOrStore(id, func() string {
		if n, ok := overrides[id]; ok {
			return n
		}
		return ServiceName(id)
	})
}
