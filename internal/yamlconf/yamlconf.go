// Package yamlconf decodes configuration sections from YAML or JSON
// strictly: unknown keys, duplicate keys, malformed values, values of
// the wrong type, empty strings and a null setting (a number, true or
// false, a string; a null section or mapping is an empty one) are errors
// that name the key path
// (ratelimit.aws.services.ec2.brust: unknown key (did you mean burst?)),
// every mistake of a document at once (errors.Join). Keys ending in _seconds
// take a number of seconds or a Go duration string ("90s"; one longer
// than a time.Duration holds, "3000000h", is read as its seconds, as the
// same number is, the key's range and its reader saying whether it is
// too long). Numbers are
// read as YAML reads them (017 and 0o17 are octal, 15), as the original
// system's files were; one beyond a float64's range is an error. A document
// whose aliases expand it far beyond its size is refused as it is read
// (Document). The core's
// ParseConfig and the SDK integrations' configuration readers use it.
package yamlconf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cloudg/cloudg/internal/scopekey"
	"go.yaml.in/yaml/v3"
)

// Error is a configuration problem at a key path. Nothing changes an
// Error once returned: several goroutines may read one at once. The zero
// Error, of no path and no message, reads ": ".
type Error struct {
	Path string // ratelimit.aws.services.ec2.brust
	Msg  string // unknown key
}

func (e *Error) Error() string { return e.Path + ": " + e.Msg }

func errorf(path, msg string) error { return &Error{Path: path, Msg: msg} }

// KeyPath returns the key path of a document's key under path:
// path.key, or key alone when path is "". A key that holds a character
// that is not printable (scopekey.Printable: a newline, a carriage
// return, a bidirectional override, a byte that is not UTF-8) is quoted
// as strconv.Quote quotes it, as package resilience's Stats.Messages
// write such a scope, so that an error names it on one line and a
// configuration file's key forges no line of a log that carries the
// error; a printable key, dots and spaces in it included, is written as
// it is.
func KeyPath(path, key string) string {
	key = scopekey.OneLine(key)
	if path == "" {
		return key
	}
	return path + "." + key
}

// A Decoder decodes into structs whose fields have yaml tags. A field's
// range tag (see CheckRanges) bounds the value a document may give it. A
// map's keys are of a string type, one of a program's own (a region's
// name) included; a map of any other key is an unsupported setting, an
// error at its path.
// The zero Decoder is ready to use: no key is held to be positive but by
// its range tag, none is skipped, and an unknown key that is no
// misspelling of a known one gets no hint. Its
// methods only read it, so one Decoder (a package's, in a variable) may
// decode on several goroutines at once, as long as nothing changes its
// maps, and its Hint may be called so.
type Decoder struct {
	// Positive lists the keys whose values must be > 0 when given at all,
	// for structs whose fields have no range tags.
	Positive map[string]bool
	// Skip lists key paths (ratelimit.live_cooldown_seconds) that another
	// reader of the same section decodes and validates; they are passed
	// over, not reported as unknown. A "*" segment matches any one key
	// (ratelimit.providers.*.live_cooldown_seconds); a pattern has at most
	// one. A path matches a pattern of as many keys only, key by key: a
	// key with dots in it (a provider named my.api) is one key, which the
	// "*" matches and no other segment does (a key
	// foo.live_cooldown_seconds is not the pattern's last key, but
	// unknown), and keys nested deeper
	// (ratelimit.providers.github.services.rest.live_cooldown_seconds)
	// are not the pattern's.
	Skip map[string]bool
	// Hint, when set, explains an unknown key that is no misspelling of a
	// known one: it is given the key's path and whether its value is a
	// mapping, and returns the text to add after "unknown key", or "".
	Hint func(path string, mapping bool) string
}

// skip reports whether the key path of keys, one string per key, is
// another reader's.
func (d Decoder) skip(keys []string) bool {
	for pat := range d.Skip {
		if matchKeys(pat, keys) {
			return true
		}
	}
	return false
}

// matchKeys matches a key path, one string per key, against a pattern,
// key by key: a "*" segment matches any one key, one that holds dots
// included (a provider named my.api), and every other segment the key
// it names alone, so that a key holding dots (foo.live_cooldown_seconds)
// never passes for two, or for the pattern's last one.
func matchKeys(pat string, keys []string) bool {
	segs := strings.Split(pat, ".")
	if len(segs) != len(keys) {
		return false
	}
	for i, seg := range segs {
		if seg != keys[i] && (seg != "*" || keys[i] == "") {
			return false
		}
	}
	return true
}

// Decode decodes n, the node at path, into dst (a pointer). With lenient
// set, keys of the top-level struct that dst has no field for are ignored
// (a section shared with other parts of a program); nested structs are
// always strict.
func (d Decoder) Decode(dst any, n *yaml.Node, path string, lenient bool) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("yamlconf: Decode needs a pointer, not %T", dst)
	}
	var keys []string
	if path != "" {
		keys = strings.Split(path, ".")
	}
	return d.decode(v.Elem(), n, path, keys, "", nil, lenient)
}

// ParseSection reads the top-level section key of a document into dst, a
// pointer to a struct, strictly: the section's keys are all dst's. A
// document without the section leaves dst as it is.
func (d Decoder) ParseSection(data []byte, key string, dst any) error {
	n, err := Document(data, key)
	if err != nil || n == nil {
		return err
	}
	sec := Section(n, key)
	if sec == nil {
		return nil
	}
	return d.Decode(dst, sec, key, false)
}

// Document parses one YAML document and returns its top node, nil for an
// empty document; errors are reported at path.
func Document(data []byte, path string) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, errorf(path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errorf(path, "one YAML document expected")
	}
	if err := checkAliasing(&doc, path); err != nil {
		return nil, err
	}
	n := deref(&doc)
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil, nil
		}
		n = deref(n.Content[0])
	}
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, errorf(path, "must be a mapping")
	}
	return n, nil
}

// checkAliasing refuses a document whose aliases expand it far beyond its
// size (a "billion laughs"), by the rule yaml.v3 applies when it decodes
// into Go values: past 1000 nodes and 100 reached through aliases, those
// may be at most 99% of the expanded nodes up to 400,000 of them, and a
// share falling to 10% at 4,000,000. The readers walk the nodes, where
// yaml.v3 applies no limit, following aliases: without it, a document of
// a few kilobytes could take seconds and gigabytes to read.
func checkAliasing(doc *yaml.Node, path string) error {
	physical, expanded := expansion(doc)
	aliased := expanded - physical
	if aliased > 100 && expanded > 1000 && float64(aliased)/float64(expanded) > allowedAliasRatio(expanded) {
		size := strconv.Itoa(expanded)
		if expanded >= maxExpansion {
			size = "more than " + size
		}
		return errorf(path, fmt.Sprintf("document contains excessive aliasing (its %d nodes expand to %s)", physical, size))
	}
	return nil
}

// maxExpansion caps the count of expanded nodes, far past every limit.
const maxExpansion = 1 << 40

// allowedAliasRatio is yaml.v3's: the share of the nodes decoded that
// may be reached through an alias.
func allowedAliasRatio(expanded int) float64 {
	const low, high = 400_000, 4_000_000
	switch {
	case expanded <= low:
		return 0.99
	case expanded >= high:
		return 0.10
	}
	return 0.99 - 0.89*float64(expanded-low)/float64(high-low)
}

// expansion counts the nodes of the tree under root as written
// (physical) and as a reader following every alias meets them
// (expanded, at most maxExpansion; an alias within the node it names
// expands without end). Each node's expanded size is counted once,
// without recursion: the parser bounds a document's nesting, not that of
// aliases within aliases.
func expansion(root *yaml.Node) (physical, expanded int) {
	children := func(n *yaml.Node) []*yaml.Node {
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil {
				return nil
			}
			return []*yaml.Node{n.Alias}
		}
		return n.Content
	}
	// Post-order, with an explicit stack: a node's size once all its
	// children's are known. A node on the path being counted is open.
	size := map[*yaml.Node]int{}
	open := map[*yaml.Node]bool{}
	type frame struct {
		n    *yaml.Node
		done bool
	}
	stack := []frame{{n: root}}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, ok := size[f.n]; ok {
			continue
		}
		if !f.done {
			if open[f.n] {
				continue // met again within itself: counted below
			}
			open[f.n] = true
			stack = append(stack, frame{n: f.n, done: true})
			for _, c := range children(f.n) {
				if _, ok := size[c]; !ok && !open[c] {
					stack = append(stack, frame{n: c})
				}
			}
			continue
		}
		total := 1
		for _, c := range children(f.n) {
			cs, ok := size[c]
			if !ok { // open: an alias within the node it names
				cs = maxExpansion
			}
			total = min(total+cs, maxExpansion)
		}
		size[f.n] = total
		delete(open, f.n)
	}
	// The nodes as written: aliases not followed.
	nodes := []*yaml.Node{root}
	for len(nodes) > 0 {
		n := nodes[len(nodes)-1]
		nodes = nodes[:len(nodes)-1]
		physical++
		if n.Kind != yaml.AliasNode {
			nodes = append(nodes, n.Content...)
		}
	}
	return physical, size[root]
}

// Section returns the value of the top-level key of a mapping, or nil.
func Section(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if deref(n.Content[i]).Value == key {
			return deref(n.Content[i+1])
		}
	}
	return nil
}

// IsMerge reports whether the key node k is a YAML merge key (<<, not
// quoted). No reader reads through one: the decoder refuses it as an
// unknown key, wherever it is, so that the keys it would bring in are
// not passed over in silence.
func IsMerge(k *yaml.Node) bool {
	k = deref(k)
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge"
}

// Deref returns the node an alias names (through at most 16 aliases),
// or n itself: a key or a value as the decoder reads it.
func Deref(n *yaml.Node) *yaml.Node { return deref(n) }

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// nullMsg returns what a null given to a setting of type t is told, a
// pointer's element type looked at: "must be a number, not null", "must
// be true or false, not null" or "must be a string, not null"; "" where
// null is an empty section, mapping or list (a struct, a map).
func nullMsg(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Float64:
		return "must be a number, not null"
	case reflect.Bool:
		return "must be true or false, not null"
	case reflect.String:
		return "must be a string, not null"
	}
	return ""
}

// decode decodes n into v strictly; path, of keys (one string per key,
// as the document holds it), is n's; key is v's
// own key name ("" for the root), which decides whether it must be
// positive or may be a duration, and rule its field's range, if any. lenient ignores keys a struct at
// this level has no field for.
func (d Decoder) decode(v reflect.Value, n *yaml.Node, path string, keys []string, key string, rule *rangeRule, lenient bool) error {
	n = deref(n)
	if n.Kind == yaml.AliasNode {
		return errorf(path, "alias nesting too deep")
	}
	if isNull(n) {
		if msg := nullMsg(v.Type()); msg != "" {
			// As an explicit zero rate and an empty name are: null reads
			// as the default, which leaving the key out says, so a user
			// who wrote it meant another thing (none, off, false: enabled:
			// with nothing after it) or lost a value on its way into the
			// file (max_rps: ${MAX_RPS}).
			msg += " (leave the key out for the default"
			if rule != nil && rule.note != "" {
				msg += "; " + rule.note
			}
			return errorf(path, msg+")")
		}
		v.SetZero() // a section, a service or a provider left empty
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := d.decode(p.Elem(), n, path, keys, key, rule, lenient); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return errorf(path, "must be a mapping")
		}
		// Every mistake of a mapping is reported, not only the first.
		var errs []error
		fields := structFields(v.Type())
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			name := k.Value
			p := KeyPath(path, name)
			if k.Kind != yaml.ScalarNode {
				errs = append(errs, errorf(path, "keys must be strings"))
				continue
			}
			if name == "" {
				// No setting is unnamed, and path. names nothing.
				errs = append(errs, errorf(path, "keys must be non-empty strings"))
				continue
			}
			sub := append(keys[:len(keys):len(keys)], name)
			if d.skip(sub) {
				continue
			}
			idx, ok := fields[name]
			if !ok {
				if !lenient && IsMerge(k) {
					// Not read through, and not a misspelt setting or
					// another provider's: no hint applies.
					errs = append(errs, errorf(p, "unknown key"))
				} else if !lenient {
					hint := suggest(name, fields)
					if hint == "" && d.Hint != nil {
						hint = d.Hint(p, deref(n.Content[i+1]).Kind == yaml.MappingNode)
					}
					errs = append(errs, errorf(p, "unknown key"+hint))
				}
				continue
			}
			if seen[name] {
				errs = append(errs, errorf(p, "duplicate key"))
				continue
			}
			seen[name] = true
			var rule *rangeRule
			if r, ok := parseRange(v.Type().Field(idx).Tag.Get("range")); ok {
				rule = &r
			}
			if err := d.decode(v.Field(idx), n.Content[i+1], p, sub, name, rule, false); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			// No document's key names an int or a struct.
			return errorf(path, "unsupported setting")
		}
		if n.Kind != yaml.MappingNode {
			return errorf(path, "must be a mapping")
		}
		var errs []error
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		seen := map[string]bool{} // an entry whose value was refused included
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode || k.Value == "" || k.ShortTag() == "!!null" {
				// A null key (~, null) is YAML's null, not a name: a
				// provider or service "~" no scope has.
				errs = append(errs, errorf(path, "keys must be non-empty strings"))
				continue
			}
			p := KeyPath(path, k.Value)
			if IsMerge(k) {
				// Not an entry named <<, nor read through: refused as a
				// struct's merge key is.
				errs = append(errs, errorf(p, "unknown key"))
				continue
			}
			if seen[k.Value] {
				errs = append(errs, errorf(p, "duplicate key"))
				continue
			}
			seen[k.Value] = true
			e := reflect.New(v.Type().Elem()).Elem()
			if err := d.decode(e, n.Content[i+1], p, append(keys[:len(keys):len(keys)], k.Value), "", nil, false); err != nil {
				errs = append(errs, err)
				continue
			}
			// Converted: the key's type may be a string type of the
			// program's own (a region's name), to which a string is not
			// assignable.
			m.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), e)
		}
		v.Set(m)
		return errors.Join(errs...)
	}
	if n.Kind != yaml.ScalarNode {
		return errorf(path, "must be a single value")
	}
	switch v.Kind() {
	case reflect.Bool:
		if n.ShortTag() != "!!bool" {
			return errorf(path, fmt.Sprintf("%q is not true or false", n.Value))
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			return errorf(path, fmt.Sprintf("%q is not true or false", n.Value))
		}
		v.SetBool(b)
	case reflect.String:
		if n.ShortTag() != "!!str" {
			return errorf(path, fmt.Sprintf("%q is not a string", n.Value))
		}
		if n.Value == "" {
			// As an explicit zero rate is: "" is the default, which
			// leaving the key out says.
			return errorf(path, "must not be empty (leave the key out for the default)")
		}
		v.SetString(n.Value)
	case reflect.Int:
		f, err := number(n, path, false)
		if err != nil {
			return err
		}
		if f != math.Trunc(f) {
			return errorf(path, fmt.Sprintf("%q is not a whole number", n.Value))
		}
		if f < math.MinInt32 || f > math.MaxInt32 {
			return errorf(path, fmt.Sprintf("%q is out of range (a whole number from -2147483648 to 2147483647)", n.Value))
		}
		if err := d.inRange(f, path, key, rule); err != nil {
			return err
		}
		v.SetInt(int64(f))
	case reflect.Float64:
		f, err := number(n, path, strings.HasSuffix(key, "_seconds"))
		if err != nil {
			return err
		}
		if err := d.inRange(f, path, key, rule); err != nil {
			return err
		}
		v.SetFloat(f)
	default:
		return errorf(path, "unsupported setting")
	}
	return nil
}

// inRange checks a number a document gives key against the key's range.
func (d Decoder) inRange(f float64, path, key string, rule *rangeRule) error {
	if d.Positive[key] && f <= 0 {
		return errorf(path, "must be > 0")
	}
	if rule != nil && !rule.holds(f) {
		return errorf(path, rule.msg(f))
	}
	return nil
}

// number reads a finite number; a duration key also takes a Go duration
// string, read as seconds, whatever its length.
func number(n *yaml.Node, path string, duration bool) (float64, error) {
	switch n.ShortTag() {
	case "!!int", "!!float":
		if n.ShortTag() == "!!int" {
			// As YAML reads it: 017 is octal, as 0o17 is.
			var i int64
			if n.Decode(&i) == nil {
				return float64(i), nil
			}
		}
		s := strings.ReplaceAll(n.Value, "_", "")
		f, err := strconv.ParseFloat(s, 64)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return 0, errorf(path, fmt.Sprintf("%q is out of range", n.Value))
		case err != nil:
			// YAML 1.1 forms such as 0x10 or .inf.
			var x float64
			if derr := n.Decode(&x); derr != nil {
				return 0, errorf(path, fmt.Sprintf("%q is not a number", n.Value))
			}
			f = x
		case f == 0:
			f = underflowed(s)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, errorf(path, fmt.Sprintf("%q is not a finite number", n.Value))
		}
		return f, nil
	case "!!str":
		// A float beyond float64's range is a string to YAML.
		if _, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); errors.Is(err, strconv.ErrRange) {
			return 0, errorf(path, fmt.Sprintf("%q is out of range", n.Value))
		}
		if duration {
			s := strings.TrimSpace(n.Value)
			d, err := time.ParseDuration(s)
			switch {
			case err == nil:
				return d.Seconds(), nil
			case durationForm.MatchString(s):
				// Longer than a Duration holds: read as its seconds, as
				// the same number of seconds is, unless that is beyond
				// float64's range.
				if sec := longDuration(s); !math.IsInf(sec, 0) {
					return sec, nil
				}
				return 0, errorf(path, fmt.Sprintf("duration %q is out of range", n.Value))
			}
			return 0, errorf(path, fmt.Sprintf("malformed duration %q (seconds, or a duration such as 90s)", n.Value))
		}
	}
	return 0, errorf(path, fmt.Sprintf("%q is not a number", n.Value))
}

// underflowed returns what a number that strconv.ParseFloat read as zero
// is read as: zero when it is, and when it is not (1e-400, too small for
// a float64) the smallest float64 of its sign, so that a setting that
// must be above zero, or a time that is not zero, stays so.
func underflowed(s string) float64 {
	f, _, err := big.ParseFloat(s, 10, 64, big.ToNearestEven)
	if err != nil || f.Sign() == 0 {
		return 0
	}
	return math.Copysign(math.SmallestNonzeroFloat64, float64(f.Sign()))
}

// durationForm is the form of a Go duration, whatever its length: a
// string of this form that time.ParseDuration refuses is too long for a
// Duration, not malformed.
var durationForm = regexp.MustCompile(`^[-+]?((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$`)

// durationPart is one number and unit of a duration of durationForm.
var durationPart = regexp.MustCompile(`(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)`)

// unitSeconds is each unit of a Go duration, in seconds.
var unitSeconds = map[string]float64{"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}

// longDuration returns s, of durationForm, in seconds, as a float64: ±Inf
// when that is beyond float64's range.
func longDuration(s string) float64 {
	sec := 0.0
	for _, m := range durationPart.FindAllStringSubmatch(s, -1) {
		v, _ := strconv.ParseFloat(m[1], 64) // +Inf when out of range
		sec += v * unitSeconds[m[2]]
	}
	if strings.HasPrefix(s, "-") {
		return -sec
	}
	return sec
}

// structFields maps yaml key names to field indexes.
func structFields(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}
