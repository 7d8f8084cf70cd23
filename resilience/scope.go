package resilience

import "strings"

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
// is invalid (a call needs a provider).
type Scope struct {
	Provider  string
	Account   string
	Region    string
	Service   string
	Operation string
}

// String returns provider/account/region/service[/operation], with * for
// each empty part but the operation.
func (s Scope) String() string {
	var b strings.Builder
	b.Grow(len(s.Provider) + len(s.Account) + len(s.Region) + len(s.Service) + len(s.Operation) + 8)
	part := func(p string) {
		if p == "" {
			p = "*"
		}
		b.WriteString(p)
	}
	part(s.Provider)
	b.WriteByte('/')
	part(s.Account)
	b.WriteByte('/')
	part(s.Region)
	b.WriteByte('/')
	part(s.Service)
	if s.Operation != "" {
		b.WriteByte('/')
		b.WriteString(s.Operation)
	}
	return b.String()
}

// ServiceScope returns the scope without its operation: the key of the
// telemetry.
func (s Scope) ServiceScope() Scope {
	s.Operation = ""
	return s
}

// AccountScope returns the scope's provider and account: the key of the
// bulkhead and of the account bucket.
func (s Scope) AccountScope() Scope {
	return Scope{Provider: s.Provider, Account: s.Account}
}
