package test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/resilience"
)

// A provider's Retry-After that would pass the call's context deadline
// ends the call before its retry, and the caller can tell that the
// deadline, not the provider alone, ended it: the error is the core's
// *resilience.DeadlineExceededError (errors.Is context.DeadlineExceeded,
// its wait the one that would have overrun the deadline, its message
// "deadline exceeded for <scope>: a wait of ...") wrapping the provider's
// answer, which errors.As still finds (smithy.APIError and its code, the
// SDK's *awshttp.ResponseError and its status), under the SDK's
// *smithy.OperationError as before. It used to be the provider's answer
// alone, "operation error Secrets Manager: GetSecretValue, https response
// error StatusCode: 429 ...", with only the ledger saying "deadline
// exceeded after throttled".
func TestARetryAfterPastTheDeadlineSaysTheDeadlineEndedTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("GetSecretValue", tooManyRequests("60"))
		cfg, g := governed(t, f, resilience.Config{})
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "secrets")
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		err := getSecret(tctx, secretsmanager.NewFromConfig(cfg))
		if n := f.count("GetSecretValue"); n != 1 {
			t.Fatalf("sent %d times, want once", n)
		}
		var de *resilience.DeadlineExceededError
		if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v; want a *resilience.DeadlineExceededError that is context.DeadlineExceeded", err)
		}
		if de.Wait < 55*time.Second || de.Scope.Operation != "GetSecretValue" || !strings.Contains(err.Error(), "deadline exceeded for aws/") {
			t.Errorf("deadline error %q, wait %v, scope %v; want the 60 s wait of GetSecretValue's scope", err, de.Wait, de.Scope)
		}
		var apiErr smithy.APIError
		var respErr *awshttp.ResponseError
		var opErr *smithy.OperationError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ThrottlingException" || !errors.As(err, &respErr) || respErr.HTTPStatusCode() != 429 || !errors.As(err, &opErr) {
			t.Errorf("err %v; want the provider's ThrottlingException (429) found by errors.As, under the SDK's OperationError", err)
		}
		if st := scopeStats(g, stats, "aws/"+testAccount+"/"+testRegion+"/secretsmanager"); st.GaveUp != 1 || st.Throttled != 1 {
			t.Errorf("stats %+v; want 1 throttled, 1 given up", st)
		}
		if d := ledger.Describe(); !strings.Contains(d, "deadline exceeded after throttled") || ledger.Count(resilience.LossGaveUp) != 1 {
			t.Errorf("ledger %q; want one give-up, deadline exceeded after throttled", d)
		}
	})
}
