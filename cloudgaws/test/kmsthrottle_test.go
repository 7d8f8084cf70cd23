package test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/resilience"
)

// Throttles the SDK does not list, each the provider's word that a limit
// of its was passed: a service's KMS calls on the caller's behalf
// throttled by KMS (Kinesis's KMSThrottlingException, SQS's KmsThrottled,
// whose query-compatible code is KMS.ThrottlingException), and a DynamoDB
// transaction cancelled because an item was throttled (a
// TransactionCanceledException whose CancellationReasons hold
// ThrottlingError or ProvisionedThroughputExceeded). Each is THROTTLED:
// the calling service's scope is slowed (its calls are what made the KMS
// calls), and the call, which the SDK does not retry, is a throttled
// give-up that counts towards the breaker. A transaction cancelled for
// a failed condition stays a fatal answer.
func TestThrottlesTheSDKDoesNotList(t *testing.T) {
	putRecord := func(ctx context.Context, cfg aws.Config) error {
		_, err := kinesis.NewFromConfig(cfg).PutRecord(ctx, &kinesis.PutRecordInput{
			StreamName: aws.String("s"), PartitionKey: aws.String("k"), Data: []byte("d"),
		})
		return err
	}
	sendMessage := func(ctx context.Context, cfg aws.Config) error {
		_, err := sqs.NewFromConfig(cfg).SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String("https://sqs.us-east-1.amazonaws.com/" + testAccount + "/jobs"), MessageBody: aws.String("m"),
		})
		return err
	}
	transact := func(ctx context.Context, cfg aws.Config) error {
		put := func(id string) ddbtypes.TransactWriteItem {
			return ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{TableName: aws.String("t"),
				Item: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: id}}}}
		}
		_, err := dynamodb.NewFromConfig(cfg).TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: []ddbtypes.TransactWriteItem{put("a"), put("b")},
		})
		return err
	}
	const kmsMsg = "You have exceeded the rate at which you may call KMS. Reduce the frequency of your calls."
	reasons := func(codes ...string) map[string]any {
		rs := make([]map[string]string, len(codes))
		for i, c := range codes {
			rs[i] = map[string]string{"Code": c}
		}
		return map[string]any{"CancellationReasons": rs}
	}
	const cancelled = "Transaction cancelled, please refer cancellation reasons for specific reasons"
	for _, tc := range []struct {
		name, service, op, code string
		answer                  reply
		call                    func(context.Context, aws.Config) error
		want                    resilience.Kind
	}{
		{"kinesis KMSThrottlingException", "kinesis", "PutRecord", "KMSThrottlingException",
			reply{status: 400, code: "KMSThrottlingException", msg: kmsMsg}, putRecord, resilience.Throttled},
		{"sqs KmsThrottled", "sqs", "SendMessage", "KmsThrottled",
			reply{status: 400, code: "KmsThrottled", msg: kmsMsg}, sendMessage, resilience.Throttled},
		{"sqs KmsThrottled, query-compatible", "sqs", "SendMessage", "KMS.ThrottlingException",
			reply{status: 400, code: "KmsThrottled", msg: kmsMsg, header: map[string]string{"X-Amzn-Query-Error": "KMS.ThrottlingException;Sender"}}, sendMessage, resilience.Throttled},
		{"dynamodb transaction cancelled by a throttle", "dynamodb", "TransactWriteItems", "TransactionCanceledException",
			reply{status: 400, code: "TransactionCanceledException", msg: cancelled + " [None, ThrottlingError]", fields: reasons("None", "ThrottlingError")}, transact, resilience.Throttled},
		{"dynamodb transaction cancelled by provisioned throughput", "dynamodb", "TransactWriteItems", "TransactionCanceledException",
			reply{status: 400, code: "TransactionCanceledException", msg: cancelled + " [ProvisionedThroughputExceeded, None]", fields: reasons("ProvisionedThroughputExceeded", "None")}, transact, resilience.Throttled},
		{"dynamodb transaction cancelled by a condition", "dynamodb", "TransactWriteItems", "TransactionCanceledException",
			reply{status: 400, code: "TransactionCanceledException", msg: cancelled + " [ConditionalCheckFailed, None]", fields: reasons("ConditionalCheckFailed", "None")}, transact, resilience.Fatal},
		// A conflict with another transaction: retrying may help, but the
		// SDK does not retry it, and a transient error it does not retry
		// would count towards the breaker of every DynamoDB call of the
		// region: contention on an item is no failure of the service's.
		{"dynamodb transaction cancelled by a conflict", "dynamodb", "TransactWriteItems", "TransactionCanceledException",
			reply{status: 400, code: "TransactionCanceledException", msg: cancelled + " [None, TransactionConflict]", fields: reasons("None", "TransactionConflict")}, transact, resilience.Fatal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.always(tc.op, tc.answer)
				cfg, g := governed(t, f, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				ctx, ledger := resilience.WithLedger(ctx, "aws_"+tc.service)
				err := tc.call(ctx, cfg)
				var apiErr smithy.APIError
				if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tc.code {
					t.Fatalf("err = %v, want the service's %s", err, tc.code)
				}
				if got := f.count(tc.op); got != 1 {
					t.Fatalf("sent %d times, want 1: the SDK retries no %s", got, tc.code)
				}
				if k := resilience.Classify(err); k != tc.want {
					t.Fatalf("%v classified %v, want %v", err, k, tc.want)
				}
				scope := resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: tc.service, Operation: tc.op}
				st := scopeStats(g, stats, "aws/"+testAccount+"/"+testRegion+"/"+tc.service)
				leaf := g.Inspect(scope).Leaf
				service := scope
				service.Operation = "" // its breaker's scope: the service is not per operation
				b, ok := g.Summary(nil).Breakers[service]
				if !ok && tc.want != resilience.Fatal {
					t.Fatalf("no breaker of %s: %v", service, g.Summary(nil).Breakers)
				}
				if tc.want == resilience.Fatal {
					if st.Throttled != 0 || st.GaveUp != 0 || leaf.Rate != leaf.Ceiling || b.Failures != 0 {
						t.Fatalf("a fatal answer slowed or failed the scope: stats %+v, leaf %+v, breaker %+v", st, leaf, b)
					}
					return
				}
				if st.Calls != 1 || st.Throttled != 1 || st.GaveUp != 1 {
					t.Fatalf("stats = %+v, want one throttled call given up", st)
				}
				if n := ledger.Count(resilience.LossGaveUp); n != 1 {
					t.Fatalf("ledger: %d give-ups, want 1 (%s)", n, ledger.Describe())
				}
				if leaf.Rate != leaf.Ceiling/2 {
					t.Fatalf("leaf %+v: the throttle did not halve the %s scope's rate", leaf, tc.service)
				}
				if b.Failures != 1 {
					t.Fatalf("breaker %+v, want one failure", b)
				}
			})
		})
	}
}

// appTxError is an application's error around DynamoDB's cancellation,
// which it embeds (its ErrorCode is the SDK's, nil-safe): nil when the
// application made it without one.
type appTxError struct {
	*ddbtypes.TransactionCanceledException
	op string
}

// otherReasonsError has a code of the name and CancellationReasons of
// another shape than DynamoDB's.
type otherReasonsError struct{ CancellationReasons []string }

func (otherReasonsError) Error() string     { return "cancelled" }
func (otherReasonsError) ErrorCode() string { return "TransactionCanceledException" }

// The classifier reads a TransactionCanceledException's reasons without
// failing whatever the error's shape: a reason without a code, the
// cancellation under the SDK's operation error, an error of an
// application's that embeds the SDK's (nil or not), an error whose
// CancellationReasons are of another type. Classify never panics: it
// runs in every governed call's answer.
func TestCancellationReasonsOfAnyShape(t *testing.T) {
	throttled := func() *ddbtypes.TransactionCanceledException {
		return &ddbtypes.TransactionCanceledException{CancellationReasons: []ddbtypes.CancellationReason{
			{Code: nil}, {Code: aws.String("None")}, {Code: aws.String("ThrottlingError")},
		}}
	}
	for _, c := range []struct {
		name string
		err  error
		want resilience.Kind
	}{
		{"a reason without a code", throttled(), resilience.Throttled},
		{"under the operation error", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "TransactWriteItems", Err: throttled()}, resilience.Throttled},
		{"no reasons", &ddbtypes.TransactionCanceledException{}, resilience.Fatal},
		{"a nil cancellation", (*ddbtypes.TransactionCanceledException)(nil), resilience.Fatal},
		{"embedded", &appTxError{TransactionCanceledException: throttled(), op: "transfer"}, resilience.Throttled},
		{"embedded nil", &appTxError{op: "transfer"}, resilience.Fatal},
		{"reasons of another type", otherReasonsError{CancellationReasons: []string{"ThrottlingError"}}, resilience.Fatal},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got resilience.Kind
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("Classify(%T) panicked: %v", c.err, p)
					}
				}()
				got = resilience.Classify(c.err)
			}()
			if got != c.want {
				t.Errorf("Classify(%T) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}
