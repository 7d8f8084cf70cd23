package scopekey

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// part draws a scope's part: text made of the characters the escaping
// is about (%, /, *, the digits and letters of an escape, braces of a
// Redis hash tag, a dot), any Unicode text, or any bytes, which need not
// be UTF-8.
func part(t *rapid.T, label string) string {
	return rapid.OneOf(
		rapid.StringOf(rapid.SampledFrom([]rune("%/*25AFaf{}.\n"))),
		rapid.String(),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }),
	).Draw(t, label)
}

// The escaped form is a key no two scopes share: split at its '/', each
// part reads back with Unescape (* for an empty one), as many parts as n
// says (the operation's when it is set), so that the key names its scope
// alone whatever bytes the parts hold; AppendKey writes what Format
// writes; and Unescape takes only what Format writes, so that no two
// escaped parts read as one.
func TestTheEscapedFormReadsBackToItsParts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var p [5]string
		for i := range p {
			p[i] = part(t, "part")
		}
		n := rapid.SampledFrom([]int{1, 2, 4}).Draw(t, "n")
		key := Format(&p, true, n)
		segs := strings.Split(key, "/")
		want := n
		if n == 4 && p[4] != "" {
			want = 5
		}
		if len(segs) != want {
			t.Fatalf("Format(%q, %d) = %q: %d parts, want %d", p, n, key, len(segs), want)
		}
		for i, s := range segs {
			var got string
			if s != "*" {
				var err error
				if got, err = Unescape(s); err != nil || got == "" {
					t.Fatalf("Format(%q, %d) = %q: part %q reads as %q, %v", p, n, key, s, got, err)
				}
			}
			if got != p[i] {
				t.Fatalf("Format(%q, %d) = %q: part %d reads back as %q, want %q", p, n, key, i, got, p[i])
			}
		}
		if n == 4 {
			if got := string(AppendKey([]byte("x/"), &p)); got != "x/"+key {
				t.Fatalf("AppendKey(%q) = %q, want %q", p, got[2:], key)
			}
		}
		s := rapid.OneOf(
			rapid.Map(rapid.SliceOf(rapid.SampledFrom([]string{"%25", "%2F", "%2A", "%2f", "%2a", "%", "2", "F", "*", "/", "a", "\xff"})),
				func(s []string) string { return strings.Join(s, "") }),
			rapid.Custom(func(t *rapid.T) string { return part(t, "text") }),
		).Draw(t, "escaped")
		if u, err := Unescape(s); err == nil && u != "" {
			if back := Format(&[5]string{u}, true, 1); back != s {
				t.Fatalf("Unescape(%q) = %q, which Format writes %q", s, u, back)
			}
		}
	})
}
