package cloudgaws

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/cloudg/cloudg/resilience"
)

// The retryer Install sets is the SDK's standard one by default, the
// adaptive one in adaptive mode, with max retries + 1 attempts, wrapped
// with the governor's veto.
func TestRetryerKinds(t *testing.T) {
	for _, tc := range []struct {
		opts     []Option
		prepare  func(*aws.Config)
		adaptive bool
		attempts int
	}{
		{nil, nil, false, 11},
		{[]Option{WithRetryMode(aws.RetryModeAdaptive)}, nil, true, 11},
		{[]Option{WithRetryMode(aws.RetryModeStandard)}, nil, false, 11},
		{nil, func(c *aws.Config) { c.RetryMode = aws.RetryModeAdaptive }, true, 11},
		{[]Option{WithMaxRetries(3)}, nil, false, 4},
		{[]Option{WithConfig(Config{RetryMode: aws.RetryModeStandard, MaxRetries: new(int)})}, nil, false, 1},
	} {
		cfg := aws.Config{}
		if tc.prepare != nil {
			tc.prepare(&cfg)
		}
		if err := Install(&cfg, "*", tc.opts...); err != nil {
			t.Fatal(err)
		}
		r, ok := cfg.Retryer().(*retryer)
		if !ok {
			t.Fatalf("retryer %T", cfg.Retryer())
		}
		_, isAdaptive := r.RetryerV2.(*retry.AdaptiveMode)
		_, isStandard := r.RetryerV2.(*retry.Standard)
		if isAdaptive != tc.adaptive || isStandard == tc.adaptive {
			t.Fatalf("%+v: base retryer %T", tc, r.RetryerV2)
		}
		if r.MaxAttempts() != tc.attempts {
			t.Fatalf("%+v: %d attempts", tc, r.MaxAttempts())
		}
		if want := map[bool]aws.RetryMode{true: aws.RetryModeAdaptive, false: aws.RetryModeStandard}[tc.adaptive]; cfg.RetryMode != want {
			t.Fatalf("%+v: cfg.RetryMode %q, want %q", tc, cfg.RetryMode, want)
		}
	}
}

// Reinstalling without options keeps the earlier installation's retry
// settings and base retryer, and replaces its middleware.
func TestReinstallKeepsSettings(t *testing.T) {
	cfg := aws.Config{}
	base := func() aws.Retryer { return retry.NewStandard() }
	if err := Install(&cfg, "*", WithBaseRetryer(base), WithMaxRetries(5)); err != nil {
		t.Fatal(err)
	}
	if err := Install(&cfg, "111122223333"); err != nil {
		t.Fatal(err)
	}
	r := cfg.Retryer().(*retryer)
	if r.inst.account != "111122223333" || r.MaxAttempts() != 6 {
		t.Fatalf("account %s, %d attempts", r.inst.account, r.MaxAttempts())
	}
	if len(cfg.APIOptions) != 1 {
		t.Fatalf("%d APIOptions", len(cfg.APIOptions))
	}
	// A ctx without a call's state: the retryer is the base one.
	if _, err := r.GetRetryToken(context.Background(), &ThrottlingError{Err: context.Canceled}); err != nil {
		t.Fatal(err)
	}
}

// The governor's own errors end the SDK's loop even under a base retryer
// that would retry anything: the veto does not rely on the base retryer
// reading their RetryableError method.
func TestRetryerVetoesGovernorsErrors(t *testing.T) {
	always := func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.Retryables = []retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(error) aws.Ternary { return aws.TrueTernary })}
		})
	}
	cfg := aws.Config{}
	if err := Install(&cfg, "*", WithBaseRetryer(always)); err != nil {
		t.Fatal(err)
	}
	r := cfg.Retryer().(*retryer)
	if !r.RetryerV2.IsErrorRetryable(&ThrottlingError{Err: context.Canceled}) {
		t.Fatal("the base retryer does not retry everything: the test proves nothing")
	}
	if !r.IsErrorRetryable(context.Canceled) {
		t.Fatal("an error of the SDK's is not left to the base retryer")
	}
	for _, err := range []error{&ThrottlingError{Err: context.Canceled}, &notRetryable{err: context.Canceled}} {
		if r.IsErrorRetryable(err) {
			t.Fatalf("%T is retryable", err)
		}
	}
}

// valueErr is an error that is not a pointer.
type valueErr struct{ s string }

func (e valueErr) Error() string { return e.s }

// RetryDelay finds the call whose retry GetRetryToken allowed by the error
// retried, when one call alone retries that error value; an error value
// two calls share (a sentinel), or one that is not a pointer, finds none,
// and nothing is left behind: an expectation RetryDelay does not take is
// forgotten when the call ends, or retries again.
func TestRetryerFindsTheCallOfARetry(t *testing.T) {
	r := &retryer{}
	a, b := &callState{}, &callState{}
	errA, sentinel := errors.New("a"), errors.New("shared")
	r.expect(errA, a)
	if got := r.take(errA); got != a || len(r.pending) != 0 || a.expected != nil {
		t.Fatalf("take: %p, want %p; %d pending", got, a, len(r.pending))
	}
	r.expect(sentinel, a)
	r.expect(sentinel, b)
	if r.take(sentinel) != nil || r.take(sentinel) != nil {
		t.Fatal("a call found for an error value two calls retry")
	}
	a.forget()
	b.forget()
	r.expect(valueErr{"v"}, a)
	if r.take(valueErr{"v"}) != nil {
		t.Fatal("a call found for an error that is not a pointer")
	}
	r.expect(errA, a)
	r.expect(errors.New("next"), a) // RetryDelay was not asked for errA
	a.forget()
	if len(r.pending) != 0 || a.expected != nil {
		t.Fatalf("%d expectations left behind", len(r.pending))
	}
}

// Two calls that retry one error value (a sentinel) and then retry it
// again, each in turn: RetryDelay never finds the other call, whose sleep
// it would watch from the wrong goroutine; at most it finds none.
func TestRetryerNeverFindsAnotherCall(t *testing.T) {
	r := &retryer{}
	a, b := &callState{}, &callState{}
	sentinel := errors.New("shared")
	r.expect(sentinel, a)
	r.expect(sentinel, b)
	r.take(sentinel) // a's RetryDelay
	r.take(sentinel) // b's
	r.expect(sentinel, a)
	r.expect(sentinel, b) // b's forget must not take a's expectation
	// a's RetryDelay, then b's:
	if got := r.take(sentinel); got != nil && got != a {
		t.Fatalf("a's RetryDelay found b's call (%p; a %p, b %p)", got, a, b)
	}
	if got := r.take(sentinel); got != nil && got != b {
		t.Fatalf("b's RetryDelay found a's call (%p; a %p, b %p)", got, a, b)
	}
}

// sqsCall begins and enters a call of SQS operation op governed by gov
// with the SDK's policy, as the middleware does, and returns its
// callState (its cut set up) and its guard; the test's cleanup ends the
// cut and the guard, unless the call ended it (callState.ended).
func sqsCall(t *testing.T, gov *resilience.Governor, op string) (*callState, *resilience.Guard) {
	t.Helper()
	gd, err := gov.Begin(context.Background(), resilience.Scope{Provider: provider, Account: "*", Region: "r", Service: "sqs", Operation: op}, sdkPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if err := gd.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := &callState{gov: gov, gd: gd}
	st.cut.Init(context.Background())
	t.Cleanup(func() {
		st.endCut()
		if !st.ended {
			gd.End(nil)
		}
	})
	return st, gd
}

// watchedNoSleep checks that the RetryDelay asked after a's refused retry
// of sentinel watched neither a's sleep nor b's, whose retry of sentinel
// was allowed, then asks b's RetryDelay, and checks that nothing is left
// expected once both calls forget theirs.
func watchedNoSleep(t *testing.T, r *retryer, a, b *callState, sentinel error) {
	t.Helper()
	if b.stopWatch != nil || a.stopWatch != nil {
		t.Fatalf("the RetryDelay after a's refused retry watched a sleep (a's: %v, b's: %v)", a.stopWatch != nil, b.stopWatch != nil)
	}
	if _, err := r.RetryDelay(1, sentinel); err != nil { // b's
		t.Fatal(err)
	}
	a.forget()
	b.forget()
	if len(r.pending) != 0 {
		t.Fatalf("%d expectations left behind", len(r.pending))
	}
}

// A RetryDelay the SDK asks after a retry the governor refused (it does
// for a long-polling operation, SQS ReceiveMessage, before returning the
// refusal) finds no call: not the refused one, whose sleep is cut and
// nothing follows, and never another call of the client that retries the
// same error value (a sentinel) and whose RetryDelay is still to come,
// whose sleep it would watch from the refused call's goroutine.
func TestRetryDelayAfterARefusalFindsNoCall(t *testing.T) {
	gov, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: new(int)}})
	if err != nil {
		t.Fatal(err)
	}
	r := &retryer{RetryerV2: retry.NewStandard(func(o *retry.StandardOptions) { o.RateLimiter = ratelimit.None })}
	sentinel := &smithyhttp.RequestSendError{Err: errors.New("connection reset")} // transient, a pointer

	// b's retry of the sentinel is allowed; its RetryDelay is still to come.
	b, gb := sqsCall(t, gov, "SendMessage")
	gb.After(sentinel)
	if _, err := r.GetRetryToken(b, sentinel); err != nil {
		t.Fatal(err)
	}
	b.unwatch() // GetRetryToken's watch of b's sleep; RetryDelay's is looked for below

	// refused spends a call's two free retries of opErr, and has its
	// third refused (the budget is empty) and its RetryDelay asked, as the
	// SDK asks it for a long poll.
	refused := func(op string, opErr error) *callState {
		st, gd := sqsCall(t, gov, op)
		for range 2 {
			gd.After(opErr)
			if _, err := gd.Retry(0); err != nil {
				t.Fatal(err)
			}
			if err := gd.Pace(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		gd.After(opErr)
		if _, err := r.GetRetryToken(st, opErr); err == nil {
			t.Fatal("the third retry was allowed: the test proves nothing")
		}
		if _, err := r.RetryDelay(3, opErr); err != nil {
			t.Fatal(err)
		}
		return st
	}

	// The refused call's error is its alone.
	if c := refused("ReceiveMessage", &smithyhttp.RequestSendError{Err: errors.New("reset")}); c.stopWatch != nil {
		t.Fatal("the RetryDelay after a refused retry watched the refused call's sleep")
	}

	a := refused("ReceiveMessage", sentinel)
	watchedNoSleep(t, r, a, b, sentinel)
}

// refusingBase is a caller's retryer (the base of the governed one) that
// refuses the retry token of the calls whose context is in refuse, and
// gives the others the standard retryer's.
type refusingBase struct {
	aws.RetryerV2
	refuse map[context.Context]bool
}

func (b refusingBase) GetRetryToken(ctx context.Context, err error) (func(error) error, error) {
	if b.refuse[ctx] {
		return nil, errors.New("retry refused by the caller's retryer")
	}
	return b.RetryerV2.GetRetryToken(ctx, err)
}

// The RetryDelay the SDK asks after a retry the caller's own retryer
// refused (the base retryer's refusal, for a long-polling operation,
// before the SDK returns it) finds no call either: never another call of
// the client that retries the same error value (a sentinel) and whose
// RetryDelay is still to come, whose sleep it would watch from the
// refused call's goroutine, leaving that call's own RetryDelay nothing.
func TestRetryDelayAfterACallerRefusalFindsNoCall(t *testing.T) {
	gov, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	base := refusingBase{
		RetryerV2: retry.NewStandard(func(o *retry.StandardOptions) { o.RateLimiter = ratelimit.None }),
		refuse:    map[context.Context]bool{},
	}
	r := &retryer{RetryerV2: base}
	sentinel := &smithyhttp.RequestSendError{Err: errors.New("connection reset")} // transient, a pointer

	// b's retry of the sentinel is allowed; its RetryDelay is still to come.
	b, gb := sqsCall(t, gov, "SendMessage")
	gb.After(sentinel)
	if _, err := r.GetRetryToken(b, sentinel); err != nil {
		t.Fatal(err)
	}
	b.unwatch() // GetRetryToken's watch of b's sleep; RetryDelay's is looked for below

	// a's retry of the sentinel is refused by the caller's retryer, and
	// its RetryDelay asked, as the SDK asks it for a long poll.
	a, ga := sqsCall(t, gov, "ReceiveMessage")
	base.refuse[a] = true
	ga.After(sentinel)
	if _, err := r.GetRetryToken(a, sentinel); err == nil {
		t.Fatal("a's retry was allowed: the test proves nothing")
	}
	if _, err := r.RetryDelay(1, sentinel); err != nil {
		t.Fatal(err)
	}
	watchedNoSleep(t, r, a, b, sentinel)
}
