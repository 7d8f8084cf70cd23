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
// by their JSON names, as a map), and a map, slice or pointer that comes
// again inside itself (a cycle, which JSON cannot encode either: a child
// pointing back at its parent) as its type's name where it comes again;
// so is a value whose fmt.Sprint string would not end (a struct whose own
// MarshalJSON fails on a map holding itself). The same request with its
// map keys or struct fields in another order has the same key:
//
//	Key("scan", map[string]any{"accounts": []string{"1", "2"}, "refresh": true})
func Key(parts ...any) string {
	if parts == nil {
		parts = []any{} // [], not null
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(canonical(parts, 0, &walk{})); err != nil {
		// canonical leaves only values JSON encodes.
		panic(fmt.Sprintf("liveop: Key: %v", err))
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return hex.EncodeToString(sum[:16])
}

// canonical returns v as the generic JSON tree it encodes to (maps,
// slices, strings, json.Number, bools, nil), whose maps encoding/json
// writes with sorted keys. A value that does not encode becomes its string
// (sprint), or, for a map, slice, array, pointer or struct, the tree of its
// elements; past maxDepth levels of such, or where a map, slice or pointer
// comes again inside itself (a map holding itself), its type's name: a
// value that holds itself twice is walked once, not down every way back
// to it.
func canonical(v any, depth int, w *walk) any {
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
	if !w.enter(rv) {
		return fmt.Sprintf("%T", v) // inside itself
	}
	defer w.leave(rv)
	switch rv.Kind() {
	case reflect.Map:
		// Keys by their strings; keys that print alike (1 and "1") are
		// one entry, the [type, value] pairs of each in their JSON's
		// order, so that no key hides another in the map's random order.
		pairs := make(map[string][]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			k := sprint(it.Key().Interface())
			pairs[k] = append(pairs[k], []any{fmt.Sprintf("%T", it.Key().Interface()), canonical(it.Value().Interface(), depth+1, w)})
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
			s[i] = canonical(rv.Index(i).Interface(), depth+1, w)
		}
		return s
	case reflect.Pointer, reflect.Interface:
		if !rv.IsNil() {
			return canonical(rv.Elem().Interface(), depth+1, w)
		}
		return nil
	case reflect.Struct:
		if !hasOwnEncoding(rv.Type()) { // whose encoding failed (a time.Time past year 9999): its string
			m := map[string]any{}
			structFields(rv, m, depth, w)
			return m
		}
	}
	return sprint(v)
}

// sprint returns v's string, fmt.Sprint's, or its type's name when that
// string would not end: fmt.Sprint walks the maps and slices a value
// holds, finding no cycle, so that one holding a map inside itself (a
// struct whose own encoding failed on it, a map's key pointing at a
// struct holding it) overflows the stack, which kills the process.
func sprint(v any) string {
	if !printEnds(reflect.ValueOf(v)) {
		return fmt.Sprintf("%T", v)
	}
	return fmt.Sprint(v)
}

// printEnds reports whether fmt.Sprint of rv ends: whether no map or slice
// that fmt walks in rv (through fields, elements and interfaces, and a
// pointer at the top, which fmt prints as &{...}; one further down it
// prints as an address) holds itself. It walks each map and slice once,
// colouring it: one met again while it is walked is inside itself. It is
// cautious: fmt does not walk a value whose String or Error method it
// calls instead, which printEnds walks all the same.
func printEnds(rv reflect.Value) bool {
	const walking, walked = 1, 2
	var seen map[ref]uint8
	var ends func(rv reflect.Value, top bool) bool
	ends = func(rv reflect.Value, top bool) bool {
		switch rv.Kind() {
		case reflect.Interface:
			return rv.IsNil() || ends(rv.Elem(), false)
		case reflect.Pointer:
			return !top || rv.IsNil() || ends(rv.Elem(), false)
		case reflect.Struct:
			for i := range rv.NumField() {
				if !ends(rv.Field(i), false) {
					return false
				}
			}
		case reflect.Array:
			if scalar(rv.Type().Elem()) {
				return true
			}
			for i := range rv.Len() {
				if !ends(rv.Index(i), false) {
					return false
				}
			}
		case reflect.Map, reflect.Slice:
			r, ok := refOf(rv)
			if !ok || rv.Kind() == reflect.Slice && scalar(rv.Type().Elem()) {
				return true
			}
			switch seen[r] {
			case walking:
				return false
			case walked:
				return true
			}
			if seen == nil {
				seen = map[ref]uint8{}
			}
			seen[r] = walking
			if rv.Kind() == reflect.Map {
				for it := rv.MapRange(); it.Next(); {
					if !ends(it.Key(), false) || !ends(it.Value(), false) {
						return false
					}
				}
			} else {
				for i := range rv.Len() {
					if !ends(rv.Index(i), false) {
						return false
					}
				}
			}
			seen[r] = walked
		}
		return true
	}
	return ends(rv, true)
}

// scalar reports whether a value of type t holds no other value fmt
// walks: a bool, a number or a string.
func scalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return true
	}
	return false
}

// structFields adds to m the fields of the struct rv that encoding/json
// writes, by their JSON names, each as the tree of its value: exported
// fields without a "-" tag and not empty with omitempty (a struct embedded
// under a name of its own among them, whatever its type), and the fields
// of an embedded struct without a name of its own. Of the fields of one
// name, it writes the one encoding/json's rules make dominant: the
// shallowest, and of those the one a tag names; none when that leaves a
// tie, or when the dominant one is not written (empty with omitempty, or
// under a nil embedded pointer).
func structFields(rv reflect.Value, m map[string]any, depth int, w *walk) {
	var fs []jsonField
	collectFields(rv, rv.Type(), 0, depth, []reflect.Type{rv.Type()}, &fs, w)
	slices.SortStableFunc(fs, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if a.level != b.level {
			return a.level - b.level
		}
		switch {
		case a.tagged && !b.tagged:
			return -1
		case b.tagged && !a.tagged:
			return 1
		}
		return 0
	})
	for i := 0; i < len(fs); {
		j := i + 1
		for j < len(fs) && fs[j].name == fs[i].name {
			j++
		}
		d := fs[i]
		if tie := j-i > 1 && fs[i+1].level == d.level && fs[i+1].tagged == d.tagged; !tie && !d.omitted {
			m[d.name] = d.tree
		}
		i = j
	}
}

// jsonField is a field of a struct as encoding/json sees it: its name,
// how many embedded structs down it is, whether a tag names it, and the
// tree of its value, unless it is not written.
type jsonField struct {
	name    string
	level   int
	tagged  bool
	tree    any
	omitted bool
}

// collectFields appends to fs the fields of the struct type t, whose value
// is rv (the zero Value under a nil embedded pointer), level embedded
// structs down, and those of the structs it embeds without a name of their
// own. An embedded struct of a type already on the way from the outermost
// (within) is not walked into again, as encoding/json does not: a struct
// that embeds itself through a pointer would otherwise be walked without
// end.
func collectFields(rv reflect.Value, t reflect.Type, level, depth int, within []reflect.Type, fs *[]jsonField, w *walk) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		var fv reflect.Value
		if rv.IsValid() {
			fv = rv.Field(i)
		}
		if sf.Anonymous && name == "" && isStruct(sf.Type) {
			// Of an unexported type too: its exported fields are the
			// outer struct's, as encoding/json writes them (and reflect
			// lets them be read, each field asked below).
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
				if fv.IsValid() && fv.IsNil() {
					fv = reflect.Value{}
				} else if fv.IsValid() {
					fv = fv.Elem()
				}
			}
			if !slices.Contains(within, et) {
				collectFields(fv, et, level+1, depth+1, append(slices.Clip(within), et), fs, w)
			}
			continue
		}
		// A struct embedded by an unexported type under a name of its own
		// (a JSON tag) is a field of that name to encoding/json, which
		// reads it though the type is unexported.
		unexportedStruct := sf.Anonymous && isStruct(sf.Type)
		if !sf.IsExported() && !unexportedStruct {
			continue
		}
		f := jsonField{name: name, level: level, tagged: name != ""}
		if name == "" {
			f.name = sf.Name
		}
		switch {
		case !fv.IsValid() || strings.Contains(","+opts+",", ",omitempty,") && emptyValue(fv):
			f.omitted = true
		case fv.CanInterface():
			f.tree = canonical(fv.Interface(), depth+1, w)
		case unexportedStruct && depth+1 > maxDepth:
			f.tree = fv.Type().String() // as canonical ends a cycle
		case unexportedStruct:
			// Read field by field: reflect lets its exported fields be
			// read, not the value itself.
			if fv.Kind() == reflect.Pointer && fv.IsNil() {
				break // null
			}
			if !w.enter(fv) {
				f.tree = fv.Type().String() // inside itself, as canonical ends it
				break
			}
			p := fv
			if fv.Kind() == reflect.Pointer {
				fv = fv.Elem()
			}
			inner := map[string]any{}
			structFields(fv, inner, depth+1, w)
			w.leave(p)
			f.tree = inner
		default:
			f.omitted = true
		}
		*fs = append(*fs, f)
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

// walk is the maps, slices and pointers canonical is inside of, from the
// outermost value down to the one it walks, as encoding/json tracks them
// to find a cycle: one met again inside itself is not walked again.
type walk struct {
	inside map[ref]bool
}

// ref is a map, slice or pointer as walk knows it: where it points, its
// length (a slice), and its type (a pointer to a struct and one to its
// first field point at one place).
type ref struct {
	ptr uintptr
	len int
	typ reflect.Type
}

// refOf returns rv as walk knows it, or false for a value of another
// kind, or a nil one, which holds nothing.
func refOf(rv reflect.Value) (ref, bool) {
	switch rv.Kind() {
	case reflect.Map, reflect.Pointer:
		if !rv.IsNil() {
			return ref{ptr: rv.Pointer(), typ: rv.Type()}, true
		}
	case reflect.Slice:
		if !rv.IsNil() {
			return ref{ptr: rv.Pointer(), len: rv.Len(), typ: rv.Type()}, true
		}
	}
	return ref{}, false
}

// enter notes that the walk goes inside rv, and reports false, noting
// nothing, when it is inside rv already.
func (w *walk) enter(rv reflect.Value) bool {
	r, ok := refOf(rv)
	if !ok {
		return true
	}
	if w.inside[r] {
		return false
	}
	if w.inside == nil {
		w.inside = map[ref]bool{}
	}
	w.inside[r] = true
	return true
}

// leave notes that the walk has come out of rv, which enter let it into.
func (w *walk) leave(rv reflect.Value) {
	if r, ok := refOf(rv); ok {
		delete(w.inside, r)
	}
}
