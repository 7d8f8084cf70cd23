package estate

import (
	"fmt"
	"regexp"
	"strings"
)

// A Scope names what an estate's request is about: an account, a region, a
// service (its signing name: ec2, iam, secretsmanager, dynamodb) and an
// action (DescribeInstances). As a selector, an empty field matches any
// value, so Scope{Service: "ec2"} selects every EC2 action everywhere, and
// the zero Scope, written "*", selects every action of every account and
// region. A Scope is a plain value, which its methods only read: several
// goroutines may use one at once while none changes it.
type Scope struct {
	Account string
	Region  string
	Service string
	Action  string
}

// Matches reports whether the selector s selects the scope t: each of s's
// fields is empty or equal to t's.
func (s Scope) Matches(t Scope) bool {
	return (s.Account == "" || s.Account == t.Account) &&
		(s.Region == "" || s.Region == t.Region) &&
		(s.Service == "" || s.Service == t.Service) &&
		(s.Action == "" || s.Action == t.Action)
}

// String writes the scope as ParseScope reads it,
// service:Action@account/region, leaving out the empty fields (an empty
// selector is *).
func (s Scope) String() string {
	var b strings.Builder
	b.WriteString(s.Service)
	if s.Action != "" {
		if s.Service == "" {
			b.WriteString("*")
		}
		b.WriteString(":" + s.Action)
	}
	if s.Account != "" || s.Region != "" {
		b.WriteString("@")
		if s.Account == "" {
			b.WriteString("*")
		}
		b.WriteString(s.Account)
		if s.Region != "" {
			b.WriteString("/" + s.Region)
		}
	}
	if b.Len() == 0 {
		return "*"
	}
	return b.String()
}

// scopeSyntax is [service][:Action][@account[/region]], each part a word
// or *.
var scopeSyntax = regexp.MustCompile(`^([a-z0-9-]+|\*)?(?::([A-Za-z0-9]+|\*))?(?:@([0-9]{12}|\*)(?:/([a-z0-9-]+|\*))?)?$`)

// ParseScope reads a selector written service:Action@account/region, where
// every part may be left out or written * to match anything:
// "secretsmanager:DescribeSecret@111111111111/us-east-1", "ec2@222222222222",
// "@111111111111/eu-west-1", "iam:GetRole".
func ParseScope(s string) (Scope, error) {
	m := scopeSyntax.FindStringSubmatch(s)
	if m == nil || s == "" {
		return Scope{}, fmt.Errorf("estate: scope %q: want [service][:Action][@account[/region]], each part optional or *, an account 12 digits", s)
	}
	any := func(v string) string {
		if v == "*" {
			return ""
		}
		return v
	}
	return Scope{Service: any(m[1]), Action: any(m[2]), Account: any(m[3]), Region: any(m[4])}, nil
}
