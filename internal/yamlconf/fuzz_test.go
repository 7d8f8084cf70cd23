package yamlconf

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/internal/scopekey"
)

// fuzzSub is a nested setting of fuzzSection: a service's.
type fuzzSub struct {
	Rate    float64  `yaml:"max_rps" range:">0"`
	Floor   *float64 `yaml:"min_rps" range:">=0"`
	Wait    *float64 `yaml:"max_wait_seconds" range:">0"`
	PerOp   *bool    `yaml:"per_operation"`
	Retries *int     `yaml:"max_retries" range:">=0"`
}

// fuzzSection has a field of every kind the decoder reads.
type fuzzSection struct {
	Enabled  *bool              `yaml:"enabled"`
	Name     string             `yaml:"name"`
	Rate     float64            `yaml:"max_rps" range:">0"`
	Burst    float64            `yaml:"burst"`
	Attempts *int               `yaml:"max_attempts" range:">=1;the first attempt counts"`
	Count    int                `yaml:"count"`
	Cooldown *float64           `yaml:"breaker_cooldown_seconds" range:">0"`
	Services map[string]fuzzSub `yaml:"services"`
	AWS      fuzzSub            `yaml:"aws"`
	Levels   map[string]float64 `yaml:"levels"`
}

// FuzzDecode holds the decoder to what its documentation promises of any
// document: it returns, never panics; a refusal is *Error values only
// (joined), each with a key path under the section's, printable on one
// line (a key's newline quoted), and a message; an
// accepted section holds every number in its range and finite, and no
// empty string; and the same document decodes the same way twice (no
// message depends on map order).
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"max_rps: 5\nburst: 10\nservices: {ec2: {max_rps: 2, min_rps: 0.5}}\n",
		"max_rps: fast\nbrust: 1\nenabled: maybe\nmax_rps: 2\nservices: {a: {brust: 1}, b: {burst: x}}\n",
		"breaker_cooldown_seconds: 90s\naws: {max_wait_seconds: 1h, max_retries: 017}\n",
		"a: &x {b: *x}\n",
		"max_rps: 1e400\ncount: 0x10\n",
		"burst: .inf\nlevels: {a: .nan}\n",
		"<<: {max_rps: 1}\nservices: {<<: {a: {}}}\n",
		"max_attempts: null\nname: ''\nlevels: {a: 1e-400, b: -0.0}\n",
		`{"enabled": true, "name": "x", "services": {"": {}}}`,
		"? [a]\n: 1\n",
		"max_rps: 2\n---\nmax_rps: 3\n",
		"breaker_cooldown_seconds: 9999999999999999999h\n",
		"aws: {retry_mode: standard, max_rps: 1}\nlive_x: 1\nratelimt: {}\n",
		"services: {\"ec2\\nINFO forged\": {brust: 1}}\n\"\\u202e\": 1\n",
		// An empty string alone, which the decoder must refuse.
		"name: ''\n",
		// Misspellings equally close to two keys (max_rps, min_rps):
		// the same hint each time, whatever the fields' map order.
		"services: {a: {mix_rps: 1}, b: {mix_rps: 1}, c: {mix_rps: 1}, d: {mix_rps: 1}, e: {mix_rps: 1}, f: {mix_rps: 1}, g: {mix_rps: 1}, h: {mix_rps: 1}}\n",
	} {
		f.Add([]byte(s))
	}
	dec := Decoder{
		Skip: map[string]bool{"s.live_x": true, "s.services.*.live_y": true},
		Hint: func(path string, mapping bool) string {
			if mapping {
				return " (a mapping)"
			}
			return ""
		},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Document(data, "s")
		if err != nil {
			checkErrors(t, err, "s")
			return
		}
		if n == nil {
			return
		}
		if _, _, err := Layout(n); err != nil {
			checkErrors(t, err, "")
		}
		var s fuzzSection
		err = dec.Decode(&s, n, "s", false)
		var again fuzzSection
		if err2 := dec.Decode(&again, n, "s", false); (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
			t.Fatalf("the same document decodes as %v, then as %v", err, err2)
		}
		if err != nil {
			checkErrors(t, err, "s")
			return
		}
		if errs := CheckRanges(&s, "s"); len(errs) > 0 {
			t.Fatalf("accepted %+v, out of range: %v", s, errs)
		}
		if errs := CheckRanges(&s.AWS, "s.aws"); len(errs) > 0 {
			t.Fatalf("accepted %+v, out of range: %v", s.AWS, errs)
		}
		for k, sub := range s.Services {
			if k == "" {
				t.Fatalf("accepted a service with no name: %+v", s.Services)
			}
			if errs := CheckRanges(&sub, "s.services."+k); len(errs) > 0 {
				t.Fatalf("accepted %+v, out of range: %v", sub, errs)
			}
		}
		for k, v := range s.Levels {
			if k == "" || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("accepted levels %v", s.Levels)
			}
		}
		if math.IsNaN(s.Burst) || math.IsInf(s.Burst, 0) {
			t.Fatalf("accepted burst %v", s.Burst)
		}
		if s.Name == "" && Section(n, "name") != nil {
			t.Fatalf("accepted an empty name")
		}
	})
}

// checkErrors fails unless every error err joins is an *Error with a
// message and a path under root (any path when root is "").
func checkErrors(t *testing.T, err error, root string) {
	t.Helper()
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			checkErrors(t, e, root)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) || err != error(e) || e.Path == "" || e.Msg == "" {
		t.Fatalf("%T %q: not an *Error with a path and a message", err, err)
	}
	if root != "" && e.Path != root && !strings.HasPrefix(e.Path, root+".") {
		t.Fatalf("%q: path %q is not under %q", err, e.Path, root)
	}
	if !scopekey.Printable(e.Path) {
		t.Fatalf("%q: path %q is not printable on one line", err, e.Path)
	}
}
