// Package jsonsec marshals structs whose durations JSON shows as seconds
// (wait_seconds, paused_seconds), the form the governor's reports use,
// and reads them back.
package jsonsec

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Marshal marshals v, a struct whose duration fields are tagged "-", and
// appends each name and duration pair of kv as that many seconds.
func Marshal(v any, kv ...any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1] // drop }
	for i := 0; i+1 < len(kv); i += 2 {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, kv[i].(string))
		b = append(b, ':')
		b = strconv.AppendFloat(b, kv[i+1].(time.Duration).Seconds(), 'f', -1, 64)
	}
	return append(b, '}'), nil
}

// Unmarshal reads what Marshal writes: data into v, a pointer to the
// struct, and each name of kv, a number of seconds, into the
// *time.Duration after it. A name that is absent or null leaves its
// duration as it is, as encoding/json leaves a field; a number of
// seconds beyond a Duration's range reads as its largest or smallest,
// one beyond a float64's (1e400) included. A
// name whose value is no number is a *json.UnmarshalTypeError whose
// Field is the name.
func Unmarshal(data []byte, v any, kv ...any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	for i := 0; i+1 < len(kv); i += 2 {
		name := kv[i].(string)
		raw, ok := fields[name]
		if !ok {
			continue
		}
		var secs *float64
		if err := json.Unmarshal(raw, &secs); err != nil {
			te, ok := err.(*json.UnmarshalTypeError)
			if !ok {
				return err
			}
			// encoding/json refuses a number beyond a float64's range
			// (1e400), which strconv reads as ±Inf: beyond a Duration's
			// range, as its largest or smallest.
			f, perr := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
			if !strings.HasPrefix(te.Value, "number") || !errors.Is(perr, strconv.ErrRange) {
				te.Field = name
				return err
			}
			secs = &f
		}
		if secs != nil {
			*kv[i+1].(*time.Duration) = Duration(*secs)
		}
	}
	return nil
}

// Duration returns secs seconds as a Duration, to the nanosecond: the
// inverse of Duration.Seconds for every duration a float64 of seconds
// holds to the nanosecond, up to 2^23 s (about 97 days) either way,
// where the float64s of seconds are less than a nanosecond apart. Past
// it a duration may read back off by up to half their spacing (1 ns up
// to 2^24 s, 954 ns at the ends of a Duration's range). Seconds beyond
// a Duration's range read as its largest or smallest.
func Duration(secs float64) time.Duration {
	switch {
	case secs*1e9 >= math.MaxInt64: // 2^63 as a float64
		return math.MaxInt64
	case secs*1e9 <= math.MinInt64:
		return math.MinInt64
	}
	// Whole seconds and the fraction apart, so that the fraction's
	// nanoseconds are rounded with a float64's precision left for them.
	whole := math.Trunc(secs)
	return time.Duration(whole)*time.Second + time.Duration(math.Round((secs-whole)*1e9))
}

// Float is a float64 whose JSON form holds every value: a number, or
// null for a value that is no finite number (NaN, +Inf or -Inf), which
// JSON cannot write and encoding/json refuses, failing the whole
// document. A Store is user code, and may answer such a value for a rate
// or a budget; null tells it apart from every number, a real 0 among
// them. Read back, null is NaN: the value was no number. A struct's
// MarshalJSON writes a float64 field as a Float through an anonymous
// struct that embeds the struct and has a Float field of the same JSON
// name, which encoding/json takes over the embedded one.
type Float float64

// MarshalJSON writes f as a number, or null when it is no finite number.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads a number, or null as NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}
