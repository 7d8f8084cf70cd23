package resilience

import (
	"time"

	"github.com/cloudg/cloudg/internal/hint"
)

// MaxPause caps every pause taken for a provider's Retry-After hint, to
// survive bogus headers.
const MaxPause = hint.MaxPause

// RetryAfter returns the delay the provider asked for, from the first of
// these it finds in err's chain: retry-after-ms or x-ms-retry-after-ms
// (milliseconds), x-amz-retry-after (milliseconds), Retry-After
// (delta-seconds or an HTTP-date), Resource Graph's
// x-ms-user-quota-resets-after ([d.]hh:mm:ss, used when
// x-ms-user-quota-remaining is 0 or missing, or the status is 429), then a
// delay the SDK's error carries outside headers (gRPC RetryInfo) or a
// RetryAfter() time.Duration method (cloudg's own errors). Negative values
// are 0; unparsable values are no hint. The result is not capped; the
// governor caps pauses at MaxPause.
func RetryAfter(err error) (time.Duration, bool) {
	if err == nil {
		return 0, false
	}
	f := inspect(err)
	return f.hint(time.Now())
}

// hint returns the provider's hint for the error the facts describe; now
// is the time an HTTP-date is relative to.
func (f *facts) hint(now time.Time) (time.Duration, bool) {
	if f.header != nil {
		if d, ok := hint.FromHeader(f.header, f.status, now); ok {
			return d, true
		}
	}
	if f.hasRA {
		return max(0, f.retryAfter), true
	}
	return 0, false
}
