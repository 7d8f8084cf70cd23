package cloudgaws

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/cloudg/cloudg/internal/errread"
)

// retryer is the SDK retryer of a governed client: the SDK's standard or
// adaptive retryer (or the one WithBaseRetryer gave), with the governor's
// veto at GetRetryToken, the point where the SDK has decided to retry and
// has not slept yet.
type retryer struct {
	aws.RetryerV2
	inst *installation

	// The retries GetRetryToken allowed whose backoff RetryDelay has not
	// given yet, by the error the SDK retries: RetryDelay, which the SDK
	// calls next with the same error and no context, finds the call it
	// gives the backoff of here.
	mu      sync.Mutex
	pending map[error]pendingRetry
}

// pendingRetry is the call, or calls, that retry one error value.
type pendingRetry struct {
	st *callState // nil: more than one call retries the same error value
	n  int
}

// newRetryer is the aws.Config.Retryer Install sets: each client gets its
// own.
func (inst *installation) newRetryer() aws.Retryer {
	var base aws.Retryer
	if inst.base != nil {
		base = inst.base()
		if r, ok := base.(*retryer); ok {
			base = r.RetryerV2
		}
		if base != nil && inst.explicitMax {
			base = retry.AddWithMaxAttempts(base, inst.attempts)
		}
	}
	if base == nil {
		// The governor's retry budget replaces the SDK's per-client retry
		// quota, the one that runs dry under fan-out.
		std := func(o *retry.StandardOptions) {
			o.MaxAttempts = inst.attempts
			o.RateLimiter = ratelimit.None
		}
		if inst.mode == aws.RetryModeStandard {
			base = retry.NewStandard(std)
		} else {
			base = retry.NewAdaptiveMode(func(o *retry.AdaptiveModeOptions) {
				o.StandardOptions = append(o.StandardOptions, std)
			})
		}
	}
	return &retryer{RetryerV2: asV2(base), inst: inst}
}

// IsErrorRetryable is the base retryer's answer, except for the errors
// with which the governor ended the call: a retryer of the user's may not
// read their RetryableError method.
func (r *retryer) IsErrorRetryable(err error) bool {
	if own, _ := errread.Read(err, governorsEnd); own {
		return false
	}
	return r.RetryerV2.IsErrorRetryable(err)
}

// governorsEnd reports whether err holds an error with which the governor
// ended the call (*ThrottlingError, *notRetryable, *stopped). A nil
// *ThrottlingError is one: its methods read it as the governor's
// ("throttled by the governor", not retryable), so it is matched as
// errors.As matches it, not taken for no match as errread.As takes a
// typed nil whose fields a caller would read. IsErrorRetryable reads it
// through errread.Read, which recovers the panic of a typed nil of
// another type whose Unwrap reads its receiver.
func governorsEnd(err error) bool {
	var te *ThrottlingError
	var nr *notRetryable
	var sp *stopped
	return errors.As(err, &te) || errors.As(err, &nr) || errors.As(err, &sp)
}

// GetRetryToken is called by the SDK's retry loop once it has decided to
// retry, before its backoff sleep. The guard decides whether the retry
// may go (callState.retry): past the call's first two it costs a token of
// the provider's retry budget, and an empty budget ends the loop with a
// *ThrottlingError; a Retry-After that would pass the context's deadline
// ends it with the provider's error. The retry is counted when it is sent.
// A refused retry ends the call at once: the SDK's retry loop, which
// sleeps the retryer's backoff (and the answer's x-amz-retry-after)
// before returning a refused retry of a long-polling operation (SQS
// ReceiveMessage), finds the call's context cut and sleeps none, so the
// account's bulkhead slot the call holds across the SDK's retries is not
// held for a sleep after which nothing is sent. A retry the base
// retryer refuses (a retryer of the caller's) ends the call too: the
// SDK's sleep before returning it, that retryer's word, is kept, but the
// call ends at once, its slot given back and its outcome recorded (see
// callState.refused).
//
// The base retryer's retry quota (the SDK's per-client token bucket, whose
// refusal is a ratelimit.QuotaExceededError: "retry quota exceeded") does
// not refuse a retry the guard is asked about: the governor's retry
// budget, shared by every client of the process, takes its place, as it
// does for the SDK's retryer Install makes (whose quota is
// ratelimit.None). A retryer of the caller's (kept from cfg.Retryer, or
// WithBaseRetryer's) is most often the SDK's standard one, quota and all.
func (r *retryer) GetRetryToken(ctx context.Context, opErr error) (func(error) error, error) {
	release, err := r.RetryerV2.GetRetryToken(ctx, opErr)
	st := stateFrom(ctx)
	governed := st != nil && st.gd != nil && st.unsent == nil
	if err != nil {
		if !governed || !quotaExceeded(err) {
			if governed {
				st.refused(opErr, err)
				// The SDK asks RetryDelay for its sleep before returning
				// the refusal of a long poll: it must find this call, or
				// none, never another call's retry of the same error value.
				r.expect(opErr, st)
			}
			return release, err
		}
		release = noRelease // the quota took no token
	}
	if !governed {
		// Not governed, or the retry of an attempt that never left the
		// process: no retry of the scope's, nothing to ask or watch.
		return release, nil
	}
	if stop := st.retry(); stop != nil {
		if release != nil {
			_ = release(nil) // the base retryer's token goes back: no retry is made
		}
		// The SDK sleeps the retryer's RetryDelay before returning a
		// refused retry of a long-polling operation (SQS ReceiveMessage),
		// on the call's context: the cut ends that sleep at once, and the
		// call ends at the refusal, its slot given back.
		st.cut.Arm()()
		// The SDK asks RetryDelay for that sleep: it must find this call,
		// or none, never another call's retry of the same error value.
		r.expect(opErr, st)
		return nil, stop
	}
	st.retryAccounted = true
	r.expect(opErr, st)
	// The sleep's watch starts now, not knowing its length: a retryer of
	// the caller's wrapped around this one with a backoff of its own
	// (retry.AddWithMaxBackoffDelay's kind) never asks RetryDelay, and its
	// sleep is cut whenever the breaker opens during it. RetryDelay, when
	// asked, watches it again knowing its length. A governed retryer
	// inside this one (a retryer of the user's wrapped around an
	// installed config's, installed again on a copy after an AssumeRole)
	// started a watch of this sleep already: it gives way to this one's.
	st.rewatch(0)
	return release, nil
}

// refused ends the call at a retry its base retryer (the caller's,
// kept from cfg.Retryer or WithBaseRetryer's) refused with err, after the
// attempt that failed with opErr: the SDK's loop ends, and nothing more
// is sent. The call ends here, not when it returns (Guard.End: its slot
// goes back, and its outcome is recorded, a throttled give-up or a
// failure counting towards its breaker, a half-open breaker's probe
// giving its verdict): the SDK sleeps the retryer's backoff before
// returning the refusal of a long poll (SQS ReceiveMessage), as its
// contract with a long poll has it (a polling loop whose retries are
// refused does not spin), and that sleep is kept, but it is no part of
// the call: nothing is in flight, and a context cancelled during it does
// not make the call a cancelled one. The call's error is the SDK's, the
// answer joined with the refusal; a retryer of the caller's wrapped
// around this one that retried anyway sends nothing more (see
// attemptMiddleware). A refusal the governor made before (a governed
// retryer inside this one) stays the call's error, and the call ends as
// it returns, the SDK's sleep cut.
func (s *callState) refused(opErr, err error) {
	if s.stopErr != nil {
		s.gd.Release()
		return
	}
	s.stopErr = errors.Join(opErr, err)
	s.gate.Close()
	s.gd.End(s.stopErr)
	s.ended = true
}

// noRelease is the release of a retry token no quota gave.
func noRelease(error) error { return nil }

// RetryDelay is the base retryer's backoff. For a governed call whose
// retry GetRetryToken allowed, the SDK sleeps it next (with the
// response's x-amz-retry-after, see sdkSleep): the call's watch of the
// sleep starts here, knowing how long it is (the Guard measures it, as
// the retry's delay its Retry event reports, from GetRetryToken's
// Guard.Retry to the retry's Guard.Pace). After a retry GetRetryToken
// refused, which the SDK asks it for before returning the refusal of a
// long-polling operation, it watches nothing: the call has ended (the
// governor's refusal cut its context, and the SDK's sleep ends at once;
// after its base retryer's, the sleep is that retryer's word, no part of
// the call), and neither does it watch the sleep of another call of the
// client that retries the same error value.
func (r *retryer) RetryDelay(attempt int, opErr error) (time.Duration, error) {
	d, err := r.RetryerV2.RetryDelay(attempt, opErr)
	if st := r.take(opErr); st != nil && err == nil && st.stopErr == nil {
		st.rewatch(sdkSleep(d, opErr))
	}
	return d, err
}

// expect notes that st's retry of opErr was allowed: the SDK asks
// RetryDelay for its backoff next. An error value that is not a pointer
// cannot tell calls apart (nor, some, be a map key): its call's sleep
// keeps the watch GetRetryToken started, which does not know its length.
func (r *retryer) expect(opErr error, st *callState) {
	st.forget() // a retryer of the caller's around this one did not ask for the last
	if opErr == nil || reflect.TypeOf(opErr).Kind() != reflect.Pointer {
		return
	}
	r.mu.Lock()
	if r.pending == nil {
		r.pending = make(map[error]pendingRetry)
	}
	p := r.pending[opErr]
	if p.n == 0 {
		p.st = st
	} else if p.st != st {
		p.st = nil // two calls retry one error value (a sentinel): neither is found
	}
	p.n++
	r.pending[opErr] = p
	r.mu.Unlock()
	st.expected, st.expectedErr = r, opErr
}

// take returns the call whose backoff before retrying opErr RetryDelay
// gives, if one call alone expects it, and forgets it.
func (r *retryer) take(opErr error) *callState {
	if opErr == nil || reflect.TypeOf(opErr).Kind() != reflect.Pointer {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.pending[opErr]
	if !ok {
		return nil
	}
	if p.n--; p.n == 0 {
		delete(r.pending, opErr)
	} else {
		r.pending[opErr] = p
	}
	if p.st != nil {
		p.st.expected = nil
	}
	return p.st
}

// forget drops st's expectation, if RetryDelay did not take it (the SDK's
// loop ended between, or a retryer of the caller's around this one does
// not ask it).
func (s *callState) forget() {
	if s.expected != nil {
		s.expected.drop(s.expectedErr, s)
		s.expected, s.expectedErr = nil, nil
	}
}

// drop forgets st's expectation of a retry of opErr while it is st's
// alone. The expectations of an error value other calls retry too (a
// sentinel) are left as they are: whether a RetryDelay took st's already
// is not known, and another call's must not be taken for it, since that
// call's RetryDelay would then find st and watch its sleep from the wrong
// goroutine. Such an entry names no call: the sleeps of the retries of
// its error value keep the watch GetRetryToken started, which does not
// know their length, as for any error value calls share.
func (r *retryer) drop(opErr error, st *callState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pending[opErr]; ok && p.st == st {
		delete(r.pending, opErr) // st's alone: one expectation, since expect forgets st's last first
	}
}

// sdkSleep is how long the SDK's retry loop sleeps before retrying opErr,
// given its retryer's delay d: the response's x-amz-retry-after, in
// milliseconds, kept within [d, d+5s] (the rule of the SDK's retry
// middleware), or d.
func sdkSleep(d time.Duration, opErr error) time.Duration {
	var re *awshttp.ResponseError
	if found, _ := errread.As(opErr, &re); !found || re.Response == nil || re.Response.Response == nil {
		return d
	}
	v := re.Response.Header.Get("X-Amz-Retry-After")
	if v == "" {
		return d
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return d
	}
	return min(max(time.Duration(ms)*time.Millisecond, d), d+5*time.Second)
}

// quotaExceeded reports whether err, a base retryer's refusal of a retry
// token, is its retry quota's (ratelimit.QuotaExceededError: "retry quota
// exceeded").
func quotaExceeded(err error) bool {
	var qe ratelimit.QuotaExceededError
	found, _ := errread.As(err, &qe)
	return found
}

// asV2 is the SDK's own adaptation of a plain Retryer.
func asV2(r aws.Retryer) aws.RetryerV2 {
	if v, ok := r.(aws.RetryerV2); ok {
		return v
	}
	return v1Retryer{r}
}

type v1Retryer struct{ aws.Retryer }

func (w v1Retryer) GetAttemptToken(context.Context) (func(error) error, error) {
	return w.Retryer.GetInitialToken(), nil
}
