package liveop

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Key returns the single-flight key of a request made of parts: the first
// 32 hex characters of the SHA-256 of the parts' canonical JSON, an array
// with object keys sorted, no spaces and no HTML escaping. A value JSON
// cannot encode (a channel, a function, NaN) is encoded as its fmt.Sprint
// string, inside maps, slices and structs too (a struct is then its fields
// by their JSON names, as a map). The same request with its map keys
// or struct fields in another order has the same key:
//
//	Key("scan", map[string]any{"accounts": []string{"1", "2"}, "refresh": true})
func Key(parts ...any) string {
	if parts == nil {
		parts = []any{} // [], not null
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(canonical(parts, 0)); err != nil {
		// canonical leaves only values JSON encodes.
		panic(fmt.Sprintf("liveop: Key: %v", err))
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return hex.EncodeToString(sum[:16])
}

// canonical returns v as the generic JSON tree it encodes to (maps,
// slices, strings, json.Number, bools, nil), whose maps encoding/json
// writes with sorted keys. A value that does not encode becomes its string,
// or, for a map, slice, array, pointer or struct, the tree of its elements;
// past maxDepth levels of such (a map holding itself) its type's name.
func canonical(v any, depth int) any {
	if depth > maxDepth {
		return fmt.Sprintf("%T", v)
	}
	if b, err := json.Marshal(v); err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var tree any
		if dec.Decode(&tree) == nil {
			return tree
		}
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		// Keys by their strings; keys that print alike (1 and "1") are
		// one entry, the [type, value] pairs of each in their JSON's
		// order, so that no key hides another in the map's random order.
		pairs := make(map[string][]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			k := fmt.Sprint(it.Key().Interface())
			pairs[k] = append(pairs[k], []any{fmt.Sprintf("%T", it.Key().Interface()), canonical(it.Value().Interface(), depth+1)})
		}
		m := make(map[string]any, len(pairs))
		for k, ps := range pairs {
			if len(ps) == 1 {
				m[k] = ps[0].([]any)[1]
				continue
			}
			slices.SortFunc(ps, func(a, b any) int { return strings.Compare(jsonString(a), jsonString(b)) })
			m[k] = ps
		}
		return m
	case reflect.Slice, reflect.Array:
		s := make([]any, rv.Len())
		for i := range s {
			s[i] = canonical(rv.Index(i).Interface(), depth+1)
		}
		return s
	case reflect.Pointer, reflect.Interface:
		if !rv.IsNil() {
			return canonical(rv.Elem().Interface(), depth+1)
		}
		return nil
	case reflect.Struct:
		if !hasOwnEncoding(rv.Type()) { // whose encoding failed (a time.Time past year 9999): its string
			m := map[string]any{}
			structFields(rv, m, depth, nil)
			return m
		}
	}
	return fmt.Sprint(v)
}

// structFields adds to m the fields of the struct rv that encoding/json
// writes, by their JSON names, each as the tree of its value: exported
// fields without a "-" tag and not empty with omitempty (a struct embedded
// under a name of its own among them, whatever its type), and the fields
// of an embedded struct without a name of its own, where the outer struct
// has none of that name. An embedded struct of a type already on the way
// from the outermost (within, and rv's) is not walked into again, as
// encoding/json does not: a struct that embeds itself through a pointer
// would otherwise be walked without end.
func structFields(rv reflect.Value, m map[string]any, depth int, within []reflect.Type) {
	t := rv.Type()
	within = append(slices.Clip(within), t)
	var embedded []reflect.Value
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := rv.Field(i)
		if sf.Anonymous && name == "" {
			if fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct {
				// Of an unexported type too: its exported fields are
				// the outer struct's, as encoding/json writes them (and
				// reflect lets them be read, each field asked below).
				if !fv.IsNil() {
					embedded = append(embedded, fv.Elem())
				}
				continue
			}
			if fv.Kind() == reflect.Struct {
				embedded = append(embedded, fv)
				continue
			}
		}
		// A struct embedded by an unexported type under a name of its own
		// (a JSON tag) is a field of that name to encoding/json, which
		// reads it though the type is unexported.
		unexportedStruct := sf.Anonymous && isStruct(sf.Type)
		if !sf.IsExported() && !unexportedStruct || strings.Contains(","+opts+",", ",omitempty,") && emptyValue(fv) {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		switch {
		case fv.CanInterface():
			m[name] = canonical(fv.Interface(), depth+1)
		case unexportedStruct && depth+1 > maxDepth:
			m[name] = fv.Type().String() // as canonical ends a cycle
		case unexportedStruct:
			// Read field by field: reflect lets its exported fields be
			// read, not the value itself.
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					m[name] = nil
					continue
				}
				fv = fv.Elem()
			}
			inner := map[string]any{}
			structFields(fv, inner, depth+1, nil)
			m[name] = inner
		}
	}
	for _, e := range embedded {
		if slices.Contains(within, e.Type()) {
			continue
		}
		inner := map[string]any{}
		structFields(e, inner, depth+1, within)
		for k, v := range inner {
			if _, ok := m[k]; !ok {
				m[k] = v
			}
		}
	}
}

// isStruct reports whether t is a struct or a pointer to one.
func isStruct(t reflect.Type) bool {
	return t.Kind() == reflect.Struct || t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct
}

// jsonString returns the JSON of a tree canonical made.
func jsonString(tree any) string {
	b, _ := json.Marshal(tree)
	return string(b)
}

// hasOwnEncoding reports whether encoding/json writes values of t, or of
// *t, with their own MarshalJSON or MarshalText rather than field by field.
func hasOwnEncoding(t reflect.Type) bool {
	for _, t := range []reflect.Type{t, reflect.PointerTo(t)} {
		if t.Implements(reflect.TypeFor[json.Marshaler]()) || t.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
			return true
		}
	}
	return false
}

// emptyValue reports whether encoding/json's omitempty leaves v out.
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

const maxDepth = 64
