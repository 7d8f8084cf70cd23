package cloudgazure

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/cloudg/cloudg/resilience"
)

// shared is what the two policies of one ClientOptions have in common.
type shared struct {
	cfg config
	// retryView is what the policies know of the retry options of the
	// pipeline they were built for, which azcore's retry policy runs a
	// request with unless the call gives its own (policy.WithRetryOptions:
	// see callState.retryView).
	retryView

	// own is the retry options the client was given (ClientOptions' base's
	// Retry), which azcore applies to a request of a disabled provider;
	// nil for Policies, whose pipeline has the caller's options.
	own *policy.RetryOptions

	// hidden maps a response whose delay headers the per-retry policy hid
	// from azcore (callState.strip) to its request's state, until they
	// are put back, when the caller's ShouldRetry is wrapped (asks): azcore
	// asks ShouldRetry about that response, and the caller's sees the
	// headers (see shouldRetry).
	hidden sync.Map
	asks   bool

	// lastTenant is the Authorization header of the last tenant-level
	// request, and its tenant's account (tenantAccount): a client sends
	// the same token for an hour or so, whose JWT is then decoded once.
	lastTenant atomic.Pointer[tenantToken]
}

// tenantToken is an Authorization header and its tenant's account.
type tenantToken struct{ authorization, account string }

// tenantAccount is the package's tenantAccount, remembering the last
// header it read.
func (s *shared) tenantAccount(authorization string) string {
	if t := s.lastTenant.Load(); t != nil && t.authorization == authorization {
		return t.account
	}
	account := tenantAccount(authorization)
	s.lastTenant.Store(&tenantToken{authorization, account})
	return account
}

// retryView is what the policies know of the retry options azcore's retry
// policy runs a request with.
type retryView struct {
	// retried lists the statuses azcore's retry policy retries; nil:
	// azcore's defaults.
	retried []int
	// known: the policies know when azcore retries an answer. azcore
	// retries a status retried lists, or a transport error, unless the
	// attempt was its last (maxRetries+1, azcore's effective MaxRetries).
	// Not known with a ShouldRetry, which decides instead of the statuses,
	// nor for Policies, which do not see the pipeline's retry options:
	// then a retry is decided when azcore sends it.
	known      bool
	maxRetries int32
	// azcore's RetryDelay and MaxRetryDelay, as it reads them, when
	// sleeps is set: the retry options are known (a ShouldRetry among
	// them decides whether azcore retries, not how long it sleeps first),
	// so that azcore's backoff sleep may be watched (see
	// callState.watch).
	retryDelay, maxRetryDelay time.Duration
	sleeps                    bool
}

// newShared returns the policies' shared part for a pipeline whose retry
// options are retry (nil: unknown).
func newShared(cfg config, retry *policy.RetryOptions) *shared {
	s := &shared{cfg: cfg}
	if retry != nil {
		s.retryView = viewOf(retry)
	}
	return s
}

// viewOf returns what azcore's retry policy does with the retry options
// retry, as its setDefaults reads them: 0 is its default (3 retries, a
// 60 s cap, an 800 ms delay); a negative value no retries, no cap, a
// delay of 0 (which azcore's backoff sleeps as the cap: see
// longestSleep).
func viewOf(retry *policy.RetryOptions) retryView {
	v := retryView{known: retry.ShouldRetry == nil, sleeps: true}
	if v.known && retry.StatusCodes != nil {
		v.retried = append([]int{}, retry.StatusCodes...)
	}
	switch v.maxRetries = retry.MaxRetries; {
	case v.maxRetries == 0:
		v.maxRetries = 3
	case v.maxRetries < 0:
		v.maxRetries = 0
	}
	switch v.maxRetryDelay = retry.MaxRetryDelay; {
	case v.maxRetryDelay == 0:
		v.maxRetryDelay = 60 * time.Second
	case v.maxRetryDelay < 0:
		v.maxRetryDelay = math.MaxInt64
	}
	switch v.retryDelay = retry.RetryDelay; {
	case v.retryDelay == 0:
		v.retryDelay = 800 * time.Millisecond
	case v.retryDelay < 0:
		v.retryDelay = 0
	}
	return v
}

// longestSleep is the longest azcore's retry policy sleeps after its
// attempt try (from 1) when the response it retries has no delay header
// (the per-retry policy hides them): its backoff, (2^try − 1) × RetryDelay
// with a jitter in [0.8, 1.3), is below 1.3 × (2^try − 1) × RetryDelay,
// and at most MaxRetryDelay. The jitter is azcore's own draw, so that this
// bound is what the policies can know of the sleep. A RetryDelay of 0 (a
// negative one given, which azcore's documentation calls no delay) is
// MaxRetryDelay: azcore's calcDelay takes the product 0 for an overflow
// of (2^try − 1) × RetryDelay, and sleeps the cap.
func (v *retryView) longestSleep(try int32) time.Duration {
	if try >= 62 || v.retryDelay == 0 {
		return v.maxRetryDelay
	}
	d := float64(time.Duration(1)<<try-1) * float64(v.retryDelay) * 1.3
	if d >= float64(v.maxRetryDelay) {
		return v.maxRetryDelay
	}
	return time.Duration(d) + 1
}

// shouldRetry returns the caller's ShouldRetry f as azcore is to ask it:
// about an answer whose delay headers the per-retry policy hid from
// azcore (callState.strip), f is asked with the headers put back, as the
// server sent them, and they are hidden again once it has answered, so
// that azcore still sleeps its own backoff and the Guard waits out the
// hint.
func (s *shared) shouldRetry(f func(*http.Response, error) bool) func(*http.Response, error) bool {
	s.asks = true
	return func(resp *http.Response, err error) bool {
		v, ok := s.hidden.Load(resp)
		if !ok {
			return f(resp, err)
		}
		st := v.(*callState)
		st.restore()
		defer st.strip(resp) // even on a panic: the per-call policy puts them back
		return f(resp, err)
	}
}

// retries reports whether azcore retries a response with status.
func (v *retryView) retries(status int) bool {
	codes := v.retried
	if codes == nil {
		codes = defaultStatusCodes
	}
	for _, c := range codes {
		if c == status {
			return true
		}
	}
	return false
}

// azcoreLoop is the retry policy of a request's Guard: azcore's retry
// policy bounds the attempts (MaxRetries), so the Guard sets no bound of
// its own; the deadline (deadline_seconds, or the context's) and the retry
// budget are the provider's. It is made once: an option holds a pointer.
var azcoreLoop = resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: math.MaxInt})

// ungoverned sends req at once, for a provider a Configure disabled. It
// begins and ends a Guard first, which decides the admission the
// request's context may carry (a scheduler's hold on the scope's next
// task, package pool's), as the core's calls of a disabled provider do.
// A Guard of a disabled provider makes no state and records nothing.
func ungoverned(gov *resilience.Governor, req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	scope, _ := requestScope(raw)
	if gd, err := gov.Begin(raw.Context(), scope, azcoreLoop); err == nil {
		gd.End(nil)
	}
	return req.Next()
}

// ungovernedOwn is ungoverned for the per-call policy of a client built
// with ClientOptions, which gave azcore's retry policy the governor's
// retry options: the request goes through azcore's retry policy with own,
// the options the client was given, as it would have without
// ClientOptions. A call's own policy.WithRetryOptions is azcore's to
// apply, and is kept (see ownRetryContext).
func ungovernedOwn(gov *resilience.Governor, req *policy.Request, own *policy.RetryOptions) (*http.Response, error) {
	raw := req.Raw()
	ctx := raw.Context()
	*raw = *raw.WithContext(ownRetryContext{Context: ctx, own: *own})
	defer func() { *raw = *raw.WithContext(ctx) }() // even on a panic
	return ungoverned(gov, req)
}

// ownRetryContext answers azcore's lookup of a call's retry options
// (policy.WithRetryOptions) with own when the context it wraps has none,
// and every other lookup as that context does. azcore's key is a type of
// its internal package: it is known by its name.
type ownRetryContext struct {
	context.Context
	own policy.RetryOptions
}

func (c ownRetryContext) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	if t := reflect.TypeOf(key); t != nil && t.Name() == "CtxWithRetryOptionsKey" &&
		t.PkgPath() == "github.com/Azure/azure-sdk-for-go/sdk/azcore/internal/shared" {
		return c.own
	}
	return nil
}

// perCallPolicy runs once per request, around azcore's retry policy: it
// resolves the scope, begins the request's Guard (a tenant-level
// request's first attempt begins it, once the token that names its
// tenant is set: see callState.gd; a Resource Graph page QueryResources
// paces takes that page's Guard over: see pagedOf), hands the request's
// state to the per-retry policy through the request's operation values
// (which azcore's retry clones share), and ends the Guard with azcore's
// final answer.
type perCallPolicy struct{ s *shared }

func (p perCallPolicy) Do(req *policy.Request) (*http.Response, error) {
	if st := stateOf(req); st != nil && st.active {
		// A per-call policy of the package's ahead of this one governs
		// the request (the policies installed twice): governed once. A
		// request sent again once that policy returned (by a policy of
		// the caller's ahead of it) is a request of its own.
		return req.Next()
	}
	gov := p.s.cfg.governor()
	if !gov.Enabled(Provider) {
		if p.s.own != nil {
			return ungovernedOwn(gov, req, p.s.own)
		}
		return ungoverned(gov, req)
	}
	raw := req.Raw()
	ctx := raw.Context()
	scope, azcosmos := requestScope(raw)
	st := &callState{s: p.s, gov: gov, scope: scope, ctx: ctx, tenant: scope.Account == "", perCall: true, raw: raw,
		azcosmos: azcosmos}
	if pg, ok := pagedOf(ctx); ok && scope.Service == ServiceResourceGraph && pg.take(gov) {
		// A page QueryResources paces, not knowing the pipeline is
		// governed: its Guard, entered for the first attempt (counted,
		// paced, its slot and breaker's lease held), is the page's first
		// request's, so that the page is one call. Once taken, it is
		// ended by that request: a later request of the page (a
		// caller's wrapper sending it again) begins its own Guard.
		st.gd, st.scope, st.entered = pg.gd, pg.sc, true
		st.gate.Attach(pg.gd) // before st.first carries it
	} else if !st.tenant {
		// A tenant-level request's Guard, a Resource Graph query's too,
		// waits for its token (see callState.gd).
		gd, err := gov.Begin(ctx, scope, azcoreLoop)
		if err != nil {
			return req.Next()
		}
		st.gd = gd
		st.gate.Attach(gd) // before st.first carries gd
	}
	if scope.Service == ServiceResourceGraph {
		markGoverned(ctx)
	}
	req.SetOperationValue(st)
	st.active = true
	st.first.Init(ctx)
	st.first.gov, st.first.own = gov, &st.own
	st.first.gd.Store(st.gd)
	st.rc = &st.first
	*raw = *raw.WithContext(st.rc) // see callState.raw
	var kept *keptBody
	returned := false
	defer func() { // even on a panic: the request gets its context and body back
		st.active = false
		st.restore()
		st.endCut()
		*raw = *raw.WithContext(ctx)
		kept.end()
		if !returned {
			// A policy or the transport below panicked: the slot goes
			// back, the request is lost to the panic, and the panic goes
			// on.
			st.guard(nil).EndPanicked()
		}
	}()
	kept = keepBody(req) // after the defer: the body's Seek may panic
	resp, err := req.Next()
	for st.cutEnded(err) {
		// The breaker opened while azcore slept before a retry, which
		// ended its loop: the retry asks the Guard now, as it would have
		// after the sleep. Refused (the breaker is open), it ends the
		// request; let through after all (its cooldown ended meanwhile),
		// it is sent, in a loop of azcore's own.
		st.renew()
		if eerr := st.gd.Enter(ctx); eerr != nil {
			resp, err = nil, stop(reveal(eerr))
			break
		}
		st.entered, st.tries = true, 0
		resp, err = req.Next()
	}
	st.restore()
	switch fin := st.final(resp, err); {
	case st.denied:
		// App Configuration's Storage quota refused the request: lost
		// as denied, a limit the governor does not pace.
		st.guard(nil).EndDenied(fin)
	case st.unanswered(err):
		// The 401 was an authentication challenge, whose resend never
		// came: the call it answered ends (its 401, a fatal answer
		// After recorded, records nothing more), and the resend's, its
		// token never had (the credential failed, the context ended),
		// is lost with the error it ended with, as a request whose token
		// fails before its first send is. A Guard of its own: a Guard's
		// call ended once records nothing more without a step of a new
		// call, and the resend took none.
		st.gd.End(st.last)
		if gd, berr := gov.Begin(ctx, st.scope, azcoreLoop); berr == nil {
			gd.End(&tokenError{fin})
		}
	case st.tried == nil && fin != nil && resilience.IsProviderAnswer(fin):
		// No attempt was sent: the answer is another server's, the
		// credential's token endpoint's (an *azcore.ResponseError of
		// Microsoft Entra ID's 429 or 400), not the request's scope's,
		// which it must neither slow, pause nor end as a fatal answer.
		st.guard(nil).End(&tokenError{fin})
	default:
		st.guard(nil).End(fin)
	}
	returned = true
	return resp, err
}

// unanswered reports whether err, the error the policies after the
// per-call policy ended the request with, ends it after an
// authentication challenge (challenged: a 401 After read as fatal) that
// no resend answered: the policy ahead that answers the challenge could
// not send the request again (its credential failed, the context ended
// while it fetched the token, the challenge could not be parsed). Such an
// error is never the vault's answer, even when it is an answer of
// another server's (a credential's token endpoint's *azcore.ResponseError):
// the vault's answers come back as responses, not errors, since the
// per-retry policy gave the 401 back as one. A request that ends with the
// 401 itself (a challenge the policy could not read) ends with the
// vault's answer, and err is nil.
func (st *callState) unanswered(err error) bool {
	return st.challenged && st.gd != nil && err != nil
}

// tokenError is the error of a request, or of its resend after an
// authentication challenge, that was never sent (its credential's, or a
// policy's), as the Guard records it: its message alone, and no chain,
// so that the core reads it as a local error and never as the answer of
// the request's scope, which an *azcore.ResponseError of the credential's
// token endpoint (a 429 or a 400 of Microsoft Entra ID's) would read as
// (a throttle that slows and pauses the scope, or its fatal answer, which
// loses nothing). The caller gets the error itself.
type tokenError struct{ err error }

func (e *tokenError) Error() string { return e.err.Error() }

// keptBody is a request's body as the per-call policy hands it to
// azcore's retry policy, which closes the body it is given when its loop
// ends: its Close does nothing, so that the body is still whole when a
// cut of azcore's sleep ended the loop and the per-call policy sends the
// retry through azcore's loop again. The per-call policy closes the
// caller's body, once, when the request ends (end).
type keptBody struct {
	io.ReadSeekCloser
	raw     *http.Request
	body    io.ReadCloser                 // the request's Body, as the caller set it
	getBody func() (io.ReadCloser, error) // and its GetBody
}

func (*keptBody) Close() error { return nil }

// keepBody gives req, the per-call policy's request, a keptBody in place
// of its body, and returns it (nil for a request without a body, or one
// whose body cannot be measured, which azcore's loop then fails on).
func keepBody(req *policy.Request) *keptBody {
	b := req.Body()
	if b == nil {
		return nil
	}
	raw := req.Raw()
	k := &keptBody{ReadSeekCloser: b, raw: raw, body: raw.Body, getBody: raw.GetBody}
	if req.SetBody(k, raw.Header.Get("Content-Type")) != nil {
		return nil
	}
	return k
}

// end gives the request its body back and closes it, as azcore's retry
// policy would have at the end of its loop.
func (k *keptBody) end() {
	if k == nil {
		return
	}
	k.raw.Body, k.raw.GetBody = k.body, k.getBody
	_ = k.ReadSeekCloser.Close()
}

// perRetryPolicy runs around every HTTP attempt, retries included.
type perRetryPolicy struct{ s *shared }

func (p perRetryPolicy) Do(req *policy.Request) (*http.Response, error) {
	st := stateOf(req)
	if st != nil && st.sending {
		// A per-retry policy of the package's ahead of this one sends
		// the attempt (the policies installed twice): governed once.
		return req.Next()
	}
	ctx := req.Raw().Context()
	if st == nil || !st.perCall && st.ctx.Err() != nil && ctx.Err() == nil {
		// Installed without the per-call policy: the state lives in the
		// operation values from the first attempt on, and nobody ends the
		// Guard, so the request's final outcome is not recorded. Under a
		// TryTimeout, azcore gives each attempt a context of its own and
		// ends it after the attempt: a Guard begun on an earlier one's
		// context is over, and this attempt begins a Guard of its own (a
		// call of its own, not counted as a retry).
		gov := p.s.cfg.governor()
		if !gov.Enabled(Provider) {
			return ungoverned(gov, req)
		}
		raw := req.Raw()
		scope, azcosmos := requestScope(raw)
		st = &callState{s: p.s, gov: gov, scope: scope, ctx: ctx, tenant: scope.Account == "", azcosmos: azcosmos}
		st.guard(raw) // the token is set by now; the gate is attached
		req.SetOperationValue(st)
	}
	return st.attempt(req)
}

// boxes hold the pointer OperationValue writes to: a local variable would
// escape to the heap on every attempt.
var boxes = sync.Pool{New: func() any { return new(*callState) }}

// stateOf returns the request's state, set by the per-call policy (or by
// the first attempt), or nil.
func stateOf(req *policy.Request) *callState {
	box := boxes.Get().(**callState)
	var st *callState
	if req.OperationValue(box) {
		st = *box
		*box = nil
	}
	boxes.Put(box)
	return st
}

// stopError ends azcore's retry loop: azcore does not retry an error with
// a NonRetriable method, and returns it to the caller as it is. It wraps
// the error the caller should see (a *resilience.CircuitOpenError,
// *resilience.RetryBudgetExhaustedError, *resilience.WouldWaitError, or the
// last *azcore.ResponseError) and is transparent to errors.As and
// errors.Is.
type stopError struct{ err error }

func stop(err error) error { return &stopError{err: err} }

func (e *stopError) Error() string { return e.err.Error() }
func (e *stopError) Unwrap() error { return e.err }

// NonRetriable tells azcore's retry policy not to retry.
func (e *stopError) NonRetriable() {}

func isNonRetriable(err error) bool {
	var nr interface{ NonRetriable() }
	return errors.As(err, &nr)
}
