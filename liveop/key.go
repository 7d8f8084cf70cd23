package liveop

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
)

// Key returns the single-flight key of a request made of parts: the first
// 32 hex characters of the SHA-256 of the parts' canonical JSON, an array
// with object keys sorted, no spaces and no HTML escaping. A value JSON
// cannot encode (a channel, a function, NaN) is encoded as its fmt.Sprint
// string, inside maps and slices too. The same request with its map keys
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
// or, for a map, slice, array or pointer, the tree of its elements;
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
		m := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			m[fmt.Sprint(it.Key().Interface())] = canonical(it.Value().Interface(), depth+1)
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
	}
	return fmt.Sprint(v)
}

const maxDepth = 64
