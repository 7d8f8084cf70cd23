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
func (s Scope) String() string { return s.format(false) }

// key returns the scope as a state key: like String, but unambiguous.
// Each part is escaped ('%', '/' and '*' as %25, %2F and %2A) so that no
// part can pass for two, and an empty part is *, which no escaped part
// can be.
func (s Scope) key() string { return s.format(true) }

func (s Scope) format(escape bool) string {
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
	b.WriteByte('/')
	part(s.Account)
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
