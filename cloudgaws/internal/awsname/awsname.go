// Package awsname names AWS services as the governor's scopes and
// configuration keys do: botocore's lower-case names (ec2,
// secretsmanager, logs, elbv2), from the SDK's service IDs ("EC2",
// "Secrets Manager") or from aws-sdk-go-v2's service package names
// (cloudwatchlogs). Package cloudgaws names its scopes with it, and its
// generator of the SDK's service list with it.
package awsname

import "strings"

// serviceNames maps the SDK service IDs whose botocore name is not the ID
// lower-cased without spaces ("Bedrock Runtime" is bedrock-runtime, "Lex
// Models V2" is lexv2-models). Every other ID follows that rule: "EC2" is
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

	// Botocore's names of the services whose name is neither: most of
	// those added since 2019 are their ID lower-cased with hyphens for
	// spaces, a few are shorter (read from each botocore model's
	// serviceId, removed services included).
	"Agent Registry":                      "agent-registry",
	"Agent Registry Control":              "agent-registry-control",
	"Application Signals":                 "application-signals",
	"ARC Region switch":                   "arc-region-switch",
	"ARC Zonal Shift":                     "arc-zonal-shift",
	"Auto Scaling Plans":                  "autoscaling-plans",
	"Backup Gateway":                      "backup-gateway",
	"BCM Dashboards":                      "bcm-dashboards",
	"BCM Data Exports":                    "bcm-data-exports",
	"BCM Pricing Calculator":              "bcm-pricing-calculator",
	"BCM Recommended Actions":             "bcm-recommended-actions",
	"Bedrock Agent":                       "bedrock-agent",
	"Bedrock Agent Runtime":               "bedrock-agent-runtime",
	"Bedrock AgentCore":                   "bedrock-agentcore",
	"Bedrock AgentCore Control":           "bedrock-agentcore-control",
	"Bedrock Data Automation":             "bedrock-data-automation",
	"Bedrock Data Automation Runtime":     "bedrock-data-automation-runtime",
	"Bedrock Runtime":                     "bedrock-runtime",
	"Chime SDK Identity":                  "chime-sdk-identity",
	"Chime SDK Media Pipelines":           "chime-sdk-media-pipelines",
	"Chime SDK Meetings":                  "chime-sdk-meetings",
	"Chime SDK Messaging":                 "chime-sdk-messaging",
	"Chime SDK Voice":                     "chime-sdk-voice",
	"CloudFront KeyValueStore":            "cloudfront-keyvaluestore",
	"CloudTrail Data":                     "cloudtrail-data",
	"CodeGuru Reviewer":                   "codeguru-reviewer",
	"CodeGuru Security":                   "codeguru-security",
	"CodeStar connections":                "codestar-connections",
	"codestar notifications":              "codestar-notifications",
	"Cognito Sync":                        "cognito-sync",
	"Compute Optimizer Automation":        "compute-optimizer-automation",
	"Connect Contact Lens":                "connect-contact-lens",
	"Cost Optimization Hub":               "cost-optimization-hub",
	"Customer Profiles":                   "customer-profiles",
	"DevOps Agent":                        "devops-agent",
	"DevOps Guru":                         "devops-guru",
	"DocDB Elastic":                       "docdb-elastic",
	"Directory Service Data":              "ds-data",
	"EC2 Instance Connect":                "ec2-instance-connect",
	"EKS Auth":                            "eks-auth",
	"Elastic Inference":                   "elastic-inference",
	"EMR containers":                      "emr-containers",
	"EMR Serverless":                      "emr-serverless",
	"finspace data":                       "finspace-data",
	"Geo Maps":                            "geo-maps",
	"Geo Places":                          "geo-places",
	"Geo Routes":                          "geo-routes",
	"Inspector Scan":                      "inspector-scan",
	"IoT Jobs Data Plane":                 "iot-jobs-data",
	"IoT Managed Integrations":            "iot-managed-integrations",
	"IoT RoboRunner":                      "iot-roborunner",
	"IoT 1Click Devices Service":          "iot1click-devices",
	"IoT 1Click Projects":                 "iot1click-projects",
	"IoT Events Data":                     "iotevents-data",
	"IVS RealTime":                        "ivs-realtime",
	"Kendra Ranking":                      "kendra-ranking",
	"Kinesis Video Archived Media":        "kinesis-video-archived-media",
	"Kinesis Video Media":                 "kinesis-video-media",
	"Kinesis Video Signaling":             "kinesis-video-signaling",
	"Kinesis Video WebRTC Storage":        "kinesis-video-webrtc-storage",
	"Lambda Core":                         "lambda-core",
	"Lambda Microvms":                     "lambda-microvms",
	"Launch Wizard":                       "launch-wizard",
	"Lex Models V2":                       "lexv2-models",
	"Lex Runtime V2":                      "lexv2-runtime",
	"License Manager Linux Subscriptions": "license-manager-linux-subscriptions",
	"License Manager User Subscriptions":  "license-manager-user-subscriptions",
	"ManagedBlockchain Query":             "managedblockchain-query",
	"Marketplace Agreement":               "marketplace-agreement",
	"Marketplace Catalog":                 "marketplace-catalog",
	"Marketplace Deployment":              "marketplace-deployment",
	"Marketplace Discovery":               "marketplace-discovery",
	"Marketplace Entitlement Service":     "marketplace-entitlement",
	"Marketplace Reporting":               "marketplace-reporting",
	"MediaPackage Vod":                    "mediapackage-vod",
	"MediaStore Data":                     "mediastore-data",
	"Medical Imaging":                     "medical-imaging",
	"Migration Hub Refactor Spaces":       "migration-hub-refactor-spaces",
	"MigrationHub Config":                 "migrationhub-config",
	"MWAA Serverless":                     "mwaa-serverless",
	"Neptune Graph":                       "neptune-graph",
	"Nova Act":                            "nova-act",
	"PartnerCentral Account":              "partnercentral-account",
	"PartnerCentral Benefits":             "partnercentral-benefits",
	"PartnerCentral Channel":              "partnercentral-channel",
	"PartnerCentral Revenue Measurement":  "partnercentral-revenue-measurement",
	"PartnerCentral Selling":              "partnercentral-selling",
	"Payment Cryptography":                "payment-cryptography",
	"Payment Cryptography Data":           "payment-cryptography-data",
	"Pca Connector Ad":                    "pca-connector-ad",
	"Pca Connector Scep":                  "pca-connector-scep",
	"Personalize Events":                  "personalize-events",
	"Personalize Runtime":                 "personalize-runtime",
	"Pinpoint Email":                      "pinpoint-email",
	"Pinpoint SMS Voice":                  "pinpoint-sms-voice",
	"Pinpoint SMS Voice V2":               "pinpoint-sms-voice-v2",
	"Pricing Plan Manager":                "pricing-plan-manager",
	"QLDB Session":                        "qldb-session",
	"RDS Data":                            "rds-data",
	"Redshift Serverless":                 "redshift-serverless",
	"Resource Explorer 2":                 "resource-explorer-2",
	"Route53 Recovery Cluster":            "route53-recovery-cluster",
	"Route53 Recovery Control Config":     "route53-recovery-control-config",
	"Route53 Recovery Readiness":          "route53-recovery-readiness",
	"SageMaker A2I Runtime":               "sagemaker-a2i-runtime",
	"Sagemaker Edge":                      "sagemaker-edge",
	"SageMaker FeatureStore Runtime":      "sagemaker-featurestore-runtime",
	"SageMaker Geospatial":                "sagemaker-geospatial",
	"SageMaker Metrics":                   "sagemaker-metrics",
	"SimpleDB":                            "sdb",
	"Security IR":                         "security-ir",
	"ServerlessApplicationRepository":     "serverlessrepo",
	"Service Catalog AppRegistry":         "servicecatalog-appregistry",
	"Signer Data":                         "signer-data",
	"Snow Device Management":              "snow-device-management",
	"SSM GuiConnect":                      "ssm-guiconnect",
	"SSM QuickSetup":                      "ssm-quicksetup",
	"Ssm Sap":                             "ssm-sap",
	"Support App":                         "support-app",
	"Timestream InfluxDB":                 "timestream-influxdb",
	"Voice ID":                            "voice-id",
	"VPC Lattice":                         "vpc-lattice",
	"Workspaces Instances":                "workspaces-instances",
	"WorkSpaces Thin Client":              "workspaces-thin-client",
	"WorkSpaces Web":                      "workspaces-web",
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
