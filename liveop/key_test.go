package liveop

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"
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

// A struct JSON cannot encode is its fields by their JSON names, as a map
// is: the same key in any field order, and the same as the map's.
func TestKeyOfAStructJSONCannotEncode(t *testing.T) {
	type ab struct {
		A float64 `json:"a"`
		B string  `json:"b"`
		C int     `json:"-"`
		d int
	}
	type ba struct {
		B string  `json:"b"`
		A float64 `json:"a"`
	}
	k1, k2 := Key("scan", ab{math.NaN(), "x", 1, 2}), Key("scan", ba{"x", math.NaN()})
	k3 := Key("scan", map[string]any{"a": math.NaN(), "b": "x"})
	if k1 != k2 || k1 != k3 {
		t.Fatalf("one request, three keys: %s %s %s", k1, k2, k3)
	}
	// One with an encoding of its own that failed is its string.
	y10k, y10k1 := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 2, 0, 0, 0, 0, time.UTC)
	if Key(y10k) == Key(y10k1) || Key(y10k) != Key(y10k.String()) {
		t.Fatal("two times past year 9999 have the same key")
	}
}

// A struct holding a map that holds itself ends in the map's type's name,
// as the map alone does, not in a stack overflow.
func TestKeyOfAStructHoldingACycle(t *testing.T) {
	self := map[string]any{}
	self["self"] = self
	type holder struct {
		M map[string]any `json:"m"`
	}
	if k := Key("scan", holder{self}); len(k) != 32 {
		t.Fatal(k)
	}
}

// Two keys of a map with the same string form (1 and "1") do not make its
// key depend on the map's iteration order, and each keeps its value.
func TestKeyOfAMapWhoseKeysPrintAlike(t *testing.T) {
	want := Key(map[any]any{1: "a", "1": "b"})
	for range 50 {
		if got := Key(map[any]any{1: "a", "1": "b"}); got != want {
			t.Fatalf("one map, two keys: %s %s", want, got)
		}
	}
	if Key(map[any]any{1: "a", "1": "b"}) == Key(map[any]any{1: "a", "1": "c"}) {
		t.Fatal("two maps have the same key")
	}
}

// account is a request's part embedded, by pointer, in a struct JSON
// cannot encode; its type is unexported, its fields are not.
type account struct {
	ID string `json:"id"`
}

// The fields of a struct embedded by a pointer to an unexported type are
// the outer struct's, as encoding/json writes them: two requests for two
// accounts have two keys (one key would make the second join the first's
// operation and get the other account's result), and the key is the one
// of the map of the same fields.
func TestKeyOfAStructEmbeddingAPointerToAnUnexportedType(t *testing.T) {
	type scan struct {
		*account
		Notify chan struct{} `json:"notify"` // JSON cannot encode it
	}
	if b, err := json.Marshal(struct{ *account }{&account{"111"}}); err != nil || string(b) != `{"id":"111"}` {
		t.Fatalf("encoding/json writes %s, %v", b, err)
	}
	k1, k2 := Key("scan", scan{&account{"111"}, nil}), Key("scan", scan{&account{"222"}, nil})
	if k1 == k2 {
		t.Fatal("two accounts have the same key")
	}
	if want := Key("scan", map[string]any{"id": "111", "notify": fmt.Sprint((chan struct{})(nil))}); k1 != want {
		t.Fatalf("key %s, want the map's %s", k1, want)
	}
}

// A struct of an unexported type embedded with a name of its own (a JSON
// tag), by value or by pointer, is a field of that name, as encoding/json
// writes it, not left out: two accounts, two keys.
func TestKeyOfAStructEmbeddingAnUnexportedTypeUnderATag(t *testing.T) {
	type byValue struct {
		account `json:"acct"`
		Notify  chan struct{} `json:"notify"` // JSON cannot encode it
	}
	type byPointer struct {
		*account `json:"acct"`
		Notify   chan struct{} `json:"notify"`
	}
	if b, err := json.Marshal(struct {
		*account `json:"acct"`
	}{&account{"111"}}); err != nil || string(b) != `{"acct":{"id":"111"}}` {
		t.Fatalf("encoding/json writes %s, %v", b, err)
	}
	want := Key("scan", map[string]any{"acct": map[string]any{"id": "111"}, "notify": fmt.Sprint((chan struct{})(nil))})
	for name, k := range map[string][2]string{
		"by value":   {Key("scan", byValue{account{"111"}, nil}), Key("scan", byValue{account{"222"}, nil})},
		"by pointer": {Key("scan", byPointer{&account{"111"}, nil}), Key("scan", byPointer{&account{"222"}, nil})},
	} {
		if k[0] == k[1] {
			t.Errorf("%s: two accounts have the same key", name)
		} else if k[0] != want {
			t.Errorf("%s: key %s, want the map's %s", name, k[0], want)
		}
	}
	if Key("scan", byPointer{nil, nil}) != Key("scan", map[string]any{"acct": nil, "notify": fmt.Sprint((chan struct{})(nil))}) {
		t.Error("a nil pointer under a tag is not null, as encoding/json writes it")
	}
}

// Structs that embed themselves, by a pointer, in a cycle.
type (
	selfEmbedding struct {
		*selfEmbedding
		ID     string        `json:"id"`
		Notify chan struct{} `json:"notify"` // JSON cannot encode it
	}
	cycleA struct {
		*cycleB
		ID     string        `json:"id"`
		Notify chan struct{} `json:"notify"`
	}
	cycleB struct {
		*cycleA
		Name string `json:"name"`
	}
	// Under a name of its own: a field holding itself, as a map can
	// (the channel first: encoding/json fails on it before it meets the
	// cycle).
	namedCycle struct {
		Notify      chan struct{} `json:"notify"`
		*namedCycle `json:"next"`
	}
)

// A struct JSON cannot encode that embeds itself through a pointer (a
// list, or two types embedding each other) ends, as encoding/json's
// fields do (an embedded type already on the way is not walked into
// again), rather than in a stack overflow that kills the process.
func TestKeyOfAStructEmbeddingItself(t *testing.T) {
	self := &selfEmbedding{ID: "1"}
	self.selfEmbedding = self
	notify := fmt.Sprint((chan struct{})(nil))
	if got, want := Key("scan", self), Key("scan", map[string]any{"id": "1", "notify": notify}); got != want {
		t.Errorf("a struct embedding itself: key %s, want the map's %s", got, want)
	}
	a := &cycleA{ID: "1"}
	a.cycleB = &cycleB{cycleA: a, Name: "n"}
	if got, want := Key("scan", a), Key("scan", map[string]any{"id": "1", "name": "n", "notify": notify}); got != want {
		t.Errorf("two structs embedding each other: key %s, want the map's %s", got, want)
	}
	named := &namedCycle{}
	named.namedCycle = named
	if k := Key("scan", named); len(k) != 32 {
		t.Errorf("a struct holding itself under a name: key %q", k)
	}
}

// Of two fields of one JSON name, encoding/json writes the one its rules
// make dominant (the shallower; at one depth, the one the tag names),
// and neither when they tie; so does Key for a struct JSON cannot encode.
// Written otherwise, the field left out would make two requests that
// differ in it one operation.
func TestKeyOfAStructWithFieldsOfOneName(t *testing.T) {
	type tagWins struct {
		AccountID string        `json:"Account"` // dominant: the tag names it
		Account   string        // left out by encoding/json
		Notify    chan struct{} `json:"notify"`
	}
	type (
		left  struct{ ID string }
		right struct{ ID string }
		tie   struct {
			*left
			*right
			Notify chan struct{} `json:"notify"`
		}
	)
	if b, err := json.Marshal(struct {
		AccountID string `json:"Account"`
		Account   string
	}{"1", "x"}); err != nil || string(b) != `{"Account":"1"}` {
		t.Fatalf("encoding/json writes %s, %v", b, err)
	}
	notify := fmt.Sprint((chan struct{})(nil))
	k1, k2 := Key("scan", tagWins{"1", "x", nil}), Key("scan", tagWins{"2", "x", nil})
	if k1 == k2 {
		t.Error("two accounts have the same key")
	} else if want := Key("scan", map[string]any{"Account": "1", "notify": notify}); k1 != want {
		t.Errorf("key %s, want the map's %s", k1, want)
	}
	if got, want := Key("scan", tie{&left{"1"}, &right{"2"}, nil}), Key("scan", map[string]any{"notify": notify}); got != want {
		t.Errorf("two fields of one name at one depth: key %s, want the map's without either, %s", got, want)
	}
}

// treeNode is a request's part as Go programs build trees: each child
// points back at its parent, so that JSON cannot encode it (a cycle).
type treeNode struct {
	Name     string      `json:"name"`
	Parent   *treeNode   `json:"parent"`
	Children []*treeNode `json:"children"`
}

// A value that holds itself more than once (a map under two of its own
// keys, a tree whose children point back at their parent) has a key in
// time linear in its size: where it comes again inside itself, it is its
// type's name, as a map holding itself once is. Walked down to maxDepth
// levels, each holding two or more ways back, it had 2^64 paths and Key
// never returned.
func TestKeyOfAValueHoldingItselfTwice(t *testing.T) {
	self := map[string]any{}
	self["a"] = self
	self["b"] = self
	name := fmt.Sprintf("%T", self)
	if got, want := Key("scan", self), Key("scan", map[string]any{"a": name, "b": name}); got != want {
		t.Errorf("a map holding itself twice: key %s, want %s, that of the map with its type's name where it comes again", got, want)
	}

	root := &treeNode{Name: "root"}
	for _, n := range []string{"c1", "c2", "c3"} {
		root.Children = append(root.Children, &treeNode{Name: n, Parent: root})
	}
	other := &treeNode{Name: "root"}
	other.Children = []*treeNode{{Name: "c1", Parent: other}}
	if a, b := Key("scan", root), Key("scan", other); len(a) != 32 || a == b {
		t.Errorf("two trees with parent pointers: keys %s and %s", a, b)
	}
	node := fmt.Sprintf("%T", root)
	child := func(n string) map[string]any { return map[string]any{"name": n, "parent": node, "children": nil} }
	if got, want := Key("scan", root), Key("scan", map[string]any{"name": "root", "parent": nil, "children": []any{child("c1"), child("c2"), child("c3")}}); got != want {
		t.Errorf("a tree whose children point back at their parent: key %s, want %s, that of the tree with its type's name where the root comes again", got, want)
	}
}

// ownEncoding is a request's part with a MarshalJSON of its own, which
// fails on a map holding itself, as encoding/json does.
type ownEncoding struct{ M map[string]any }

func (o ownEncoding) MarshalJSON() ([]byte, error) { return json.Marshal(o.M) }

// keyHolder is a map key holding a map: printed, a key shows it.
type keyHolder struct{ M map[string]any }

// A part Key writes as its string (a struct whose own encoding failed, a
// map's key) that holds a map inside itself, whose string fmt.Sprint
// never ends (it finds no cycle, and overflows the stack, which kills
// the process), is its type's name, as a map holding itself is.
func TestKeyOfAValueWhoseStringHoldsACycle(t *testing.T) {
	self := map[string]any{}
	self["self"] = self
	if got, want := Key("scan", ownEncoding{self}), Key("scan", fmt.Sprintf("%T", ownEncoding{})); got != want {
		t.Errorf("a struct whose own encoding fails on a cycle: key %s, want %s, that of its type's name", got, want)
	}
	if got, want := Key("scan", map[*keyHolder]int{{M: self}: 1}), Key("scan", map[string]any{fmt.Sprintf("%T", &keyHolder{}): 1}); got != want {
		t.Errorf("a map whose key holds a cycle: key %s, want %s, that of the map with the key's type's name", got, want)
	}
	// Without a cycle, the string as before.
	plain := map[string]any{"a": 1}
	if got, want := Key("scan", ownEncoding{plain}), Key("scan", map[string]any{"a": 1}); got != want {
		t.Errorf("a struct whose own encoding holds no cycle: key %s, want %s", got, want)
	}
}
