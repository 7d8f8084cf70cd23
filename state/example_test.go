package state_test

import (
	"errors"
	"fmt"

	"github.com/cloudg/cloudg/state"
)

// A scope's String is for reading; its Key is the form no other scope
// shares, which ParseScope reads back. A key ParseScope refuses is a
// *state.ScopeKeyError.
func ExampleParseScope() {
	s := state.Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
	fmt.Println(s.String())
	fmt.Println(s.Key())
	back, err := state.ParseScope(s.Key())
	fmt.Println(back == s, err)

	// String's form is no key: its account's '/' makes one part two.
	_, err = state.ParseScope(s.String())
	var bad *state.ScopeKeyError
	fmt.Println(errors.As(err, &bad), bad.Reason)
	// Output:
	// gcp/projects/p1/*/cloudasset/ListAssets
	// gcp/projects%2Fp1/*/cloudasset/ListAssets
	// true <nil>
	// true want provider/account/region/service[/operation]
}
