package cloudgaws

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// retryer is the SDK retryer of a governed client: the SDK's standard or
// adaptive retryer (or the one WithBaseRetryer gave), with the governor's
// veto at GetRetryToken, the point where the SDK has decided to retry and
// has not slept yet.
type retryer struct {
	aws.RetryerV2
	inst *installation
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
	var te *ThrottlingError
	var nr *notRetryable
	if errors.As(err, &te) || errors.As(err, &nr) {
		return false
	}
	return r.RetryerV2.IsErrorRetryable(err)
}

// GetRetryToken is called by the SDK's retry loop once it has decided to
// retry, before its backoff sleep. The guard decides whether the retry
// may go (callState.retry): past the call's first two it costs a token of
// the provider's retry budget, and an empty budget ends the loop with a
// *ThrottlingError; a Retry-After that would pass the context's deadline
// ends it with the provider's error. The retry is counted when it is sent.
func (r *retryer) GetRetryToken(ctx context.Context, opErr error) (func(error) error, error) {
	release, err := r.RetryerV2.GetRetryToken(ctx, opErr)
	if err != nil {
		return release, err
	}
	st := stateFrom(ctx)
	if st == nil || st.gd == nil {
		return release, nil
	}
	if stop := st.retry(); stop != nil {
		if release != nil {
			_ = release(nil) // the base retryer's token goes back: no retry is made
		}
		return nil, stop
	}
	st.retryAccounted = true
	st.watch()
	return release, nil
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
