package resilience

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Kind is what an error means for pacing and retries.
type Kind uint8

const (
	// Fatal: retrying will not help (AccessDenied, validation errors, any
	// other provider error code, local errors). The zero Kind.
	Fatal Kind = iota
	// Transient: worth retrying, not a rate signal (HTTP 408, 500, 502, 504,
	// InternalError, connection resets and timeouts).
	Transient
	// Throttled: the provider asked the caller to slow down (Throttling,
	// RequestLimitExceeded, HTTP 429, ...).
	Throttled
)

// String returns FATAL, TRANSIENT or THROTTLED.
func (k Kind) String() string {
	switch k {
	case Transient:
		return "TRANSIENT"
	case Throttled:
		return "THROTTLED"
	default:
		return "FATAL"
	}
}

// ErrorDetails is what one error of a chain says about itself, in the terms
// the classifier understands. An ErrorReader returns it for error shapes the
// core cannot read by method sets (SDK structs such as azcore.ResponseError,
// gRPC status errors).
type ErrorDetails struct {
	Code   string      // provider error code ("Throttling", "SubscriptionRequestsThrottled")
	Status int         // HTTP status, 0 when none
	Header http.Header // response headers, for Retry-After style hints

	// Kind, when HasKind is set, overrides the code and status tables: the
	// reader knows the shape better (gRPC's ResourceExhausted, say).
	Kind    Kind
	HasKind bool

	// RetryAfter, when HasRetryAfter is set, is a delay the provider asked
	// for outside headers (gRPC RetryInfo).
	RetryAfter    time.Duration
	HasRetryAfter bool

	// Answer marks the error as the provider's answer even without a code
	// or status (a gRPC status the server sent).
	Answer bool
}

// An ErrorReader inspects one error of a chain (the classifier walks the
// chain itself) and returns what it knows, or false for a shape it does not
// handle. Readers must be fast and must not call Classify.
type ErrorReader func(err error) (ErrorDetails, bool)

var (
	readersMu sync.Mutex
	readers   atomic.Pointer[[]ErrorReader]
)

// RegisterErrorReader adds r to the readers every classification consults.
// SDK integration modules call it from init, so importing one makes its
// error shapes classify as the spec says. It is safe for concurrent use.
func RegisterErrorReader(r ErrorReader) {
	if r == nil {
		return
	}
	readersMu.Lock()
	defer readersMu.Unlock()
	var next []ErrorReader
	if cur := readers.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, r)
	readers.Store(&next)
}

// A GovernorErrorWrapper is an integration's error that gives one of
// cloudg's own errors (a *CircuitOpenError, say) an SDK's shape, such as a
// smithy.APIError with the code Throttling. The classifier skips the
// wrapper's code and status and reads the error it wraps, so that the
// wrapper classifies as cloudg's error and is not taken for a provider's
// answer.
type GovernorErrorWrapper interface {
	error
	Unwrap() error
	WrapsGovernorError()
}

// The method sets the classifier reads at every error of a chain. A user's
// own error type opts in by implementing them.
type (
	errorCoder    interface{ ErrorCode() string }
	statusCoder   interface{ HTTPStatusCode() int }
	headerCarrier interface{ Header() http.Header }
	errorMessager interface{ ErrorMessage() string }
	retryAfterer  interface{ RetryAfter() time.Duration }
	multiUnwrap   interface{ Unwrap() []error }
)

// Chain limits. The spec's Python classifier follows four levels of explicit
// causes; Go wraps far more often (aws-sdk-go-v2 alone puts the API error
// three levels under the operation error), so the walk goes deeper, with a
// cap on the errors visited so that joined trees and cycles end quickly.
const (
	maxChainDepth = 10
	maxChainNodes = 64
)

// facts is everything the walk found, first (outermost) occurrence winning.
type facts struct {
	own        Kind // kind of a cloudg error found before any provider fact
	hasOwn     bool
	code       string
	codeErr    error // the error that carried code, for its message
	status     int
	header     http.Header
	kind       Kind
	hasKind    bool
	retryAfter time.Duration
	hasRA      bool
	answer     bool // a provider fact from a non-cloudg error
	network    bool // connection reset/refused, timeout, transport deadline
}

func inspect(err error) facts {
	var f facts
	if err == nil {
		return f
	}
	var rs []ErrorReader
	if p := readers.Load(); p != nil {
		rs = *p
	}
	nodes := 0
	var walk func(e error, depth int)
	walk = func(e error, depth int) {
		if e == nil || depth > maxChainDepth || nodes >= maxChainNodes {
			return
		}
		nodes++
		f.visit(e, rs)
		switch u := e.(type) {
		case multiUnwrap:
			for _, c := range u.Unwrap() {
				walk(c, depth+1)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap(), depth+1)
		}
	}
	walk(err, 0)
	return f
}

func (f *facts) visit(e error, rs []ErrorReader) {
	if _, ok := e.(GovernorErrorWrapper); ok {
		return // its shape is borrowed: read the cloudg error it wraps
	}
	if k, ok := ownKind(e); ok {
		if !f.answer && !f.hasOwn && f.code == "" && f.status == 0 {
			f.own, f.hasOwn = k, true
		}
		if ra, ok := e.(retryAfterer); ok && !f.hasRA {
			f.retryAfter, f.hasRA = ra.RetryAfter(), true
		}
		return // its ErrorCode is ours, not the provider's
	}
	if c, ok := e.(errorCoder); ok && f.code == "" {
		if code := c.ErrorCode(); code != "" {
			f.code, f.codeErr, f.answer = code, e, true
		}
	}
	if s, ok := e.(statusCoder); ok && f.status == 0 {
		if st := s.HTTPStatusCode(); st > 0 {
			f.status, f.answer = st, true
		}
	}
	if h, ok := e.(headerCarrier); ok && f.header == nil {
		f.header = h.Header()
	}
	if ra, ok := e.(retryAfterer); ok && !f.hasRA {
		f.retryAfter, f.hasRA = ra.RetryAfter(), true
	}
	for _, r := range rs {
		d, ok := r(e)
		if !ok {
			continue
		}
		if d.Code != "" && f.code == "" {
			f.code, f.codeErr, f.answer = d.Code, e, true
		}
		if d.Status > 0 && f.status == 0 {
			f.status, f.answer = d.Status, true
		}
		if d.Header != nil && f.header == nil {
			f.header = d.Header
		}
		if d.HasKind && !f.hasKind {
			f.kind, f.hasKind = d.Kind, true
		}
		if d.HasRetryAfter && !f.hasRA {
			f.retryAfter, f.hasRA = d.RetryAfter, true
		}
		if d.Answer {
			f.answer = true
		}
	}
	if !f.network && isNetworkError(e) {
		f.network = true
	}
}

// isNetworkError reports connection resets and refusals, timeouts and
// unexpected EOFs: failures of the transport, worth retrying.
func isNetworkError(e error) bool {
	switch e {
	case context.DeadlineExceeded, io.ErrUnexpectedEOF:
		return true
	}
	if errno, ok := e.(syscall.Errno); ok {
		switch errno {
		case syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.EPIPE, syscall.ETIMEDOUT:
			return true
		}
		return false
	}
	if ne, ok := e.(net.Error); ok && ne.Timeout() {
		return true
	}
	return false
}

// Classify sorts err into Throttled, Transient or Fatal. It reads, at every
// error of the chain (errors.Unwrap and Unwrap() []error, depth-limited):
// cloudg's own errors; ErrorCode() string, HTTPStatusCode() int and
// Header() http.Header; whatever registered ErrorReaders report; network
// errors (resets, refusals, timeouts). The error code wins over the status
// (AWS ServiceUnavailable with 503 is Transient); a 429 or 503 whose code
// is on no list is Throttled; any other code is Fatal. Only when nothing of
// that says anything does it search the message for throttling phrases
// ("rate exceeded", "throttl", "too many requests"), on word boundaries.
// A nil error is Fatal.
func Classify(err error) Kind {
	if err == nil {
		return Fatal
	}
	f := inspect(err)
	if k, ok := f.decide(); ok {
		return k
	}
	if mentionsThrottling(err.Error()) {
		return Throttled
	}
	return Fatal
}

// ClassifyStrict is Classify without the message search: ok is false when
// no cloudg error, error code, status, reader or network error says
// anything.
func ClassifyStrict(err error) (kind Kind, ok bool) {
	if err == nil {
		return Fatal, false
	}
	f := inspect(err)
	return f.decide()
}

// IsProviderAnswer reports whether err carries a provider's error code or
// HTTP status: the request reached the service and it answered. cloudg's
// own errors and local failures (a refused connection, a cancelled
// context) are not answers.
func IsProviderAnswer(err error) bool {
	if err == nil {
		return false
	}
	f := inspect(err)
	return f.answer && !f.hasOwn
}

func (f *facts) decide() (Kind, bool) {
	if f.hasOwn {
		return f.own, true
	}
	if f.hasKind {
		return f.kind, true
	}
	if f.code != "" {
		if f.code == "LimitExceededException" {
			// Also used for "too many resources" quotas: throttling only
			// when the message speaks of a rate.
			if mentionsRate(messageOf(f.codeErr)) {
				return Throttled, true
			}
			return Fatal, true
		}
		if k, ok := codeKinds[f.code]; ok {
			return k, true
		}
		if k, ok := statusKind(f.status); ok {
			return k, true
		}
		return Fatal, true
	}
	if f.status != 0 {
		if k, ok := statusKind(f.status); ok {
			return k, true
		}
		return Fatal, true
	}
	if f.network {
		return Transient, true
	}
	return Fatal, false
}

func messageOf(e error) string {
	if m, ok := e.(errorMessager); ok {
		if s := m.ErrorMessage(); s != "" {
			return s
		}
	}
	return e.Error()
}

func statusKind(status int) (Kind, bool) {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return Throttled, true
	case http.StatusRequestTimeout, http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
		return Transient, true
	}
	return Fatal, false
}

// codeKinds lists the error codes with a meaning. AWS: botocore's
// standard-mode lists; Azure: ARM's throttling codes; GCP: the
// google-api-core exception names.
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
	"PriorRequestNotComplete":             Transient,
	"InternalError":                       Transient,
	"InternalFailure":                     Transient,
	"InternalServerError":                 Transient,
	"ServiceUnavailable":                  Transient,
	"ServiceUnavailableException":         Transient,
	"DeadlineExceeded":                    Transient,
	"RetryableErrorDueToAnotherOperation": Transient,
}

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

// DescribeError returns err's message, prefixed with "throttled: " when it
// classifies as throttling. Coverage records go through it. A nil error is
// "".
func DescribeError(err error) string {
	if err == nil {
		return ""
	}
	if Classify(err) == Throttled {
		return "throttled: " + err.Error()
	}
	return err.Error()
}
