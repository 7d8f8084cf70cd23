package state

import "github.com/cloudg/cloudg/internal/scopekey"

// Scope says where a call goes. Its string form is what telemetry shows:
// aws/123456789012/us-east-1/ec2/DescribeVpcs, with * for an empty part and
// the operation only when it is set.
//
//	Part       AWS                 Azure                            GCP
//	Provider   "aws"               "azure"                          "gcp"
//	Account    account id          subscription id, lower-case      projects/<id>, organizations/<id>, folders/<id>
//	Region     client region       ""                               ""
//	Service    ec2, iam, sts       network, compute; resourcegraph  cloudasset
//	Operation  DescribeVpcs        ""                               ListAssets
//
// Use the values the SDK integrations use, or your calls land in other
// buckets and protect nothing. Scope is a comparable value; the zero Scope
// is invalid (a call needs a provider). Package resilience names it
// resilience.Scope; it is defined here so that the packages below the
// governor (the stores, package observe's events) share it.
//
// A part may hold any text, '/' included (GCP accounts are
// "projects/<id>"), and no call is refused for it. String is for reading
// and may print two scopes alike (account "a/b" in region "c", and account
// "a" in region "b/c"); Key is unambiguous, and the governor keys its state
// and the Summary's maps by it.
type Scope struct {
	Provider  string `json:"provider"`
	Account   string `json:"account,omitempty"`
	Region    string `json:"region,omitempty"`
	Service   string `json:"service,omitempty"`
	Operation string `json:"operation,omitempty"`
}

// String returns provider/account/region/service[/operation], with * for
// each empty part but the operation.
func (s Scope) String() string { return scopekey.Format(s.parts(), false, 4) }

// Key returns the scope in a form no other scope shares: String's form
// with each part's '%', '/' and '*' escaped as %25, %2F and %2A, so that no
// part can pass for two, and * for an empty part, which no escaped part
// can be. Scopes whose parts hold none of those characters have the same
// Key and String: aws/123456789012/us-east-1/ec2/DescribeVpcs; a GCP
// project's is gcp/projects%2Fp1/*/cloudasset.
func (s Scope) Key() string { return scopekey.Format(s.parts(), true, 4) }

func (s Scope) parts() *[5]string {
	return &[5]string{s.Provider, s.Account, s.Region, s.Service, s.Operation}
}
