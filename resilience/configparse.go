package resilience

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ParseConfig reads the ratelimit section from YAML or JSON. The top-level
// keys are enabled, aws, azure and gcp; a document with a top-level
// ratelimit key is read as that section (its other top-level keys belong to
// other sections and are ignored). Unknown keys, explicit zero or negative
// rates, bursts, thresholds and times, and malformed values are errors that
// name the key path, such as
//
//	ratelimit.aws.services.ec2.brust: unknown key
//
// Keys ending in _seconds take a number of seconds or a Go duration string
// ("90s", "1m30s"). An empty document is the zero Config.
func ParseConfig(data []byte) (Config, error) {
	var cfg Config
	n, err := document(data, "ratelimit")
	if err != nil || n == nil {
		return Config{}, err
	}
	if sec := section(n, "ratelimit"); sec != nil {
		n = sec
	}
	if err := decodeNode(reflect.ValueOf(&cfg).Elem(), n, "ratelimit", "", false); err != nil {
		return Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// ParseSection reads the top-level section key of a configuration document
// (YAML or JSON) into dst, a pointer to a struct whose fields have yaml
// tags, with ParseConfig's checks of values and its errors naming the key
// path (aws.max_retries: "three" is not a whole number). Keys of the
// section that dst has no field for are ignored: a section such as aws
// also holds settings of other parts of a program. A document without the
// section leaves dst as it is. The SDK integrations read their settings
// with it (cloudgaws reads aws.max_retries and aws.retry_mode).
func ParseSection(data []byte, key string, dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("resilience: ParseSection needs a pointer to a struct, not %T", dst)
	}
	n, err := document(data, key)
	if err != nil || n == nil {
		return err
	}
	sec := section(n, key)
	if sec == nil {
		return nil
	}
	return decodeNode(v.Elem(), sec, key, "", true)
}

// document parses one YAML document and returns its top node, nil for an
// empty document; errors are reported at path.
func document(data []byte, path string) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fieldErr(path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fieldErr(path, "one YAML document expected")
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
		return nil, fieldErr(path, "must be a mapping")
	}
	return n, nil
}

// section returns the value of the top-level key of a mapping, or nil.
func section(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if deref(n.Content[i]).Value == key {
			return deref(n.Content[i+1])
		}
	}
	return nil
}

// positiveKeys must be > 0 when they are given at all.
var positiveKeys = map[string]bool{
	"max_rps": true, "burst": true, "min_rps": true, "global_burst": true, "account_burst": true,
	"max_concurrency": true, "breaker_threshold": true, "breaker_cooldown_seconds": true,
	"breaker_max_cooldown_seconds": true, "base_delay_seconds": true, "max_backoff_seconds": true,
	"deadline_seconds": true,
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// decodeNode decodes n into v strictly; key is v's own key name ("" for the
// root), which decides whether it must be positive or may be a duration.
// lenient ignores keys a struct at this level has no field for.
func decodeNode(v reflect.Value, n *yaml.Node, path, key string, lenient bool) error {
	n = deref(n)
	if n.Kind == yaml.AliasNode {
		return fieldErr(path, "alias nesting too deep")
	}
	if isNull(n) {
		v.SetZero()
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := decodeNode(p.Elem(), n, path, key, lenient); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fieldErr(path, "must be a mapping")
		}
		fields := structFields(v.Type())
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			name := k.Value
			p := path + "." + name
			if k.Kind != yaml.ScalarNode {
				return fieldErr(path, "keys must be strings")
			}
			idx, ok := fields[name]
			if !ok {
				if lenient {
					continue
				}
				return fieldErr(p, "unknown key")
			}
			if seen[name] {
				return fieldErr(p, "duplicate key")
			}
			seen[name] = true
			if err := decodeNode(v.Field(idx), n.Content[i+1], p, name, false); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return fieldErr(path, "must be a mapping")
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode || k.Value == "" {
				return fieldErr(path, "keys must be non-empty strings")
			}
			p := path + "." + k.Value
			if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
				return fieldErr(p, "duplicate key")
			}
			e := reflect.New(v.Type().Elem()).Elem()
			if err := decodeNode(e, n.Content[i+1], p, "", false); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(k.Value), e)
		}
		v.Set(m)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return fieldErr(path, "must be a single value")
	}
	switch v.Kind() {
	case reflect.Bool:
		if n.ShortTag() != "!!bool" {
			return fieldErr(path, fmt.Sprintf("%q is not true or false", n.Value))
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			return fieldErr(path, fmt.Sprintf("%q is not true or false", n.Value))
		}
		v.SetBool(b)
	case reflect.String:
		if n.ShortTag() != "!!str" {
			return fieldErr(path, fmt.Sprintf("%q is not a string", n.Value))
		}
		v.SetString(n.Value)
	case reflect.Int:
		f, err := number(n, path, false)
		if err != nil {
			return err
		}
		if f != math.Trunc(f) || math.Abs(f) > 1<<31 {
			return fieldErr(path, fmt.Sprintf("%q is not a whole number", n.Value))
		}
		if positiveKeys[key] && f <= 0 {
			return fieldErr(path, "must be > 0")
		}
		v.SetInt(int64(f))
	case reflect.Float64:
		f, err := number(n, path, strings.HasSuffix(key, "_seconds"))
		if err != nil {
			return err
		}
		if positiveKeys[key] && f <= 0 {
			return fieldErr(path, "must be > 0")
		}
		v.SetFloat(f)
	default:
		return fieldErr(path, "unsupported setting")
	}
	return nil
}

// number reads a finite number; a duration key also takes a Go duration
// string, read as seconds.
func number(n *yaml.Node, path string, duration bool) (float64, error) {
	switch n.ShortTag() {
	case "!!int", "!!float":
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil {
			// YAML 1.1 forms such as 0x10, 0o17 or .inf.
			var x float64
			if derr := n.Decode(&x); derr != nil {
				return 0, fieldErr(path, fmt.Sprintf("%q is not a number", n.Value))
			}
			f = x
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fieldErr(path, fmt.Sprintf("%q is not a finite number", n.Value))
		}
		return f, nil
	case "!!str":
		if duration {
			d, err := time.ParseDuration(strings.TrimSpace(n.Value))
			if err != nil {
				return 0, fieldErr(path, fmt.Sprintf("malformed duration %q (seconds, or a duration such as 90s)", n.Value))
			}
			return d.Seconds(), nil
		}
	}
	return 0, fieldErr(path, fmt.Sprintf("%q is not a number", n.Value))
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
