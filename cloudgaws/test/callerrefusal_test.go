package test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// errCallerRefused is the refusal of refusingRetryer's GetRetryToken.
var errCallerRefused = errors.New("retry refused by the caller's retryer")

// refusingRetryer is a caller's retryer that retries every error after a
// 5 s backoff, and refuses every retry token.
type refusingRetryer struct{}

func (refusingRetryer) IsErrorRetryable(error) bool { return true }
func (refusingRetryer) MaxAttempts() int            { return 3 }
func (refusingRetryer) RetryDelay(int, error) (time.Duration, error) {
	return 5 * time.Second, nil
}
func (refusingRetryer) GetRetryToken(context.Context, error) (func(error) error, error) {
	return nil, errCallerRefused
}
func (refusingRetryer) GetInitialToken() func(error) error { return func(error) error { return nil } }

// swallowingRetryer is a caller's retryer wrapped around the client's
// that retries whatever the retryer inside refuses.
type swallowingRetryer struct{ aws.RetryerV2 }

func (r swallowingRetryer) GetRetryToken(ctx context.Context, err error) (func(error) error, error) {
	if release, err := r.RetryerV2.GetRetryToken(ctx, err); err == nil {
		return release, nil
	}
	return func(error) error { return nil }, nil
}

// A long poll (SQS ReceiveMessage) whose retry the caller's own retryer
// refuses (the base retryer, WithBaseRetryer's) sends nothing more: the
// SDK sleeps the retryer's backoff before returning it, as its contract
// with a long poll has it (a polling loop whose retries are refused does
// not spin), and the call returns when the sleep ends, with the SDK's
// error. The account's bulkhead slot goes back at the refusal, not at the
// sleep's end: nothing is in flight, and another call of the account
// (cap 1) that waits for the slot is sent at once. A retryer of the
// caller's wrapped around the client's that retries the refused retry
// anyway sends nothing more: the call has no slot.
func TestACallerRefusedLongPollSleepsWithoutItsSlot(t *testing.T) {
	for _, swallow := range []bool{false, true} {
		t.Run(map[bool]string{false: "refused", true: "retried anyway"}[swallow], func(t *testing.T) {
			testCallerRefusedLongPoll(t, swallow)
		})
	}
}

func testCallerRefusedLongPoll(t *testing.T, swallow bool) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("ReceiveMessage", reply{status: 500, code: "InternalError", msg: "internal"})
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}},
			cloudgaws.WithBaseRetryer(func() aws.Retryer { return refusingRetryer{} }))
		ctx, stats := resilience.WithStats(context.Background())
		pollCtx, ledger := resilience.WithLedger(ctx, "poll")

		other := make(chan error, 1)
		f.hold = func(r *http.Request) {
			if r.Header.Get("X-Amz-Target") == "AmazonSQS.ReceiveMessage" {
				go func() { other <- describeVpcs(ctx, ec2.NewFromConfig(cfg)) }()
			}
		}
		_, err := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
			if swallow {
				o.Retryer = swallowingRetryer{o.Retryer.(aws.RetryerV2)}
			}
		}).ReceiveMessage(pollCtx, &sqs.ReceiveMessageInput{
			QueueUrl:        aws.String("https://sqs.us-east-1.amazonaws.com/" + testAccount + "/jobs"),
			WaitTimeSeconds: 20,
		})
		returned := time.Now()
		if err := <-other; err != nil {
			t.Fatalf("the other call: %v", err)
		}
		polls := f.sentAt("ReceiveMessage")
		if len(polls) != 1 {
			t.Fatalf("ReceiveMessage sent %d times, want 1: its retry was refused", len(polls))
		}
		var api smithy.APIError
		if !errors.Is(err, errCallerRefused) || !errors.As(err, &api) || api.ErrorCode() != "InternalError" {
			t.Errorf("err = %v, want the SDK's: the answer joined with the caller's refusal", err)
		}
		if d := returned.Sub(polls[0]); d != 5*time.Second {
			t.Errorf("ReceiveMessage returned %v after its answer, want the caller's retryer's 5 s backoff, as the SDK sleeps it", d)
		}
		if vpcs := f.sentAt("DescribeVpcs"); len(vpcs) != 1 || vpcs[0] != polls[0] {
			t.Errorf("the other call of the account (cap 1) was sent %v after the refusal, want at once: the poll slept with the account's slot", sentSince(polls[0], vpcs))
		}
		lostOnly(t, g, stats, ledger, resilience.LossFailed, 1)
		if n := freeSlots(g); n != 1 {
			t.Errorf("%d free slots once the calls are over, want 1", n)
		}
	})
}

// sqsScope is the breaker's scope of SQS's calls in the fake's account
// and region (SQS is paced per service).
var sqsScope = resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: "sqs"}

// receive long-polls the fake's queue.
func receive(ctx context.Context, c *sqs.Client) error {
	_, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:        aws.String("https://sqs.us-east-1.amazonaws.com/" + testAccount + "/jobs"),
		WaitTimeSeconds: 20,
	})
	return err
}

// A call whose retry the caller's own retryer refused ends there: nothing
// more is sent, and its outcome is decided (a throttled give-up, or a
// failure, each counting towards its breaker). The SDK's sleep before it
// returns a refused long poll's error is the retryer's word, no part of
// the call: a context cancelled during it (a polling loop stopped at
// shutdown) does not turn the give-up into a cancelled call, nor take
// its failure from the breaker.
func TestACallerRefusedCallEndsAtTheRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("ReceiveMessage", jsonThrottle)
		cfg, g := governed(t, f, resilience.Config{},
			cloudgaws.WithBaseRetryer(func() aws.Retryer { return refusingRetryer{} }))
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "poll")
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			time.Sleep(time.Second) // into the SDK's 5 s sleep after the refusal
			cancel()
		}()
		err := receive(ctx, sqs.NewFromConfig(cfg))
		if !errors.Is(err, errCallerRefused) {
			t.Errorf("err = %v, want the caller's refusal", err)
		}
		if n := f.count("ReceiveMessage"); n != 1 {
			t.Fatalf("ReceiveMessage sent %d times, want 1", n)
		}
		lostOnly(t, g, stats, ledger, resilience.LossGaveUp, 1)
		if b := g.Summary(nil).Breakers[sqsScope]; b.Failures != 1 {
			t.Errorf("breaker %+v, want the give-up's failure", b)
		}
	})
}

// A half-open breaker's probe whose retry the caller's retryer refused
// gives its verdict at the refusal: the breaker reopens then, with its
// cooldown doubled, and not once the SDK's sleep before returning the
// refusal of a long poll is over, during which it held the probe.
func TestACallerRefusedProbeGivesItsVerdictAtTheRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("ReceiveMessage", reply{status: 500, code: "InternalError", msg: "internal"})
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{BreakerThreshold: 1, BreakerCooldownSeconds: 60}},
			cloudgaws.WithBaseRetryer(func() aws.Retryer { return refusingRetryer{} }))
		client := sqs.NewFromConfig(cfg)
		ctx := context.Background()
		if err := receive(ctx, client); err == nil {
			t.Fatal("the first poll succeeded")
		}
		if b := g.Summary(nil).Breakers[sqsScope]; b.State != state.Open {
			t.Fatalf("breaker %+v after a failed call at threshold 1, want open", b)
		}
		time.Sleep(61 * time.Second) // the cooldown: the next call is the probe
		done := make(chan error, 1)
		go func() { done <- receive(ctx, client) }()
		time.Sleep(time.Second) // the probe was answered and refused; the SDK sleeps
		b := g.Summary(nil).Breakers[sqsScope]
		if b.State != state.Open || b.Cooldown != 120*time.Second {
			t.Errorf("breaker %v, cooldown %v, a second after the probe's retry was refused; want open for 120s: the probe's verdict", b.State, b.Cooldown)
		}
		if err := <-done; err == nil {
			t.Fatal("the probe succeeded")
		}
		if n := f.count("ReceiveMessage"); n != 2 {
			t.Fatalf("ReceiveMessage sent %d times, want 2", n)
		}
	})
}
