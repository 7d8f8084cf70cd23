package yamlconf

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/internal/doctest"
	"go.yaml.in/yaml/v3"
)

func TestParseSection(t *testing.T) {
	var dec Decoder
	type sdk struct {
		MaxRetries *int   `yaml:"max_retries"`
		RetryMode  string `yaml:"retry_mode"`
	}
	doc := []byte("ratelimit: {aws: {max_rps: 5}}\naws:\n  max_retries: 3\n  retry_mode: standard\n")
	var s sdk
	if err := dec.ParseSection(doc, "aws", &s); err != nil || *s.MaxRetries != 3 || s.RetryMode != "standard" {
		t.Fatalf("%+v %v", s, err)
	}
	// The section is strict: each of its keys is dst's.
	if err := dec.ParseSection([]byte("aws: {max_retires: 3, regions: [eu-west-1]}\n"), "aws", &sdk{}); err == nil ||
		err.Error() != "aws.max_retires: unknown key (did you mean max_retries?)\naws.regions: unknown key" {
		t.Fatalf("got %v", err)
	}
	var none sdk
	if err := dec.ParseSection([]byte("ratelimit: {}\n"), "aws", &none); err != nil || none.MaxRetries != nil {
		t.Fatal("a document without the section changed dst")
	}
	if err := dec.ParseSection([]byte(""), "aws", &none); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ doc, want string }{
		{"aws: {max_retries: three}\n", `aws.max_retries: "three" is not a number`},
		{"aws: {max_retries: 1.5}\n", `aws.max_retries: "1.5" is not a whole number`},
		{"aws: {max_retries: 3000000000}\n", `aws.max_retries: "3000000000" is out of range (a whole number from -2147483648 to 2147483647)`},
		{"aws: {max_retries: 2147483648}\n", `aws.max_retries: "2147483648" is out of range (a whole number from -2147483648 to 2147483647)`},
		{"aws: {retry_mode: [a]}\n", "aws.retry_mode: must be a single value"},
		{"aws: {max_retries: 1, max_retries: 2}\n", "aws.max_retries: duplicate key"},
		{"aws: 3\n", "aws: must be a mapping"},
		{"[1]\n", "aws: must be a mapping"},
	} {
		var s sdk
		if err := dec.ParseSection([]byte(c.doc), "aws", &s); err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.doc, err, c.want)
		}
	}
	if err := dec.ParseSection(doc, "aws", sdk{}); err == nil {
		t.Fatal("a non-pointer dst was accepted")
	}
}

func TestSkipPassesOverAnotherReadersKeys(t *testing.T) {
	type section struct {
		MaxRPS float64 `yaml:"max_rps"`
		AWS    struct {
			Burst float64 `yaml:"burst"`
		} `yaml:"aws"`
	}
	dec := Decoder{Skip: map[string]bool{"ratelimit.live_x": true, "ratelimit.aws.live_y": true}}
	n, err := Document([]byte("max_rps: 2\nlive_x: [whatever]\naws: {burst: 3, live_y: -1}\n"), "ratelimit")
	if err != nil {
		t.Fatal(err)
	}
	var s section
	if err := dec.Decode(&s, n, "ratelimit", false); err != nil || s.MaxRPS != 2 || s.AWS.Burst != 3 {
		t.Fatalf("%+v %v", s, err)
	}
	// Only the listed paths are skipped: the same key elsewhere is unknown.
	n, err = Document([]byte("aws: {live_x: 1}\n"), "ratelimit")
	if err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&s, n, "ratelimit", false); err == nil || err.Error() != "ratelimit.aws.live_x: unknown key" {
		t.Fatalf("got %v", err)
	}
}

// A mapping's mistakes are all reported, each with its key path, nested
// ones included, in document order.
func TestDecodeReportsEveryMistake(t *testing.T) {
	type inner struct {
		Burst float64 `yaml:"burst"`
	}
	type section struct {
		MaxRPS   float64          `yaml:"max_rps"`
		Enabled  bool             `yaml:"enabled"`
		Services map[string]inner `yaml:"services"`
	}
	n, err := Document([]byte("max_rps: fast\nbrust: 1\nenabled: maybe\nmax_rps: 2\nservices: {a: {brust: 1}, b: {burst: x}}\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	var s section
	err = Decoder{}.Decode(&s, n, "s", false)
	want := `s.max_rps: "fast" is not a number` + "\n" +
		"s.brust: unknown key\n" + // two edits from burst, but burst is not a key of this level
		`s.enabled: "maybe" is not true or false` + "\n" +
		"s.max_rps: duplicate key\n" +
		"s.services.a.brust: unknown key (did you mean burst?)\n" +
		`s.services.b.burst: "x" is not a number`
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Path != "s.max_rps" {
		t.Fatalf("errors.As: %v", ce)
	}
}

// A mapping's key given twice is reported however its first value read,
// as a struct's is: a map's entry whose first value is refused is a
// duplicate all the same, not an entry the second value makes.
func TestADuplicateKeyIsReportedAfterARefusedValue(t *testing.T) {
	type inner struct {
		Burst float64 `yaml:"burst"`
	}
	type section struct {
		MaxRPS   float64            `yaml:"max_rps"`
		Services map[string]inner   `yaml:"services"`
		Levels   map[string]float64 `yaml:"levels"`
	}
	n, err := Document([]byte("max_rps: x\nmax_rps: 1\nservices: {a: {burst: x}, a: {burst: 1}}\nlevels: {b: [1], b: 2, c: 1, c: y}\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	var s section
	err = Decoder{}.Decode(&s, n, "s", false)
	want := `s.max_rps: "x" is not a number` + "\n" +
		"s.max_rps: duplicate key\n" +
		`s.services.a.burst: "x" is not a number` + "\n" +
		"s.services.a: duplicate key\n" +
		"s.levels.b: must be a single value\n" +
		"s.levels.b: duplicate key\n" +
		"s.levels.c: duplicate key"
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
}

// A map keyed by a string type of a program's own (a region's or a
// provider's name) reads its keys as a map[string] does, and a map of
// another kind of key, which no document's key can name, is an
// unsupported setting: an error at its path, never a panic.
func TestAMapKeyedByAStringTypeOfItsOwn(t *testing.T) {
	type region string
	type section struct {
		Regions map[region]float64 `yaml:"regions"`
		Codes   map[int]float64    `yaml:"codes"`
	}
	n, err := Document([]byte("regions: {eu-west-1: 2, eu-west-1: 3, us-east-1: 1}\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	var s section
	err = Decoder{}.Decode(&s, n, "s", false)
	if err == nil || err.Error() != "s.regions.eu-west-1: duplicate key" || s.Regions["eu-west-1"] != 2 || s.Regions["us-east-1"] != 1 {
		t.Fatalf("got %v, %+v", err, s)
	}
	n, err = Document([]byte("codes: {1: 2}\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := (Decoder{}).Decode(&s, n, "s", false); err == nil || err.Error() != "s.codes: unsupported setting" {
		t.Fatalf("got %v", err)
	}
}

func TestSuggestNamesOnlyNearKeys(t *testing.T) {
	fields := map[string]int{"burst": 0, "max_rps": 1, "min_rps": 2, "max_retries": 3, "aws": 4}
	for name, want := range map[string]string{
		"brust":       " (did you mean burst?)",       // a swap
		"bursts":      " (did you mean burst?)",       // an insertion
		"max_rsp":     " (did you mean max_rps?)",     // a swap
		"mxa_rps":     " (did you mean max_rps?)",     // a swap
		"max_retires": " (did you mean max_retries?)", // a swap
		"mix_rps":     " (did you mean max_rps?)",     // one from max_rps and min_rps: the first in order
		"aw":          " (did you mean aws?)",
		"AWS":         " (did you mean aws?)",     // case alone
		"MAX_RPS":     " (did you mean max_rps?)", // case alone
		"MAX_RSP":     " (did you mean max_rps?)", // case, and a swap
		"ab":          "",                         // as many edits as letters
		"deadline":    "",
		"maxrps_x":    "",
	} {
		if got := suggest(name, fields); got != want {
			t.Errorf("suggest(%q) = %q, want %q", name, got, want)
		}
	}
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "abc", 0}, {"ab", "ba", 1}, {"abc", "acb", 1}, {"ca", "abc", 3}, {"kitten", "sitting", 3}, {"a", "abcd", 3}} {
		if d := distance(c.a, c.b); d != c.d {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, d, c.d)
		}
	}
}

// Every reader finds its section of a document by one rule: a ratelimit
// key makes a whole configuration (whose top-level aws is the SDK's);
// without it, retry_mode makes the top-level aws the SDK's, a governor key
// makes the document the governor's section alone, and max_retries alone
// is the governor's only beside another key of its section, and otherwise
// ambiguous.
func TestLayout(t *testing.T) {
	for _, c := range []struct {
		doc     string
		rl, sdk string // the first key of each section found, "-" for none
		err     string
	}{
		{"ratelimit: {enabled: false}\naws: {retry_mode: standard}\n", "enabled", "retry_mode", ""},
		{"ratelimit: {aws: {max_rps: 5}}\naws: {max_retries: 3}\n", "aws", "max_retries", ""},
		{"ratelimit: {aws: {max_rps: 5}}\n", "aws", "-", ""},
		{"aws: {max_rps: 5}\n", "aws", "-", ""}, // the short form
		{"aws: {max_retries: 3, max_rps: 5}\n", "aws", "-", ""},
		{"aws: {max_retries: 3}\ngcp: {max_rps: 5}\n", "aws", "-", ""},
		{"enabled: false\naws: {max_retries: 3}\n", "enabled", "-", ""},
		{"aws: {max_retries: 3}\nlive_max_concurrent: 2\n", "aws", "-", ""},
		{"aws: {max_retires: 3}\n", "aws", "-", ""}, // a misspelt governor key: the governor's reader reports it
		{"aws: {}\n", "aws", "-", ""},
		{"gcp: {max_rps: 5}\n", "gcp", "-", ""},
		{"aws: {retry_mode: standard}\nother: 1\n", "-", "retry_mode", ""}, // a whole configuration without ratelimit
		{"aws: {retry_mode: standard, max_retries: 3}\ngcp: {project: p}\n", "-", "retry_mode", ""},
		{"aws: {retry_mode: x, burst: 1, max_retries: 2}\n", "", "", "aws.burst: not a setting of the AWS SDK's section"},
		{"aws: {max_retries: 3}\n", "", "", "aws.max_retries: ambiguous in a document without a ratelimit key"},
		{"aws: {max_retries: 3}\napp: {x: 1}\n", "", "", "aws.max_retries: ambiguous in a document without a ratelimit key"},
	} {
		n, err := Document([]byte(c.doc), "ratelimit")
		if err != nil {
			t.Fatal(err)
		}
		rl, sdk, err := Layout(n)
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("%q: %v, want %s", c.doc, err, c.err)
			}
			continue
		}
		first := func(n *yaml.Node) string {
			if n == nil {
				return "-"
			}
			return n.Content[0].Value
		}
		if err != nil || first(rl) != c.rl || first(sdk) != c.sdk {
			t.Errorf("%q: sections %q and %q, %v; want %q and %q", c.doc, first(rl), first(sdk), err, c.rl, c.sdk)
		}
	}
	// The keys Layout takes for the governor's section's.
	keys := SectionKeys()
	sort.Strings(keys)
	if strings.Join(keys, ",") != "azure,enabled,gcp,providers" {
		t.Errorf("section keys %v", keys)
	}
}

// A range tag bounds a value given in a document and one set in code
// alike, with one message.
func TestRangeTags(t *testing.T) {
	type section struct {
		Rate     float64  `yaml:"rate" range:">0"`
		Off      *float64 `yaml:"off" range:">=0;0 turns it off"`
		Attempts *int     `yaml:"attempts" range:">=1;the first attempt counts"`
		Plain    float64  `yaml:"plain"`
	}
	n, err := Document([]byte("rate: 0\noff: -1\nattempts: 0\nplain: -5\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	var s section
	err = Decoder{}.Decode(&s, n, "s", false)
	want := "s.rate: must be > 0\ns.off: must be >= 0 (0 turns it off)\ns.attempts: must be >= 1 (the first attempt counts)"
	if err == nil || err.Error() != want || s.Plain != -5 {
		t.Fatalf("Decode:\n got %v\nwant %s", err, want)
	}
	// In code, 0 (nil) is unset; a value set is checked as the document's.
	off, zero := -1.0, 0
	errs := CheckRanges(section{Rate: -2, Off: &off, Attempts: &zero}, "s")
	if got := errors.Join(errs...); got == nil || got.Error() != want {
		t.Fatalf("CheckRanges:\n got %v\nwant %s", got, want)
	}
	if errs := CheckRanges(&section{}, "s"); errs != nil {
		t.Fatalf("the zero section: %v", errs)
	}
	if r := Ranges(reflect.TypeFor[section]()); len(r) != 3 || r["rate"] != "> 0" || r["off"] != ">= 0" || r["attempts"] != ">= 1" {
		t.Fatalf("Ranges %v", r)
	}
}

// A skipped path may have "*" segments; an unknown key no misspelling
// explains gets the decoder's hint.
func TestSkipPatternsAndHints(t *testing.T) {
	type p struct {
		Rate float64 `yaml:"rate"`
	}
	type section struct {
		Providers map[string]p `yaml:"providers"`
	}
	dec := Decoder{
		Skip: map[string]bool{"s.providers.*.live": true},
		Hint: func(path string, mapping bool) string {
			if mapping {
				return " (" + path + " is a mapping)"
			}
			return ""
		},
	}
	n, err := Document([]byte("providers: {a: {rate: 1, live: x}, b: {live: [1]}}\nother: {x: 1}\nscalar: 1\nprovider: {}\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	var s section
	err = dec.Decode(&s, n, "s", false)
	want := "s.other: unknown key (s.other is a mapping)\ns.scalar: unknown key\ns.provider: unknown key (did you mean providers?)"
	if err == nil || err.Error() != want || s.Providers["a"].Rate != 1 {
		t.Fatalf("got %v (%+v)\nwant %s", err, s, want)
	}
	if !matchKeys("a.*.c", []string{"a", "b", "c"}) || !matchKeys("a.*.c", []string{"a", "b.x", "c"}) || matchKeys("a.*.c", []string{"a", "b", "d"}) || matchKeys("a.*.c", []string{"a", "", "c"}) || matchKeys("a.*.c", []string{"a", "c"}) {
		t.Fatal("matchKeys")
	}
}

// A skipped path is one of as many keys as its pattern: a key with dots
// in it is one key, whose path the pattern's "*" matches, and keys nested
// deeper, or one key holding a pattern's dots, are not another reader's
// but unknown.
func TestSkipMatchesPathsOfAsManyKeys(t *testing.T) {
	type svc struct {
		Rate float64 `yaml:"rate"`
	}
	type p struct {
		Rate     float64        `yaml:"rate"`
		Services map[string]svc `yaml:"services"`
	}
	type section struct {
		Providers map[string]p `yaml:"providers"`
	}
	dec := Decoder{Skip: map[string]bool{"s.providers.*.live": true, "s.live": true}}
	n, err := Document([]byte("providers: {my.api: {rate: 1, live: x}, a: {services: {b: {rate: 2, live: 1}}}}\nlive: 1\nproviders.a.live: 1\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	var s section
	err = dec.Decode(&s, n, "s", false)
	want := "s.providers.a.services.b.live: unknown key\ns.providers.a.live: unknown key"
	if err == nil || err.Error() != want || s.Providers["my.api"].Rate != 1 {
		t.Fatalf("got %v (%+v)\nwant %s", err, s, want)
	}
}

// A key holding dots is one key wherever it is: the last key of a path
// (foo.live under a provider) is not the pattern's last key (live) however
// it ends, nor a key before the "*" (a top-level providers.a) the
// pattern's, so that a misspelt key is reported and never passed over as
// another reader's.
func TestSkipMatchesEachKeyOfThePattern(t *testing.T) {
	type p struct {
		Rate float64 `yaml:"rate"`
	}
	type section struct {
		Providers map[string]p `yaml:"providers"`
		Other     map[string]p `yaml:"providers.a"`
	}
	dec := Decoder{Skip: map[string]bool{"s.providers.*.live": true}}
	n, err := Document([]byte("providers: {a: {rate: 1, foo.live: 1, live: 2}, b.c: {rate: 2, x.live: 3}}\nproviders.a: {b: {live: 4}}\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	var s section
	err = dec.Decode(&s, n, "s", false)
	want := "s.providers.a.foo.live: unknown key\ns.providers.b.c.x.live: unknown key\ns.providers.a.b.live: unknown key"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	for _, c := range []struct {
		pat  string
		keys []string
		want bool
	}{
		{"a.*.c", []string{"a", "b", "c"}, true},
		{"a.*.c", []string{"a", "b.x", "c"}, true},
		{"a.*.c", []string{"a", "b", "x.c"}, false},
		{"a.*.c", []string{"a.x", "b", "c"}, false},
		{"a.*.c", []string{"a", "", "c"}, false},
		{"a.*.c", []string{"a", "c"}, false},
		{"a.*.c", []string{"a", "b", "c", "d"}, false},
		{"a.b.c", []string{"a", "b", "c"}, true},
		{"a.b.c", []string{"a", "b.c"}, false},
		{"a.b.c", []string{"a.b", "c"}, false},
	} {
		if got := matchKeys(c.pat, c.keys); got != c.want {
			t.Errorf("matchKeys(%q, %q) = %v, want %v", c.pat, c.keys, got, c.want)
		}
	}
}

func TestNearest(t *testing.T) {
	names := slices.Values([]string{"secretsmanager", "sts", "ec2", "logs"})
	for name, want := range map[string]string{"secretmanager": "secretsmanager", "ec3": "ec2", "sst": "sts", "lgos": "logs", "cloudwatchlogs": "", "e": ""} {
		if got := Nearest(name, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", name, got, want)
		}
	}
}

// A document whose aliases expand it far beyond its size (a "billion
// laughs") is refused as it is read, by the rule yaml.v3 applies when it
// decodes into Go values, before any reader follows its aliases: the
// readers walk the nodes, where yaml.v3 applies no limit, and a 20 kB
// document took resilience.ParseConfig 3 s and 650 MB. An alias within
// the node it names expands without end. Anchors used as a configuration
// uses them are read.
func TestDocumentRefusesExcessiveAliasing(t *testing.T) {
	for doc, want := range map[string]string{
		doctest.AliasBomb(1000): "ratelimit: document contains excessive aliasing (its 4016 nodes expand to 5016017)",
		"a: &a [*a]\n":          "ratelimit: document contains excessive aliasing (its 5 nodes expand to more than 1099511627776)",
		"a: &a {b: [1, *a]}\n":  "ratelimit: document contains excessive aliasing (its 8 nodes expand to more than 1099511627776)",
	} {
		if _, err := Document([]byte(doc), "ratelimit"); err == nil || err.Error() != want {
			t.Errorf("%.40q: %v, want %s", doc, err, want)
		}
	}
	var b strings.Builder
	b.WriteString("common: &c {max_rps: 5, burst: 10, max_concurrency: 4, max_retries: 3, deadline_seconds: 60}\nratelimit:\n  aws: *c\n  azure: *c\n  providers:\n")
	for i := range 50 {
		fmt.Fprintf(&b, "    p%d: *c\n", i)
	}
	if n, err := Document([]byte(b.String()), "ratelimit"); err != nil || n == nil {
		t.Errorf("a configuration sharing one mapping: %v", err)
	}
}

// A number is read as YAML reads it (yaml.v3, and PyYAML, which read the
// original system's files): an integer with a leading zero is octal, as
// 0o17 is, so that one file gives one configuration to either. A number
// beyond float64's range is out of range, not "not a number"; one too
// small for float64 but not zero keeps its sign, as the smallest float64,
// so that a setting that must be above zero, or a time that must not be
// zero, stays so.
func TestNumbersAreReadAsYAMLReadsThem(t *testing.T) {
	type section struct {
		N int     `yaml:"n"`
		F float64 `yaml:"f"`
		S float64 `yaml:"s_seconds"`
	}
	for _, c := range []struct {
		doc  string
		want section
	}{
		{"n: 017", section{N: 15}},
		{"n: -017", section{N: -15}},
		{"n: 0o17", section{N: 15}},
		{"n: 0x1F", section{N: 31}},
		{"n: 1_000", section{N: 1000}},
		{"n: 17", section{N: 17}},
		{"n: 0", section{N: 0}},
		{"f: 017", section{F: 15}},
		{"f: 1.5", section{F: 1.5}},
		{"f: 1e-400", section{F: math.SmallestNonzeroFloat64}},
		{"f: -1e-400", section{F: -math.SmallestNonzeroFloat64}},
		{"s_seconds: 1e-400", section{S: math.SmallestNonzeroFloat64}},
		// A duration longer than a time.Duration holds is read as its
		// seconds, as the same number of seconds is: its key's range and
		// the reader's checks say what is too long for that key.
		{"s_seconds: 3000000h", section{S: 3e6 * 3600}},
		{"s_seconds: 2562048h30m1.5s", section{S: 2562048*3600 + 30*60 + 1.5}},
		{"s_seconds: -3000000h", section{S: -3e6 * 3600}},
		{"f: 0e-400", section{F: 0}},
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(c.doc), &n); err != nil {
			t.Fatal(err)
		}
		var s section
		if err := (Decoder{}).Decode(&s, n.Content[0], "x", false); err != nil || s != c.want {
			t.Errorf("%q: read %+v, %v; want %+v", c.doc, s, err, c.want)
		}
	}
	for _, c := range []struct{ doc, want string }{
		{"f: 1e400", `x.f: "1e400" is out of range`},
		{"f: -1e400", `x.f: "-1e400" is out of range`},
		{"s_seconds: 1e400", `x.s_seconds: "1e400" is out of range`},
		{"s_seconds: " + strings.Repeat("9", 400) + "h", `x.s_seconds: duration "` + strings.Repeat("9", 400) + `h" is out of range`},
		{"n: 1e400", `x.n: "1e400" is out of range`},
		{"n: 099999999999999999999", `x.n: "099999999999999999999" is out of range (a whole number from -2147483648 to 2147483647)`},
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(c.doc), &n); err != nil {
			t.Fatal(err)
		}
		var s section
		if err := (Decoder{}).Decode(&s, n.Content[0], "x", false); err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.doc, err, c.want)
		}
	}
}

// A key a document writes with a character that is not printable (a
// newline, a carriage return, a bidirectional override, a byte that is
// not UTF-8) is quoted in an error's key path, as strconv.Quote writes
// it, so that an error names it on one line and a log line that carries
// the error cannot be forged by a configuration file's key; a printable
// key, dots and spaces in it included, is written as it is.
func TestAKeyThatIsNotPrintableIsQuotedInErrorPaths(t *testing.T) {
	type sub struct {
		Rate float64 `yaml:"max_rps"`
	}
	type section struct {
		Services map[string]sub `yaml:"services"`
	}
	for _, c := range []struct{ doc, want string }{
		{`{"brust\nINFO config ok": 1}`, `s."brust\nINFO config ok": unknown key`},
		{`{"services": {"ec2\r\nINFO forged": {"max_rps": "x"}}}`, `s.services."ec2\r\nINFO forged".max_rps: "x" is not a number`},
		{"{\"services\": {\"\u202eec2\": {\"brust\": 1}}}", `s.services."\u202eec2".brust: unknown key`},
		{`{"services": {"my.api v2": {"max_rps": "x"}}}`, `s.services.my.api v2.max_rps: "x" is not a number`},
	} {
		n, err := Document([]byte(c.doc), "s")
		if err != nil {
			t.Fatal(err)
		}
		var s section
		err = Decoder{}.Decode(&s, n, "s", false)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: %v; want %s", c.doc, err, c.want)
		}
	}
	// Layout's paths too: a governor key at a document's top beside the
	// AWS SDK's section, and a key of that section that is not the SDK's.
	n, err := Document([]byte("{\"aws\": {\"retry_mode\": \"standard\", \"x\\ny\": 1}, \"live_\\nz\": 1}"), "")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Layout(n)
	if err == nil || strings.Contains(err.Error(), "x\ny") || strings.Contains(err.Error(), "live_\nz") ||
		!strings.Contains(err.Error(), `aws."x\ny": not a setting`) || !strings.Contains(err.Error(), `"live_\nz": a setting of the governor's section`) {
		t.Errorf("Layout: %q; want its keys quoted", err)
	}
	// And a provider's name under providers.
	var e *Error
	if err := ProviderKey("AWS\n", nil); !errors.As(err, &e) || e.Path != `ratelimit.providers."AWS\n"` {
		t.Errorf("ProviderKey: %q; want its path ratelimit.providers.\"AWS\\n\"", err)
	}
}
