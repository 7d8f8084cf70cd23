package test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// STS answers IDPCommunicationError (400) when the identity provider it
// asks to verify a web identity or SAML token cannot be reached: an outage
// behind STS, which the STS client retries (its retryer adds the code to
// the retryable ones, as botocore's standard mode does), not an answer
// about the request. It is a transient error: each attempt is counted as
// one, and a call whose attempts all got it is lost as failed, in the
// stats and the ledger, not an answer the caller was given.
func TestSTSIDPCommunicationErrorIsTransient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("AssumeRoleWithWebIdentity", reply{status: 400, code: "IDPCommunicationError",
			msg: "The request could not be fulfilled because the identity provider (IDP) that was asked to verify the incoming identity token could not be reached."})
		cfg, g := governed(t, f, resilience.Config{}, cloudgaws.WithMaxRetries(2))
		ctx, stats := resilience.WithStats(context.Background())
		ctx, ledger := resilience.WithLedger(ctx, "aws_sts")
		_, err := sts.NewFromConfig(cfg).AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{
			RoleArn: aws.String("arn:aws:iam::" + testAccount + ":role/r"), RoleSessionName: aws.String("s"), WebIdentityToken: aws.String("t"),
		})
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "IDPCommunicationError" {
			t.Fatalf("err %v, want STS's IDPCommunicationError", err)
		}
		if n := f.count("AssumeRoleWithWebIdentity"); n != 3 {
			t.Fatalf("sent %d times, want 3: the STS client retries the code", n)
		}
		if k := resilience.Classify(err); k != resilience.Transient {
			t.Fatalf("IDPCommunicationError: %v, want TRANSIENT (the STS client retries it)", k)
		}
		st := scopeStats(g, stats, "aws/"+testAccount+"/"+testRegion+"/sts")
		if st.Calls != 1 || st.Retries != 2 || st.TransientErrors != 3 || st.Failed != 1 {
			t.Fatalf("sts counters %v; want one call, two retries, three transient errors, lost as failed", st)
		}
		if n := ledger.Count(resilience.LossFailed); n != 1 {
			t.Fatalf("ledger: %d calls lost as failed, want 1 (%s)", n, ledger.Describe())
		}
	})
}
