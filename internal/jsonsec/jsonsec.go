// Package jsonsec marshals structs whose durations JSON shows as seconds
// (wait_seconds, paused_seconds), the form the governor's reports use.
package jsonsec

import (
	"encoding/json"
	"strconv"
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
