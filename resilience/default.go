package resilience

import "sync/atomic"

var defaultGovernor atomic.Pointer[Governor]

// Default returns the process governor, which Call, Do and the SDK
// integrations use unless told otherwise.
func Default() *Governor {
	if g := defaultGovernor.Load(); g != nil {
		return g
	}
	g := new(Governor)
	g.init()
	if defaultGovernor.CompareAndSwap(nil, g) {
		return g
	}
	return defaultGovernor.Load()
}

// SetDefault makes g the process governor, for a program that wants its own
// options (a state store, a logger, a clock) on every call. A nil g puts a
// fresh governor at the built-in defaults in its place, forgetting
// everything learned (for tests, and for a program that starts over).
func SetDefault(g *Governor) {
	if g == nil {
		g = new(Governor)
	}
	g.init()
	defaultGovernor.Store(g)
}

// Configure applies cfg to the process governor (see Governor.Configure).
func Configure(cfg Config) error { return Default().Configure(cfg) }

// ResetDefault puts a fresh governor at the built-in defaults in the
// process governor's place, forgetting everything learned.
//
// Deprecated: use SetDefault(nil), which does the same.
func ResetDefault() { SetDefault(nil) }
