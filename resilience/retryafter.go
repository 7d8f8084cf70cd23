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
// RetryAfter() time.Duration method (cloudg's own errors). A refusal of
// the governor's in the chain (a *CircuitOpenError, a *WouldWaitError, a
// *DeadlineExceededError) met before any provider's code or status comes
// before all of these: its wait says when the scope can go, which a
// pause for the provider's hint is part of, while the hint of the answer
// it wraps is as old as that answer. Met after one (errors.Join(answer,
// refusal)), it gives no hint: the answer decides (see Classify).
// Negative values are 0; unparsable values are no hint, and so is an
// unreadable error (see Classify). The result is not
// capped; the governor caps pauses at MaxPause. An HTTP-date is read against the wall
// clock (time.Now); RetryAfterAt reads it against another clock's time.
func RetryAfter(err error) (time.Duration, bool) { return RetryAfterAt(err, time.Now()) }

// RetryAfterAt is RetryAfter with an HTTP-date read against now: a test,
// a simulator or a governor with its own clock (Governor.Clock) gives its
// own time. A governed call reads its answers' hints on its governor's
// clock.
func RetryAfterAt(err error, now time.Time) (time.Duration, bool) {
	if err == nil {
		return 0, false
	}
	f := inspect(err)
	if f.why != "" {
		processUnreadable.note(nil, &f)
	}
	return f.hint(now)
}

// ParseRetryAfter reads a Retry-After header's value: delta-seconds
// ("120", fractions too) or an HTTP-date, which is measured from now.
// Negative delays are 0; a value that is neither is no hint. A program
// that reads headers the error shapes do not carry uses it with its own
// clock's time.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	return hint.ParseRetryAfter(value, now)
}

// hint returns the provider's hint for the error the facts describe; now
// is the time an HTTP-date is relative to.
func (f *facts) hint(now time.Time) (time.Duration, bool) {
	if f.refusal {
		return max(0, f.retryAfter), true // when the scope can go: see RetryAfter
	}
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
