package test

import (
	"testing"

	"github.com/cloudg/cloudg/resilience"
)

// No two scopes share state in Redis: each part of a scope is escaped in
// its key, and the buckets of an account or a provider never share the key
// of a leaf.
func TestScopesNeverShareState(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, c := range []struct {
			name string
			a, b resilience.Scope
		}{
			{"a slash in the account or the region",
				resilience.Scope{Provider: "aws", Account: "a/b", Region: "c", Service: "ec2"},
				resilience.Scope{Provider: "aws", Account: "a", Region: "b/c", Service: "ec2"}},
			{"an account named * or none",
				resilience.Scope{Provider: "aws", Account: "*", Region: "us-east-1", Service: "ec2"},
				resilience.Scope{Provider: "aws", Region: "us-east-1", Service: "ec2"}},
			{"a percent sign",
				resilience.Scope{Provider: "aws", Account: "a%2Fb", Region: "c", Service: "ec2"},
				resilience.Scope{Provider: "aws", Account: "a/b", Region: "c", Service: "ec2"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				p := newProcess(t, be, uniquePrefix(t), resilience.Config{})
				p.do(t, c.a, throttl, once)
				if l := p.gov.Inspect(c.a).Leaf; l.Rate != l.Ceiling/2 {
					t.Fatalf("%v at %v rps after a throttle, want half its %v", c.a, l.Rate, l.Ceiling)
				}
				if l := p.gov.Inspect(c.b).Leaf; l.Rate != l.Ceiling {
					t.Fatalf("a throttle in %v slowed %v to %v rps of %v", c.a, c.b, l.Rate, l.Ceiling)
				}
			})
		}
		// A call scoped to a provider and an account only (Azure has an
		// account bucket by default): its leaf and the account's bucket are
		// two buckets.
		t.Run("a leaf with the parts of an account", func(t *testing.T) {
			p := newProcess(t, be, uniquePrefix(t), resilience.Config{})
			sub := resilience.Scope{Provider: "azure", Account: "00000000-0000-0000-0000-000000000001"}
			p.do(t, sub, throttl, once)
			in := p.gov.Inspect(sub)
			if in.Leaf.Rate != in.Leaf.Ceiling/2 || in.Account.Ceiling == 0 || in.Account.Rate != in.Account.Ceiling {
				t.Fatalf("after a throttle: leaf %+v, account %+v; want the leaf at half its ceiling and the account bucket at its own", in.Leaf, in.Account)
			}
		})
	})
}
