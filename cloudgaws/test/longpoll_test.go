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
	"github.com/cloudg/cloudg/resilience"
)

// A long-polling operation (SQS ReceiveMessage, which the SDK marks as
// one) whose retry the governor refuses ends at the refusal: the SDK,
// which sleeps its retryer's backoff (and the answer's
// x-amz-retry-after) before returning a refused retry of a long poll,
// sleeps none, so the account's bulkhead slot the call holds across the
// SDK's retries goes back at once, and another call of the account (cap
// 1) that waits for it is sent at the refusal's instant, not the sleep's
// end. The caller gets the governor's refusal, and the ledger one loss.
func TestARefusedLongPollGivesItsSlotBackAtOnce(t *testing.T) {
	// The SDK's sleep before returning would be at least 5 s: the
	// answer's x-amz-retry-after, kept within [backoff, backoff+5s]. The
	// governor reads it as the answer's hint too: 60 s is past the poll's
	// deadline.
	const amzRetryAfter = "5000"
	for _, tc := range []struct {
		name   string
		rc     resilience.Config
		answer reply
		wait   time.Duration // the poll's max wait (resilience.WithMaxWait), if not 0
		sent   int           // ReceiveMessage's attempts, the last the refused retry's
		check  func(t *testing.T, err error)
		loss   resilience.Loss
	}{
		{
			name:   "empty retry budget",
			rc:     resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1, RetryBudget: ptr(0)}},
			answer: reply{status: 500, code: "InternalError", msg: "internal", header: map[string]string{"X-Amz-Retry-After": amzRetryAfter}},
			sent:   3, // the first and the two free retries
			check: func(t *testing.T, err error) {
				var rbe *resilience.RetryBudgetExhaustedError
				if !errors.As(err, &rbe) {
					t.Errorf("err = %v, want the governor's *resilience.RetryBudgetExhaustedError", err)
				}
			},
			loss: resilience.LossFailed, // transient errors to the end
		},
		{
			name:   "Retry-After past the max wait",
			rc:     resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}},
			wait:   time.Second,
			answer: reply{status: 429, code: "ThrottlingException", msg: "slow down", header: map[string]string{"Retry-After": "10", "X-Amz-Retry-After": amzRetryAfter}},
			sent:   1,
			check: func(t *testing.T, err error) {
				var ww *resilience.WouldWaitError
				if !errors.As(err, &ww) {
					t.Errorf("err = %v, want the governor's *resilience.WouldWaitError", err)
				}
			},
			loss: resilience.LossRefused,
		},
		{
			name:   "Retry-After past the deadline",
			rc:     resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}},
			answer: reply{status: 429, code: "ThrottlingException", msg: "slow down", header: map[string]string{"X-Amz-Retry-After": "60000"}},
			sent:   1,
			check: func(t *testing.T, err error) {
				var api smithy.APIError
				var rc *aws.RequestCanceledError
				if !errors.As(err, &api) || api.ErrorCode() != "ThrottlingException" || errors.As(err, &rc) {
					t.Errorf("err = %v, want the service's ThrottlingException, as the governor ends a retry its deadline cannot wait for", err)
				}
			},
			loss: resilience.LossGaveUp,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.always("ReceiveMessage", tc.answer)
				cfg, g := governed(t, f, tc.rc)
				ctx, stats := resilience.WithStats(context.Background())
				sqsCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				sqsCtx, ledger := resilience.WithLedger(sqsCtx, "poll")
				if tc.wait != 0 {
					sqsCtx = resilience.WithMaxWait(sqsCtx, tc.wait)
				}

				// Once the retry to be refused has its answer, another call
				// of the account asks for the slot the long poll holds.
				other := make(chan error, 1)
				f.hold = func(r *http.Request) {
					if r.Header.Get("X-Amz-Target") == "AmazonSQS.ReceiveMessage" && f.count("ReceiveMessage") == tc.sent {
						go func() { other <- describeVpcs(ctx, ec2.NewFromConfig(cfg)) }()
					}
				}
				_, err := sqs.NewFromConfig(cfg).ReceiveMessage(sqsCtx, &sqs.ReceiveMessageInput{
					QueueUrl:        aws.String("https://sqs.us-east-1.amazonaws.com/" + testAccount + "/jobs"),
					WaitTimeSeconds: 20,
				})
				returned := time.Now()
				if err := <-other; err != nil {
					t.Fatalf("the other call: %v", err)
				}
				polls := f.sentAt("ReceiveMessage")
				if len(polls) != tc.sent {
					t.Fatalf("ReceiveMessage sent %d times (at %v), want %d: %v; %+v", len(polls), sentSince(polls[0], polls), tc.sent, err, scopeStats(g, stats, "aws/"+testAccount+"/"+testRegion+"/sqs"))
				}
				refused := polls[len(polls)-1]
				if d := returned.Sub(refused); d != 0 {
					t.Errorf("ReceiveMessage returned %v after the answer whose retry the governor refused, want at once: the SDK slept with the call's slot held", d)
				}
				if vpcs := f.sentAt("DescribeVpcs"); len(vpcs) != 1 || vpcs[0] != refused {
					t.Errorf("the other call of the account (cap 1) was sent %v after the refusal, want at once", sentSince(refused, vpcs))
				}
				tc.check(t, err)
				lostOnly(t, g, stats, ledger, tc.loss, 1)
				if n := ledger.Lost(); n != 1 {
					t.Errorf("the poll's ledger lost %d calls, want the one", n)
				}
			})
		})
	}
}
