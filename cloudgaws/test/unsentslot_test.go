package test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// credentialsRefused is the error of an http.Client whose credential
// server refused the connection, which the SDK retries.
func credentialsRefused() error {
	return &url.Error{Op: "Get", URL: "http://127.0.0.1:1/credentials", Err: &net.OpError{
		Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED},
	}}
}

// The SDK's retry of an attempt that never left the process (its
// credentials could not be had) does not go on the slot the call lent to
// a call nested in that attempt that goes on (an STS call the credentials
// provider started with the attempt's context and did not wait for, a
// refresh in the background): the slot stays that call's until it is
// over, and the retry waits for a slot, so that the account stays within
// its cap of 1.
func TestAnUnsentAttemptsRetryIsNotSentOnASlotLentToACallThatGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}})
		outer, nested, wg := lentCredentials(f, cfg)
		if err := describeVpcs(context.Background(), ec2.NewFromConfig(outer)); err != nil {
			t.Fatalf("err %v; want the call to succeed once it has its credentials", err)
		}
		wg.Wait()
		if err := <-nested; err != nil {
			t.Fatalf("the nested STS call: %v", err)
		}
		if n := f.count("DescribeVpcs"); n != 1 {
			t.Fatalf("DescribeVpcs sent %d times, want 1", n)
		}
		if most := f.maxInFlight(); most != 1 {
			t.Fatalf("%d calls in flight at once, want 1: the account's cap is 1, and the retry went on the slot lent to the nested call", most)
		}
		if got := freeSlots(g); got != 1 {
			t.Fatalf("%d slots free after the calls, want 1", got)
		}
	})
}

// The SDK's retry of an attempt that never left the process (its
// credentials could not be had) is not sent through a breaker that
// opened meanwhile (another call of the operation failed), as the retry
// of an answer is not: the call ends with the attempt's failure, a local
// error of the call, lost as errored.
func TestAnUnsentAttemptsRetryIsNotSentThroughAnOpenBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeVpcs", ec2Internal, ok)
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1}})
		other := cfg.Copy()
		if err := cloudgaws.Install(&other, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithRetryMode(aws.RetryModeStandard), cloudgaws.WithMaxRetries(0)); err != nil {
			t.Fatal(err)
		}
		var asked atomic.Int32
		outer := cfg.Copy()
		outer.Credentials = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
			if asked.Add(1) == 1 {
				// Another call of the operation fails, and opens its breaker.
				_ = describeVpcs(context.Background(), ec2.NewFromConfig(other))
				return aws.Credentials{}, credentialsRefused()
			}
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret", Source: "test"}, nil
		})
		ctx, ledger := resilience.WithLedger(context.Background(), "vpcs")
		err := describeVpcs(ctx, ec2.NewFromConfig(outer))
		if n := f.count("DescribeVpcs"); n != 1 {
			t.Fatalf("DescribeVpcs sent %d times (err %v); want once, the other call's: the retry went through the open breaker", n, err)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("err %v; want the credentials' refused connection", err)
		}
		if ledger.Count(resilience.LossErrored) != 1 || ledger.Lost() != 1 {
			t.Fatalf("ledger %q; want the call lost as errored", ledger.Describe())
		}
		if s := g.Inspect(vpcsScope); s.InFlight != 0 {
			t.Fatalf("%d in flight after the calls, want none", s.InFlight)
		}
	})
}

// The SDK's retry of an attempt that never left the process (its
// credentials could not be had) is sent no sooner than its scope's pause
// ends: readied while another call's Retry-After holds the scope, it
// waits out the pause and goes at the scope's rate after it, as every
// caller of a paused scope does; a pause that outlasts the call's
// deadline ends it at once with the deadline's error and the
// credentials', recorded as refused, nothing sent. Before, it was sent
// after the SDK's backoff, into the pause.
func TestAnUnsentAttemptsRetryIsHeldByAPause(t *testing.T) {
	for _, deadline := range []bool{false, true} {
		name := "after the pause"
		if deadline {
			name = "deadline first"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.script("DescribeVpcs", tooManyRequests("60"), ok)
				cfg, g := governed(t, f, resilience.Config{})
				other := cfg.Copy()
				if err := cloudgaws.Install(&other, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithRetryMode(aws.RetryModeStandard), cloudgaws.WithMaxRetries(0)); err != nil {
					t.Fatal(err)
				}
				var asked atomic.Int32
				var paused time.Time
				outer := cfg.Copy()
				outer.Credentials = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
					if asked.Add(1) == 1 {
						// Another call of the operation is throttled, and
						// pauses the scope for its Retry-After.
						_ = describeVpcs(context.Background(), ec2.NewFromConfig(other))
						paused = time.Now()
						return aws.Credentials{}, credentialsRefused()
					}
					return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret", Source: "test"}, nil
				})
				ctx, ledger := resilience.WithLedger(context.Background(), "vpcs")
				if deadline {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
					defer cancel()
				}
				start := time.Now()
				err := describeVpcs(ctx, ec2.NewFromConfig(outer))
				sent := f.sentAt("DescribeVpcs")
				if !deadline {
					if err != nil || len(sent) != 2 || sent[1].Sub(paused) < 60*time.Second || sent[1].Sub(paused) > 61*time.Second {
						t.Fatalf("the retry, the scope paused for 60s: sent at %v after the pause began (err %v); want within a second after the pause's end", sentAfter(sent, paused), err)
					}
					return
				}
				if len(sent) != 1 {
					t.Errorf("the retry, the scope paused for 60s and the deadline 30s away: sent at %v after the pause began; want nothing sent", sentAfter(sent, paused))
				}
				if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, syscall.ECONNREFUSED) || time.Since(start) > 2*time.Second {
					t.Errorf("err %v after %v; want the deadline's error and the credentials' at once, after the SDK's backoff", err, time.Since(start))
				}
				if ledger.Count(resilience.LossRefused) != 1 || ledger.Lost() != 1 {
					t.Errorf("ledger %q; want the call lost as refused", ledger.Describe())
				}
			})
		})
	}
}

// deadlineAt is a context whose deadline is dl and whose timer never
// runs: Err stays nil past it, as a context's does at its deadline until
// the timer due then runs. Its Done is a channel never closed, as a
// context with a deadline has one.
type deadlineAt struct {
	context.Context
	dl   time.Time
	done chan struct{}
}

func (c deadlineAt) Deadline() (time.Time, bool) { return c.dl, true }

func (c deadlineAt) Done() <-chan struct{} { return c.done }

// The SDK's retry of an attempt that never left the process (its
// credentials could not be had), readied at its context's deadline
// before the timer due then has run, ends the call as the context's end
// does: a canceled request (*aws.RequestCanceledError) that is also the
// deadline's error, recorded as cancelled, nothing sent. Before, the
// governor's read of the deadline as ended came back as an error the SDK
// does not retry, and no canceled request.
func TestAnUnsentAttemptsRetryAtItsDeadlineEndsAsACanceledRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, _ := governed(t, f, resilience.Config{})
		start := time.Now()
		var asked atomic.Int32
		outer := cfg.Copy()
		outer.Credentials = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
			if asked.Add(1) == 1 {
				time.Sleep(5 * time.Second) // the deadline, 5s away, comes
				return aws.Credentials{}, credentialsRefused()
			}
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret", Source: "test"}, nil
		})
		ctx, ledger := resilience.WithLedger(deadlineAt{context.Background(), start.Add(5 * time.Second), make(chan struct{})}, "vpcs")
		err := describeVpcs(ctx, ec2.NewFromConfig(outer))
		var rc *aws.RequestCanceledError
		if !errors.As(err, &rc) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v; want a canceled request (*aws.RequestCanceledError) of the deadline's error, as the context's end gives", err)
		}
		if n := f.count("DescribeVpcs"); n != 0 {
			t.Fatalf("DescribeVpcs sent %d times, want none", n)
		}
		if ledger.Count(resilience.LossCancelled) != 1 || ledger.Lost() != 1 {
			t.Fatalf("ledger %q; want the call lost as cancelled", ledger.Describe())
		}
	})
}

// sentAfter is when the last of sent was, after from: none, -1.
func sentAfter(sent []time.Time, from time.Time) time.Duration {
	if len(sent) < 2 {
		return -1
	}
	return sent[len(sent)-1].Sub(from)
}

// The SDK's retry of an attempt that never left the process, whose slot
// was lent to a call nested in that attempt that goes on, and that gets
// no other slot within its context's max wait, is refused before it is
// sent, as the core refuses any call its max wait keeps from being sent:
// a *ThrottlingError of the core's ErrNoSlot, recorded as refused.
func TestAnUnsentAttemptsRetryWithNoSlotWithinTheMaxWaitIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, _ := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}})
		outer, _, wg := lentCredentials(f, cfg)
		ctx, ledger := resilience.WithLedger(context.Background(), "vpcs")
		err := describeVpcs(resilience.WithMaxWait(ctx, 500*time.Millisecond), ec2.NewFromConfig(outer))
		wg.Wait()
		var te *cloudgaws.ThrottlingError
		if !errors.As(err, &te) || !errors.Is(err, resilience.ErrNoSlot) {
			t.Fatalf("err %v; want a *ThrottlingError of ErrNoSlot", err)
		}
		if n := f.count("DescribeVpcs"); n != 0 {
			t.Fatalf("DescribeVpcs sent %d times, want none", n)
		}
		if ledger.Count(resilience.LossRefused) != 1 || ledger.Lost() != 1 {
			t.Fatalf("ledger %q; want the call lost as refused", ledger.Describe())
		}
	})
}

// With breaker_wait (a provider that waits for its breakers' verdicts),
// the SDK's retry of an attempt that never left the process (its
// credentials could not be had), whose operation's breaker opened
// meanwhile (another call of the operation failed), waits for the
// breaker's verdict, as the retry of an answer does, within the call's
// deadline: once the cooldown is over it is sent as the probe, and the
// call succeeds. Before, the breaker refused it at once, and the call was
// lost as errored with the credentials' failure.
func TestAnUnsentAttemptsRetryWaitsForTheVerdictWithBreakerWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{BreakerWait: true, BreakerThreshold: 1, BreakerCooldownSeconds: 10}})
		var asked atomic.Int32
		var opened time.Time
		outer := cfg.Copy()
		outer.Credentials = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
			if asked.Add(1) == 1 {
				// Another call of the operation, sent by an SDK of its
				// own, fails: its breaker opens for 10 s.
				other, err := g.Begin(context.Background(), vpcsScope)
				if err != nil {
					t.Error(err)
				}
				other.After(syscall.ECONNRESET)
				other.End(syscall.ECONNRESET)
				opened = time.Now()
				return aws.Credentials{}, credentialsRefused()
			}
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret", Source: "test"}, nil
		})
		ctx, ledger := resilience.WithLedger(context.Background(), "vpcs")
		err := describeVpcs(ctx, ec2.NewFromConfig(outer))
		if err != nil {
			t.Fatalf("err %v; want the retry sent once the breaker's cooldown is over, and a success", err)
		}
		if sent := f.sentAt("DescribeVpcs"); len(sent) != 1 || sent[0].Sub(opened) != 10*time.Second {
			t.Fatalf("DescribeVpcs sent at %v; want once, 10s after the breaker opened at %v, as its probe", sent, opened)
		}
		if ledger.Lost() != 0 {
			t.Fatalf("ledger %q; want nothing lost", ledger.Describe())
		}
		if s := g.Inspect(vpcsScope); s.Breaker.State.String() != "closed" || s.InFlight != 0 {
			t.Fatalf("scope %+v; want the breaker closed by the retry's success, no slot held", s)
		}
	})
}

// The same retry of a call that borrowed its slot from an enclosing call
// (an EC2 call made inside resilience.Do WithNestedCalls) borrows that
// slot again once the call nested in its attempt gives it back: the SDK's
// Finalize context, with which cloudgaws readies the retry, answers
// Value(gov) with the EC2 call's own guard, and the core goes on from it
// to the enclosing call. With max_concurrency 1 the retry goes as the
// nested STS call's 10 s are over, rather than wait for the enclosing
// call's slot until its deadline.
func TestAnUnsentAttemptsRetryBorrowsTheEnclosingCallsSlotAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}})
		outer, nested, wg := lentCredentials(f, cfg)
		start := time.Now()
		var took time.Duration
		var err error
		scope := resilience.Scope{Provider: "aws", Account: testAccount, Service: "s3", Operation: "ListBuckets"}
		if derr := resilience.Do(context.Background(), scope, func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			err = describeVpcs(ctx, ec2.NewFromConfig(outer))
			took = time.Since(start)
			return nil // the enclosing call does not retry it
		}, resilience.WithGovernor(g), resilience.WithNestedCalls()); derr != nil {
			t.Fatal(derr)
		}
		if err != nil || took > 11*time.Second {
			t.Fatalf("DescribeVpcs inside the enclosing call: %v after %v; want it sent once the nested call gives the slot back at 10s", err, took)
		}
		wg.Wait()
		if err := <-nested; err != nil {
			t.Fatalf("the nested STS call: %v", err)
		}
		if n := f.count("DescribeVpcs"); n != 1 {
			t.Fatalf("DescribeVpcs sent %d times, want 1", n)
		}
		if most := f.maxInFlight(); most != 1 {
			t.Fatalf("%d calls in flight at once, want 1: the account's cap is 1", most)
		}
		if got := freeSlots(g); got != 1 {
			t.Fatalf("%d slots free after the calls, want 1", got)
		}
	})
}

// lentCredentials returns cfg with credentials whose first fetch outlives
// its attempt: it starts STS's GetCallerIdentity with the attempt's
// context (a call nested in the attempt, on its slot), which f holds for
// 10 s, waits until f has it, and fails as a refused connection; later
// fetches succeed. nested gets the STS call's error, wg waits for it.
func lentCredentials(f *fakeAWS, cfg aws.Config) (outer aws.Config, nested <-chan error, wg *sync.WaitGroup) {
	f.hold = func(r *http.Request) {
		if r.Form != nil && r.Form.Get("Action") == "GetCallerIdentity" { // STS's form is read into r.Form as EC2's is
			time.Sleep(10 * time.Second)
		}
	}
	stsClient := sts.NewFromConfig(cfg)
	var asked atomic.Int32
	wg = &sync.WaitGroup{}
	done := make(chan error, 1)
	outer = cfg.Copy()
	outer.Credentials = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
		if asked.Add(1) == 1 {
			wg.Go(func() { done <- getCallerIdentity(ctx, stsClient) })
			for f.count("GetCallerIdentity") == 0 { // until the STS call is in, on the attempt's slot
				time.Sleep(time.Millisecond)
			}
			return aws.Credentials{}, credentialsRefused()
		}
		return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret", Source: "test"}, nil
	})
	return outer, done, wg
}
