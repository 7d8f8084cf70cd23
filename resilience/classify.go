package resilience

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/cloudg/cloudg/internal/errread"
)

// readerKinds maps an error reader's verdict to a Kind.
var readerKinds = [...]Kind{errread.Fatal: Fatal, errread.Transient: Transient, errread.Throttled: Throttled}

// Kind is what an error means for pacing and retries. The zero Kind is
// Fatal.
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

// governorErrorWrapper is an integration's error that gives one of
// cloudg's own errors (a *CircuitOpenError, say) an SDK's shape, such as a
// smithy.APIError with the code Throttling. The classifier skips the
// wrapper's code and status and reads the error it wraps, so that the
// wrapper classifies as cloudg's error and is never taken for a provider's
// answer. cloudgaws's ThrottlingError is one.
type governorErrorWrapper interface {
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

// Chain limits, errread's, which bound every read of a chain the
// governor makes. A classifier for Python exceptions follows four levels
// of explicit causes; Go wraps far more often (aws-sdk-go-v2 alone puts
// the API error three levels under the operation error), so the walk goes
// deeper, with a cap on the errors visited so that joined trees, DAGs of
// joins and cycles end quickly.
const (
	maxChainDepth = errread.MaxDepth
	maxChainNodes = errread.MaxNodes
)

// facts is everything the walk found, first (outermost, then leftmost in
// a join) occurrence winning.
type facts struct {
	own        Kind // kind of a cloudg error found before any provider fact
	hasOwn     bool
	code       string
	codeRate   bool // code is LimitExceededException and its error's message speaks of a rate
	status     int
	header     http.Header
	readerKind Kind
	hasKind    bool
	retryAfter time.Duration
	hasRA      bool
	refusal    bool // retryAfter is a governor refusal's wait: when the scope can go
	answer     bool // a provider fact from a non-cloudg error
	network    bool // connection reset/refused, timeout, transport deadline
	inURL      bool // the walk has passed a *url.Error

	// why, when set, says that a method of an error of the chain panicked
	// (see unreadableWhy), badType that error's type: the error is
	// unreadable: FATAL and no answer, and nothing else is set, unless
	// outer is set: the errors the walk read whole before it (outer
	// layers), with it when only its Unwrap panicked, decide, and their
	// facts stand (see facts.unreadable).
	why     string
	badType reflect.Type
	outer   bool

	// forHint: the walk reads the hint of a budget's refusal
	// (causeHint), and asks no refusal of the budget's it meets for its
	// own, which is a walk of its cause again (see facts.visit).
	forHint bool

	// reading names the method of an error of the chain the walk runs
	// (or readerMethod, while a reader reads the error), and is empty
	// otherwise: a panic while it is set is the error's, and the error's
	// description names the method. A panic of the walk's own code,
	// outside, is cloudg's bug, and is not recovered.
	reading string
}

// inspect walks err's chain and returns what its errors say. A method of
// an error of the chain that panics (see unreadableWhy) makes the facts
// those of an unreadable error.
func inspect(err error) facts {
	return inspectFirst(err, maxChainNodes)
}

// inspectFirst is inspect reading the first limit errors of the walk only.
func inspectFirst(err error, limit int) facts { return walkFirst(err, limit, false) }

// causeHint is the hint of err, the answer a *RetryBudgetExhaustedError
// wraps (its RetryAfter), read as RetryAfter reads it, but for the
// budget's refusals met in err's chain, which give none of their own (a
// walk of their causes, as this one is): the chain is read once, a
// bounded part of it, even when it cycles through the refusal.
func causeHint(err error) time.Duration {
	if err == nil {
		return 0
	}
	f := walkFirst(err, maxChainNodes, true)
	if f.why != "" {
		processUnreadable.note(nil, &f)
	}
	d, _ := f.hint(time.Now())
	return d
}

// walkFirst is inspectFirst, for the hint of a budget's refusal
// (causeHint) when forHint is set.
func walkFirst(err error, limit int, forHint bool) (f facts) {
	if err == nil {
		return f
	}
	f.forHint = forHint
	cur := err // the error whose methods the walk is calling
	nodes := 0
	unwrapping := false // the walk is asking cur for its cause: cur's own methods were read whole
	defer func() {
		if f.reading == "" {
			// Not the error's panic: it goes on, marked as the
			// classifier's, so that a walk this one runs under (from an
			// error's method, or a reader, that classifies) does not
			// take it for its error's.
			if r := recover(); r != nil {
				panic(ownPanicOf(r))
			}
			return
		}
		if r := recover(); r != nil {
			if o, ok := r.(*ownPanic); ok {
				panic(o) // the classifier's, from a walk run under this one
			}
			whole := nodes - 1 // the errors read whole before cur
			if unwrapping {
				whole = nodes // and cur, but for its cause
			}
			f.unreadable(err, cur, f.reading, whole, r)
		}
	}()
	rs := errread.Readers()
	var walk func(e error, depth int)
	walk = func(e error, depth int) {
		if e == nil || depth > maxChainDepth || nodes >= limit {
			return
		}
		nodes++
		cur = e
		f.visit(e, rs)
		if depth == maxChainDepth || nodes >= limit {
			return // no cause of e's is read: e is not asked for it
		}
		switch u := e.(type) {
		case multiUnwrap:
			f.reading, unwrapping = "Unwrap", true
			cs := u.Unwrap()
			f.reading, unwrapping = "", false
			for _, c := range cs {
				walk(c, depth+1)
			}
		case interface{ Unwrap() error }:
			f.reading, unwrapping = "Unwrap", true
			c := u.Unwrap()
			f.reading, unwrapping = "", false
			walk(c, depth+1)
		}
	}
	walk(err, 0)
	return f
}

// ownPanic is a panic of the classifier's own code, which the walk met
// outside an error's methods: a bug of cloudg's, which goes on. It reads
// as the panic it carries (its Error and Unwrap, when that is an error:
// a runtime.Error stays one for errors.As), so that no walk, this one or
// one that ran the classifier from an error's method, takes it for its
// error's.
type ownPanic struct{ v any }

// ownPanicOf is r marked as the classifier's panic, once.
func ownPanicOf(r any) *ownPanic {
	if o, ok := r.(*ownPanic); ok {
		return o
	}
	return &ownPanic{r}
}

func (p *ownPanic) Error() string { return fmt.Sprint(p.v) }

// Unwrap returns the panic's value when it is an error, and nil otherwise.
func (p *ownPanic) Unwrap() error {
	e, _ := p.v.(error)
	return e
}

func (f *facts) visit(e error, rs []errread.Reader) {
	if _, ok := e.(governorErrorWrapper); ok {
		return // its shape is borrowed: read the cloudg error it wraps
	}
	if k, ok := ownKind(e); ok {
		if f.answer || f.code != "" || f.status != 0 {
			// Met after a provider's answer, which decides: cloudg's
			// error says nothing of it, and its wait is its own scope's
			// (errors.Join(answer, refusal)).
			return
		}
		if !f.hasOwn {
			f.own, f.hasOwn = k, true
		}
		if ra, ok := e.(retryAfterer); ok && !f.hasRA {
			f.reading = "RetryAfter"
			if b, ok := e.(*RetryBudgetExhaustedError); !ok {
				f.retryAfter, f.hasRA = ra.RetryAfter(), true
			} else if !f.forHint {
				// Its RetryAfter, its answer's hint, with a walk that does
				// not ask the refusals of the budget's in its answer's
				// chain for theirs: asked, each would walk its cause
				// again, without end on a chain that cycles through it.
				f.retryAfter, f.hasRA = causeHint(b.Err), true
			}
			f.reading = ""
			switch e.(type) {
			case *CircuitOpenError, *WouldWaitError, *DeadlineExceededError:
				f.refusal = true
			}
		}
		return // its ErrorCode is ours, not the provider's
	}
	if c, ok := e.(errorCoder); ok && f.code == "" {
		f.reading = "ErrorCode"
		code := c.ErrorCode()
		f.reading = ""
		f.readCode(code, e)
	}
	if s, ok := e.(statusCoder); ok && f.status == 0 {
		f.reading = "HTTPStatusCode"
		st := s.HTTPStatusCode()
		f.reading = ""
		if st > 0 {
			f.status, f.answer = st, true
		}
	}
	if h, ok := e.(headerCarrier); ok && f.header == nil {
		f.reading = "Header"
		f.header = h.Header()
		f.reading = ""
	}
	if ra, ok := e.(retryAfterer); ok && !f.hasRA {
		f.reading = "RetryAfter"
		f.retryAfter, f.hasRA = ra.RetryAfter(), true
		f.reading = ""
	}
	for _, r := range rs {
		f.reading = readerMethod // a reader reads e through e's methods and fields
		d, ok := r(e)
		f.reading = ""
		if !ok {
			continue
		}
		if f.code == "" {
			f.readCode(d.Code, e)
		}
		if d.Status > 0 && f.status == 0 {
			f.status, f.answer = d.Status, true
		}
		if d.Header != nil && f.header == nil {
			f.header = d.Header
		}
		if d.Kind != errread.None && !f.hasKind {
			f.readerKind, f.hasKind = readerKinds[d.Kind], true
		}
		if d.HasRetryAfter && !f.hasRA {
			f.retryAfter, f.hasRA = d.RetryAfter, true
		}
		if d.Answer {
			f.answer = true
		}
	}
	if _, ok := e.(*url.Error); ok {
		f.inURL = true
	}
	if !f.network {
		network := isNetworkError(e, &f.reading) // which calls e's Timeout and ConnectionError
		f.reading = ""
		if network || f.inURL && e == io.EOF {
			f.network = true
		}
	}
}

// readCode records code, carried by e, as the provider's error code. A
// placeholder code (the AWS SDK's UnknownError, for an error answer whose
// body named no code) marks an answer but says nothing about it, so a
// code further down the chain, the status or the message decides.
func (f *facts) readCode(code string, e error) {
	switch {
	case code == "":
	case placeholderCode(code):
		f.answer = true
	default:
		f.code, f.answer = code, true
		if code == "LimitExceededException" {
			// Read here, in the walk, as e's other methods are: a panic
			// of its ErrorMessage or Error is e's, and makes it unreadable.
			f.codeRate = mentionsRate(messageOf(e, &f.reading))
			f.reading = ""
		}
	}
}

// isNetworkError reports connection resets and refusals, timeouts,
// unexpected EOFs, a connection closed under a read (net.ErrClosed: the
// transport gave up a connection whose request body failed it, as it does
// when the AWS SDK closes that body as soon as the answer's headers are in)
// and errors that say they are connection errors
// (ConnectionError() bool, as the AWS SDK's RequestSendError does): failures
// of the transport, worth retrying. A bare io.EOF is one only under a
// *url.Error, where it means the connection closed before any answer.
// It names in *reading the method of e's it calls (see facts.reading).
func isNetworkError(e error, reading *string) bool {
	switch e {
	case context.DeadlineExceeded, io.ErrUnexpectedEOF, net.ErrClosed:
		return true
	}
	if errno, ok := e.(syscall.Errno); ok {
		switch errno {
		case syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.EPIPE, syscall.ETIMEDOUT:
			return true
		}
		return false
	}
	if ne, ok := e.(net.Error); ok {
		*reading = "Timeout"
		if ne.Timeout() {
			return true
		}
	}
	if ce, ok := e.(interface{ ConnectionError() bool }); ok {
		*reading = "ConnectionError"
		if ce.ConnectionError() {
			return true
		}
	}
	return false
}

// Classify sorts err into Throttled, Transient or Fatal. It reads, at every
// error of the chain (errors.Unwrap and Unwrap() []error, 10 levels deep
// and 64 errors at most, so that a chain that cycles, or a DAG of joins,
// ends where errors.Is would not):
// cloudg's own errors; ErrorCode() string, HTTPStatusCode() int and
// Header() http.Header; what the SDK integration modules teach it about
// their SDKs' error shapes (importing one is enough); network
// errors (resets, refusals, timeouts). The error code wins over the status
// (AWS ServiceUnavailable with 503 is Transient); a code on no list takes
// its status's kind: Throttled with a 429 or 503, Transient with a 408,
// 500, 502 or 504, and Fatal with any other status or none. AWS's
// LimitExceededException, which services also use for quotas on resources,
// is Throttled only when its message speaks of a rate ("rate", "throttl",
// "too many", "per second", "TPS"), and Fatal otherwise, whatever its
// status (a 429 included). A status on
// no list (400, 403, 404) without a code says nothing, and neither does
// the AWS SDK's placeholder code UnknownError. Only when nothing of that says
// anything does it search the message for throttling phrases ("rate
// exceeded", "throttl", "too many requests", "rate limit", "request
// limit exceeded", "slow down"; "throttl" and "rate limit" as the starts
// of words, so that "throttled" and "rate limited" match too), on word
// boundaries, in any case: a 400
// without a code whose message is "Throttling: Rate exceeded" is
// Throttled, a 404 without one that mentions no throttling is Fatal. An
// error that nothing of that decides and that gives HTTP/2's error code
// ENHANCE_YOUR_CALM (a stream reset or a GOAWAY of net/http's or
// grpc-go's, which say it only in their text) is Throttled: the server
// refuses the client's rate; unless it is a GOAWAY for too_many_pings, a
// client's keepalive settings, which is Transient: the connection is lost,
// and the call may go again on a new one (as cloudghttp's Transport and
// cloudggcp read it). A nil error is Fatal.
//
// The chain is read an error before its causes, and a joined error's
// branches in order (errors.Join(a, b): a and its causes, then b), and
// the first word decides. cloudg's own error (a *WouldWaitError, a
// *CircuitOpenError, ...) decides, with its wait as the hint, when the
// walk meets it before any provider's code or status; met after one, it
// says nothing, neither kind nor hint (its wait is its own scope's). So
// errors.Join(answer, refusal), a function's provider answer joined with
// a nested call's refusal, is the provider's answer, with the answer's
// hint; errors.Join(refusal, answer) is cloudg's error, as a refusal
// that wraps the answer it refused is: the governor records nothing of
// it for the call's scope (the call refused records its own loss).
//
// An error one of whose methods panics as Classify reads it (a typed nil
// pointer whose methods read their receiver, such as a nil
// *smithy.OperationError, or an SDK's response error without its
// response) is unreadable: Fatal, not a provider's answer, with no hint;
// DescribeError says which method of which type panicked, and the first
// such panic of each type is logged, at Warn on slog.Default (a
// Governor's calls log it on the governor's logger). The panic does not reach the caller. What
// the errors read whole before the one that panicked say (outer layers,
// earlier errors of a joined tree) stands when it decides: an error whose
// own ErrorCode is Throttling, wrapping a nil *smithyhttp.ResponseError,
// is Throttled, a provider's answer, with the hint those outer errors
// give. So does what the one that panicked says itself when only its
// Unwrap panicked, asked for its cause once its other methods were read:
// its own code, status, headers and message stand, and its cause alone
// is unreadable. Only a panic of an error's method, or of a reader an integration
// registered, is recovered: one of the classifier's own code goes on,
// even when that code runs under an error's method or a reader (one that
// classifies), as an error whose text is the panic's and that unwraps to
// it when it is an error (a runtime.Error stays one for errors.As).
func Classify(err error) Kind {
	if err == nil {
		return Fatal
	}
	f := inspect(err)
	k := f.kind(err)
	if f.why != "" {
		processUnreadable.note(nil, &f)
	}
	return k
}

// kind is Classify's verdict on err, whose facts f are: the facts, and the
// message search when they say nothing.
func (f *facts) kind(err error) Kind {
	if k, ok := f.decide(); ok {
		return k
	}
	// HTTP/2's error code first, a protocol's word, as ClassifyStrict
	// reads it; then the phrases.
	msg, why := readMessage(err)
	if why != "" {
		f.why, f.badType = why, reflect.TypeOf(err)
		return Fatal // unreadable
	}
	if k, ok := enhanceYourCalm(msg); ok {
		return k
	}
	if mentionsThrottling(msg) {
		return Throttled
	}
	return Fatal
}

// enhanceYourCalm reports whether msg, the text of an error nothing else
// decides, gives HTTP/2's error code ENHANCE_YOUR_CALM (0xb) of an
// RST_STREAM or a GOAWAY the server sent: RFC 9113 (section 7) gives it
// to an endpoint that "detected that its peer is exhibiting a behavior
// that might be generating excessive load", a server refusing the
// client's rate. net/http's bundled http2 ("stream error: stream ID 3;
// ENHANCE_YOUR_CALM; received from peer", "http2: server sent GOAWAY and
// closed the connection; ... ErrCode=ENHANCE_YOUR_CALM, ...") and grpc-go
// ("received prior goaway: code: ENHANCE_YOUR_CALM") give it only in their
// errors' text, their types being unexported: Throttled, ok. A GOAWAY
// whose debug data is too_many_pings, which grpc servers send to a client
// that pings more often than their keepalive policy allows, is the
// client's keepalive settings, not its rate: the server closes the
// connection, and the call may go again on a new one, Transient, ok. Any
// other msg is not ok.
func enhanceYourCalm(msg string) (Kind, bool) {
	switch {
	case !strings.Contains(msg, "ENHANCE_YOUR_CALM"):
		return Fatal, false
	case strings.Contains(msg, "too_many_pings"):
		return Transient, true
	}
	return Throttled, true
}

// ClassifyStrict is Classify without the message search: ok is false when
// no cloudg error, error code, status, reader or network error says
// anything. A status on no list without a code (a bare 400 or 404) says
// nothing: ok is false, and Classify reads it as Fatal unless its message
// mentions throttling. HTTP/2's error code ENHANCE_YOUR_CALM, read from
// the text of an error that nothing else decides (see Classify), is a
// protocol's error code, not a phrase: Throttled, ok (Transient, ok, for a
// GOAWAY for too_many_pings).
func ClassifyStrict(err error) (kind Kind, ok bool) {
	if err == nil {
		return Fatal, false
	}
	f := inspect(err)
	kind, ok = f.strict(err)
	if f.why != "" {
		processUnreadable.note(nil, &f)
	}
	return kind, ok
}

// strict is ClassifyStrict's verdict on err, whose facts f are.
func (f *facts) strict(err error) (Kind, bool) {
	if k, ok := f.decide(); ok {
		return k, ok
	}
	msg, why := readMessage(err)
	if why != "" {
		f.why, f.badType = why, reflect.TypeOf(err)
		return Fatal, true // unreadable
	}
	if k, ok := enhanceYourCalm(msg); ok {
		return k, true // an HTTP/2 error code, not a phrase
	}
	return Fatal, false
}

// IsProviderAnswer reports whether err carries a provider's error code or
// HTTP status: the request reached the service and it answered. cloudg's
// own errors and local failures (a refused connection, a cancelled
// context) are not answers, and neither is an unreadable error (see
// Classify).
func IsProviderAnswer(err error) bool {
	if err == nil {
		return false
	}
	f := inspect(err)
	if f.why != "" {
		processUnreadable.note(nil, &f)
	}
	return f.answer && !f.hasOwn
}

func (f *facts) decide() (Kind, bool) {
	if f.why != "" && !f.outer {
		return Fatal, true // unreadable, and nothing read before decides
	}
	if f.hasOwn {
		return f.own, true
	}
	if f.hasKind {
		return f.readerKind, true
	}
	if f.code != "" {
		if f.code == "LimitExceededException" {
			// Also used for "too many resources" quotas: throttling only
			// when the message speaks of a rate.
			if f.codeRate {
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
	if k, ok := statusKind(f.status); ok {
		return k, true
	}
	// A status on no list, without a code, says nothing.
	if f.network {
		return Transient, true
	}
	return Fatal, false
}

// messageOf is e's message as its provider gave it: its ErrorMessage, or
// else its Error. It calls e's methods bare, naming in *reading the one
// it calls: the walk calls it, and a panic of theirs is e's (see
// inspect).
func messageOf(e error, reading *string) string {
	if m, ok := e.(errorMessager); ok {
		*reading = "ErrorMessage"
		if s := m.ErrorMessage(); s != "" {
			return s
		}
	}
	*reading = "Error"
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

// DescribeError returns err's message, prefixed with "throttled: " when it
// classifies as throttling. Coverage records go through it. An unreadable
// error (see Classify) is "unreadable error (a method of <type>
// (<method>) panicked: <the panic>)", <method> naming the method (Error,
// ErrorCode, Unwrap, ...; "read by an integration's reader" when a reader
// an integration registered panicked reading it), followed by its message when its Error method does not
// panic, and prefixed "throttled: " when an outer layer's code makes it
// Throttled. A nil error is "".
func DescribeError(err error) string {
	if err == nil {
		return ""
	}
	f := inspect(err)
	k := f.kind(err)
	if f.why != "" {
		processUnreadable.note(nil, &f)
	}
	if f.why != "" {
		return describeUnreadable(k, err, f.why)
	}
	return describe(k, err)
}

// describe is DescribeError for an error already classified, and read:
// an unreadable one's Error method may panic still (errorText).
func describe(k Kind, err error) string {
	if k == Throttled {
		return "throttled: " + errorText(err)
	}
	return errorText(err)
}
