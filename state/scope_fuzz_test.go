package state

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// Key and ParseScope are inverses: a scope with a provider reads back from
// its Key (also as a JSON map key, whatever bytes its parts hold), and a key
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
		if provider != "" {
			// The key is UTF-8, which JSON keeps (it writes a byte that
			// is not as U+FFFD): Key escapes such a byte.
			if !utf8.ValidString(s.Key()) {
				t.Fatalf("Key(%+v) = %q, not UTF-8", s, s.Key())
			}
			b, err := json.Marshal(map[Scope]int{s: 1})
			if err != nil {
				t.Fatal(err)
			}
			var m map[Scope]int
			if err := json.Unmarshal(b, &m); err != nil || m[s] != 1 || len(m) != 1 {
				t.Fatalf("map key %s read back as %v, %v", b, m, err)
			}
		}
		if provider != "" {
			// Key writes each part as one: four parts and the operation
			// when it is set, however the parts read.
			want := 4
			if operation != "" {
				want = 5
			}
			if n := len(strings.Split(s.Key(), "/")); n != want {
				t.Fatalf("Key(%+v) = %q: %d parts, want %d", s, s.Key(), n, want)
			}
			// UTF-8 parts that hold no '%', '/' or '*' read the same in
			// Key and String.
			if !strings.ContainsAny(provider+account+region+service+operation, "%/*") && valid(provider, account, region, service, operation) && s.Key() != s.String() {
				t.Fatalf("Key(%+v) = %q, String %q; want them alike", s, s.Key(), s.String())
			}
		}
		if valid(provider, account, region, service, operation) {
			// A Scope as a value encodes as its parts, and reads back.
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var back Scope
			if err := json.Unmarshal(b, &back); err != nil || back != s {
				t.Fatalf("%+v encoded as %s reads back as %+v, %v", s, b, back, err)
			}
		}
		// An empty operation may be written * (Key leaves it out).
		if got, err := ParseScope(key); err == nil && got.Key() != key && got.Key()+"/*" != key {
			t.Fatalf("ParseScope(%q) = %+v, whose Key is %q", key, got, got.Key())
		}
	})
}

// valid reports whether every part is valid UTF-8, which JSON keeps as
// it is (two parts may be valid together and not apart).
func valid(parts ...string) bool {
	for _, p := range parts {
		if !utf8.ValidString(p) {
			return false
		}
	}
	return true
}

// Queued counts callers: never fewer than none, none for a balance that
// is not below zero (or no number), and never fewer for a lower balance.
func FuzzBucketSnapshotQueued(f *testing.F) {
	f.Add(-2.5, -3.0)
	f.Add(0.0, -1e-12)
	f.Add(-1e300, math.Inf(-1))
	f.Add(math.NaN(), -0x1p63)
	f.Fuzz(func(t *testing.T, a, b float64) {
		qa, qb := (BucketSnapshot{Tokens: a}).Queued(), (BucketSnapshot{Tokens: b}).Queued()
		if qa < 0 || qb < 0 {
			t.Fatalf("balances %v and %v: %d and %d queued", a, b, qa, qb)
		}
		if !(a < 0) && qa != 0 {
			t.Fatalf("balance %v: %d queued, want none", a, qa)
		}
		if a < b && qa < qb {
			t.Fatalf("balance %v: %d queued, fewer than balance %v's %d", a, qa, b, qb)
		}
	})
}
