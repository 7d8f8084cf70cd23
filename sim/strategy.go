package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"golang.org/x/time/rate"

	"github.com/cloudg/cloudg/resilience"
)

// The client strategies, in table order.
const (
	AWSStandard   = "aws-standard"   // no governor; the AWS SDK's standard retryer (quota 500)
	AWSAdaptive   = "aws-adaptive"   // the AWS SDK's adaptive retry mode
	Static        = "static"         // x/time/rate at the configured rate, plain retries
	Failsafe      = "failsafe"       // failsafe-go retry + circuit breaker + rate limiter
	CloudgAIMD    = "cloudg-aimd"    // this governor, default settings (AIMD)
	CloudgGoodput = "cloudg-goodput" // this governor with controller: goodput
	// What a user of the AWS SDK installs: cloudgaws.Install at its
	// defaults, the SDK's retry middleware running the calls.
	CloudgAWS        = "cloudg-aws"         // cloudgaws.Install, the governor's defaults (AIMD)
	CloudgAWSGoodput = "cloudg-aws-goodput" // cloudgaws.Install with controller: goodput
)

// StrategyNames lists the clients a scenario runs unless it names its own,
// in table order.
var StrategyNames = []string{AWSStandard, AWSAdaptive, Static, Failsafe, CloudgAIMD, CloudgGoodput, CloudgAWS, CloudgAWSGoodput}

// ReferenceNames lists the strategies a scenario runs only when it names
// them (Scenario.Strategies, cloudg-sim -strategies).
var ReferenceNames = []string{Oracle}

// StrategyList returns the strategies the scenario runs: its Strategies,
// else StrategyNames, or EstateStrategyNames for an estate. The list is a
// copy, which the caller may change without changing the scenario's or
// the package's.
func (s *Scenario) StrategyList() []string {
	switch {
	case len(s.Strategies) > 0:
		return slices.Clone(s.Strategies)
	case s.Estate != nil:
		return slices.Clone(EstateStrategyNames)
	}
	return slices.Clone(StrategyNames)
}

// strategy is a client: it makes one logical call, calling attempt once per
// request it sends.
type strategy interface {
	Call(ctx context.Context, action string, attempt func(context.Context) error) error
	// Rate returns the client's rate limit summed over the actions, or NaN
	// when it has none it exposes.
	Rate() float64
	Close()
}

func newStrategy(name string, sc *Scenario, clock Clock) (strategy, error) {
	switch name {
	case AWSStandard:
		return newAWSStrategy(retry.NewStandard()), nil
	case AWSAdaptive:
		return newAWSStrategy(retry.NewAdaptiveMode()), nil
	case Static:
		return newStaticStrategy(sc, clock), nil
	case Oracle:
		return newOracleStrategy(sc, clock), nil
	case Failsafe:
		return newFailsafeStrategy(sc, clock), nil
	case CloudgAIMD:
		return newGovernorStrategy(sc, clock, controllerAIMD)
	case CloudgGoodput:
		return newGovernorStrategy(sc, clock, controllerGoodput)
	case CloudgAWS:
		return newInstalledStrategy(sc, clock, controllerAIMD)
	case CloudgAWSGoodput:
		return newInstalledStrategy(sc, clock, controllerGoodput)
	}
	return nil, fmt.Errorf("unknown strategy %q", name)
}

// The governor's controllers (ratelimit.<provider>.controller).
const (
	controllerAIMD    = "aimd"
	controllerGoodput = "goodput"
)

// retryable is what a hand-written retry loop retries: throttling, 429 and
// 5xx answers.
func retryable(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	s := ae.HTTPStatusCode()
	return s >= 500 || s == 429 || IsThrottle(err)
}

// awsStrategy is an AWS SDK client without a governor: every call goes
// through the SDK's own retry middleware (retry.Attempt, the Finalize step
// of every SDK operation) with the SDK's retryer, one retryer shared by all
// workers as one client would be. The simulated provider is the next
// handler, in place of signing and the HTTP transport.
type awsStrategy struct {
	mw *retry.Attempt
}

func newAWSStrategy(r aws.RetryerV2) *awsStrategy {
	return &awsStrategy{mw: retry.NewAttemptMiddleware(r, smithyhttp.RequestCloner)}
}

func (s *awsStrategy) Call(ctx context.Context, _ string, attempt func(context.Context) error) error {
	next := middleware.FinalizeHandlerFunc(func(ctx context.Context, _ middleware.FinalizeInput) (middleware.FinalizeOutput, middleware.Metadata, error) {
		return middleware.FinalizeOutput{}, middleware.Metadata{}, attempt(ctx)
	})
	_, _, err := s.mw.HandleFinalize(ctx, middleware.FinalizeInput{Request: smithyhttp.NewStackRequest()}, next)
	return err
}

func (s *awsStrategy) Rate() float64 { return math.NaN() }
func (s *awsStrategy) Close()        {}

// lockedRand is a seeded random source safe for concurrent use.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newLockedRand(seed, stream uint64) *lockedRand {
	return &lockedRand{r: rand.New(rand.NewPCG(seed, stream))}
}

func (l *lockedRand) Float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}

// staticStrategy is what a careful Go user writes by hand: an x/time/rate
// limiter per action at the configured rate and burst, and a retry loop
// with exponential backoff and full jitter. Oracle is the same retry loop
// paced by an oracle instead of the limiters.
type staticStrategy struct {
	clock Clock
	c     ClientSpec
	rng   *lockedRand
	pace  pacer
}

// pacer holds a request until it may be sent.
type pacer interface {
	wait(ctx context.Context, action string) error
	rate() float64 // the rate summed over the actions
}

func newStaticStrategy(sc *Scenario, clock Clock) *staticStrategy {
	l := &limiters{clock: clock, lim: map[string]*rate.Limiter{}}
	for _, a := range sc.Workload.Actions {
		if l.lim[a] == nil {
			// The limiter is driven with the simulation's time
			// (ReserveN(now)), never with its own time.Now.
			l.lim[a] = rate.NewLimiter(rate.Limit(sc.Client.Rate), int(sc.Client.Burst))
			l.sum += sc.Client.Rate
		}
	}
	return &staticStrategy{clock: clock, c: sc.Client, rng: newLockedRand(sc.Seed, 3), pace: l}
}

// limiters paces Static: an x/time/rate limiter per action.
type limiters struct {
	clock Clock
	lim   map[string]*rate.Limiter
	sum   float64
}

func (l *limiters) wait(ctx context.Context, action string) error {
	now := l.clock.Now()
	return l.clock.Sleep(ctx, l.lim[action].ReserveN(now, 1).DelayFrom(now))
}

func (l *limiters) rate() float64 { return l.sum }

func (s *staticStrategy) Call(ctx context.Context, action string, attempt func(context.Context) error) error {
	for n := 0; ; n++ {
		if err := s.pace.wait(ctx, action); err != nil {
			return err
		}
		err := attempt(ctx)
		if err == nil || !retryable(err) || n >= s.c.MaxRetries {
			return err
		}
		backoff := math.Min(float64(s.c.MaxBackoff), float64(s.c.BaseDelay)*math.Pow(2, float64(n)))
		if err := s.clock.Sleep(ctx, time.Duration(s.rng.Float64()*backoff)); err != nil {
			return err
		}
	}
}

func (s *staticStrategy) Rate() float64 { return s.pace.rate() }
func (s *staticStrategy) Close()        {}

// failsafeStrategy composes failsafe-go's policies as its documentation
// shows: a retry policy (exponential backoff with jitter) around a circuit
// breaker and a smooth rate limiter per action at the configured rate.
//
// failsafe-go reads the time package itself. Inside a synctest bubble that
// is the simulation's time; on a ScaledClock every duration and rate given
// to it is scaled to wall time, which is exact because its policies are
// linear in time.
type failsafeStrategy struct {
	retry retrypolicy.RetryPolicy[any]
	per   map[string]failsafe.Executor[any]
	sum   float64
}

func newFailsafeStrategy(sc *Scenario, clock Clock) *failsafeStrategy {
	scale := scaleOf(clock)
	wall := func(d time.Duration) time.Duration { return max(1, time.Duration(float64(d)/scale)) }
	c := sc.Client
	s := &failsafeStrategy{per: map[string]failsafe.Executor[any]{}}
	s.retry = retrypolicy.NewBuilder[any]().
		HandleIf(func(_ any, err error) bool { return retryable(err) || errors.Is(err, circuitbreaker.ErrOpen) }).
		WithMaxRetries(c.MaxRetries).
		WithBackoff(wall(c.BaseDelay), wall(c.MaxBackoff)).
		WithJitterFactor(0.5).
		ReturnLastFailure().
		Build()
	for _, a := range sc.Workload.Actions {
		if s.per[a] != nil {
			continue
		}
		cb := circuitbreaker.NewBuilder[any]().
			HandleIf(func(_ any, err error) bool { return retryable(err) }).
			WithFailureThreshold(uint(c.BreakerThreshold)).
			WithDelay(wall(c.BreakerDelay)).
			Build()
		rl := ratelimiter.NewSmoothBuilderWithMaxRate[any](wall(time.Duration(float64(time.Second) / c.Rate))).
			WithMaxWaitTime(wall(15 * time.Minute)).
			Build()
		s.per[a] = failsafe.With[any](s.retry, cb, rl)
		s.sum += c.Rate
	}
	return s
}

func (s *failsafeStrategy) Call(ctx context.Context, action string, attempt func(context.Context) error) error {
	return s.per[action].WithContext(ctx).RunWithExecution(func(exec failsafe.Execution[any]) error {
		return attempt(exec.Context())
	})
}

func (s *failsafeStrategy) Rate() float64 { return s.sum }
func (s *failsafeStrategy) Close()        {}

// governorStrategy is this project's governor: every call goes through
// resilience.Do with a governor on the simulation's clock. Its governor
// reports to observer, when set (the tests use it).
type governorStrategy struct {
	g      *resilience.Governor
	scopes []resilience.Scope
}

func newGovernorStrategy(sc *Scenario, clock Clock, controller string) (*governorStrategy, error) {
	cfg := sc.Governor
	cfg.AWS.Controller = controller
	opts := []resilience.GovernorOption{resilience.WithClock(clock), resilience.WithRandom(rand.NewPCG(sc.Seed, 5))}
	if sc.observer != nil {
		opts = append(opts, resilience.WithObserver(sc.observer))
	}
	g, err := resilience.NewGovernor(cfg, opts...)
	if err != nil {
		return nil, err
	}
	s := &governorStrategy{g: g}
	for _, a := range sc.Workload.Actions {
		if sp := sc.Scope(a); !slices.Contains(s.scopes, sp) {
			s.scopes = append(s.scopes, sp)
		}
	}
	return s, nil
}

func (s *governorStrategy) Call(ctx context.Context, action string, attempt func(context.Context) error) error {
	for i := range s.scopes {
		if s.scopes[i].Operation == action {
			return resilience.Do(ctx, s.scopes[i], attempt, resilience.WithGovernor(s.g))
		}
	}
	return fmt.Errorf("no scope for %s", action)
}

// Rate returns the governor's leaf rates summed over the actions: the
// adaptive rate.
func (s *governorStrategy) Rate() float64 {
	var sum float64
	for _, sp := range s.scopes {
		sum += s.g.Inspect(sp).Leaf.Rate
	}
	return sum
}

func (s *governorStrategy) Close() {}
