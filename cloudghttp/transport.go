package cloudghttp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/cloudg/cloudg/internal/attemptctx"
	"github.com/cloudg/cloudg/internal/errread"
	"github.com/cloudg/cloudg/internal/hint"
	"github.com/cloudg/cloudg/resilience"
)

// Transport is an http.RoundTripper that governs every request it sends
// (see RoundTrip). It is safe for concurrent use, as its base must be.
// The zero Transport sends every request ungoverned with
// http.DefaultTransport; make one with NewTransport.
type Transport struct {
	base  http.RoundTripper
	scope func(*http.Request) resilience.Scope
	cfg   config
}

// NewTransport returns a Transport that sends requests with base
// (http.DefaultTransport when nil) and governs each one in the scope that
// scope returns for it. A request whose scope has no provider (and every
// request, when scope is nil) is sent as it is, ungoverned; so is every
// request to a provider the governor has disabled.
func NewTransport(base http.RoundTripper, scope func(*http.Request) resilience.Scope, opts ...Option) *Transport {
	return &Transport{base: base, scope: scope, cfg: newConfig(opts)}
}

func (t *Transport) baseTransport() http.RoundTripper {
	if t.base != nil {
		return t.base
	}
	return http.DefaultTransport
}

// CloseIdleConnections closes the idle connections of the base transport
// when it keeps any (it has a CloseIdleConnections method, as net/http's
// Transport does), so that http.Client.CloseIdleConnections reaches them
// through the Transport.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.baseTransport().(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip sends req, governed as one call of its scope:
//
//  1. before each attempt (resilience.Guard.Enter): the breaker, the
//     deadline, one counted call, a token of the provider, account and leaf
//     buckets, a slot of the account's bulkhead, held until the attempt's
//     answer (its headers) is in and the pauses it sets are set (a
//     throttle's, or GitHub's spent quota's: a request waiting for the
//     slot sees them);
//  2. the answer (Guard.After): a response under 400 is a success; an
//     error status is classified by its status (429 and 503 throttle; 408,
//     500, 502 and 504, and a CDN's 520 to 524, its answers that it could
//     not get the origin's, are transient; others fatal) and, for a GitHub
//     scope, GitHub's rate-limit headers and a secondary limit's words
//     in the body of a 403 or 429 (see GitHub); an error of the
//     base transport is classified as the core classifies net/http's
//     client's errors, inside a *url.Error (connection resets and
//     refusals, a connection closed before any answer, after an HTTP/2
//     GOAWAY with the request in flight, for want of an answer to HTTP/2
//     pings, or as idle as the request was written, an HTTP/1 connection
//     that broke as the answer was read (cut within its status line or a
//     header, which net/http reads as malformed), an HTTP/2 answer
//     net/http reads as malformed, and timeouts are transient; an HTTP/2 stream reset, or a GOAWAY, of
//     ENHANCE_YOUR_CALM, a server refusing the client's rate, is a
//     throttle, unless the GOAWAY is for too_many_pings, a client's
//     keepalive settings, which is a lost connection); an error of the
//     base transport that is no such failure
//     of the request itself is a local error of the call, which neither
//     slows, pauses nor fails the scope, whatever it says: the base failed
//     before it sent the request (a token it could not fetch, from a token
//     endpoint that refused the connection or answered 429 "Rate
//     exceeded", which an http.Client's *url.Error for another URL, or an
//     error that carries an answer or says nothing of the network, marks:
//     net/http's Transport returns neither, and a RoundTripper gives the
//     server's answer as a response). When the core reads the failure it
//     holds as one that passes (transient or throttled: a refused or reset
//     connection, a timeout, a 503 or 429, also the status of a token
//     server's answer that the error carries as a field, as oauth2's
//     RetrieveError does, or of a proxy's refusal of the CONNECT that
//     would carry the request, which net/http's error says by its reason
//     phrase alone) and the body can be rewound,
//     the request is sent again after a decorrelated-jitter backoff of the
//     policy's, or the Retry-After of the token server's answer when
//     longer, within its attempts and its deadline (the context's too),
//     on the admission of the attempt that failed (its token): the scope
//     counts no retry of it, pays nothing from its retry budget and
//     records the call's end only (lost as errored when the failure ends
//     it). The backoff holds no slot, as the core's retries hold none;
//     the resend takes one again as an attempt does (waiting for it with
//     the request's context, within its max wait), never the one lent to
//     a call nested in the failed attempt that goes on, and a breaker
//     that opened meanwhile and would refuse a retry stops the resends
//     (see resilience.Guard.Enter); with breaker_wait, it holds the
//     resend until its verdict, within the call's deadline and max wait,
//     as it holds a retry, and a resend that waited takes a token. A pause of the scope (another
//     request's Retry-After, PauseAccount) holds the resend, as it holds
//     every request of the scope: it takes a token, which the pause
//     holds, and goes at the scope's rate once the pause ends. A resend
//     whose wait would reach the call's deadline, or pass its max wait,
//     is refused before it is sent, as the core refuses any such call,
//     and the call is lost as refused: the deadline's
//     *resilience.DeadlineExceededError or the
//     *resilience.WouldWaitError, each with the token's failure. A
//     failure that does not pass (a token server's 400 or 401) ends the
//     call at once;
//  3. a throttled or transient answer is sent again when that is safe: the
//     request's body can be rewound (none, or GetBody) and either the
//     answer is a throttle that says the server did not act on the
//     request (a 429, a status line that mentions throttling, GitHub's
//     rate limits, but for a GraphQL answer that holds data as well, which
//     GitHub ran in part; not a 503, which a gateway also answers for an
//     upstream that failed after it took the request, nor an HTTP/2
//     ENHANCE_YOUR_CALM), or a 408, which says the server did not receive
//     the whole request, or the method is
//     idempotent (GET, HEAD, OPTIONS, TRACE, PUT, DELETE, or an
//     Idempotency-Key header), or WithRetryNonIdempotent is set. The retry
//     goes when the Guard allows it (Guard.Retry: attempts, deadline, retry
//     budget), after a decorrelated-jitter backoff or the provider's hint
//     (Retry-After, capped at resilience.MaxPause; or, without one, the
//     delay a Google error's body asks for, which cloudggcp's REST
//     transport reads below this one), whichever is longer.
//     The body of the response it retries is read (up to 64 KiB) and
//     closed while the retry waits, in a goroutine of its own, so that its
//     connection goes back to the pool before the retry is sent: for as
//     long as the wait, and at least a second, after which a body still
//     arriving is closed (its connection dropped). A body slow to arrive
//     holds the retry back a second after the answer at most. The wait ends
//     early when the scope's breaker opens meanwhile and would still
//     refuse the retry when the wait ended (a dead scope): the next Enter
//     refuses the retry then, not after the rest of the wait.
//
// The caller gets the last response as a response, not as an error, so
// that the client's handling of error statuses keeps working; a throttled
// or transient answer not retried is recorded as a failure (a throttle as
// a give-up), for the reason (in observe's events) "sdk" when the
// Transport may not send the request again (step 3), or the Guard's own
// when it refused the retry. When the breaker opens (at once), or the
// deadline passes, while a retry waits, the last response comes back as
// it was (its body from memory, waited for at most a second more when it
// is still arriving); a response whose body was too large to keep, or was
// not read whole by then, cannot, and the governor's error (a
// *resilience.CircuitOpenError, or the deadline's error, wrapping a
// *StatusError) comes back instead.
// Before the first attempt those errors come back alone, nothing sent.
//
// A request whose context carries resilience.WithMaxWait waits no longer
// than it allows for its breaker, a token or a pause, a slot, or the hint
// of a retry: a longer wait ends it at once, nothing more sent, with the
// core's *resilience.WouldWaitError (wrapping the last answer's
// *StatusError on a retry, whose body is drained in the background and
// closed, as a retried answer's), not with the last response: the caller
// asked to be refused, which it counts as refused, rather than to wait.
//
// The request's context bounds every wait, and its deadline the whole
// call; when it ends during a wait the call ends with its error (wrapping
// the last answer), and nothing more is learned from the call. It also
// carries the run's resilience.Stats and resilience.Ledger. As an
// http.RoundTripper must, RoundTrip closes the request's body in every
// case and never modifies req. Each attempt is sent as a copy of req
// whose context carries the call, so that a governed call the base
// transport makes with that context (a credential fetched while
// signing, a Transport below this one) is nested in the attempt, as in a
// resilience.Do made WithNestedCalls: it never waits for the slot the
// attempt holds. It is nested while the base transport has the attempt
// only: a goroutine that keeps the context (a dial net/http goes on with)
// and makes its call once the base transport returned waits for a free
// slot, and looks again as the request's next attempt is sent, borrowing
// that attempt's slot (or, waiting for a breaker_wait verdict, its probe)
// rather than wait it out. The response's Request is req, as after
// net/http's own retries, whatever the base transport named: the copy it was given, a
// copy of its own that it sent (an authenticating base's, which adds a
// header), or none; so it is too for a request sent ungoverned (no
// provider, or a provider disabled).
//
// A request without a URL (which net/http's client never sends) is
// handed to the base transport ungoverned, the scope function not called:
// net/http's Transport fails it with an error.
//
// A response the base transport returns with an error, which the
// RoundTripper contract forbids, is dropped (its body closed), and the
// attempt fails with the error, as net/http's client reads the two; the
// caller never gets both.
//
// A panic of the base transport, of the request's body or of its GetBody
// reaches the caller as it was, never recovered: the slot is given back,
// the body of the answer GetBody was to retry is closed, and the call is
// recorded as lost to it (resilience.LossPanicked). So does a panic of the
// scope function, before any call begins: the request's body is closed.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		// No scope can be read from it, nor an answer classified: the
		// base fails it, as net/http's Transport does ("http: nil
		// Request.URL"), and closes its body.
		return t.ungoverned(req)
	}
	scope := t.scopeOf(req)
	gov := t.cfg.governor()
	if scope.Provider == "" {
		return t.ungoverned(req)
	}
	if !gov.Enabled(scope.Provider) {
		// Sent at once, ungoverned. Begin decides the admission the
		// request's context may carry (a scheduler's hold on the scope's
		// next task, package pool's), as the core's calls of a disabled
		// provider do.
		if gd, err := gov.Begin(req.Context(), scope, t.cfg.begin...); err == nil {
			gd.End(nil)
		}
		return t.ungoverned(req)
	}
	gd, err := gov.Begin(req.Context(), scope, t.cfg.begin...)
	if err != nil {
		return t.ungoverned(req)
	}
	x := exchange{t: t, gov: gov, gd: gd, scope: scope, orig: req, provider: scope.Provider, github: scope.Provider == ProviderGitHub || scope.Provider == ProviderGitHubEnterprise}
	// Each attempt is sent with a context that carries the call, so that
	// a governed call the base transport makes with it (a credential
	// fetched while signing, a Transport below this one) is known to be
	// nested in the attempt (see resilience.Guard.Enter), while the
	// attempt is sent only: its gate closes as the base transport
	// returns, and a goroutine that keeps the context (a dial net/http
	// goes on with) reads the Guard no more.
	x.actx = &attemptctx.Context{Context: req.Context(), Gov: gov, Guard: gd}
	x.actx.Gate.Attach(gd)
	returned := false
	defer func() {
		if !returned {
			// The base transport, the request's body or its GetBody
			// panicked: the slot goes back, the call is lost to the
			// panic, and the panic goes on.
			x.actx.Gate.Close()
			gd.EndPanicked()
		}
	}()
	resp, err := x.run()
	returned = true
	return resp, err
}

// scopeOf returns req's scope, as the scope function gives it (none when
// there is none). When the scope function panics (the caller's code), the
// request's body, which nothing will send, is closed, and the panic goes
// on as it was.
func (t *Transport) scopeOf(req *http.Request) resilience.Scope {
	if t.scope == nil {
		return resilience.Scope{}
	}
	returned := false
	defer func() {
		if !returned {
			closeBody(req)
		}
	}()
	scope := t.scope(req)
	returned = true
	return scope
}

// ungoverned sends req with the base transport, as it is, and names req
// as its response's Request, as a governed request's response does (see
// RoundTrip): a base that sent a copy of its own, or named none, does not
// decide it, whether the governor governs the request or not.
func (t *Transport) ungoverned(req *http.Request) (*http.Response, error) {
	resp, err := answered(t.baseTransport().RoundTrip(req))
	if resp != nil {
		resp.Request = req
	}
	return resp, err
}

// exchange is one request's call: its attempts, one after another.
type exchange struct {
	t        *Transport
	gov      *resilience.Governor
	gd       *resilience.Guard
	scope    resilience.Scope
	orig     *http.Request
	actx     *attemptctx.Context // the context each attempt is sent with, carrying gd and its gate
	provider string              // the scope's, whose retry policy the backoff follows
	github   bool                // read GitHub's rate-limit headers

	backoff backoff

	start   time.Time // the call's, on the governor's clock: its policy's deadline counts from it
	resends int       // the attempts sent again after they failed before they were sent (see resendUnsent)
	unsent  backoff   // the backoff of those
}

func (x *exchange) run() (*http.Response, error) {
	ctx := x.orig.Context()
	// The request is sent as a copy that carries the attempt's context
	// (see RoundTrip); the caller's is never modified.
	first := x.orig.WithContext(x.actx)
	req := first
	x.start = x.gov.Clock().Now()
	var last *draining // the last answer, its body being read into memory, while its retry waits
	for {
		if err := x.gd.Enter(ctx); err != nil {
			closeBody(req)
			x.gd.End(err)
			if _, refused := err.(*resilience.WouldWaitError); refused {
				return nil, err // the last answer's body is left to its drain
			}
			if ctx.Err() == nil {
				if held := last.held(ctx); held != nil {
					return held, nil
				}
			}
			last.stop()
			return nil, err
		}
		last = nil // its body goes on being read, to the end of its bound
		x.actx.Gate.Open()
		resp, err := x.send(req)
		x.actx.Gate.Close()
		var answer error
		for err != nil {
			answer = x.attemptError(err)
			u, ok := answer.(*unsentError)
			if !ok || !u.passes {
				break
			}
			// Nothing was sent, for a failure that passes (a token
			// endpoint's refused connection or 503): the request goes
			// again, on this attempt's admission, after a backoff, and
			// no sooner than the failure asked (a Retry-After).
			next, recorded, werr := x.resendUnsent(ctx, first, u.hint)
			if werr != nil {
				// A resend the governor did not let go (a wait past the
				// deadline or the max wait, the context's end while it
				// waited for a token or a slot) ended the call, recorded
				// as refused or cancelled; a context that ended during
				// the backoff is recorded here, as cancelled.
				if !recorded {
					x.gd.After(answer)
				}
				x.gd.End(werr)
				return nil, fmt.Errorf("cloudghttp: %w while waiting to send again after: %w", werr, err)
			}
			if next == nil {
				break
			}
			req = next
			x.actx.Gate.Open()
			resp, err = x.send(req)
			x.actx.Gate.Close()
			answer = nil
		}
		if err == nil {
			if se := x.answerOf(resp); se != nil {
				answer = se
			}
		}
		if resp != nil {
			// The caller's request, not the copy sent, which carries the
			// attempt's context, nor a copy of it the base sent (an
			// authenticating base's), nor none.
			resp.Request = x.orig
		}
		// The slot goes back once the answer's pauses are set, so that a
		// request waiting for it sees the pause a throttle's Retry-After,
		// or GitHub's spent quota, set (a shared store's takes a round
		// trip); a success's before After, which records it at once. (A
		// GitHub GraphQL 200 whose headers say nothing of a limit gave
		// it back already, before its body was read: answerOf.)
		var kind resilience.Kind
		if answer == nil {
			x.quota(resp)
			x.gd.Release()
			kind = x.gd.After(nil)
		} else {
			if kind = x.gd.After(answer); kind != resilience.Throttled {
				x.quota(resp)
			}
			x.gd.Release()
		}
		if se, ok := answer.(*StatusError); ok && se.denied {
			// Another quota's refusal: lost as denied, the caller
			// given GitHub's answer.
			x.gd.EndDenied(answer)
			return resp, err
		}
		if answer == nil || kind == resilience.Fatal || ctx.Err() != nil || !x.mayResend(kind, answer) {
			x.gd.End(answer)
			return resp, err
		}
		next, ok := rewindAfter(first, resp)
		if !ok {
			x.gd.End(answer)
			return resp, err
		}
		delay, rerr := x.gd.Retry(x.backoff.next(x))
		x.backoff.prev = max(delay, x.backoff.base)
		if rerr != nil {
			closeBody(next)
			x.gd.End(answer)
			if ww, ok := rerr.(*resilience.WouldWaitError); ok {
				// The caller asked to be refused rather than wait
				// (resilience.WithMaxWait): the refusal, not the answer.
				// The answer's body is drained in the background
				// (closed unread, its connection would be dropped).
				drain(resp, 0)
				return nil, ww
			}
			if resp != nil {
				return resp, nil
			}
			return nil, retryStop(err, rerr)
		}
		// The answer's body is read while the retry waits, not before,
		// and the retry goes once it is read (its connection back in the
		// pool) or closed, when the wait has lasted a second at least: a
		// body slow to arrive holds the retry back a second at most.
		last = drain(resp, delay)
		// The backoff ends early when the scope's breaker opens meanwhile
		// and would still refuse the retry when it ended (a dead scope):
		// the next Enter refuses the retry then, as it would have after
		// the backoff.
		if _, serr := x.gd.Backoff(ctx, delay); serr != nil {
			last.stop()
			closeBody(next)
			x.gd.End(serr)
			return nil, fmt.Errorf("cloudghttp: %w while waiting to retry after: %w", serr, answer)
		}
		last.settle(ctx)
		req = next
	}
}

// quota pauses a GitHub scope whose quota resp says is nearly spent (see
// githubQuota).
func (x *exchange) quota(resp *http.Response) {
	if resp != nil && x.github {
		githubQuota(x.gd, resp.Header, githubPath(x.orig.URL), x.gov.Clock().Now())
	}
}

// send sends one attempt, whose slot run gives back with its answer
// (RoundTrip gives it back if base panics). A base that returns neither a
// response nor an error, against the RoundTripper contract, fails the
// attempt with an error, as net/http's client fails such a request; one
// that returns both fails it with its error (see answered).
func (x *exchange) send(req *http.Request) (*http.Response, error) {
	base := x.t.baseTransport()
	resp, err := answered(base.RoundTrip(req))
	if resp == nil && err == nil {
		err = fmt.Errorf("cloudghttp: base transport %T returned a nil *http.Response with a nil error", base)
	}
	return resp, err
}

// answered is what a base transport returned, as the RoundTripper
// contract has it: a response and an error together (which the contract
// forbids) are the error alone, as net/http's client reads them, and the
// response's body is closed, since no caller will have it: the request
// failed, and the response is neither retried as an answer nor given back
// as a success.
func answered(resp *http.Response, err error) (*http.Response, error) {
	if resp != nil && err != nil {
		if resp.Body != nil {
			_ = resp.Body.Close()
		}
		return nil, err
	}
	return resp, err
}

// attemptError is what the Guard records of an attempt that the base
// transport failed with err: its transportError when err is a failure of
// the attempt's own request on its way to the scope (a refused or reset
// connection, a timeout); the transportError of the governor's own error
// err holds (a governed call made inside the attempt, refused), alone;
// otherwise an
// unsentError, a local error. By the http.RoundTripper contract, a base
// transport's error is never the server's answer, which comes back as a
// response: an error that carries an answer (an HTTP status or an error
// code) or nothing the core reads as a network failure is of something
// the base did before it sent the request, as is a *url.Error (the error
// of an http.Client, which net/http's Transport never returns) for
// another URL than the request's: the token a base transport such as
// golang.org/x/oauth2's fetches before it sends the request, from a token
// endpoint that refused the connection or answered 429 "Rate exceeded".
// Nothing was sent to the scope, which must be neither slowed, paused nor
// failed for it. An error a method of whose chain panics (a typed nil of
// the base's making, an Unwrap that reads a nil pointer) is read past the
// panic for a governor's stop and a *url.Error of another URL (see
// baseShape), and otherwise as far as it reads, as the core classifier
// reads it (see resilience.Classify): what the errors before the panic
// say stands (a network error), and a chain that says nothing readable
// ends the call as a local error, not sent again, which the core
// describes as an unreadable error.
func (x *exchange) attemptError(err error) error {
	stop, elsewhere := x.baseShape(err)
	if stop != nil {
		return x.transportError(stop)
	}
	answer := x.transportError(err)
	if elsewhere {
		return newUnsentError(answer, x.gov.Clock().Now())
	}
	if _, ok := resilience.ClassifyStrict(answer); !ok || resilience.IsProviderAnswer(answer) {
		return newUnsentError(answer, x.gov.Clock().Now())
	}
	return answer
}

// baseShape reads err, the base transport's error, for attemptError: the
// governor's stop it holds (a governed call made inside the attempt,
// refused), which the Guard records in err's place, so that the core
// reads it as that call's stop whatever else err holds; or else whether
// it is a *url.Error for another URL than the request's. Each is read
// past a panic of a method of an error of the chain (the other branches
// of a join beside an error whose As or Unwrap panics are read all the
// same): the governor's stop by attemptctx.GovernorStop, the *url.Error
// through errread.As.
func (x *exchange) baseShape(err error) (stop error, elsewhere bool) {
	if stop = attemptctx.GovernorStop(err); stop != nil {
		return stop, false
	}
	var ue *url.Error
	found, _ := errread.As(err, &ue)
	return nil, found && !sameEndpoint(ue.URL, x.orig.URL)
}

// resendUnsent readies the request's next send after an attempt that
// failed before it was sent, with a failure that passes (see unsentError):
// a copy of first with its body rewound, once a backoff of the policy's
// (the decorrelated jitter of the Transport's retries, from the policy's
// base delay to its max backoff), or after when longer (the delay the
// failure asked for: a token server's Retry-After, see unsentError), has
// passed: the base is not asked again sooner than it asked. The request
// goes on the admission its attempt had: nothing was sent to the scope,
// which counts no retry of it and pays nothing from its retry budget; it
// takes a token only when its scope is paused, which holds it until the
// pause ends (see attemptctx.ReadyResend).
// The backoff holds no slot: the Guard gives its slot back for it (a slot
// lent to a call nested in the attempt that goes on stays that call's),
// and takes one again once it is over (attemptctx.ReadyResend). It
// returns nil, and the attempt's failure ends the call as a local error,
// when the policy's attempts are spent (each send counts, the first
// included), the backoff would reach or pass the call's deadline (the
// policy's, or the context's), the body cannot be rewound, the context is
// done, or the scope's breaker opened during the backoff and would refuse
// a retry (with breaker_wait, once no verdict let the resend through by
// the call's deadline or within its max wait: until then the resend
// waits for it, see attemptctx.ReadyResend). It returns the context's error when it ends during the
// backoff; and, recorded reporting true, the error the governor ended the
// call with once the backoff was over (see attemptctx.ReadyResend): a
// *resilience.WouldWaitError for a token or slot that would not come
// within the call's max wait, a *resilience.DeadlineExceededError for a
// pause that outlasts its deadline, the context's error when it ended
// during that wait.
func (x *exchange) resendUnsent(ctx context.Context, first *http.Request, after time.Duration) (_ *http.Request, recorded bool, _ error) {
	x.resends++
	attempts, deadline := x.t.cfg.policy.MaxAttempts, x.t.cfg.policy.Deadline
	if attempts <= 0 || deadline <= 0 {
		p := x.gov.Policy(x.provider)
		if attempts <= 0 {
			attempts = p.MaxAttempts
		}
		if deadline <= 0 {
			deadline = p.Deadline
		}
	}
	if x.resends >= attempts || ctx.Err() != nil {
		return nil, false, nil
	}
	delay := max(x.unsent.next(x), after)
	x.unsent.prev = delay
	clock := x.gov.Clock()
	if !clock.Now().Add(delay).Before(x.start.Add(deadline)) {
		return nil, false, nil
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Add(delay).Before(dl) {
		return nil, false, nil
	}
	next, ok := rewindAfter(first, nil)
	if !ok {
		return nil, false, nil
	}
	// The wait holds no slot, as the core's retries back off without one;
	// a slot lent to a call nested in the attempt that goes on stays that
	// call's (see resilience.Guard.Release).
	x.gd.Release()
	if err := clock.Sleep(ctx, delay); err != nil {
		closeBody(next)
		return nil, false, err
	}
	if err := attemptctx.ReadyResend(ctx, x.gd); err != nil {
		closeBody(next)
		if _, open := err.(*resilience.CircuitOpenError); open {
			return nil, false, nil // the breaker opened meanwhile: no resend
		}
		return nil, true, err
	}
	return next, false, nil
}

// sameEndpoint reports whether raw, the URL an http.Client's *url.Error
// names (its password hidden), is u's: the same scheme, host and path.
func sameEndpoint(raw string, u *url.URL) bool {
	p, err := url.Parse(raw)
	return err == nil && u != nil && strings.EqualFold(p.Scheme, u.Scheme) &&
		strings.EqualFold(p.Host, u.Host) && p.Path == u.Path
}

// unsentError is, for the Guard, the error of an attempt that failed
// before its request was sent (see exchange.attemptError): a local error,
// which says nothing of the attempt's scope. It hides from the classifier
// what the error holds (it has no Unwrap): a token endpoint's refused
// connection, its "Rate exceeded"; and the error reader reads it as
// Fatal, so that its message is not searched for throttling either. The
// caller gets the base transport's error, never this one.
//
// The failure passes when the core classifies the error it holds, its
// message read without the request's URL (see withoutURL), as
// transient or throttled (a token endpoint that refused or reset the
// connection, or timed out; a token server's 5xx or 429 that says so), or
// the status of the token server's answer that the error carries (see
// carriedStatus), or the status of a proxy's refusal of the CONNECT
// that would carry the request (see proxyRefusal), as the core
// classifies a status (429 and 503 throttle; 408, 500, 502 and 504 are
// transient): the request is sent again then (see
// exchange.resendUnsent), no sooner than the delay the failure asks for
// (hint): the error's own (a Retry-After the core reads in it), or else
// the Retry-After of the token server's answer that it carries, read at
// now and capped at resilience.MaxPause, as a 429's is. One that does
// not pass (a token server's 400 or 401, a bad key, a proxy's 407) ends
// the call at once.
type unsentError struct {
	err    error
	passes bool
	hint   time.Duration
}

func newUnsentError(err error, now time.Time) *unsentError {
	passes := resilience.Classify(withoutURL(err)) != resilience.Fatal
	if code := carriedStatus(err); !passes && code > 0 {
		passes = resilience.Classify(statusOnly(code)) != resilience.Fatal
	}
	if code := proxyRefusal(err); !passes && code > 0 {
		passes = resilience.Classify(statusOnly(code)) != resilience.Fatal
	}
	u := &unsentError{err: err, passes: passes}
	if passes {
		d, ok := resilience.RetryAfterAt(withoutURL(err), now)
		if r := carriedResponse(err); !ok && r != nil {
			d, _ = hint.FromHeader(r.Header, r.StatusCode, now)
		}
		u.hint = hint.Cap(d)
	}
	return u
}

// proxyRefusal is the status with which a proxy refused the CONNECT that
// would have carried the request, read from err, a transportError: 0 when
// err is none. net/http's Transport fails such a request with an error
// that says the reason phrase of the proxy's status and nothing else
// ("Service Unavailable", "Bad Gateway": a proxy that is overloaded or
// cannot reach the API), before it sent anything to the API; only an
// error of the base transport's whose whole message is a standard reason
// phrase of an error status is read so.
func proxyRefusal(err error) int {
	ue, ok := err.(*url.Error)
	if !ok || ue.Err == nil {
		return 0
	}
	msg, panicked := errread.Message(ue.Err)
	if panicked != nil {
		return 0
	}
	for code := http.StatusBadRequest; code < 600; code++ {
		if text := http.StatusText(code); text != "" && text == msg {
			return code
		}
	}
	return 0
}

// withoutURL is err, a transportError, with the request's URL left out
// of its message: the core searches the message of an error nothing else
// decides for throttling phrases, and whether an attempt that was never
// sent may be sent again is the base transport's to say (its token
// endpoint's "Rate exceeded"), not the request's URL's, whose path or host
// may say "throttling" (a throttling policy's resource) as well as
// anything.
func withoutURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return &url.Error{Op: ue.Op, Err: ue.Err}
	}
	return err
}

// carriedStatus is the status of the server's answer that an error of
// err's chain (errors.Unwrap's, ten deep at most) carries in an exported
// field Response *http.Response, as the token errors of golang.org/x/oauth2
// (RetrieveError) and cloud.google.com/go/auth (Error) carry the token
// server's answer, with no method that gives its status: 0 when none
// does. It is read only for an attempt that failed before it was sent.
func carriedStatus(err error) int {
	if r := carriedResponse(err); r != nil {
		return r.StatusCode
	}
	return 0
}

// carriedResponse is the server's answer that an error of err's chain
// carries in an exported field Response *http.Response (see
// carriedStatus), or nil when none does.
func carriedResponse(err error) *http.Response {
	for i := 0; err != nil && i < 10; i, err = i+1, unwrapRead(err) {
		v := reflect.ValueOf(err)
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			continue
		}
		sf, ok := v.Type().FieldByName("Response")
		if !ok || !sf.IsExported() || sf.Type != responseType {
			continue
		}
		f, ferr := v.FieldByIndexErr(sf.Index) // an embedded nil pointer on the way is an error, not a panic
		if ferr != nil || f.IsNil() {
			continue
		}
		return f.Interface().(*http.Response)
	}
	return nil
}

var responseType = reflect.TypeFor[*http.Response]()

// unwrapRead is errors.Unwrap(err) read through errread: nil, as at the
// chain's end, when err's Unwrap panics, so that a walk of the chain
// keeps what the errors before it said.
func unwrapRead(err error) error {
	cause, _ := errread.Read(err, errors.Unwrap)
	return cause
}

// statusOnly is an HTTP status alone, as the core classifier reads one.
type statusOnly int

func (s statusOnly) Error() string       { return http.StatusText(int(s)) }
func (s statusOnly) HTTPStatusCode() int { return int(s) }

func (e *unsentError) Error() string { return e.err.Error() }

// transportError is err, a failure of the base transport, as net/http's
// client reports it to its caller: a *url.Error (the URL without its
// query, as a StatusError has it), so that the governor classifies and
// records it as it would the client's error. A connection closed before
// any answer, a bare io.EOF from net/http's transport, is transient so,
// and retried; alone it would be a local error that ends the call. So is
// an exchange lost under the request in the ways net/http says only in
// its errors' text (see lostExchanges), which the core alone would read
// as local errors too: lost, as when a connection resets.
func (x *exchange) transportError(err error) error {
	op := "Get"
	if m := x.orig.Method; m != "" {
		op = m[:1] + strings.ToLower(m[1:])
	}
	switch {
	case peerRefusal(err):
		err = refusedByPeer{err}
	case lostExchange(err):
		err = exchangeLost{err}
	}
	return &url.Error{Op: op, URL: bareURL(x.orig.URL), Err: err}
}

// peerRefusal reports whether err is an HTTP/2 server's refusal of the
// client's rate: a stream reset, or a GOAWAY, of ENHANCE_YOUR_CALM, which
// the core classifies as a throttle (see resilience.Classify) and which a
// GOAWAY's error must not hide as a lost exchange.
func peerRefusal(err error) bool {
	k, ok := resilience.ClassifyStrict(err)
	return ok && k == resilience.Throttled
}

// refusedByPeer marks a transport error as an HTTP/2 server's refusal of
// the client's rate (see peerRefusal): a throttle, which unlike a 429
// does not say that the server left the request alone.
type refusedByPeer struct{ error }

func (e refusedByPeer) Unwrap() error { return e.error }

// lostExchanges are what net/http's errors (and golang.org/x/net/http2's)
// say of a request whose connection or stream was lost under it, in
// errors whose types are not exported: an HTTP/2 connection the server
// closed after a GOAWAY frame with the request in flight; an HTTP/2
// connection closed because the server stopped answering pings (the
// transport's ReadIdleTimeout and PingTimeout); an HTTP/1 connection the
// server closed as idle just as the request was written on it, which
// net/http retries by itself only for a request it may replay; and an
// HTTP/2 stream the server reset with INTERNAL_ERROR (an RST_STREAM frame:
// the server failed the request midway, as Google's front ends do under
// load), which net/http never retries; and an HTTP/1 connection that
// broke as the answer was read, cut within its status line or a header,
// which net/http reads as a malformed answer inside its "HTTP/1.x
// transport connection broken" error (one cut at a line's end it reads as
// an unexpected EOF, which the core reads as a lost connection already).
// Only "malformed" answers are read so: the same error also wraps a
// failure of the request's own writing, such as a body shorter than its
// ContentLength, which is the caller's and stays a local error; and an
// HTTP/2 answer net/http cannot read as one (HEADERS without a :status),
// "malformed response from server", a stream error of its own making
// that only a server's answer causes. Each is transient, as a CDN's
// answer that the origin's could not be read is: a request is sent again
// if it may be (see Transport.RoundTrip), a POST is not, since the server
// may have acted on it.
var lostExchanges = [...]string{
	"http2: server sent GOAWAY and closed the connection",
	"http2: client connection lost",
	"http: server closed idle connection",
	"; INTERNAL_ERROR; received from peer",
	"net/http: HTTP/1.x transport connection broken: malformed ",
	"malformed response from server: ",
}

// lostExchange reports whether err says the request's connection or
// stream was lost under it (see lostExchanges). An error whose Error
// method panics (the base transport's typed nil, say) says nothing: the
// core reads it as an unreadable error.
func lostExchange(err error) bool {
	msg, panicked := errread.Message(err)
	if panicked != nil {
		return false
	}
	for _, s := range lostExchanges {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// exchangeLost marks a transport error as a lost exchange, which the core
// classifies as transient, as a connection error (ConnectionError).
type exchangeLost struct{ error }

func (e exchangeLost) ConnectionError() bool { return true }
func (e exchangeLost) Unwrap() error         { return e.error }

// mayResend reports whether the request may be sent again after answer,
// of kind: see RoundTrip.
func (x *exchange) mayResend(kind resilience.Kind, answer error) bool {
	r := x.orig
	if r.Body != nil && r.Body != http.NoBody && r.GetBody == nil {
		return false
	}
	return kind == resilience.Throttled && !unavailable(answer) && !refusedStream(answer) && !partialAnswer(answer) ||
		kind == resilience.Transient && unreceived(answer) || idempotent(r) || x.t.cfg.unsafeToo
}

// unreceived reports whether answer is a 408 that its status alone makes
// transient: the server did not receive the whole request within the time
// it was prepared to wait, and so did not act on it. RFC 9110 (section
// 15.5.9) lets a client repeat such a request, whatever its method, as
// after a 429 (a load balancer answers 408 to an upload too slow to
// arrive).
func unreceived(answer error) bool {
	se, ok := answer.(*StatusError)
	return ok && se.code == http.StatusRequestTimeout && se.kind == errread.None
}

// partialAnswer reports whether answer is GitHub's GraphQL answer that
// holds data as well as its rate limit's error (a partial answer). It
// slows the scope as a throttle does, but GitHub ran part of the request
// (a mutation's fields may have been applied), so that, as a 503, it
// does not say that the server left the request alone.
func partialAnswer(answer error) bool {
	se, ok := answer.(*StatusError)
	return ok && se.partial
}

// refusedStream reports whether answer is an HTTP/2 server's refusal of
// the client's rate (ENHANCE_YOUR_CALM, see peerRefusal): it slows the
// scope as a throttle does, but, as a 503, it does not say that the
// server did not act on the request (RFC 9113 says so of a REFUSED_STREAM
// and of the streams above a GOAWAY's last one, which net/http sends
// again by itself, not of ENHANCE_YOUR_CALM).
func refusedStream(answer error) bool {
	ue, ok := answer.(*url.Error)
	if !ok {
		return false
	}
	_, ok = ue.Err.(refusedByPeer)
	return ok
}

// unavailable reports whether answer is a 503 that its status alone
// makes a throttle (no provider's rule read more in it). It slows the
// scope as a throttle does, but it does not say that the server left the
// request alone, as a 429 or a quota's answer does: a gateway answers 503
// for an upstream that failed after it took the request (Envoy does, for
// a connection reset before the upstream's answer), and RFC 9110 (section
// 9.2.2) asks a client not to send a request that is not idempotent again
// unless it knows that the first was not applied. Google's own clients
// retry a 503 of a get or a list, never of an insert.
func unavailable(answer error) bool {
	se, ok := answer.(*StatusError)
	return ok && se.code == http.StatusServiceUnavailable && se.kind == errread.None
}

// idempotent reports whether sending r twice has the effect of sending it
// once: its method says so, or it carries an idempotency key.
func idempotent(r *http.Request) bool {
	switch r.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	_, key := r.Header["Idempotency-Key"]
	_, xkey := r.Header["X-Idempotency-Key"]
	return key || xkey
}

// retryStop is what the caller gets when the Guard stops the retries of
// a transport error: the budget's error, which wraps it, or the error
// itself.
func retryStop(err, rerr error) error {
	if be, ok := rerr.(*resilience.RetryBudgetExhaustedError); ok {
		return be
	}
	return err
}

// backoff is the decorrelated jitter of one request's retries:
// min(cap, uniform(base, 3 x previous)), from the policy's base delay and
// max backoff (the WithPolicy option's, or the provider's); previous is
// the delay the Guard gave the last retry, the hint included.
type backoff struct {
	base, cap, prev time.Duration
}

func (b *backoff) next(x *exchange) time.Duration {
	if b.base == 0 {
		p := x.gov.Policy(x.provider)
		b.base, b.cap = p.BaseDelay, p.MaxBackoff
		if c := x.t.cfg.policy; c.BaseDelay > 0 {
			b.base = c.BaseDelay
		}
		if c := x.t.cfg.policy; c.MaxBackoff > 0 {
			b.cap = c.MaxBackoff
		}
		b.base = max(b.base, time.Nanosecond)
		b.prev = b.base
	}
	hi := max(3*b.prev, b.base)
	d := b.base + time.Duration(rand.Int64N(int64(hi-b.base)+1))
	return min(d, b.cap)
}

// closeBody closes a request body that will not be sent.
func closeBody(r *http.Request) {
	if r != nil && r.Body != nil {
		_ = r.Body.Close()
	}
}

var _ http.RoundTripper = (*Transport)(nil)
