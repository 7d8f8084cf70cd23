package yamlconf

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// Under a Skip pattern with a "*", every key of a document is read,
// passed over as another reader's, or reported: a key that is neither a
// field nor the pattern's own at its place (one whose name holds the
// pattern's dots or ends as its last key does included) is an unknown
// key at its path, and a key the pattern names is never reported, under
// a provider whose name holds dots included.
func TestEveryKeyIsReadSkippedOrReported(t *testing.T) {
	type provider struct {
		Rate float64 `yaml:"rate"`
	}
	type section struct {
		Providers map[string]provider `yaml:"providers"`
	}
	dec := Decoder{Skip: map[string]bool{"s.providers.*.live": true}}
	name := rapid.StringOfN(rapid.SampledFrom([]rune("ab.")), 1, 6, -1).Filter(func(s string) bool { return s != "" })
	key := rapid.OneOf(rapid.SampledFrom([]string{"rate", "live", "x.live", "live.x", "providers", "a.live", ".live", "live."}), name)
	rapid.Check(t, func(t *rapid.T) {
		doc := map[string]map[string]float64{}
		for _, p := range rapid.SliceOfNDistinct(name, 1, 4, func(s string) string { return s }).Draw(t, "providers") {
			doc[p] = map[string]float64{}
			for _, k := range rapid.SliceOfNDistinct(key, 0, 4, func(s string) string { return s }).Draw(t, "keys") {
				doc[p][k] = 1
			}
		}
		data, err := json.Marshal(map[string]any{"providers": doc})
		if err != nil {
			t.Fatal(err)
		}
		n, err := Document(data, "s")
		if err != nil {
			t.Fatal(err)
		}
		var s section
		err = dec.Decode(&s, n, "s", false)
		reported := map[string]int{} // by path: a key's dots make two keys' paths one (b, .live and b., live)
		var walk func(error)
		walk = func(e error) {
			if j, ok := e.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					walk(e)
				}
				return
			}
			ye, ok := e.(*Error)
			if !ok || !strings.HasPrefix(ye.Msg, "unknown key") {
				t.Fatalf("%s: %v, not an unknown key", data, e)
			}
			reported[ye.Path]++
		}
		if err != nil {
			walk(err)
		}
		want := map[string]int{}
		for p, keys := range doc {
			for k := range keys {
				if k != "rate" && k != "live" {
					want[KeyPath(KeyPath("s.providers", p), k)]++
				}
			}
		}
		if !maps.Equal(reported, want) {
			t.Fatalf("%s: reported %v, want the unknown keys %v", data, reported, want)
		}
	})
}
