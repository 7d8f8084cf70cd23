package state

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// Key and ParseScope are inverses: a scope with a provider reads back from
// its Key (also as a JSON map key, its parts valid UTF-8), and a key
// ParseScope accepts is the Key of the scope it reads (or that Key and /*,
// an empty operation written out), so that no other text names the scope.
func FuzzScopeKeyRoundTrip(f *testing.F) {
	f.Add("aws", "123456789012", "us-east-1", "ec2", "DescribeInstances", "aws/123456789012/us-east-1/ec2/DescribeInstances")
	f.Add("a/b", "%2F", "*", "", "x%", "azure/*/*/network")
	f.Add("github", "", "", "", "", "a%25/%2A/%2F/*/")
	f.Fuzz(func(t *testing.T, provider, account, region, service, operation, key string) {
		s := Scope{Provider: provider, Account: account, Region: region, Service: service, Operation: operation}
		if provider != "" {
			got, err := ParseScope(s.Key())
			if err != nil || got != s {
				t.Fatalf("ParseScope(%q) = %+v, %v; want %+v", s.Key(), got, err, s)
			}
		}
		if provider != "" && utf8.ValidString(s.Key()) { // JSON writes invalid UTF-8 as U+FFFD
			b, err := json.Marshal(map[Scope]int{s: 1})
			if err != nil {
				t.Fatal(err)
			}
			var m map[Scope]int
			if err := json.Unmarshal(b, &m); err != nil || m[s] != 1 || len(m) != 1 {
				t.Fatalf("map key %s read back as %v, %v", b, m, err)
			}
		}
		// An empty operation may be written * (Key leaves it out).
		if got, err := ParseScope(key); err == nil && got.Key() != key && got.Key()+"/*" != key {
			t.Fatalf("ParseScope(%q) = %+v, whose Key is %q", key, got, got.Key())
		}
	})
}
