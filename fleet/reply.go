package fleet

import (
	"math"
	"strconv"
	"time"
)

// Reading the scripts' replies. The scripts validate what they read from
// Redis; these check what they answer, so that nothing a reply holds can
// overflow a duration or turn into a rate the settings do not allow.

// number reads a finite number from a reply (an integer, or a string).
func number(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case int64:
		f = float64(x)
	case string:
		var err error
		if f, err = strconv.ParseFloat(x, 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}

// toInt reads an integer from a reply; 0 when it holds none, and within
// ±2^53 (the integers a Lua number holds exactly).
func toInt(v any) int64 {
	f, ok := number(v)
	if !ok {
		return 0
	}
	const limit = 1 << 53
	return int64(math.Max(-limit, math.Min(limit, f)))
}

// micros reads a number of microseconds from a reply, as a duration from 0
// to the store's horizon.
func (s *Store) micros(v any) time.Duration {
	f, ok := number(v)
	if !ok || f <= 0 {
		return 0
	}
	return time.Duration(math.Min(f, float64(s.horizon.Microseconds()))) * time.Microsecond
}

// maxQueue bounds the wait of a token read from a reply. A queue of
// reserved tokens is not bounded by the store's horizon (it reaches as far
// as the callers queued make it); this only keeps the lease's times, sums
// of such waits, from overflowing a duration: about 36 years.
const maxQueue = time.Duration(1<<60) / time.Microsecond * time.Microsecond

// queueMicros reads the wait of a token from a reply, in microseconds, as
// a duration from 0 to maxQueue.
func queueMicros(v any) time.Duration {
	f, ok := number(v)
	if !ok || f <= 0 {
		return 0
	}
	return time.Duration(math.Min(f, float64(maxQueue/time.Microsecond))) * time.Microsecond
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

// fits reports whether res, a script's reply, has the shape the script
// gives its replies (script.answers): as many elements, each of its
// kind. Anything else was not written by the script (a server that
// only speaks the protocol, a proxy in the way, a broken script engine),
// and is not read: the operation goes on with local limits, as one Redis
// refused.
func (sc *script) fits(res []any) bool {
	if len(res) != len(sc.shape) {
		return false
	}
	for i, k := range []byte(sc.shape) {
		switch k {
		case 'n':
			if _, ok := number(res[i]); !ok {
				return false
			}
		case 's', 'S':
			if _, ok := breakerState(res[i]); !ok && !(k == 'S' && toString(res[i]) == "invalid") {
				return false
			}
		}
	}
	return true
}
