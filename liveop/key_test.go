package liveop

import (
	"math"
	"testing"
)

func TestKeyIsTheSHA256OfCanonicalJSON(t *testing.T) {
	// Digests computed with: printf '%s' '<json>' | sha256sum | cut -c1-32
	for _, c := range []struct {
		name  string
		parts []any
		want  string
	}{
		{"map keys sorted, compact", []any{"scan", map[string]any{"refresh": true, "accounts": []string{"1", "2"}}},
			"2da5922b04d5a4454a2b220e8b82aa43"}, // ["scan",{"accounts":["1","2"],"refresh":true}]
		{"non-JSON values as strings, no HTML escaping", []any{"a<b", map[string]any{"n": math.NaN(), "c": complex(1, 2)}},
			"f7bb2800fb106b6dc4e2e43208bca7ca"}, // ["a<b",{"c":"(1+2i)","n":"NaN"}]
		{"struct fields sorted", []any{struct {
			N  int    `json:"n"`
			ID string `json:"id"`
		}{2, "aws/1"}}, "a0ed71a2ae180de7d808eeb23aad4617"}, // [{"id":"aws/1","n":2}]
		{"no parts", nil, "4f53cda18c2baa0c0354bb5f9a3ecbe5"}, // []
	} {
		if got := Key(c.parts...); got != c.want {
			t.Errorf("%s: Key = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestKeyIsTheSameInAnotherKeyOrder(t *testing.T) {
	type req struct {
		Scopes  []string `json:"scopes"`
		Refresh bool     `json:"refresh"`
	}
	a := Key("scan", map[string]any{"refresh": true, "scopes": []string{"aws/1"}})
	b := Key("scan", req{Scopes: []string{"aws/1"}, Refresh: true})
	if a != b || len(a) != 32 {
		t.Fatalf("%s != %s", a, b)
	}
	if Key("scan", map[string]any{"refresh": false, "scopes": []string{"aws/1"}}) == a {
		t.Fatal("another request has the same key")
	}
	if Key("scan", 1) == Key("scan", "1") {
		t.Fatal("a number and a string have the same key")
	}
}

func TestKeyOfValuesJSONCannotEncode(t *testing.T) {
	// A map holding a NaN does not encode as a whole; its other entries
	// keep their JSON form.
	if got, want := Key(map[string]any{"f": math.Inf(1), "n": 1}), Key(map[string]any{"f": "+Inf", "n": 1}); got != want {
		t.Fatalf("%s != %s", got, want)
	}
	// A map holding itself ends in its type's name, not in a stack overflow.
	self := map[string]any{}
	self["self"] = self
	if k := Key(self); len(k) != 32 {
		t.Fatal(k)
	}
}

// Numbers keep their digits: integers past float64's precision are
// different operations.
func TestKeyKeepsLargeIntegers(t *testing.T) {
	if Key("scan", int64(1<<62)) == Key("scan", int64(1<<62+1)) {
		t.Fatal("two large integers have the same key")
	}
	if Key(map[string]any{"n": uint64(18446744073709551615)}) == Key(map[string]any{"n": uint64(18446744073709551614)}) {
		t.Fatal("two large unsigned integers have the same key")
	}
}
