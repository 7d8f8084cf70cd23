package state

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
)

// A key ParseScope refuses is a *ScopeKeyError naming the key, however
// it was read (ParseScope, a JSON map's key, a JSON string read into a
// Scope), so that a program reading a stored summary can tell a corrupt
// scope key from its own mistakes with errors.As.
func TestAScopeKeyParseScopeRefusesIsAScopeKeyError(t *testing.T) {
	for _, bad := range []string{"", "aws", "aws/a/b", "*/a/b/c", "aws/a%2/b/c", "aws/a%41/b/c", "aws/a/b/c/d/e"} {
		_, err := ParseScope(bad)
		var m map[Scope]int
		jerr := json.Unmarshal([]byte(`{`+strconv.Quote(bad)+`: 1}`), &m)
		var s Scope
		serr := json.Unmarshal([]byte(strconv.Quote(bad)), &s)
		for how, err := range map[string]error{"ParseScope": err, "a JSON map key": jerr, "a JSON string": serr} {
			var ke *ScopeKeyError
			if !errors.As(err, &ke) || ke.Key != bad || ke.Reason == "" || ke.Error() != err.Error() {
				t.Errorf("%q read as %s: %T %v; want a *ScopeKeyError of the key", bad, how, err, err)
			}
		}
	}
}
