package cloudgaws_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// stsEndpoint stands in for STS: every request is GetCallerIdentity, made
// with the credentials of account 123456789012.
func stsEndpoint() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprint(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>`+
			`<Arn>arn:aws:iam::123456789012:user/scanner</Arn><UserId>AIDAEXAMPLE</UserId><Account>123456789012</Account>`+
			`</GetCallerIdentityResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></GetCallerIdentityResponse>`)
	}))
}

func exampleConfig(endpoint string) aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret"}, nil
		}),
	}
}

// One line puts every client made from a config under the process
// governor: here an STS client, against a stand-in endpoint.
func ExampleInstall() {
	srv := stsEndpoint()
	defer srv.Close()
	cfg := exampleConfig(srv.URL)

	if err := cloudgaws.Install(&cfg, "123456789012"); err != nil {
		fmt.Println(err) // also logged at warn level; cfg's clients are then not governed
		return
	}

	ctx, stats := resilience.WithStats(context.Background())
	if _, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resilience.Default().Summary(stats).Scopes["aws/123456789012/us-east-1/sts"].Calls, "call")
	// Output:
	// 1 call
}

// A program that does not know the account its credentials act in asks
// STS once, before Install, rather than installing with "*".
func ExampleAccountID() {
	srv := stsEndpoint()
	defer srv.Close()
	cfg := exampleConfig(srv.URL)

	account, err := cloudgaws.AccountID(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := cloudgaws.Install(&cfg, account); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(account)
	// Output:
	// 123456789012
}

// The SDK's retry settings come from the top-level aws section of the
// configuration file.
func ExampleParseConfig() {
	doc := []byte(`
aws:
  max_retries: 3
  retry_mode: standard
ratelimit:
  aws:
    max_retries: 8
`)
	c, err := cloudgaws.ParseConfig(doc)
	fmt.Println(*c.MaxRetries, c.RetryMode, err)

	_, err = cloudgaws.ParseConfig([]byte("aws:\n  retry_mode: fast\n"))
	fmt.Println(err)
	// Output:
	// 3 standard <nil>
	// aws.retry_mode: unknown retry mode "fast" (standard or adaptive)
}

// A scheduler asks, before it gives a worker a task, how long the task's
// call would wait now (Governor.Delay on the scope Scope computes), and
// lets the call refuse to wait past a bound (resilience.WithMaxWait), so
// that it can requeue the task instead of holding the worker. Here STS
// answered one call with Throttling and Retry-After: 30.
func ExampleScope() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>r</RequestId></ErrorResponse>`)
	}))
	defer srv.Close()
	cfg := exampleConfig(srv.URL)
	gov, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := cloudgaws.Install(&cfg, "123456789012", cloudgaws.WithGovernor(gov), cloudgaws.WithMaxRetries(0)); err != nil {
		fmt.Println(err)
		return
	}
	scope, err := cloudgaws.Scope(cfg, sts.ServiceID, "GetCallerIdentity")
	if err != nil {
		fmt.Println(err)
		return
	}
	wait, why := gov.Delay(scope)
	fmt.Println(scope, wait, why)

	client := sts.NewFromConfig(cfg)
	_, _ = client.GetCallerIdentity(context.Background(), &sts.GetCallerIdentityInput{}) // throttled
	wait, why = gov.Delay(scope)
	fmt.Println(wait.Round(time.Second), why)

	ctx := resilience.WithMaxWait(context.Background(), time.Second)
	_, err = client.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}) // refused at once, nothing sent
	retryAfter, _ := resilience.RetryAfter(err)
	fmt.Println(resilience.Classify(err), retryAfter.Round(time.Second), errors.Is(err, resilience.ErrNoToken))
	// Output:
	// aws/123456789012/us-east-1/sts/GetCallerIdentity 0s <nil>
	// 30s resilience: no rate token now
	// THROTTLED 30s true
}
