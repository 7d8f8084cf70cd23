// Package scopenames is the registry through which the SDK integration
// modules teach the core's configuration check (resilience.Config's
// Validate) which service and operation names their scopes can have, so
// that an override key no call can match (ratelimit.aws.services.
// secretmanager) is an error rather than a setting ignored in silence. An
// integration registers a Check for its provider from its package's init,
// so importing it is enough, as with the error readers of package
// errread; the core itself imports no SDK.
package scopenames

import (
	"slices"
	"sync"
)

// A Check explains why an override key of a provider matches no scope the
// integration makes, "unknown AWS service (did you mean secretsmanager?)",
// or returns "" for a key it can match. service is the key's service
// ("ec2") and operation its operation ("DescribeInstances", or "" for a
// service key).
type Check func(service, operation string) string

var (
	mu     sync.RWMutex
	checks = map[string]Check{}
)

// Register makes c the check of provider's keys, in place of any earlier
// one. It is safe for concurrent use.
func Register(provider string, c Check) {
	mu.Lock()
	defer mu.Unlock()
	if c == nil {
		delete(checks, provider)
		return
	}
	checks[provider] = c
}

// Providers returns the providers that have a check, in byte order.
func Providers() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(checks))
	for name := range checks {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the check of provider's keys, or nil.
func Lookup(provider string) Check {
	mu.RLock()
	defer mu.RUnlock()
	return checks[provider]
}
