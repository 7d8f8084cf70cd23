package cloudgazure

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/cloudg/cloudg/internal/attemptctx"
	"github.com/cloudg/cloudg/internal/cutctx"
	"github.com/cloudg/cloudg/internal/hint"
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
	// hdrCosmosCapabilities is the header azcosmos sets on every request
	// it makes (Client.createRequest, and its endpoint manager's read of
	// the account's properties), whatever its client's endpoint: the
	// capabilities of the SDK, as a number.
	hdrCosmosCapabilities = "X-Ms-Cosmos-Sdk-Supportedcapabilities"
)

// fromAzcosmos reports whether a request's headers carry azcosmos's mark
// (hdrCosmosCapabilities): azcosmos made it, and runs its own retry
// policy ahead of the package's per-retry policy (see
// callState.asksLate). The mark, not the host, tells: the Cosmos DB
// emulator's client (https://localhost:8081) and one on a host of one's
// own are azcosmos's, and a request on a Cosmos DB host that another
// client sends (aztables's, on the Table API's host) is not.
func fromAzcosmos(h http.Header) bool {
	_, ok := h[hdrCosmosCapabilities]
	return ok
}

// armQuota is one of the remaining-requests headers of Resource Manager's
// token buckets, and the value under which it pauses the request's
// account or scope for readsPause: one second's refill of its bucket.
type armQuota struct {
	header string
	below  int
	// tenant: the tenant's bucket, read only on a tenant-level request
	// (its scope has no account), since a subscription's or a data
	// plane's account is no tenant.
	tenant bool
	// reads: the bucket counts reads, and a low one pauses the account of
	// the request's scope, which holds every call of the subscription,
	// whatever the resource provider. A
	// writes or deletes bucket pauses only the request's own scope, so
	// that the reads of the subscription's other resource providers go
	// on.
	reads bool
}

// armQuotas are the remaining-requests headers the policies read. ARM's
// buckets (since 2024) refill reads at 25 a second, writes and deletes at
// 10, per subscription and per tenant; a subscription's global bucket,
// shared by all its principals, at fifteen times as much (375, 150).
var armQuotas = [...]armQuota{
	{hdrRemainingReads, lowReads, false, true}, // under a second's refill: the whole subscription
	{"X-Ms-Ratelimit-Remaining-Subscription-Writes", 10, false, false},
	{"X-Ms-Ratelimit-Remaining-Subscription-Deletes", 10, false, false},
	{"X-Ms-Ratelimit-Remaining-Subscription-Global-Reads", 15 * lowReads, false, true},
	{"X-Ms-Ratelimit-Remaining-Subscription-Global-Writes", 15 * 10, false, false},
	{"X-Ms-Ratelimit-Remaining-Subscription-Global-Deletes", 15 * 10, false, false},
	{"X-Ms-Ratelimit-Remaining-Tenant-Reads", lowReads, true, true},
	{"X-Ms-Ratelimit-Remaining-Tenant-Writes", 10, true, false},
}

// armPause is what a success's remaining-requests headers pause.
type armPause uint8

const (
	pauseNothing armPause = iota
	pauseScope            // a writes or deletes bucket is low: the request's scope (Guard.Pause)
	pauseAccount          // a reads bucket is low: the account of the request's scope (Guard.PauseAccount)
)

// armQuotaLow reads a success's remaining-requests headers (armQuotas) on
// a request that is tenant-level or not, and returns the widest pause the
// low ones ask for: the account when a reads bucket is low, else the
// scope when a writes or deletes bucket is.
func armQuotaLow(h http.Header, tenant bool) armPause {
	p := pauseNothing
	for _, q := range armQuotas {
		if q.tenant && !tenant {
			continue
		}
		if v := h[q.header]; len(v) > 0 {
			if n, err := strconv.Atoi(strings.TrimSpace(v[0])); err == nil && n < q.below {
				if q.reads {
					return pauseAccount
				}
				p = pauseScope
			}
		}
	}
	return p
}

// pauseFor sets the pause armQuotaLow asked for, for readsPause.
func pauseFor(gd *resilience.Guard, p armPause) {
	switch p {
	case pauseAccount:
		gd.PauseAccount(readsPause)
	case pauseScope:
		gd.Pause(readsPause)
	}
}

// delayHeaders are the headers azcore's retry policy reads its delay from
// (shared.RetryAfter). The per-retry policy hides them from azcore on a
// response azcore is about to retry, and the Guard does the waiting.
var delayHeaders = [...]string{"Retry-After-Ms", "X-Ms-Retry-After-Ms", "Retry-After"}

// callState is one request's state across its attempts. azcore runs the
// attempts of a request one after another, so it needs no lock.
type callState struct {
	s   *shared
	gov *resilience.Governor // gd's
	// gd is the request's Guard, begun on scope. The per-call policy
	// begins it at once, but for a tenant-level request (a Resource Graph
	// query among them): its tenant is read from the bearer token,
	// which azcore's bearer token policy sets after the per-call policy
	// has run, and its Guard is begun by its first attempt (see guard).
	gd    *resilience.Guard
	scope resilience.Scope
	ctx   context.Context // the request's (an attempt's may have a TryTimeout)
	// gate is gd's, attached as gd is begun, before a context carrying
	// gd is made or given gd: a call made with the request's context (rc,
	// or an attempt's) reads gd, and is nested in the request, only while
	// an attempt is sent (see send). The context may outlive the attempt
	// (a dial net/http goes on with); the gate closes as the attempt
	// returns, before the Guard records it.
	gate attemptctx.Gate
	// tenant: the request is tenant-level, its URL's scope has no account
	// (no subscription in its path, no data plane's resource in its host).
	tenant bool
	// perCall: the per-call policy made the state and ends the request,
	// putting back the headers strip hid. Without it, nothing is hidden.
	perCall bool
	// azcosmos: azcosmos made the request (fromAzcosmos), and its retry
	// policy may resend or give up an answer before azcore sees it.
	azcosmos bool

	last *statusError // the last error answer, or nil
	// tries counts the attempts, as azcore's loop numbers them (from 1):
	// the tries of azcore's loop, each sent as a clone of the request of
	// its own, whose raw request was tried. An attempt sent again within
	// a try (azcore's bearer token policy answering a continuous access
	// evaluation challenge sends the same clone again, with a new token)
	// is no try of its own.
	tries int32
	tried *http.Request
	// owed: azcore may retry the last attempt, and the Guard was not asked
	// whether it may (shared.known is false): the next attempt asks first.
	owed bool
	// challenged: the last attempt was answered 401 (Unauthorized), an
	// authentication challenge, which a policy ahead of the per-retry
	// policy answers by sending the request again with a token inside the
	// same try of azcore's loop (azcore's bearer token policy, Key
	// Vault's challenge policy, Container Registry's): see resend.
	challenged bool
	// denied: the last attempt was answered with App Configuration's 429
	// for its Storage quota (storageQuota), a refusal for a limit the
	// governor does not pace: the per-call policy ends the request lost
	// as denied (resilience.Guard.EndDenied).
	denied bool

	// The response whose delay headers are hidden from azcore, and their
	// values, put back when the request ends.
	stripped *http.Response
	saved    [len(delayHeaders)][]string

	// The cut of azcore's backoff sleep when the scope's breaker opens
	// (see watch): raw is the per-call policy's request, whose context is
	// rc, the request's but for the cut (and for the Guard it carries, see
	// requestContext), until the request ends, so that a
	// request a later policy derives from it, and azcore's retry policy,
	// which sleeps on its request's context, see the cut. A cut ends rc
	// for good: the per-call policy gives the request a new one (renew),
	// the first being first, in the state. stopWatch stops the watch of
	// the sleep in progress.
	raw       *http.Request
	rc        *requestContext
	first     requestContext
	stopWatch func() bool
	// entered: the per-call policy entered the Guard for the attempt
	// azcore sends next (a retry the breaker let through after a cut).
	entered bool
	// recut: an attempt ended azcore's loop because its context was the
	// cut one (see attempt).
	recut bool
	// active: the per-call policy that made the state is governing the
	// request (it has not returned); a per-call policy of the package's
	// after it (the policies installed twice) lets the request through.
	active bool
	// sending: a per-retry policy is sending the attempt (see send); a
	// per-retry policy of the package's after it (the policies installed
	// twice) lets it through.
	sending bool
	// own is what the policies know of the call's own retry options
	// (policy.WithRetryOptions), which azcore's retry policy runs the
	// request with instead of the pipeline's, as it read them from the
	// request's context (see requestContext.Value); nil while it has read
	// none.
	own atomic.Pointer[retryView]
}

// retryView returns what the policies know of the retry options azcore's
// retry policy runs the request with: the call's own when azcore read
// them from the request's context (policy.WithRetryOptions), so that a
// retry the call's options do not make (MaxRetries -1, StatusCodes
// without the answer's status) is neither asked of the Guard nor counted,
// and azcore's sleep is weighed by the call's delays; else the
// pipeline's.
func (st *callState) retryView() *retryView {
	if v := st.own.Load(); v != nil {
		return v
	}
	return &st.s.retryView
}

// requestContext is the context the per-call policy gives a request
// until it ends: the request's, but for the cut of azcore's sleep, and it
// answers Value(gov) with the request's Guard, as the core looks for the
// call a governed call is nested in. A governed call made with it, or a
// context derived from it, inside an attempt (by the transport, or a
// policy after the package's) is then nested in the attempt, as in a
// resilience.Do made WithNestedCalls: it takes a free slot of the
// account's bulkhead or borrows the attempt's, never waiting for the slot
// its own caller holds, and on the attempt's scope it goes as the probe
// the attempt holds (see resilience.Guard.Enter). Outside an attempt the
// Guard's gate is closed (see callState.send), so that a call made then
// (a credential's token fetch by azcore's bearer token policy, which runs
// before the per-retry policy, or one of a goroutine that kept the
// context) is not nested in it, and reads nothing of the Guard; nor is
// one made before a tenant-level request's first attempt has begun its
// Guard, when the context answers Value(gov) as the request's own
// context does. gd is atomic: the first attempt sets it while a
// goroutine the credential or a policy started with the context may ask
// for it.
//
// azcore's retry policy reads a call's own retry options
// (policy.WithRetryOptions) from the context as its loop begins: Value
// notes what it finds in own, the request's callState.own, so that the
// policies govern the request's retries by the options azcore runs it
// with.
type requestContext struct {
	cutctx.Context
	gov *resilience.Governor
	gd  atomic.Pointer[resilience.Guard]
	own *atomic.Pointer[retryView]
}

func (c *requestContext) Value(key any) any {
	var v any
	if gd := c.gd.Load(); gd != nil {
		v = attemptctx.Value(&c.Context, c.gov, gd, key)
	} else {
		v = c.Context.Value(key)
	}
	if o, ok := v.(policy.RetryOptions); ok && c.own != nil {
		rv := viewOf(&o)
		c.own.Store(&rv)
	}
	return v
}

// guard returns the request's Guard, beginning it on the request's scope
// if no attempt has yet (a tenant-level request, see callState.gd): on
// its tenant's scope, tenantScope's, when raw, the attempt's request,
// carries a bearer token that names the tenant (a Resource Graph page
// QueryResources paces on a Guard it does not take over, one of another
// governor's or one the page's first request took: on that Guard's
// scope, see pagedOf), and on scope otherwise
// (raw nil: the request ends before any attempt, the bearer token
// policy having failed or the context ended). It attaches the gate
// (callState.gate) to the Guard before the request's context carries
// it. Begin fails only for a scope without a provider, and an Azure
// scope has one.
func (st *callState) guard(raw *http.Request) *resilience.Guard {
	if st.gd != nil {
		return st.gd
	}
	if raw != nil && st.tenant {
		if pg, ok := pagedOf(st.ctx); ok && st.scope.Service == ServiceResourceGraph {
			st.scope = pg.sc // a page QueryResources paces on a Guard not taken over
		} else {
			st.scope = tenantScope(st.scope, st.s.tenantAccount(raw.Header.Get("Authorization")))
		}
	}
	st.gd, _ = st.gov.Begin(st.ctx, st.scope, azcoreLoop)
	// The gate is the Guard's before rc carries it: a goroutine that
	// kept rc reads the Guard's gate once it reads the Guard.
	st.gate.Attach(st.gd)
	if st.rc != nil {
		st.rc.gd.Store(st.gd)
	}
	return st.gd
}

// attempt governs one HTTP attempt: the Guard's Enter (breaker, deadline,
// the rest of a transient answer's hint on a retry, count, token, slot),
// send, then learn from the answer and give the slot back once the pauses
// it sets are set, so that a request waiting for the slot sees them (a
// throttle's Retry-After, a success's spent quota; a success's slot goes
// back before After records it).
//
// Enter waits on the request's context (bounded by the request's
// deadline, and by resilience.WithMaxWait's bound when it carries one),
// not on the attempt's: a caller's TryTimeout bounds an attempt on the
// wire, not the governor's waits before it. Every error of Enter ends
// azcore's loop: a *resilience.CircuitOpenError, a
// *resilience.WouldWaitError, a deadline's or the context's error.
func (st *callState) attempt(req *policy.Request) (*http.Response, error) {
	if st.gd == nil {
		st.guard(req.Raw())
	}
	raw := req.Raw()
	resend := st.resend(raw)
	if raw != st.tried {
		if !resend {
			st.tries++
		}
		st.tried = raw
	}
	// The watch of azcore's sleep ends before the Guard is used again
	// (see resilience.Guard.AfterOpen), a retry owed's included.
	cut := st.unwatch()
	owed := st.owed && !resend
	st.owed = false
	if cut {
		// The breaker opened as azcore's sleep ended: the attempt's
		// context, derived from the cut one, has ended. azcore's loop
		// ends, and the per-call policy asks the Guard for the retry (see
		// cutEnded), on a context of the request's that is live.
		st.recut = true
		return nil, stop(context.Canceled)
	}
	if resend {
		// The answer to the challenge: the request the challenge
		// answered ends (its 401, a fatal answer After recorded, records
		// nothing more), and the resend is the Guard's next call, no
		// retry, which keeps the request's retries and deadline.
		attemptctx.ResendChallenged(st.gd)
	} else if owed {
		// azcore retries an answer the policies could not tell it would:
		// the retry is asked for now that it is sent.
		if err := st.retry(); err != nil {
			return nil, err
		}
	}
	if st.entered {
		st.entered = false
	} else if err := st.gd.Enter(st.ctx); err != nil {
		return nil, stop(reveal(err))
	}
	return st.send(req)
}

// resend reports whether raw, the attempt about to be sent, answers the
// authentication challenge the last attempt was answered with (a 401,
// challenged): a policy ahead of the per-retry policy sends the request
// again with a token, inside the same try of azcore's loop (azcore's
// bearer token policy, for a continuous access evaluation challenge or,
// with Key Vault's challenge policy, for the challenge a Key Vault
// client's first request, sent without a token, elicits; Container
// Registry's, which sends the challenge on a clone of the request). Such
// a resend is no retry of a failure of the provider's: the Guard counts
// it as a call of its own, sent, and not as a retry (no Retry event, no
// free retry or retry budget spent), and no new request either: it keeps
// the request's retries, so that a request challenged between its
// retries has two of them free in all, as any request (see
// attemptctx.ResendChallenged), and its deadline. It is the same request
// as the challenged attempt, or, when the policies know azcore does not
// retry a 401 (ClientOptions' retry options, a 401 not among their
// statuses), any request: azcore's loop has ended with the 401 then. A
// 401 azcore
// retries (a caller's ShouldRetry, or statuses that list it) is retried
// on a clone of its own, counted as any retry.
func (st *callState) resend(raw *http.Request) bool {
	if !st.challenged {
		return false
	}
	st.challenged = false
	rv := st.retryView()
	return raw == st.tried || rv.known && !rv.retries(http.StatusUnauthorized)
}

// send sends the attempt and learns from its answer (answered or
// failedAttempt, which give its slot back), and gives the slot back if
// code of the caller's panics meanwhile: a later policy or the transport,
// or what recording the answer calls (the governor's log handler). The
// per-call policy ends a request whose attempt panicked; without it, the
// request is ended here, as lost to the panic, which goes on. The gate is
// open while the attempt is sent only: a call made with its context is
// nested in it then, and not once it has returned.
func (st *callState) send(req *policy.Request) (resp *http.Response, err error) {
	returned := false
	defer st.sent(&returned)
	if !st.perCall {
		// The attempt is sent with a context that carries the request's
		// Guard (see requestContext), and given its own back.
		raw := req.Raw()
		ctx := raw.Context()
		*raw = *raw.WithContext(&attemptctx.Context{Context: ctx, Gov: st.gov, Guard: st.gd})
		defer func() { *raw = *raw.WithContext(ctx) }()
	}
	st.gate.Open()
	st.sending = true
	resp, err = req.Next()
	st.sending = false
	st.gate.Close()
	if err != nil {
		resp, err = st.failedAttempt(resp, err)
	} else {
		resp, err = st.answered(resp)
	}
	returned = true
	return resp, err
}

// sent gives the slot of an attempt that did not return back, and ends
// the request as lost to the panic when no per-call policy ends it.
func (st *callState) sent(returned *bool) {
	if !*returned {
		st.sending = false
		st.gate.Close()
	}
	switch {
	case *returned:
	case !st.perCall:
		st.gd.EndPanicked()
	default:
		st.gd.Release()
	}
}

// answered learns from a response. The Guard gets it as a statusError:
// 429 and 503 are throttling whatever their error code, 408, 500, 502 and
// 504 transient; any other error status is classified by the answer's
// error code (a fatal answer, which proves the service reachable, unless
// the code is a throttling or transient one), or, without a code, by its
// message (a 400 "Rate exceeded" is throttling); Cosmos DB's 449 Retry
// With is transient, whatever its code, as is its 410 Gone for a
// partition that split or moved. App Configuration's 429 for its
// Storage quota is fatal, and ends azcore's loop with its
// *azcore.ResponseError: azcore would retry it by its status, and be
// answered the same; the per-call policy ends the request lost as denied
// (resilience.LossDenied).
//
// The Guard is asked for a retry only when azcore sends one: at once when
// the policies know azcore retries the answer (its status is one azcore
// retries, and the attempt is not azcore's last), so that a refusal ends
// azcore's loop before its backoff; otherwise, when the caller's
// ShouldRetry decides or the pipeline's retry options are unknown, or
// for an answer to a request azcosmos made that azcosmos may resend or
// give up itself (see asksLate), by the next attempt, if one is made.
func (st *callState) answered(resp *http.Response) (*http.Response, error) {
	if resp.StatusCode < http.StatusBadRequest {
		// The quota's pauses are set before the slot goes back, so that a
		// request waiting for it sees them; the slot before After, which
		// records the success at once.
		st.proactive(resp.Header)
		st.gd.Release()
		st.gd.After(nil)
		return resp, nil
	}
	se := &statusError{resp: resp}
	st.last = se
	kind := st.gd.After(se)
	st.gd.Release()
	// A 401 read as the provider's fatal answer may be a challenge a
	// policy ahead answers by sending the request again (see resend).
	st.challenged = resp.StatusCode == http.StatusUnauthorized && kind == resilience.Fatal
	if storageQuota(resp) {
		// App Configuration's Storage quota, which no wait replenishes:
		// fatal, and a retry, which azcore makes of a 429, would be
		// answered the same. azcore's loop ends with the answer, and
		// the request is lost as denied.
		st.owed, st.denied = false, true
		return nil, stop(se.response())
	}
	if rv := st.retryView(); !rv.retries(resp.StatusCode) || st.lastTry() {
		st.owed = !rv.known
		return resp, nil // azcore will not retry it, as far as the policies know
	}
	if st.asksLate(resp.StatusCode, nil) {
		st.owed = true
		st.watch() // azcore's sleep, before the retry asked as it is sent
	} else if err := st.retry(); err != nil {
		return nil, err
	} else {
		st.watch()
	}
	st.strip(resp)
	return resp, nil
}

// asksLate reports whether the Guard is asked for the retry of an answer
// azcore retries, with status, or of a failed attempt, with err (status
// 0), when the retry is sent (by the next attempt), rather than at once:
// when the policies do not know azcore's retry options, and for a request
// azcosmos made (fromAzcosmos: it carries the header azcosmos sets on
// every request, whatever its client's endpoint, the emulator's or a host
// of one's own) answered with a status, or failed with an error,
// azcosmos may resend or give up itself. azcosmos runs a retry policy of
// its own in the per-retry stage ahead of this package's
// (clientRetryPolicy: on a 503, 408, 500, 502 or 504, a 403 or 404 of
// some sub-statuses, or a failed name resolution, a *net.DNSError, it
// sends the attempt again at once, to another region, or gives the answer
// up as an error azcore does not retry): asked at once, a retry azcosmos
// gave up would be paid for and counted, though never sent. Any other
// answer, a 429 among them, and any other failed attempt (a reset
// connection, a timeout), azcosmos hands to azcore as it came, and its
// retry is asked at once, as is any answer of a request azcosmos did not
// make (one on a Cosmos DB host too: aztables's on the Table API's), so
// that a refusal comes before azcore's backoff and the breaker's opening
// cuts the backoff (see watch).
func (st *callState) asksLate(status int, err error) bool {
	if !st.retryView().known {
		return true
	}
	if !st.azcosmos {
		return false
	}
	if err != nil {
		var dns *net.DNSError
		return errors.As(err, &dns)
	}
	switch status {
	case http.StatusServiceUnavailable, http.StatusRequestTimeout, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusGatewayTimeout, http.StatusForbidden, http.StatusNotFound:
		return true
	}
	return false
}

// lastTry reports whether the attempt just made is the last azcore makes,
// when the policies know azcore's MaxRetries.
func (st *callState) lastTry() bool {
	rv := st.retryView()
	return rv.known && st.tries > rv.maxRetries
}

// failedAttempt learns from a transport error (a reset connection, a
// timeout). resp is usually nil; azcore's body download returns the
// response with its error, and azcore drains it before retrying.
func (st *callState) failedAttempt(resp *http.Response, err error) (*http.Response, error) {
	st.last = nil
	st.gd.After(err)
	st.gd.Release()
	if st.ctx.Err() != nil || isNonRetriable(err) || st.lastTry() {
		return resp, err // azcore stops here; the per-call policy ends the Guard
	}
	if st.asksLate(0, err) {
		st.owed = true
		st.watch()
		return resp, err
	}
	if serr := st.retry(); serr != nil {
		return nil, drained(resp, serr)
	}
	st.watch()
	return resp, err
}

// watch cuts azcore's backoff sleep before the retry the Guard just
// allowed, or will be asked for as azcore sends it (owed: see asksLate),
// short when the scope's breaker opens and would still refuse the retry
// when the sleep ends, however long azcore's jitter makes it
// (resilience.Guard.AfterOpen, with shared.longestSleep): azcore sleeps on
// the context of the per-call policy's request, or of one a later policy
// derived from it, and the breaker's opening cancels it (rc's cut).
// azcore then ends its loop with the context's error (or, as the sleep
// ended, the next attempt does), and the per-call policy asks the Guard
// for the retry, which refuses it and records it as a refused retry would
// be. A breaker whose cooldown may
// end before the sleep does leaves it whole: the next attempt's Enter
// refuses the retry, or lets it go as the breaker's probe. A retry owed
// that azcore does not make (azcosmos gave the answer up, or resent it at
// once, itself) ends the watch as the request ends or the next attempt
// is sent. Only the per-call policy can cut, and only a sleep whose bound
// the policies know (the pipeline's retry options, ClientOptions', a
// ShouldRetry among them: shared.sleeps): without them, nothing is
// watched.
func (st *callState) watch() {
	rv := st.retryView()
	if st.raw == nil || !rv.sleeps {
		return
	}
	st.stopWatch = st.gd.AfterOpen(rv.longestSleep(st.tries), st.rc.Arm())
}

// cutEnded reports whether azcore's loop ended, with err, because the
// breaker's opening cut its sleep before a retry (or the attempt's
// context, as the sleep ended) while the request's context is live: the
// per-call policy then asks the Guard for the retry, as azcore's next
// attempt would have.
func (st *callState) cutEnded(err error) bool {
	cut := st.unwatch() || st.recut
	st.recut = false
	return cut && st.ctx.Err() == nil && errors.Is(err, context.Canceled)
}

// unwatch ends the watch of azcore's sleep, and reports whether it cut the
// sleep short.
func (st *callState) unwatch() (cut bool) {
	if st.stopWatch == nil {
		return false
	}
	cut = !st.stopWatch()
	st.stopWatch = nil
	return cut
}

// endCut stops the watch of azcore's sleep, if one is left, and cancels
// the cut of the context azcore slept on, if a retry made one.
func (st *callState) endCut() {
	st.unwatch() // a panic out of azcore's loop left its watch running
	if st.rc != nil {
		st.rc.Close()
	}
}

// renew gives the per-call policy's request a new context of the
// request's, after a cut ended the last.
func (st *callState) renew() {
	st.endCut()
	st.rc = &requestContext{gov: st.gov, own: &st.own}
	st.rc.gd.Store(st.gd)
	st.rc.Init(st.ctx)
	*st.raw = *st.raw.WithContext(st.rc)
}

// retry asks the Guard whether azcore may retry the last attempt, which it
// is about to do (or, when the policies could not tell, is doing). An empty retry budget ends azcore's loop with the
// *resilience.RetryBudgetExhaustedError; a hint that cannot be waited out
// within the deadline ends it with the provider's answer; a hint longer
// than the request may wait (resilience.WithMaxWait) ends it with the
// *resilience.WouldWaitError, which wraps the answer. Otherwise azcore
// goes on as its options say: it also retries a fatal answer whose status
// the caller listed, a retry the Guard counts and pays for like any other.
func (st *callState) retry() error {
	_, err := st.gd.Retry(0)
	switch e := err.(type) {
	case *resilience.RetryBudgetExhaustedError:
		return stop(reveal(e))
	case *resilience.DeadlineExceededError:
		return stop(reveal(e.Err))
	case *resilience.WouldWaitError:
		// The provider's hint is longer than the request may wait
		// (resilience.WithMaxWait): refused now, recorded by the Guard.
		return stop(reveal(e))
	}
	return nil
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
// pauses its scope until the quota resets; a Resource Manager bucket
// with less than a second's refill left (armQuotas) pauses the request
// for a second, once however many are low: remaining subscription reads
// under 25 (global reads under 375; a tenant-level request's tenant reads
// under 25) pause the account of the request's scope, the whole
// subscription or the tenant-level requests of its tenant (its Resource
// Graph queries among them); remaining writes or deletes under 10 (global
// ones under 150; a tenant-level request's tenant writes under 10) pause
// the request's own scope, its resource provider of the subscription, so
// that the subscription's other reads go on. With the account bucket
// turned off, a pause of the account falls back to the request's scope.
func (st *callState) proactive(h http.Header) {
	pauseFor(st.gd, armQuotaLow(h, st.tenant))
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
	return hint.ParseQuotaResetsAfter(r[0])
}

// final is azcore's final answer as the Guard's End takes it: the error,
// or an error status as the statusError the Guard saw, or nil.
func (st *callState) final(resp *http.Response, err error) error {
	if err != nil || resp == nil || resp.StatusCode < http.StatusBadRequest {
		return err
	}
	if st.last != nil && st.last.resp == resp {
		return st.last
	}
	return &statusError{resp: resp}
}

// strip hides the delay headers of a response azcore is about to retry,
// so that azcore sleeps its own backoff (at most MaxRetryDelay) and never
// gives up because the server asked for more than MaxRetryDelay; the
// next attempt's Enter waits out the rest. The headers go back on the
// response when the request ends, so a response the caller sees is
// unchanged.
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
		if st.s.asks {
			st.s.hidden.Store(resp, st)
		}
	}
}

// restore puts back the delay headers strip hid.
func (st *callState) restore() {
	if st.stripped == nil {
		return
	}
	if st.s.asks {
		st.s.hidden.Delete(st.stripped)
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

// statusError is an error answer as the Guard sees it: its status and
// headers, and the *azcore.ResponseError's message. It does not unwrap to
// the ResponseError, so that the answer's error code cannot override a
// status the core's table lists (a 429 RetryableErrorDueToAnotherOperation
// is throttling here); for any other status the package's error reader
// gives the core the code. The ResponseError is made when its message or
// code is first needed.
type statusError struct {
	resp *http.Response
	re   error
}

func (e *statusError) HTTPStatusCode() int { return e.resp.StatusCode }
func (e *statusError) Header() http.Header { return e.resp.Header }
func (e *statusError) Error() string       { return e.response().Error() }

// response returns the *azcore.ResponseError the answer stands for.
func (e *statusError) response() error {
	if e.re == nil {
		e.re = runtime.NewResponseError(e.resp)
	}
	return e.re
}

// reveal returns an error of the Guard as the caller should see it: a
// statusError, alone or as the Err of the core's error, becomes the
// *azcore.ResponseError it stands for.
func reveal(err error) error {
	switch e := err.(type) {
	case *statusError:
		return e.response()
	case *resilience.CircuitOpenError:
		e.Err = revealed(e.Err)
	case *resilience.RetryBudgetExhaustedError:
		e.Err = revealed(e.Err)
	case *resilience.DeadlineExceededError:
		e.Err = revealed(e.Err)
	case *resilience.WouldWaitError:
		e.Last = revealed(e.Last)
	}
	return err
}

func revealed(err error) error {
	if se, ok := err.(*statusError); ok {
		return se.response()
	}
	return err
}
