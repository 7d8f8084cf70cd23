package test

import "github.com/cloudg/cloudg/state"

// mustScope is the scope of key (Scope.Key's form), for the Summary's
// maps, which are keyed by Scope.
func mustScope(key string) state.Scope {
	s, err := state.ParseScope(key)
	if err != nil {
		panic(err)
	}
	return s
}
