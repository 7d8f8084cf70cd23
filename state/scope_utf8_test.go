package state

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

// A scope's Key is no other scope's, in JSON too (Scope.MarshalText):
// a part holding bytes that are not UTF-8 (a scope function of the
// user's may make one), which JSON would write as U+FFFD, is escaped,
// so that two scopes that differ only in such bytes stay two keys of a
// JSON map, and each reads back as itself.
func TestAScopeWithBytesNotUTF8KeysAJSONMapAsItself(t *testing.T) {
	scopes := []Scope{
		{Provider: "aws", Account: "\xff", Service: "ec2"},
		{Provider: "aws", Account: "\xfe", Service: "ec2"},
		{Provider: "aws", Account: "\ufffd", Service: "ec2"},
		{Provider: "aws", Account: "a\xc3", Region: "é", Service: "ec2", Operation: "%FF"},
		{Provider: "\x80", Account: "%C3%A9"},
	}
	m := map[Scope]int{}
	for i, s := range scopes {
		m[s] = i
		if !utf8.ValidString(s.Key()) {
			t.Errorf("%q: Key %q is not UTF-8, which JSON does not keep", s, s.Key())
		}
		if got, err := ParseScope(s.Key()); err != nil || got != s {
			t.Errorf("ParseScope(%q) = %q, %v; want %q", s.Key(), got, err, s)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back map[Scope]int
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("%s read back as %q, %v; want %q", b, back, err, m)
	}
}
