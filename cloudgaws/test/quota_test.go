package test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// A retryer of the caller's that Install keeps (config.WithRetryer's, the
// SDK's documented way to set a client's attempts or backoff, or
// WithBaseRetryer's) is most often the SDK's standard retryer, with its
// per-client retry quota: 500 tokens, 5 a throttled retry, none given back
// by a call that fails. The governor's retry budget, shared by every
// client of the process, replaces that quota for the retries it is asked
// about, as it does for the retryer Install makes: a client whose calls
// the service throttles to the end does not stop retrying after 100
// throttled retries with "retry quota exceeded" while the governor would
// let the retries go (here, the two retries of each call that cost the
// budget nothing). What the governor refuses (an empty budget) it still
// refuses.
func TestACallersRetryerHasNoRetryQuotaUnderTheGovernor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		install func(cfg *aws.Config, opts ...cloudgaws.Option) error
	}{
		{"config.WithRetryer's", func(cfg *aws.Config, opts ...cloudgaws.Option) error {
			cfg.Retryer = func() aws.Retryer { return retry.AddWithMaxAttempts(retry.NewStandard(), 3) }
			return cloudgaws.Install(cfg, testAccount, opts...)
		}},
		{"WithBaseRetryer's", func(cfg *aws.Config, opts ...cloudgaws.Option) error {
			return cloudgaws.Install(cfg, testAccount, append(opts, cloudgaws.WithBaseRetryer(func() aws.Retryer {
				return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3 })
			}))...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.always("DescribeVpcs", ec2Throttle)
				// No slowing, pausing or breaker: the retries are the
				// retryer's and the budget's alone.
				g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{
					Adaptive: ptr(false), MaxRPS: 1000, Burst: 1000, BreakerThreshold: 1000,
				}})
				if err != nil {
					t.Fatal(err)
				}
				cfg := awsConfig(f, nil)
				if err := tc.install(&cfg, cloudgaws.WithGovernor(g)); err != nil {
					t.Fatal(err)
				}
				client := ec2.NewFromConfig(cfg)
				const calls = 60 // 120 throttled retries: the quota lasts 100
				for i := range calls {
					err := describeVpcs(context.Background(), client)
					if err == nil {
						t.Fatal("a throttled call succeeded")
					}
					if strings.Contains(err.Error(), "retry quota exceeded") {
						t.Fatalf("call %d: %v; want its retries the governor's to refuse, not the SDK's quota's", i+1, err)
					}
				}
				if n := f.count("DescribeVpcs"); n != 3*calls {
					t.Fatalf("sent %d, want %d: three attempts a call", n, 3*calls)
				}
			})
		})
	}

	// The governor's budget still ends the SDK's loop.
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", ec2Throttle)
		g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: ptr(0)}})
		if err != nil {
			t.Fatal(err)
		}
		cfg := awsConfig(f, nil)
		cfg.Retryer = func() aws.Retryer { return retry.AddWithMaxAttempts(retry.NewStandard(), 5) }
		if err := cloudgaws.Install(&cfg, testAccount, cloudgaws.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		err = describeVpcs(context.Background(), ec2.NewFromConfig(cfg))
		var rbe *resilience.RetryBudgetExhaustedError
		if !errors.As(err, &rbe) || f.count("DescribeVpcs") != 3 {
			t.Fatalf("err %v after %d attempts; want the empty budget's stop after the two free retries", err, f.count("DescribeVpcs"))
		}
	})
}
