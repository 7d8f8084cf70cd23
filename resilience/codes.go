package resilience

import "strings"

// The tables the classifier reads: error codes with a meaning, and the
// message phrases it searches for when nothing else says anything.

// codeKinds lists the error codes with a meaning. AWS: botocore's
// standard-mode lists, less LimitExceededException, which the classifier
// reads by its message (see Classify); Azure: ARM's throttling codes; GCP:
// the google-api-core exception names.
var codeKinds = map[string]Kind{
	// AWS throttling (botocore standard mode), plus RateExceeded.
	"Throttling":                             Throttled,
	"ThrottlingException":                    Throttled,
	"ThrottledException":                     Throttled,
	"RequestThrottledException":              Throttled,
	"TooManyRequestsException":               Throttled,
	"ProvisionedThroughputExceededException": Throttled,
	"TransactionInProgressException":         Throttled,
	"RequestLimitExceeded":                   Throttled,
	"BandwidthLimitExceeded":                 Throttled,
	"RequestThrottled":                       Throttled,
	"SlowDown":                               Throttled,
	"EC2ThrottledException":                  Throttled,
	"RateExceeded":                           Throttled,
	"PriorRequestNotComplete":                Throttled,
	// Azure throttling.
	"RateLimiting":                  Throttled,
	"SubscriptionRequestsThrottled": Throttled,
	"TenantRequestsThrottled":       Throttled,
	"TooManyRequests":               Throttled,
	// GCP throttling.
	"ResourceExhausted": Throttled,

	// Transient: botocore's list, the 5xx-style codes, and the codes the
	// SDKs retry.
	"RequestTimeout":                      Transient,
	"RequestTimeoutException":             Transient,
	"InternalError":                       Transient,
	"InternalFailure":                     Transient,
	"InternalServerError":                 Transient,
	"ServiceUnavailable":                  Transient,
	"ServiceUnavailableException":         Transient,
	"DeadlineExceeded":                    Transient,
	"RetryableErrorDueToAnotherOperation": Transient,
}

// placeholderCode reports whether code is an SDK's stand-in for a code the
// answer did not carry: the AWS SDK's deserializers set UnknownError when
// an error body names no code. Such a code says nothing about the answer.
func placeholderCode(code string) bool { return code == "UnknownError" }

// Message phrases, the last resort. A phrase matches only where it starts
// and ends on a word boundary; a stem (throttl) only needs the start.
var (
	throttlePhrases = []phrase{
		{"rate exceeded", false}, {"throttl", true}, {"too many requests", false},
		{"rate limit", true}, {"request limit exceeded", false}, {"slow down", false},
	}
	ratePhrases = []phrase{
		{"rate", false}, {"rates", false}, {"throttl", true}, {"too many", false},
		{"per second", false}, {"tps", false},
	}
)

type phrase struct {
	text string
	stem bool
}

func mentionsThrottling(msg string) bool { return containsPhrase(msg, throttlePhrases) }
func mentionsRate(msg string) bool       { return containsPhrase(msg, ratePhrases) }

func containsPhrase(msg string, ps []phrase) bool {
	if msg == "" {
		return false
	}
	lower := strings.ToLower(msg)
	for _, p := range ps {
		for from := 0; ; {
			i := strings.Index(lower[from:], p.text)
			if i < 0 {
				break
			}
			i += from
			end := i + len(p.text)
			if (i == 0 || !isWordByte(lower[i-1])) && (p.stem || end == len(lower) || !isWordByte(lower[end])) {
				return true
			}
			from = i + 1
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}
