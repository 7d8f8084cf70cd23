package cloudgaws

import (
	"strings"

	"github.com/cloudg/cloudg/internal/cowmap"
)

// serviceNames maps the SDK service IDs whose botocore name is not the ID
// lower-cased without spaces. Every other ID follows that rule: "EC2" is
// ec2, "Secrets Manager" is secretsmanager, "Route 53" is route53,
// "Resource Groups Tagging API" is resourcegroupstaggingapi.
var serviceNames = map[string]string{
	"Elastic Load Balancing":        "elb",
	"Elastic Load Balancing v2":     "elbv2",
	"CloudWatch Logs":               "logs",
	"CloudWatch Events":             "events",
	"EventBridge":                   "events",
	"Application Auto Scaling":      "application-autoscaling",
	"Cognito Identity Provider":     "cognito-idp",
	"Cognito Identity":              "cognito-identity",
	"Config Service":                "config",
	"SFN":                           "stepfunctions",
	"SSO Admin":                     "sso-admin",
	"SSO OIDC":                      "sso-oidc",
	"Database Migration Service":    "dms",
	"ACM PCA":                       "acm-pca",
	"Cost Explorer":                 "ce",
	"Elasticsearch Service":         "es",
	"Directory Service":             "ds",
	"Resource Groups":               "resource-groups",
	"Service Quotas":                "service-quotas",
	"Application Discovery Service": "discovery",
	"Migration Hub":                 "mgh",
	"ECR PUBLIC":                    "ecr-public",
	"WAF Regional":                  "waf-regional",
	"Marketplace Metering":          "meteringmarketplace",
	"Lex Model Building Service":    "lex-models",
	"Lex Runtime Service":           "lex-runtime",
	"SageMaker Runtime":             "sagemaker-runtime",
	"IoT Data Plane":                "iot-data",
	"Compute Optimizer":             "compute-optimizer",
	"License Manager":               "license-manager",
	"Cost and Usage Report Service": "cur",
	"Redshift Data":                 "redshift-data",
	"Timestream Write":              "timestream-write",
	"Timestream Query":              "timestream-query",
	"SSM Incidents":                 "ssm-incidents",
	"SSM Contacts":                  "ssm-contacts",
	"Network Firewall":              "network-firewall",
	"Application Insights":          "application-insights",
}

// ServiceName returns the botocore-style service name of an SDK service ID
// (the ServiceID constant of each aws-sdk-go-v2 service package): "EC2" is
// ec2, "Secrets Manager" is secretsmanager, "Route 53" is route53, "Elastic
// Load Balancing v2" is elbv2. Scopes, configuration keys
// (ratelimit.aws.services.<name>) and telemetry use that name. An empty ID
// is "".
func ServiceName(serviceID string) string {
	if n, ok := serviceNames[serviceID]; ok {
		return n
	}
	return generalName(serviceID)
}

// generalName lower-cases id and drops its spaces.
func generalName(id string) string {
	var b strings.Builder
	b.Grow(len(id))
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c == ' ':
			continue
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

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
