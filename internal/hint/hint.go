// Package hint reads the delays providers ask for (Retry-After and its
// relatives) and caps them. The core's RetryAfter and ParseRetryAfter and
// the SDK integrations read hints through it.
package hint

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxPause caps every pause taken for a provider's hint, to survive bogus
// headers.
const MaxPause = 300 * time.Second

// FromHeader reads a hint from response headers, from the first of these
// it finds: retry-after-ms or x-ms-retry-after-ms (milliseconds),
// x-amz-retry-after (milliseconds), Retry-After (delta-seconds or an
// HTTP-date relative to now), and Resource Graph's
// x-ms-user-quota-resets-after ([d.]hh:mm:ss), used when
// x-ms-user-quota-remaining is 0 or missing, or status is 429.
func FromHeader(h http.Header, status int, now time.Time) (time.Duration, bool) {
	for _, k := range [...]string{"Retry-After-Ms", "X-Ms-Retry-After-Ms", "X-Amz-Retry-After"} {
		if v := h.Get(k); v != "" {
			if d, ok := parseMillis(v); ok {
				return d, true
			}
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if d, ok := ParseRetryAfter(v, now); ok {
			return d, true
		}
	}
	if v := h.Get("X-Ms-User-Quota-Resets-After"); v != "" {
		remaining := strings.TrimSpace(h.Get("X-Ms-User-Quota-Remaining"))
		if remaining == "" || remaining == "0" || status == http.StatusTooManyRequests {
			if d, ok := ParseQuotaResetsAfter(v); ok {
				return d, true
			}
		}
	}
	return 0, false
}

// ParseRetryAfter parses a Retry-After value: delta-seconds (decimals and
// exponents accepted) or an HTTP-date, relative to now. Negative delays and
// dates in the past are 0; delays too long for a time.Duration saturate;
// anything else is no hint (false).
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	if isDecimal(v) {
		if secs, err := strconv.ParseFloat(v, 64); err == nil || isRangeErr(err) {
			return seconds(secs)
		}
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true // Sub saturates
	}
	return 0, false
}

// ParseQuotaResetsAfter parses Resource Graph's x-ms-user-quota-resets-after
// value, [d.]hh:mm:ss[.fraction].
func ParseQuotaResetsAfter(value string) (time.Duration, bool) {
	v := strings.TrimSpace(value)
	var days float64
	clock := v
	if dot := strings.IndexByte(v, '.'); dot >= 0 && dot < strings.IndexByte(v, ':') {
		d, err := strconv.ParseUint(v[:dot], 10, 32)
		if err != nil {
			return 0, false
		}
		days, clock = float64(d), v[dot+1:]
	}
	parts := strings.Split(clock, ":")
	if len(parts) != 3 {
		return 0, false
	}
	if !isClockSeconds(parts[2]) {
		return 0, false
	}
	h, err1 := strconv.ParseUint(parts[0], 10, 32)
	m, err2 := strconv.ParseUint(parts[1], 10, 32)
	s, err3 := strconv.ParseFloat(parts[2], 64)
	if err1 != nil || err2 != nil || err3 != nil || m > 59 || s >= 60 {
		return 0, false
	}
	return seconds(days*86400 + float64(h)*3600 + float64(m)*60 + s)
}

// isClockSeconds reports whether v is the seconds of a clock reading,
// ss[.fraction]: digits, then a point and digits or nothing; not any
// number strconv reads (hexadecimal, an exponent, a sign, underscores),
// which no server means.
func isClockSeconds(v string) bool {
	whole, frac, dot := strings.Cut(v, ".")
	return allDigits(whole) && (!dot || allDigits(frac))
}

// allDigits reports whether v is one or more ASCII digits.
func allDigits(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return v != ""
}

func parseMillis(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if !isDecimal(v) {
		return 0, false
	}
	ms, err := strconv.ParseFloat(v, 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return nanoseconds(ms * 1e6)
}

// isDecimal reports whether v is a decimal number (digits, an optional
// sign, point and exponent): not "inf", "NaN", hexadecimal or underscores,
// which strconv would accept and no server means.
func isDecimal(v string) bool {
	digits := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= '0' && c <= '9':
			digits = true
		case c == '.' || c == '+' || c == '-' || c == 'e' || c == 'E':
		default:
			return false
		}
	}
	return digits
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// seconds converts to a Duration: NaN is no hint, negatives are 0, and
// values past the Duration range saturate.
func seconds(s float64) (time.Duration, bool) { return nanoseconds(s * 1e9) }

// nanoseconds is seconds for a count of nanoseconds, rounded to a whole
// one, so that a whole number of milliseconds times 1e6 reads as itself
// (1001 ms, which as 1.001 s times 1e9 is a float just below 1001000000).
func nanoseconds(ns float64) (time.Duration, bool) {
	switch {
	case math.IsNaN(ns):
		return 0, false
	case ns <= 0:
		return 0, true
	case ns >= float64(math.MaxInt64):
		return time.Duration(math.MaxInt64), true
	}
	return time.Duration(math.Round(ns)), true
}

// Cap limits a provider's hint to [0, MaxPause].
func Cap(d time.Duration) time.Duration { return min(max(d, 0), MaxPause) }

// A Body is the body of an error answer that a transport read ahead and
// found in it the delay the answer asks for outside its headers (a Google
// REST error's google.rpc.RetryInfo, which cloudggcp's REST transport
// reads): cloudghttp's Transport, above it, reads BodyRetryAfter as the
// answer's hint, after a hint of its headers. The Transport calls
// BodyRetryAfter once per answer, on the goroutine that got it: a Body
// need not be safe for concurrent use.
type Body interface {
	BodyRetryAfter() time.Duration
}
