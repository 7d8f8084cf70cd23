package test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// AccountID asks STS once, with the config's own credentials, region and
// endpoint (the real STS client over 127.0.0.1), and the account it
// returns is what Install puts in the scopes: the calls are counted under
// the account, not under *.
func TestAccountIDAsksSTSOnceThroughTheConfig(t *testing.T) {
	f := newFake(t)
	cfg := loopbackConfig(t, f)

	account, err := cloudgaws.AccountID(context.Background(), cfg)
	if err != nil || account != testAccount {
		t.Fatalf("AccountID = %q, %v; want %s", account, err, testAccount)
	}
	if n := f.count("GetCallerIdentity"); n != 1 {
		t.Fatalf("GetCallerIdentity sent %d times, want 1", n)
	}

	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cloudgaws.Install(&cfg, account, cloudgaws.WithGovernor(g)); err != nil {
		t.Fatal(err)
	}
	ctx, stats := resilience.WithStats(context.Background())
	if err := describeVpcs(ctx, ec2.NewFromConfig(cfg)); err != nil {
		t.Fatal(err)
	}
	sum := g.Summary(stats)
	if st := sum.Scopes[mustScope(ec2Key)]; st.Calls != 1 {
		t.Fatalf("scopes %v: want one call in %s", sum.Scopes, ec2Key)
	}
	if n := f.count("GetCallerIdentity"); n != 1 {
		t.Fatalf("GetCallerIdentity sent %d times after Install, want still 1", n)
	}
}

// On a config already installed (with the account unknown), the STS call
// is governed like any other.
func TestAccountIDOnAnInstalledConfigIsGoverned(t *testing.T) {
	f := newFake(t)
	cfg := loopbackConfig(t, f)
	g, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cloudgaws.Install(&cfg, "*", cloudgaws.WithGovernor(g)); err != nil {
		t.Fatal(err)
	}
	ctx, stats := resilience.WithStats(context.Background())
	if account, err := cloudgaws.AccountID(ctx, cfg); err != nil || account != testAccount {
		t.Fatalf("AccountID = %q, %v", account, err)
	}
	sc := resilience.Scope{Provider: "aws", Region: testRegion, Service: "sts"}
	if st := g.Summary(stats).Scopes[sc]; st.Calls != 1 {
		t.Fatalf("scopes %v: want one call in %s", g.Summary(stats).Scopes, sc.Key())
	}
}

// A refusal is returned, wrapping the SDK's error, and no account is made
// up.
func TestAccountIDReturnsTheSDKError(t *testing.T) {
	f := newFake(t)
	f.always("GetCallerIdentity", reply{status: 403, code: "InvalidClientTokenId", msg: "The security token included in the request is invalid."})

	account, err := cloudgaws.AccountID(context.Background(), loopbackConfig(t, f))
	var api smithy.APIError
	if account != "" || !errors.As(err, &api) || api.ErrorCode() != "InvalidClientTokenId" {
		t.Fatalf("AccountID = %q, %v; want the SDK's InvalidClientTokenId", account, err)
	}
	if !strings.HasPrefix(err.Error(), "cloudgaws: account id: ") {
		t.Fatalf("error %q does not say where it comes from", err)
	}
}

// An answer without an account is an error, not an empty account (which
// Install would read as *).
func TestAccountIDRefusesAnAnswerWithoutAccount(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprint(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/alice</Arn></GetCallerIdentityResult></GetCallerIdentityResponse>`)
	}))
	defer srv.Close()
	account, err := cloudgaws.AccountID(context.Background(), awsConfig(newFake(t), srv))
	if account != "" || err == nil || !strings.Contains(err.Error(), "no account") {
		t.Fatalf("AccountID = %q, %v; want an error", account, err)
	}
}

// Credentials that carry their account (the SDK's SSO and assume-role
// providers fill aws.Credentials.AccountID, and so do static credentials
// read from AWS_ACCOUNT_ID) say it without a call: AccountID reads it
// there and sends nothing to STS. Credentials without it still have STS
// asked (TestAccountIDAsksSTSOnceThroughTheConfig).
func TestAccountIDReadsTheCredentialsAccountWithoutACall(t *testing.T) {
	f := newFake(t)
	cfg := loopbackConfig(t, f)
	cfg.Credentials = aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", Source: "test", AccountID: "210987654321"}, nil
	}))

	account, err := cloudgaws.AccountID(context.Background(), cfg)
	if err != nil || account != "210987654321" {
		t.Fatalf("AccountID = %q, %v; want the credentials' 210987654321", account, err)
	}
	if n := f.count("GetCallerIdentity"); n != 0 {
		t.Fatalf("GetCallerIdentity sent %d time(s), want none: the credentials carry the account", n)
	}
}

// Credentials that cannot be had fail AccountID with their error, once:
// the STS call, which would sign with them, is not made to fail the same
// way a second time (a cache does not keep a failure, and an instance
// metadata service that does not answer takes its timeout again).
func TestAccountIDReturnsTheCredentialsError(t *testing.T) {
	f := newFake(t)
	cfg := loopbackConfig(t, f)
	errNoCreds := errors.New("no credentials here")
	var retrieved int
	cfg.Credentials = aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		retrieved++
		return aws.Credentials{}, errNoCreds
	}))

	account, err := cloudgaws.AccountID(context.Background(), cfg)
	if account != "" || !errors.Is(err, errNoCreds) {
		t.Fatalf("AccountID = %q, %v; want the credentials' error", account, err)
	}
	if !strings.HasPrefix(err.Error(), "cloudgaws: account id: ") {
		t.Fatalf("error %q does not say where it comes from", err)
	}
	if n := f.count("GetCallerIdentity"); retrieved != 1 || n != 0 {
		t.Fatalf("credentials retrieved %d time(s), GetCallerIdentity sent %d; want 1 and 0", retrieved, n)
	}
}
