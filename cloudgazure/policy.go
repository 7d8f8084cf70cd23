package cloudgazure

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/cloudg/cloudg/resilience"
)

// lowReads is the x-ms-ratelimit-remaining-subscription-reads value under
// which the subscription is paused for readsPause: ARM refills about 25
// read tokens a second.
const (
	lowReads   = 25
	readsPause = time.Second
)

// Response headers, in canonical form (net/http canonicalises what it
// reads), so that they are read with one map lookup.
const (
	hdrRemainingReads = "X-Ms-Ratelimit-Remaining-Subscription-Reads"
	hdrQuotaRemaining = "X-Ms-User-Quota-Remaining"
	hdrQuotaResets    = "X-Ms-User-Quota-Resets-After"
)

// delayHeaders are the headers azcore's retry policy reads its delay from
// (shared.RetryAfter). The per-retry policy hides them from azcore on a
// response azcore is about to retry, and the governor does the waiting.
var delayHeaders = [...]string{"Retry-After-Ms", "X-Ms-Retry-After-Ms", "Retry-After"}

// shared is what the two policies of one ClientOptions have in common.
type shared struct {
	cfg config
	// retried lists the statuses azcore's retry policy retries with the
	// options these policies were built for; nil: azcore's defaults.
	retried []int
}

func newShared(cfg config, statusCodes []int, hasShouldRetry bool) *shared {
	s := &shared{cfg: cfg}
	if statusCodes != nil && !hasShouldRetry {
		s.retried = append([]int{}, statusCodes...)
	}
	return s
}

// retries reports whether azcore retries a response with status.
func (s *shared) retries(status int) bool {
	codes := s.retried
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

// perCallPolicy runs once per request, around azcore's retry policy: it
// resolves the scope, starts the request's Guard, hands the state to the
// per-retry policy through the request's operation values (which azcore's
// retry clones share), and records the request's outcome after the last
// attempt.
type perCallPolicy struct{ s *shared }

func (p perCallPolicy) Do(req *policy.Request) (*http.Response, error) {
	gov := p.s.cfg.governor()
	if !gov.Enabled(Provider) {
		return req.Next()
	}
	raw := req.Raw()
	ctx := raw.Context()
	scope := ScopeOf(raw.URL.Path)
	gd, err := gov.Begin(ctx, scope)
	if err != nil {
		return req.Next()
	}
	st := &callState{s: p.s, gov: gov, gd: gd, ctx: ctx, start: gov.Clock().Now(), perCall: true}
	defer gd.End()
	if scope.Service == ServiceResourceGraph {
		markGoverned(ctx)
	}
	req.SetOperationValue(st)
	resp, err := req.Next()
	st.finish(resp, err)
	return resp, err
}

// perRetryPolicy runs around every HTTP attempt, retries included.
type perRetryPolicy struct{ s *shared }

func (p perRetryPolicy) Do(req *policy.Request) (*http.Response, error) {
	st := stateOf(req)
	if st == nil {
		// Installed without the per-call policy: the state lives in the
		// operation values from the first attempt on.
		gov := p.s.cfg.governor()
		if !gov.Enabled(Provider) {
			return req.Next()
		}
		ctx := req.Raw().Context()
		gd, err := gov.Begin(ctx, ScopeOf(req.Raw().URL.Path))
		if err != nil {
			return req.Next()
		}
		st = &callState{s: p.s, gov: gov, gd: gd, ctx: ctx, start: gov.Clock().Now()}
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

// callState is one request's state across its attempts. azcore runs the
// attempts of a request one after another, so it needs no lock.
type callState struct {
	s     *shared
	gov   *resilience.Governor
	gd    *resilience.Guard
	ctx   context.Context // the request's (an attempt's may have a TryTimeout)
	start time.Time
	// perCall: the per-call policy made the state and ends the request,
	// putting back the headers strip hid. Without it, nothing is hidden.
	perCall bool

	attempts  int
	limit     time.Time // start + deadline_seconds, or the context's deadline if sooner; zero until needed
	notBefore time.Time // the next attempt waits until then (the server's hint, capped)
	lastErr   error     // the error of the last failed attempt
	lastResp  *http.Response

	// The response whose delay headers are hidden from azcore, and their
	// values, put back when the request ends.
	stripped *http.Response
	saved    [len(delayHeaders)][]string
}

// attempt governs one HTTP attempt: wait out the previous answer's hint,
// breaker, count, token, slot, send, release, then learn from the answer.
//
// The steps before sending wait on the request's context (bounded by the
// request's deadline), not on the attempt's: a caller's TryTimeout bounds
// an attempt on the wire, not the governor's waits before it.
func (st *callState) attempt(req *policy.Request) (*http.Response, error) {
	ctx := req.Raw().Context()
	gd := st.gd
	st.attempts++
	retry := st.attempts > 1
	if retry {
		if err := st.beforeRetry(st.ctx); err != nil {
			return nil, err
		}
	}
	if err := gd.Admit(); err != nil {
		var coe *resilience.CircuitOpenError
		if errors.As(err, &coe) && coe.Err == nil {
			coe.Err = st.lastErr // a retry refused: the answer before it
		}
		return nil, stop(err)
	}
	gd.Count()
	if err := st.wait(st.ctx, retry); err != nil {
		return nil, err
	}
	if err := gd.Acquire(st.ctx); err != nil {
		return nil, err
	}
	resp, err := req.Next()
	gd.Release()
	if err != nil {
		return st.failedAttempt(resp, err)
	}
	return st.answered(ctx, resp)
}

// beforeRetry ends the request when its deadline has passed, and otherwise
// waits until the previous answer's hint has run out. azcore's own sleep
// (its exponential backoff, at most MaxRetryDelay) came first, so the
// retry goes after the longer of the two.
func (st *callState) beforeRetry(ctx context.Context) error {
	now := st.gov.Clock().Now()
	if !now.Before(st.deadline()) {
		return stop(st.lastOr(&resilience.DeadlineExceededError{Scope: st.gd.Scope()}))
	}
	if d := st.notBefore.Sub(now); d > 0 {
		if err := st.gov.Clock().Sleep(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// wait takes a rate token. A retry's wait is bounded by the request's
// deadline: one that would overrun it ends the request with the last
// error.
func (st *callState) wait(ctx context.Context, retry bool) error {
	if !retry {
		err := st.gd.Wait(ctx)
		if err != nil && ctx.Err() == nil {
			return stop(err) // a *DeadlineExceededError: the context's deadline is too close
		}
		return err
	}
	wctx, cancel := context.WithDeadline(ctx, st.deadline())
	err := st.gd.Wait(wctx)
	cancel()
	if err != nil && ctx.Err() == nil {
		return stop(st.lastOr(err))
	}
	return err
}

// answered learns from a response.
func (st *callState) answered(ctx context.Context, resp *http.Response) (*http.Response, error) {
	gd := st.gd
	status := resp.StatusCode
	if status < http.StatusBadRequest {
		gd.Succeeded()
		st.proactive(resp.Header)
		return resp, nil
	}
	kind, retryable := statusKind(status)
	if !retryable {
		// Other 4xx (and 5xx outside the list): the service answered, which
		// proves it reachable; a half-open breaker closes.
		gd.Failed(statusAnswer(status))
		return resp, nil
	}
	rerr := runtime.NewResponseError(resp)
	hint, hasHint := resilience.HeaderRetryAfter(resp.Header, status)
	if kind == resilience.Throttled {
		gd.ThrottledFor(rerr, hint, hasHint)
	} else {
		gd.Transient(rerr)
	}
	st.lastErr, st.lastResp = rerr, resp
	if !st.s.retries(status) {
		return resp, nil // azcore will not retry it: the request ends here
	}
	var wait time.Duration
	if hasHint {
		wait = min(max(hint, 0), resilience.MaxPause)
	}
	now := st.gov.Clock().Now()
	if now.Add(wait).After(st.deadline()) {
		return nil, stop(rerr) // the hint cannot be waited out within the deadline
	}
	if err := gd.Retry(rerr); err != nil {
		return nil, stop(err) // the retry budget is empty
	}
	if kind != resilience.Throttled {
		// A throttled scope is paused for the hint already, and the next
		// attempt's token waits it out (and is counted as a wait); a
		// transient answer's hint holds this request only.
		st.notBefore = now.Add(wait)
	}
	st.strip(resp)
	return resp, nil
}

// failedAttempt learns from a transport error (a reset connection, a
// timeout) that azcore is about to retry. resp is usually nil; azcore's
// body download returns the response with its error, and azcore drains it
// before retrying.
func (st *callState) failedAttempt(resp *http.Response, err error) (*http.Response, error) {
	if st.ctx.Err() != nil || isNonRetriable(err) {
		return resp, err // azcore stops here; the per-call policy records it
	}
	switch k, _ := resilience.ClassifyStrict(err); k {
	case resilience.Throttled:
		st.gd.Throttled(err)
	case resilience.Transient:
		st.gd.Transient(err)
	}
	st.lastErr, st.lastResp = err, nil
	if !st.gov.Clock().Now().Before(st.deadline()) {
		return nil, stop(drained(resp, err))
	}
	if rerr := st.gd.Retry(err); rerr != nil {
		return nil, stop(drained(resp, rerr))
	}
	return resp, err
}

// drained closes the body of a response that will not reach the caller
// and returns err.
func drained(resp *http.Response, err error) error {
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	return err
}

// proactive reads a success's quota headers: Resource Graph's quota at 0
// pauses its scope until the quota resets; ARM's remaining subscription
// reads under 25 pause the whole subscription for a second.
func (st *callState) proactive(h http.Header) {
	if v := h[hdrRemainingReads]; len(v) > 0 {
		if n, err := strconv.Atoi(strings.TrimSpace(v[0])); err == nil && n < lowReads {
			st.gd.PauseAccount(readsPause)
		}
	}
	if d, ok := quotaReset(h); ok {
		st.gd.Pause(d)
	}
}

// quotaReset returns the time until Resource Graph's quota resets, when a
// success's headers say that none is left.
func quotaReset(h http.Header) (time.Duration, bool) {
	v := h[hdrQuotaRemaining]
	if len(v) == 0 || strings.TrimSpace(v[0]) != "0" {
		return 0, false
	}
	r := h[hdrQuotaResets]
	if len(r) == 0 {
		return 0, false
	}
	return resilience.ParseQuotaResetsAfter(r[0])
}

// finish records the request's outcome after azcore's last attempt: a
// throttled or transient final answer counts toward the breaker, and
// throttling is a give-up (stats, ledger).
func (st *callState) finish(resp *http.Response, err error) {
	st.restore()
	if err != nil {
		st.gd.Failed(err)
		return
	}
	if resp == nil {
		return
	}
	if _, retryable := statusKind(resp.StatusCode); retryable {
		final := st.lastErr
		if st.lastResp != resp || final == nil {
			final = runtime.NewResponseError(resp)
		}
		st.gd.Failed(final)
	}
}

// deadline returns when the request must end: its start plus the
// governor's deadline_seconds, or the context's deadline if sooner.
func (st *callState) deadline() time.Time {
	if st.limit.IsZero() {
		st.limit = st.start.Add(st.gov.RetrySettings(Provider).Deadline)
		if dl, ok := st.ctx.Deadline(); ok && dl.Before(st.limit) {
			st.limit = dl
		}
	}
	return st.limit
}

func (st *callState) lastOr(err error) error {
	if st.lastErr != nil {
		return st.lastErr
	}
	return err
}

// strip hides the delay headers of a response azcore is about to retry,
// so that azcore sleeps its own backoff (at most MaxRetryDelay) and never
// gives up because the server asked for more than MaxRetryDelay; the
// next attempt waits out the rest. The headers go back on the response
// when the request ends, so a response the caller sees is unchanged.
func (st *callState) strip(resp *http.Response) {
	if !st.perCall {
		return // nobody would put them back
	}
	st.restore()
	h := resp.Header
	found := false
	for i, k := range delayHeaders {
		if v, ok := h[k]; ok {
			st.saved[i] = v
			delete(h, k)
			found = true
		}
	}
	if found {
		st.stripped = resp
	}
}

func (st *callState) restore() {
	if st.stripped == nil {
		return
	}
	h := st.stripped.Header
	for i, k := range delayHeaders {
		if v := st.saved[i]; v != nil {
			h[k] = v
			st.saved[i] = nil
		}
	}
	st.stripped = nil
}

// statusKind is how the policy reads a status: 429 and 503 are throttling,
// 408, 500, 502 and 504 transient; others are no reason to retry.
func statusKind(status int) (resilience.Kind, bool) {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return resilience.Throttled, true
	case http.StatusRequestTimeout, http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
		return resilience.Transient, true
	}
	return resilience.Fatal, false
}

// statusAnswer is a provider's answer known only by its status, for the
// breaker's "a Fatal answer proves the service reachable".
type statusAnswer int

func (s statusAnswer) Error() string       { return "HTTP " + strconv.Itoa(int(s)) }
func (s statusAnswer) HTTPStatusCode() int { return int(s) }

// stopError ends azcore's retry loop: azcore does not retry an error with
// a NonRetriable method, and returns it to the caller as it is. It wraps
// the error the caller should see (a *resilience.CircuitOpenError,
// *resilience.RetryBudgetExhaustedError, or the last *azcore.ResponseError)
// and is transparent to errors.As and errors.Is.
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
