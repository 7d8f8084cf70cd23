package cloudgaws

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// AccountID returns the id of the account cfg's credentials act in. It is
// for a program that does not know its account when it calls Install, so
// that its scopes carry the account instead of *, where every account the
// program reaches would share one set of buckets, breakers and bulkhead:
//
//	account, err := cloudgaws.AccountID(ctx, cfg)
//	if err != nil { ... }
//	if err := cloudgaws.Install(&cfg, account); err != nil { ... }
//
// The account is read from cfg's credentials when they carry it
// (aws.Credentials.AccountID, which the SDK's SSO and assume-role
// providers fill, and static credentials read from AWS_ACCOUNT_ID), and
// nothing is sent. Otherwise STS is asked once (GetCallerIdentity) through
// cfg itself: its credentials, region, endpoint and HTTP client.
// GetCallerIdentity needs no permission. Called on a config Install has
// already instrumented, the call is governed like any other, in the scope
// Scope(cfg, sts.ServiceID, "GetCallerIdentity") returns: the account that
// installation was given (aws/*/<region>/sts/GetCallerIdentity when it was
// "*", aws/123456789012/... when it was that id) and cfg's region. The
// error wraps the credentials' (when they cannot be retrieved, STS is not
// asked) or the SDK's.
func AccountID(ctx context.Context, cfg aws.Config) (string, error) {
	if cfg.Credentials != nil {
		creds, err := cfg.Credentials.Retrieve(ctx)
		if err != nil {
			return "", fmt.Errorf("cloudgaws: account id: %w", err)
		}
		if creds.AccountID != "" {
			return creds.AccountID, nil
		}
	}
	out, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", fmt.Errorf("cloudgaws: account id: %w", err)
	}
	if id := aws.ToString(out.Account); id != "" {
		return id, nil
	}
	return "", errors.New("cloudgaws: account id: GetCallerIdentity answered no account")
}
