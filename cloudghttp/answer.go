package cloudghttp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cloudg/cloudg/internal/errread"
	"github.com/cloudg/cloudg/internal/hint"
	"github.com/cloudg/cloudg/resilience"
)

// StatusError is an error answer (a status of 400 or more, or GitHub's
// GraphQL answer that its rate limit is exceeded, whose status is 200) as
// the Transport reports it to the governor: its status and headers, which the
// core classifier reads through HTTPStatusCode and Header, and, for a
// provider with rules of its own (GitHub), the verdict and delay those
// rules read from the headers (and, for a GitHub secondary limit, from
// the body), or the delay a Google error's body asks for (the retryDelay
// of its google.rpc.RetryInfo), which cloudggcp's REST transport, below
// the Transport, reads. A CDN's answer that it could not reach the origin
// (Cloudflare's 520 to 524) is transient, as the Transport reads it. Any
// other status the core's table does not list (400, 403, 404) decides
// nothing by itself; the verdict is then read from the status line, the
// server's only words the Transport reads otherwise: a throttle when it
// mentions throttling ("400 Rate Exceeded"), else a fatal answer.
// The caller meets it only inside an error of
// the governor (a *resilience.CircuitOpenError, a deadline's error, a
// context's end while a retry waited) after the response it stands for was
// retried; errors.As finds it. It is safe for concurrent use once made:
// it keeps its own copy of the answer's headers and of the request's URL,
// which the caller may change afterwards.
// The zero StatusError reports status 0 and no headers, which the core
// classifier reads as no answer at all; only the Transport makes real
// ones.
type StatusError struct {
	method string
	url    string // the request's URL without its query (bareURL)
	status string // "429 Too Many Requests"
	code   int
	header http.Header

	// What a provider's rules say beyond the status; None: the status
	// decides.
	kind    errread.Kind
	hint    time.Duration
	hasHint bool
	// partial: GitHub's GraphQL answer that holds data as well as its
	// rate limit's error, a request GitHub acted on in part.
	partial bool
	// denied: a refusal for a quota the scope's calls do not count
	// against (GitHub's other quota spent, answered to a rest call): a
	// fatal answer that ends the call lost as denied
	// (resilience.Guard.EndDenied).
	denied bool
}

// Error returns "<method> <url without query>: <status>".
func (e *StatusError) Error() string {
	return e.method + " " + e.url + ": " + e.status
}

// bareURL is u without its query and fragment, which may carry secrets
// (an API key, a signature): what the Transport's errors name.
func bareURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// HTTPStatusCode returns the response's status code.
func (e *StatusError) HTTPStatusCode() int { return e.code }

// Header returns the response's headers.
func (e *StatusError) Header() http.Header { return e.header }

// answerOf returns the answer After is given for resp: nil for a status
// under 400, a *StatusError otherwise, with GitHub's verdict for a GitHub
// scope.
func (x *exchange) answerOf(resp *http.Response) *StatusError {
	if resp.StatusCode < http.StatusBadRequest {
		if !x.github {
			return nil
		}
		if githubService(githubPath(x.orig.URL)) == GitHubGraphQL && githubHeadersQuiet(resp.Header) {
			// Nothing in the headers says a limit, and no pause is to be
			// set before the slot goes back: the slot goes back now, as
			// a success's whose body is not read, so that the wait for
			// the body below holds no other call of the account back.
			x.gd.Release()
		}
		if limited, primary, secondary, partial := githubGraphQLLimited(x.orig, resp); limited {
			// GitHub's GraphQL answer that its primary quota is spent,
			// or that a secondary limit was hit: a throttle, whatever
			// its status (see GitHub), until the reset, for
			// retry-after, which the core reads from the header, or,
			// without it, for the minute GitHub asks for.
			// A partial answer (data as well) is one GitHub acted on
			// in part: it is not sent again unless the request may be
			// (see mayResend).
			e := x.statusError(resp)
			e.kind, e.partial = errread.Throttled, partial
			switch {
			case primary:
				e.hint, e.hasHint = resetIn(resp.Header, x.gov.Clock().Now())
			case secondary:
				e.hint, e.hasHint = githubSecondaryWait, true
			}
			return e
		}
		return nil
	}
	e := x.statusError(resp)
	if x.github {
		githubAnswer(e, githubPath(x.orig.URL), x.gov.Clock().Now())
		githubSecondary(x.orig.Context(), e, resp)
		if n, ok := headerInt(e.header, hdrRemaining); ok && n == 0 && e.kind == errread.None && refusal(e.code) && otherQuota(e.header, githubPath(x.orig.URL)) {
			// Another quota's refusal (a 403 or 429, its
			// x-ratelimit-resource, with nothing left), with no
			// secondary limit's retry-after or words: the scope, whose
			// quota it is not, is neither slowed nor paused, and the
			// caller gets GitHub's answer, which says when that quota
			// resets. A 429 naming another quota with requests left is
			// no refusal of that quota's, and throttles as any 429; a
			// server error or a 503 with such headers (the call that
			// spent the quota's last request, which then failed) is
			// what its status says. The call is lost as denied, in the
			// scope it was made in, though the caller has the answer.
			e.kind, e.denied = errread.Fatal, true
		}
	}
	if hb, ok := resp.Body.(hint.Body); ok && !e.hasHint {
		// The delay a transport below found in the body (a Google
		// error's RetryInfo); a Retry-After header comes first still.
		e.hint, e.hasHint = hb.BodyRetryAfter(), true
	}
	if e.kind == errread.None {
		switch {
		case originFailure(e.code):
			e.kind = errread.Transient
		case !listedStatus(e.code):
			e.kind = reasonKind(e.status)
		}
	}
	return e
}

// statusError is resp as a StatusError, before any rule is read. The
// headers and the URL are copied: the caller owns the response and the
// request, and may change them while the error is still read (an observer
// keeps its events).
func (x *exchange) statusError(resp *http.Response) *StatusError {
	e := &StatusError{method: x.orig.Method, url: bareURL(x.orig.URL), status: resp.Status, code: resp.StatusCode, header: resp.Header.Clone()}
	if e.method == "" {
		e.method = http.MethodGet // as net/http sends it
	}
	if e.status == "" {
		// No status line (a hand-made response): the code and its reason
		// phrase, as net/http's client gives a status.
		e.status = strings.TrimSpace(strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode))
	}
	return e
}

// originFailure reports whether status is a CDN's answer that it could not
// get the origin's: Cloudflare's 520 (the origin's answer was empty or
// could not be read), 521 (the origin refused the connection), 522 (the
// connection timed out), 523 (the origin could not be reached) and 524
// (the origin took the request and did not answer in time). Each is
// transient, as a 502 or a 504 from a gateway is, which the core's status
// table does not know: alone it would make them fatal. A 524 may come after
// the origin acted on the request, so that, as for any transient answer, a
// request that is not idempotent is not sent again (see
// Transport.RoundTrip). Cloudflare's 525 and 526 (a failed TLS handshake
// with the origin, an invalid certificate of the origin's) are the
// origin's configuration, which no retry mends, and stay fatal.
func originFailure(status int) bool {
	return status >= 520 && status <= 524
}

// listedStatus reports whether the core's status table decides an answer
// of status by itself: 429 and 503 (throttling), 408, 500, 502 and 504
// (transient).
func listedStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable,
		http.StatusRequestTimeout, http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// reasonKind is the verdict on an answer whose status is on no list (400,
// 403, 404): the core searches the message of an answer nothing else
// decides for throttling phrases, and the server's own words here are its
// status line ("400 Rate Exceeded"), not the request's URL, which the
// error's message also carries. A status line that mentions throttling is
// a throttle; any other is a fatal answer.
func reasonKind(statusLine string) errread.Kind {
	if resilience.Classify(statusLineError(statusLine)) == resilience.Throttled {
		return errread.Throttled
	}
	return errread.Fatal
}

// statusLineError is a status line as an error with nothing but its
// message, which the core classifies by the message alone.
type statusLineError string

func (e statusLineError) Error() string { return string(e) }

// The reader tells the core classifier what a provider's rules decided
// about a StatusError (its status and headers it reads by method), and
// that an unsentError is a local error.
func init() {
	errread.Register(func(err error) (errread.Details, bool) {
		if _, ok := err.(*unsentError); ok {
			return errread.Details{Kind: errread.Fatal}, true
		}
		e, ok := err.(*StatusError)
		if !ok || (e.kind == errread.None && !e.hasHint) {
			return errread.Details{}, false
		}
		return errread.Details{Kind: e.kind, RetryAfter: e.hint, HasRetryAfter: e.hasHint}, true
	})
}

// rewind returns the request to send again: r itself when it has no body,
// a copy with a fresh body from GetBody otherwise, or false when the body
// cannot be had again.
func rewind(r *http.Request) (*http.Request, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return r, true
	}
	if r.GetBody == nil {
		return nil, false
	}
	body, err := r.GetBody()
	if err != nil {
		return nil, false
	}
	c := *r
	c.Body = body
	return &c, true
}

// rewindAfter is rewind for the retry of resp, whose body it closes when
// GetBody panics (or calls runtime.Goexit): the caller, who gets the
// panic, never gets resp, and its connection would stay taken.
func rewindAfter(r *http.Request, resp *http.Response) (next *http.Request, ok bool) {
	returned := false
	defer func() {
		if !returned && resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
	}()
	next, ok = rewind(r)
	returned = true
	return next, ok
}

// maxHeld bounds the body of a response kept in memory while its retry
// waits.
const maxHeld = 64 << 10

// drainGrace is the least time the body of a retried response is read
// for, so that a retry that waits less than it (a Retry-After of 0) still
// finds the body's connection back in the pool.
const drainGrace = time.Second

// draining is the body of a response whose retry waits, read into memory
// in a goroutine of its own while the retry waits, so that the connection
// it came on goes back to the pool before the retry is sent (drain); or
// the start of a GitHub error answer's body, read for a secondary limit's
// words while the attempt holds its slot, and waited for no longer than
// drainGrace (githubSecondary).
type draining struct {
	resp  *http.Response
	body  io.ReadCloser
	once  sync.Once
	timer *time.Timer
	done  chan struct{} // closed once the read has ended
	kept  []byte        // the whole body, when it was read in time and fits maxHeld
	whole bool
}

// drain starts reading the body of resp, a response about to be retried,
// into memory: up to maxHeld bytes, for at most bound (or drainGrace, when
// longer). The body is closed when read, or when bound has passed,
// whichever comes first, which drops the connection of a body still
// arriving (Close is then called while a Read is in progress, which
// net/http's response bodies allow). A response without a body is held
// as it is; nil is not.
func drain(resp *http.Response, bound time.Duration) *draining {
	if resp == nil {
		return nil
	}
	d := &draining{resp: resp, body: resp.Body, done: make(chan struct{})}
	if d.body == nil {
		d.whole = true
		close(d.done)
		return d
	}
	d.timer = time.AfterFunc(max(bound, drainGrace), d.close)
	d.read(maxHeld, func() {
		d.timer.Stop()
		d.close()
	})
	return d
}

// read reads the body into kept, up to limit bytes and one more (whole
// reports that it ended within limit, without error), in a goroutine of
// its own, which calls then once the read has ended and before done is
// closed.
func (d *draining) read(limit int64, then func()) {
	go func() {
		b, err := io.ReadAll(io.LimitReader(d.body, limit+1))
		then()
		d.kept, d.whole = b, err == nil && int64(len(b)) <= limit
		close(d.done)
	}()
}

// close closes the body, once.
func (d *draining) close() {
	d.once.Do(func() { _ = d.body.Close() })
}

// held returns the response, its body in memory, to give back when its
// retry cannot be sent after all: once its body has been read whole,
// which it waits for, for at most drainGrace or until ctx ends; nil when
// the body was not read by then, did not fit maxHeld or failed. Call it
// once, in place of the response.
func (d *draining) held(ctx context.Context) *http.Response {
	if d == nil {
		return nil
	}
	if !d.settle(ctx) || !d.whole {
		return nil
	}
	if d.body != nil {
		d.resp.Body = io.NopCloser(bytes.NewReader(d.kept))
	}
	return d.resp
}

// settle waits for the body's read to end, for at most drainGrace or
// until ctx ends, and reports whether it has: a retry sent then finds the
// body's connection back in the pool. The read ends by drainGrace after
// the retry's wait at the latest, when its bound closes the body.
func (d *draining) settle(ctx context.Context) bool {
	if d == nil {
		return false
	}
	select {
	case <-d.done:
		return true
	default:
	}
	t := time.NewTimer(drainGrace)
	defer t.Stop()
	select {
	case <-d.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// stop closes the body at once, read or not: the response will not be
// given back.
func (d *draining) stop() {
	if d != nil && d.body != nil {
		d.timer.Stop()
		d.close()
	}
}
