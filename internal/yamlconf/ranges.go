package yamlconf

import (
	"math"
	"reflect"
	"strconv"
	"strings"
)

// The range of a numeric setting is its field's range tag, the one copy
// of the rule that both the decoder (a value given in a document) and
// CheckRanges (a value set in code) apply:
//
//	MaxRPS        float64  `yaml:"max_rps" range:">0"`
//	GlobalMaxRPS  *float64 `yaml:"global_max_rps" range:">=0;0 turns the bucket off"`
//	MaxAttempts   *int     `yaml:"max_attempts" range:">=1;the first attempt counts"`
//
// A bound is "> n" or ">= n"; the text after ";" explains it in the error,
// "must be >= 1 (the first attempt counts)". A value must also be finite.
// A field at its zero value (nil, for a pointer) is unset and in range: a
// document that gives a ">0" key 0 explicitly is refused by the decoder,
// which sees the key, while in code 0 means "the default".
type rangeRule struct {
	strict bool    // > rather than >=
	bound  float64 // the bound
	text   string  // "> 0"
	note   string  // why, or ""
}

// parseRange reads a range tag; ok is false for an empty one.
func parseRange(tag string) (r rangeRule, ok bool) {
	if tag == "" {
		return rangeRule{}, false
	}
	bound, note, _ := strings.Cut(tag, ";")
	switch {
	case strings.HasPrefix(bound, ">="):
		bound = bound[2:]
	case strings.HasPrefix(bound, ">"):
		r.strict = true
		bound = bound[1:]
	default:
		panic("yamlconf: malformed range tag " + strconv.Quote(tag))
	}
	b, err := strconv.ParseFloat(strings.TrimSpace(bound), 64)
	if err != nil {
		panic("yamlconf: malformed range tag " + strconv.Quote(tag))
	}
	r.bound, r.note = b, strings.TrimSpace(note)
	r.text = ">= " + strconv.FormatFloat(b, 'g', -1, 64)
	if r.strict {
		r.text = "> " + strconv.FormatFloat(b, 'g', -1, 64)
	}
	return r, true
}

// holds reports whether v is within the range.
func (r rangeRule) holds(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	if r.strict {
		return v > r.bound
	}
	return v >= r.bound
}

// msg is the error of v, a value out of the range: "must be > 0", or,
// for a value that is not finite (which a document cannot give, but code
// can), "must be a finite number > 0", since +Inf is > 0.
func (r rangeRule) msg(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "must be a finite number " + r.text
	}
	if r.note != "" {
		return "must be " + r.text + " (" + r.note + ")"
	}
	return "must be " + r.text
}

// Ranges returns the range tags of a struct type's fields by yaml key, as
// they read ("> 0", ">= 0"): for documentation and tests.
func Ranges(t reflect.Type) map[string]string {
	m := map[string]string{}
	for i := range t.NumField() {
		f := t.Field(i)
		if r, ok := parseRange(f.Tag.Get("range")); ok {
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			m[name] = r.text
		}
	}
	return m
}

// CheckRanges reports every field of the struct v (a struct or a pointer
// to one) that is set and out of its range tag, each an *Error at
// path.<key> in field order. Unset fields (zero, or nil pointers) are in
// range; nested structs and maps are the caller's to check, with their
// own paths.
func CheckRanges(v any, path string) []error {
	rv := reflect.Indirect(reflect.ValueOf(v))
	t := rv.Type()
	var errs []error
	for i := range t.NumField() {
		f := t.Field(i)
		r, ok := parseRange(f.Tag.Get("range"))
		if !ok {
			continue
		}
		fv := rv.Field(i)
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		} else if fv.IsZero() {
			continue
		}
		var x float64
		switch fv.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32:
			x = float64(fv.Int())
		case reflect.Float64, reflect.Float32:
			x = fv.Float()
		default:
			panic("yamlconf: range tag on a non-numeric field " + t.Name() + "." + f.Name)
		}
		if !r.holds(x) {
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			errs = append(errs, errorf(path+"."+name, r.msg(x)))
		}
	}
	return errs
}
