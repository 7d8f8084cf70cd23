package test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// internalRetryAfter is a transient answer with an x-amz-retry-after.
func internalRetryAfter(ms string) reply {
	r := ec2Internal
	r.header = map[string]string{"X-Amz-Retry-After": ms}
	return r
}

// The SDK's backoff sleep is cut only when the breaker that opened during
// it would still refuse the retry when the sleep ends. With a cooldown
// shorter than the rest of the sleep the breaker is half-open by then:
// the sleep is left whole, and the retry goes as the breaker's probe
// (here it succeeds, and closes the breaker). The sleep is the retryer's
// backoff, or the response's x-amz-retry-after when longer (at most 5 s
// more): a 2 s backoff with a 7 s x-amz-retry-after sleeps 7 s, which a
// 4 s cooldown from 1 s in does not outlast. (The answer is transient, so
// that its hint holds that call only, and not the calls that open the
// breaker.) Before, the sleep was cut
// as the breaker opened, whatever was left of it, and the retry refused.
func TestTheSDKsSleepIsCutOnlyWhenTheRetryWouldBeRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cooldown float64 // 0: the default, 60 s
		backoff  time.Duration
		first    reply // the call's first answer
		cut      bool
		sleep    time.Duration // the SDK's sleep, when whole
	}{
		{name: "a cooldown past the sleep", backoff: 20 * time.Second, first: ec2Throttle, cut: true},
		{name: "a cooldown that ends first", cooldown: 5, backoff: 20 * time.Second, first: ec2Throttle, sleep: 20 * time.Second},
		{name: "x-amz-retry-after past the cooldown", cooldown: 4, backoff: 2 * time.Second, first: internalRetryAfter("7000"), sleep: 7 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				// The call's first attempt, five calls that open the
				// breaker, then the call's retry.
				f.script("DescribeVpcs", tc.first, ec2Throttle, ec2Throttle, ec2Throttle, ec2Throttle, ec2Throttle, ok)
				slow, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{BreakerCooldownSeconds: tc.cooldown}},
					cloudgaws.WithBaseRetryer(func() aws.Retryer {
						return retry.NewStandard(func(o *retry.StandardOptions) {
							o.MaxAttempts = 2
							o.RateLimiter = ratelimit.None
							o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return tc.backoff, nil })
						})
					}))
				start := time.Now()
				at, opened, err := openDuringTheSleep(t, f, slow, g, nil)
				var coe *resilience.CircuitOpenError
				switch {
				case tc.cut && (!errors.As(err, &coe) || at != opened || f.count("DescribeVpcs") != 6):
					t.Errorf("ended at %v with %v after %d requests; want a CircuitOpenError as the breaker opened at %v, 6 requests",
						at, err, f.count("DescribeVpcs"), opened)
				case !tc.cut && (err != nil || f.count("DescribeVpcs") != 7):
					t.Errorf("ended at %v with %v after %d requests; want the retry sent as the probe, answered", at, err, f.count("DescribeVpcs"))
				case !tc.cut:
					if sent := f.sentAt("DescribeVpcs"); sent[6].Sub(start) != tc.sleep {
						t.Errorf("the retry was sent at %v, want after the whole sleep, %v", sent[6].Sub(start), tc.sleep)
					}
					if s := g.Inspect(mustScope(ec2Key + "/DescribeVpcs")).Breaker.State; s != state.Closed {
						t.Errorf("the breaker is %v after the probe's success, want closed", s)
					}
				}
			})
		})
	}
}

// openDuringTheSleep runs a call of a client of slow (with opt, if not
// nil) whose first attempt is throttled, and opens its scope's breaker a
// second into the SDK's backoff sleep with five calls that are throttled
// too, each once, through a client of g with no retries. It returns when
// the call ended, and when the breaker opened, since the start, and the
// call's error.
func openDuringTheSleep(t *testing.T, f *fakeAWS, slow aws.Config, g *resilience.Governor, opt func(*ec2.Options)) (at, opened time.Duration, err error) {
	t.Helper()
	once, _ := governedWith(t, f, g)
	once.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	var opts []func(*ec2.Options)
	if opt != nil {
		opts = append(opts, opt)
	}
	start := time.Now()
	done := make(chan error)
	go func() {
		err := describeVpcs(context.Background(), ec2.NewFromConfig(slow, opts...))
		at = time.Since(start)
		done <- err
	}()
	synctest.Wait() // throttled once, asleep in the SDK's backoff
	time.Sleep(time.Second)
	others := ec2.NewFromConfig(once)
	for range 5 {
		_ = describeVpcs(context.Background(), others)
	}
	opened = time.Since(start)
	if s := g.Inspect(mustScope(ec2Key + "/DescribeVpcs")).Breaker.State; s != state.Open {
		t.Fatalf("the breaker is %v, want open", s)
	}
	err = <-done
	return at, opened, err
}

// fixedDelay is a retryer of the caller's wrapped around a client's, as
// retry.AddWithMaxBackoffDelay wraps one: its own RetryDelay, which does
// not ask the retryer it wraps.
type fixedDelay struct {
	aws.RetryerV2
	d time.Duration
}

func (r fixedDelay) RetryDelay(int, error) (time.Duration, error) { return r.d, nil }

// A client whose retryer is wrapped in one of the caller's with its own
// backoff (retry.AddWithMaxBackoffDelay's kind) still has its sleep cut
// when the breaker opens, with the default 60 s cooldown, 1 s into a
// 20 s sleep.
func TestTheSleepOfAWrappedRetryerIsCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeVpcs", ec2Throttle, ec2Throttle, ec2Throttle, ec2Throttle, ec2Throttle, ec2Throttle, ok)
		slow, g := governed(t, f, resilience.Config{})
		at, opened, err := openDuringTheSleep(t, f, slow, g, func(o *ec2.Options) {
			o.Retryer = fixedDelay{o.Retryer.(aws.RetryerV2), 20 * time.Second}
		})
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || at != opened {
			t.Errorf("ended at %v with %v; want a CircuitOpenError as the breaker opened at %v", at, err, opened)
		}
	})
}

// askAfterWait is a retryer of the caller's wrapped around a client's that
// asks the one it wraps for the backoff, as retry.AddWithMaxBackoffDelay's
// does, once every other goroutine of the bubble is blocked: the watch the
// governed retryer started at GetRetryToken has run by then.
type askAfterWait struct{ aws.RetryerV2 }

func (r askAfterWait) RetryDelay(attempt int, err error) (time.Duration, error) {
	synctest.Wait()
	return r.RetryerV2.RetryDelay(attempt, err)
}

// A retry allowed while the scope's breaker is open already (the answer
// came after other calls opened it) is cut at once, before the SDK asks
// its backoff; the call ends with the breaker's refusal, never with a
// cancellation of the caller's live context. Before, the retryer's
// RetryDelay restarted the watch and forgot the cut it had made: the SDK
// slept on the cancelled context, and the call ended with
// context.Canceled.
func TestARetryAllowedIntoAnOpenBreakerEndsWithItsRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeVpcs", ec2Throttle, ec2Throttle, ec2Throttle, ec2Throttle, ec2Throttle, ec2Throttle, ok)
		slow, g := governed(t, f, resilience.Config{})
		once, _ := governedWith(t, f, g)
		once.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
		release := make(chan struct{})
		var n atomic.Int32
		f.hold = func(*http.Request) {
			if n.Add(1) == 1 {
				<-release // the first request's answer comes once the breaker is open
			}
		}
		done := make(chan error)
		go func() {
			done <- describeVpcs(context.Background(), ec2.NewFromConfig(slow, func(o *ec2.Options) {
				o.Retryer = askAfterWait{o.Retryer.(aws.RetryerV2)}
			}))
		}()
		synctest.Wait() // its first request in flight
		others := ec2.NewFromConfig(once)
		for range 5 {
			_ = describeVpcs(context.Background(), others)
		}
		if s := g.Inspect(vpcsScope); s.Breaker.State != state.Open {
			t.Fatalf("the breaker is %v after five throttled calls: the test proves nothing", s.Breaker.State)
		}
		close(release)
		err := <-done
		var coe *resilience.CircuitOpenError
		if !errors.As(err, &coe) || errors.Is(err, context.Canceled) {
			t.Fatalf("the call ended with %v; want the breaker's refusal, a CircuitOpenError", err)
		}
	})
}
