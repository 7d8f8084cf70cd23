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
func (s Scope) String() string { return s.format(false, 4) }

// Key returns the scope in a form no other scope shares: String's form
// with each part's '%', '/' and '*' escaped as %25, %2F and %2A, so that no
// part can pass for two, and * for an empty part, which no escaped part
// can be. Scopes whose parts hold none of those characters have the same
// Key and String: aws/123456789012/us-east-1/ec2/DescribeVpcs; a GCP
// project's is gcp/projects%2Fp1/*/cloudasset.
func (s Scope) Key() string { return s.format(true, 4) }

// accountKey and providerKey are the state keys of an account's bucket and
// of a provider's: Key's form of their own parts only. A leaf's Key has
// four or five parts, so neither can be a leaf's, not even the leaf of a
// call scoped to a provider and an account alone (azure/sub/*/*), whose
// bucket is not its account's.
func (s Scope) accountKey() string { return s.format(true, 2) }

func (s Scope) providerKey() string { return s.format(true, 1) }

// format writes the scope's first n parts (1, 2 or 4; with 4, the
// operation too when it is set).
func (s Scope) format(escape bool, n int) string {
	var b strings.Builder
	b.Grow(len(s.Provider) + len(s.Account) + len(s.Region) + len(s.Service) + len(s.Operation) + 8)
	part := func(p string) {
		if p == "" {
			b.WriteByte('*')
			return
		}
		if !escape {
			b.WriteString(p)
			return
		}
		for i := 0; i < len(p); i++ {
			switch c := p[i]; c {
			case '%':
				b.WriteString("%25")
			case '/':
				b.WriteString("%2F")
			case '*':
				b.WriteString("%2A")
			default:
				b.WriteByte(c)
			}
		}
	}
	part(s.Provider)
	if n == 1 {
		return b.String()
	}
	b.WriteByte('/')
	part(s.Account)
	if n == 2 {
		return b.String()
	}
	b.WriteByte('/')
	part(s.Region)
	b.WriteByte('/')
	part(s.Service)
	if s.Operation != "" {
		b.WriteByte('/')
		part(s.Operation)
	}
	return b.String()
}

// serviceScope returns the scope without its operation: the key of the
// telemetry.
func (s Scope) serviceScope() Scope {
	s.Operation = ""
	return s
}

// accountScope returns the scope's provider and account: the key of the
// bulkhead and of the account bucket.
func (s Scope) accountScope() Scope {
	return Scope{Provider: s.Provider, Account: s.Account}
}
