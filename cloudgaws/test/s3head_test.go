package test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// S3 answers a HEAD request (HeadObject, HeadBucket) it refuses for its
// rate with 503 and no body, since a HEAD answer has none: the SlowDown
// of a GET carries its code in its body, a HEAD's has only its status.
// The S3 client's deserializer then makes the code up from the status
// text, ServiceUnavailable with the message "Service Unavailable": a
// stand-in, not S3's word, which says nothing the status does not. The
// status decides, as for any 503 without a code of the provider's:
// throttling, which halves the scope's rate, the same answer S3 gives to
// a GET as SlowDown, and so is a 429 (TooManyRequests). A HEAD's 500
// (InternalServerError, made up alike), 502 and 504 stay transient, and a
// HEAD's 404 (NotFound, the client's modeled error), 403 (Forbidden), 400
// (BadRequest) and 412 (PreconditionFailed, a conditional HEAD's) fatal
// answers; a 503 whose body S3 wrote with the code
// ServiceUnavailable and a message of its own keeps that code's kind,
// transient.
func TestS3HeadWithoutBodyIsReadByItsStatus(t *testing.T) {
	const key = "aws/" + testAccount + "/" + testRegion + "/s3"
	for _, tc := range []struct {
		name   string
		status int
		body   string
		code   string
		want   resilience.Kind
	}{
		{"HEAD 503", 503, "", "ServiceUnavailable", resilience.Throttled},
		{"HEAD 500", 500, "", "InternalServerError", resilience.Transient},
		{"HEAD 404", 404, "", "NotFound", resilience.Fatal},
		{"HEAD 429", 429, "", "TooManyRequests", resilience.Throttled},
		{"HEAD 502", 502, "", "BadGateway", resilience.Transient},
		{"HEAD 504", 504, "", "GatewayTimeout", resilience.Transient},
		{"HEAD 403", 403, "", "Forbidden", resilience.Fatal},
		{"HEAD 400", 400, "", "BadRequest", resilience.Fatal},
		{"HEAD 412", 412, "", "PreconditionFailed", resilience.Fatal},
		{"503 ServiceUnavailable with a body", 503,
			`<?xml version="1.0" encoding="UTF-8"?><Error><Code>ServiceUnavailable</Code><Message>Please reduce your request rate.</Message></Error>`,
			"ServiceUnavailable", resilience.Transient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int32
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					n.Add(1)
					if tc.body != "" {
						w.Header().Set("Content-Type", "application/xml")
					}
					w.WriteHeader(tc.status)
					if tc.body != "" {
						_, _ = w.Write([]byte(tc.body))
					}
				})
				g, err := resilience.NewGovernor(resilience.Config{})
				if err != nil {
					t.Fatal(err)
				}
				cfg := aws.Config{
					Region:       testRegion,
					HTTPClient:   memClient{h},
					BaseEndpoint: aws.String("http://s3.fake"),
					Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
						return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", Source: "test"}, nil
					}),
				}
				if err := cloudgaws.Install(&cfg, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithMaxRetries(0)); err != nil {
					t.Fatal(err)
				}
				client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
				ctx, stats := resilience.WithStats(context.Background())
				_, err = client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bucket"), Key: aws.String("key")})
				var apiErr smithy.APIError
				if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tc.code {
					t.Fatalf("err %v, want the S3 client's %s", err, tc.code)
				}
				if k := resilience.Classify(err); k != tc.want {
					t.Fatalf("HeadObject's %d (%s, %q): %v, want %v", tc.status, apiErr.ErrorCode(), apiErr.ErrorMessage(), k, tc.want)
				}
				st := scopeStats(g, stats, key)
				var throttled, transient int64
				switch tc.want {
				case resilience.Throttled:
					throttled = 1
				case resilience.Transient:
					transient = 1
				}
				if st.Calls != 1 || st.Throttled != throttled || st.TransientErrors != transient {
					t.Fatalf("s3 counters %v; want one call, %d throttled, %d transient", st, throttled, transient)
				}
				scope := resilience.Scope{Provider: "aws", Account: testAccount, Region: testRegion, Service: "s3", Operation: "HeadObject"}
				leaf := g.Inspect(scope).Leaf
				if slowed := leaf.Rate < leaf.Ceiling; slowed != (tc.want == resilience.Throttled) {
					t.Fatalf("leaf rate %v of %v after HeadObject's %d: slowed %v, want %v", leaf.Rate, leaf.Ceiling, tc.status, slowed, !slowed)
				}
			})
		})
	}
}
