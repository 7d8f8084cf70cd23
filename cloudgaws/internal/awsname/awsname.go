// Package awsname names AWS services as the governor's scopes and
// configuration keys do: botocore's lower-case names (ec2,
// secretsmanager, logs, elbv2), from the SDK's service IDs ("EC2",
// "Secrets Manager") or from aws-sdk-go-v2's service package names
// (cloudwatchlogs). Package cloudgaws names its scopes with it, and its
// generator of the SDK's service list with it.
package awsname

import "strings"

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

// Name returns the botocore-style service name of an SDK service ID (the
// ServiceID constant of each aws-sdk-go-v2 service package): "EC2" is ec2,
// "Secrets Manager" is secretsmanager, "Elastic Load Balancing v2" is
// elbv2. An empty ID is "".
func Name(serviceID string) string {
	if n, ok := serviceNames[serviceID]; ok {
		return n
	}
	return generalName(serviceID)
}

// OfPackage returns the service name of an aws-sdk-go-v2 service package
// (the last element of github.com/aws/aws-sdk-go-v2/service/<pkg>):
// cloudwatchlogs is logs, elasticloadbalancingv2 is elbv2, secretsmanager
// is secretsmanager. The SDK names a service's package after its service
// ID, lower-cased without spaces (no ID holds a hyphen), so that a package
// is the Name of its ID wherever the table of exceptions does not map the
// ID.
func OfPackage(pkg string) string {
	for id, n := range serviceNames {
		if Squash(id) == pkg {
			return n
		}
	}
	return pkg
}

// Squash lower-cases s and drops its spaces, hyphens and underscores: the
// package name of a service ID ("Secrets Manager" is secretsmanager), and
// the form in which misspelt names are compared (secrets-manager).
func Squash(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '-' || c == '_':
			continue
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Exceptions returns a copy of the service IDs whose name is not the ID
// lower-cased without spaces, with their names.
func Exceptions() map[string]string {
	m := make(map[string]string, len(serviceNames))
	for k, v := range serviceNames {
		m[k] = v
	}
	return m
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
