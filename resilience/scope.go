package resilience

import (
	"github.com/cloudg/cloudg/internal/scopekey"
	"github.com/cloudg/cloudg/state"
)

// Scope says where a call goes: provider, account, region, service and
// operation, aws/123456789012/us-east-1/ec2/DescribeVpcs in its string
// form. It is state.Scope, whose documentation gives each provider's
// parts; the packages below the governor (the stores, package observe's
// events) share it.
type Scope = state.Scope

// accountKey and providerKey are the state keys of an account's bucket and
// of a provider's: Key's form of their own parts only. A leaf's Key has
// four or five parts, so neither can be a leaf's, not even the leaf of a
// call scoped to a provider and an account alone (azure/sub/*/*), whose
// bucket is not its account's.
func accountKey(s Scope) string {
	return scopekey.Format(&[5]string{s.Provider, s.Account}, true, 2)
}

func providerKey(provider string) string {
	return scopekey.Format(&[5]string{provider}, true, 1)
}

// serviceScope returns the scope without its operation: the key of the
// telemetry.
func serviceScope(s Scope) Scope {
	s.Operation = ""
	return s
}
