package test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/internal/yamlconf"
	"github.com/cloudg/cloudg/resilience"
)

// Installing twice on one config governs each call once: one counted call,
// each retry counted once, one entry in APIOptions. Installing again on a
// copy (the assumed-role config) scopes the copy's clients to the new
// account and leaves the original's as they were, even when they share the
// APIOptions array.
func TestInstallIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", ec2Throttle)
		g, _ := resilience.NewGovernor(resilience.Config{})
		userOpt := func(*middleware.Stack) error { return nil }
		base := awsConfig(f, nil)
		base.APIOptions = make([]func(*middleware.Stack) error, 1, 8) // spare capacity to alias
		base.APIOptions[0] = userOpt
		opts := []cloudgaws.Option{cloudgaws.WithGovernor(g), cloudgaws.WithRetryMode(aws.RetryModeStandard), cloudgaws.WithMaxRetries(3)}
		for range 2 {
			if err := cloudgaws.Install(&base, "*", opts...); err != nil {
				t.Fatal(err)
			}
		}
		if len(base.APIOptions) != 2 {
			t.Fatalf("%d APIOptions after two installs, want the user's and one", len(base.APIOptions))
		}

		assumed := base.Copy()
		if err := cloudgaws.Install(&assumed, testAccount, cloudgaws.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		base.APIOptions = append(base.APIOptions, userOpt) // must not clobber the copy's

		ctx, stats := resilience.WithStats(context.Background())
		_ = describeVpcs(ctx, ec2.NewFromConfig(base))
		_ = describeVpcs(ctx, ec2.NewFromConfig(assumed))

		if got := f.count("DescribeVpcs"); got != 8 {
			t.Fatalf("sent %d, want 4 + 4 (max_retries 3 kept by the reinstall)", got)
		}
		for _, key := range []string{"aws/*/" + testRegion + "/ec2", ec2Key} {
			st := scopeStats(g, stats, key)
			if st.Calls != 1 || st.Throttled != 4 || st.Retries != 3 || st.GaveUp != 1 {
				t.Fatalf("%s: stats = %+v, want each call and retry counted once", key, st)
			}
		}
	})
}

// The middleware of an installation that APIOptions lists twice (a user
// merged two installed configs' options) runs once per call.
func TestDuplicateAPIOptionsRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{})
		cfg.APIOptions = append(cfg.APIOptions, cfg.APIOptions...)
		ctx, stats := resilience.WithStats(context.Background())
		if err := describeVpcs(ctx, ec2.NewFromConfig(cfg)); err != nil {
			t.Fatal(err)
		}
		if st := scopeStats(g, stats, ec2Key); st.Calls != 1 {
			t.Fatalf("stats = %+v", st)
		}
	})
}

// A failure to install leaves the config as it was and usable, logs the
// reason at warn level, so that a logger showing warnings shows it, and
// returns it.
func TestInstallFailureLeavesConfigUsable(t *testing.T) {
	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))

	if err := cloudgaws.Install(nil, "*", cloudgaws.WithLogger(logger)); err == nil {
		t.Fatal("nil config: no error")
	}
	for _, tc := range []struct {
		name string
		opt  cloudgaws.Option
		path string
	}{
		{"retry mode", cloudgaws.WithRetryMode("legacy"), "aws.retry_mode"},
		{"max retries", cloudgaws.WithMaxRetries(-1), "aws.max_retries"},
		{"config", cloudgaws.WithConfig(cloudgaws.Config{MaxRetries: ptr(-2)}), "aws.max_retries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				logged.Reset()
				f := newFake(t)
				cfg := awsConfig(f, nil)
				err := cloudgaws.Install(&cfg, testAccount, tc.opt, cloudgaws.WithLogger(logger))
				var ce *yamlconf.Error
				if !errors.As(err, &ce) || ce.Path != tc.path {
					t.Fatalf("err = %v, want a *yamlconf.Error at %s", err, tc.path)
				}
				if cfg.APIOptions != nil || cfg.Retryer != nil || cfg.RetryMode != "" {
					t.Fatal("a failed install changed the config")
				}
				if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), tc.path) {
					t.Fatalf("logged %q", logged.String())
				}
				if err := describeVpcs(context.Background(), ec2.NewFromConfig(cfg)); err != nil || f.count("DescribeVpcs") != 1 {
					t.Fatalf("the config is unusable: %v", err)
				}
			})
		})
	}

	// A panic while installing (here, the config's own retryer factory)
	// is an error too, and the config is left alone.
	cfg := aws.Config{Retryer: func() aws.Retryer { panic("boom") }}
	if err := cloudgaws.Install(&cfg, "*", cloudgaws.WithLogger(logger)); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
	if cfg.APIOptions != nil {
		t.Fatal("a failed install changed the config")
	}

	// An account id that is not plain text (scopekey.Plain: space in it,
	// one read from a file with its newline; another control character, a
	// byte that is not UTF-8, more than 128 bytes) names scopes that no
	// other install, no override and no Delay a scheduler asks would
	// match, and would reach log lines, metric labels and the status page
	// as it is: refused, as the other integrations give up such a part,
	// the config left alone.
	for _, id := range []string{testAccount + "\n", " " + testAccount, "1111 2222 3333", "\t",
		testAccount + "\x00", "\x1b[31m" + testAccount, testAccount + "\xff", testAccount + "\u202e", strings.Repeat("1", 129)} {
		logged.Reset()
		cfg := aws.Config{}
		err := cloudgaws.Install(&cfg, id, cloudgaws.WithLogger(logger))
		if err == nil || !strings.Contains(err.Error(), "account id") {
			t.Fatalf("Install with the account id %q: %v, want refused", id, err)
		}
		// The error names every reason: each id above is refused for one.
		if msg := err.Error(); !strings.Contains(msg, "a space") || !strings.Contains(msg, "control or format character") ||
			!strings.Contains(msg, "not UTF-8") || !strings.Contains(msg, "more than 128 bytes") {
			t.Fatalf("Install with the account id %q: %q, want the reasons named", id, msg)
		}
		if cfg.APIOptions != nil || cfg.Retryer != nil {
			t.Fatalf("a refused account id %q changed the config", id)
		}
		if !strings.Contains(logged.String(), "level=WARN") {
			t.Fatalf("the refused account id %q logged %q", id, logged.String())
		}
	}
}

// Where the SDK's retry settings come from: the options, else what the
// config already had (AWS_MAX_ATTEMPTS, AWS_RETRY_MODE, a retryer of the
// user's), else 10 retries.
func TestRetrySettingsPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name     string
		prepare  func(*aws.Config)
		opts     []cloudgaws.Option
		attempts int
	}{
		{"config RetryMaxAttempts", func(c *aws.Config) { c.RetryMaxAttempts = 5 }, nil, 5},
		{"option over config", func(c *aws.Config) { c.RetryMaxAttempts = 5 }, []cloudgaws.Option{cloudgaws.WithMaxRetries(1)}, 2},
		{"the user's retryer kept", func(c *aws.Config) {
			c.Retryer = func() aws.Retryer { return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 2 }) }
		}, nil, 2},
		{"the user's retryer with max retries", func(c *aws.Config) {
			c.Retryer = func() aws.Retryer { return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 2 }) }
		}, []cloudgaws.Option{cloudgaws.WithMaxRetries(4)}, 5},
		{"base retryer option", nil, []cloudgaws.Option{cloudgaws.WithBaseRetryer(func() aws.Retryer {
			return retry.AddWithMaxAttempts(retry.NewStandard(), 3)
		})}, 3},
		{"config from a document", nil, []cloudgaws.Option{cloudgaws.WithConfig(mustParse(t, `{"aws": {"max_retries": 6, "retry_mode": "standard"}}`))}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.always("DescribeVpcs", ec2Throttle)
				g, _ := resilience.NewGovernor(resilience.Config{})
				cfg := awsConfig(f, nil)
				cfg.RetryMode = aws.RetryModeStandard
				if tc.prepare != nil {
					tc.prepare(&cfg)
				}
				if err := cloudgaws.Install(&cfg, testAccount, append([]cloudgaws.Option{cloudgaws.WithGovernor(g)}, tc.opts...)...); err != nil {
					t.Fatal(err)
				}
				if cfg.RetryMaxAttempts != 0 {
					t.Fatalf("RetryMaxAttempts left at %d: it would override the retryer", cfg.RetryMaxAttempts)
				}
				ctx, stats := resilience.WithStats(context.Background())
				_ = describeVpcs(ctx, ec2.NewFromConfig(cfg))
				if got := f.count("DescribeVpcs"); got != tc.attempts {
					t.Fatalf("sent %d, want %d", got, tc.attempts)
				}
				if st := scopeStats(g, stats, ec2Key); st.Retries != int64(tc.attempts-1) || st.GaveUp != 1 {
					t.Fatalf("stats = %+v: the retries were not governed", st)
				}
			})
		})
	}
}

// The budget still ends the SDK's loop when a call overrides the attempts
// (the SDK wraps the retryer) or a client replaces the retryer altogether
// (the per-attempt middleware accounts for the retries then).
func TestBudgetWithOverriddenRetryers(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(ctx context.Context, cfg aws.Config) error
	}{
		{"per-operation RetryMaxAttempts", func(ctx context.Context, cfg aws.Config) error {
			_, err := ec2.NewFromConfig(cfg).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{}, func(o *ec2.Options) { o.RetryMaxAttempts = 9 })
			return err
		}},
		{"client RetryMaxAttempts", func(ctx context.Context, cfg aws.Config) error {
			return describeVpcs(ctx, ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.RetryMaxAttempts = 9 }))
		}},
		{"client's own retryer", func(ctx context.Context, cfg aws.Config) error {
			return describeVpcs(ctx, ec2.NewFromConfig(cfg, func(o *ec2.Options) {
				o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxAttempts = 9; so.RateLimiter = ratelimit.None })
			}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.always("DescribeVpcs", ec2Throttle)
				cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: ptr(0)}})
				ctx, stats := resilience.WithStats(context.Background())
				err := tc.call(ctx, cfg)
				var rbe *resilience.RetryBudgetExhaustedError
				var apiErr smithy.APIError
				if !errors.As(err, &rbe) || !errors.As(err, &apiErr) || apiErr.ErrorCode() != "Throttling" {
					t.Fatalf("err = %v", err)
				}
				if got := f.count("DescribeVpcs"); got != 3 {
					t.Fatalf("sent %d, want 3 (the two free retries)", got)
				}
				if st := scopeStats(g, stats, ec2Key); st.Retries != 2 || st.GaveUp != 1 {
					t.Fatalf("stats = %+v", st)
				}
			})
		})
	}
}

// The SDK's per-client retry quota (500 tokens, 5 per throttled retry) is
// off: the governor's budget replaces it. Under the SDK's defaults the
// 101st throttled retry of a client fails with "retry quota exceeded".
func TestSDKRetryQuotaOff(t *testing.T) {
	for _, mode := range []aws.RetryMode{aws.RetryModeStandard, aws.RetryModeAdaptive} {
		cfg := aws.Config{}
		if err := cloudgaws.Install(&cfg, "*", cloudgaws.WithRetryMode(mode)); err != nil {
			t.Fatal(err)
		}
		r := cfg.Retryer().(aws.RetryerV2)
		if r.MaxAttempts() != cloudgaws.DefaultMaxRetries+1 {
			t.Fatalf("%s: max attempts %d", mode, r.MaxAttempts())
		}
		throttle := &smithy.GenericAPIError{Code: "Throttling"}
		for i := range 300 {
			if _, err := r.GetRetryToken(context.Background(), throttle); err != nil {
				t.Fatalf("%s: retry %d: %v", mode, i+1, err)
			}
		}
	}
	sdk := retry.NewStandard()
	var err error
	for range 300 {
		if _, err = sdk.GetRetryToken(context.Background(), &smithy.GenericAPIError{Code: "Throttling"}); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("the SDK's default retryer has no quota: this test shows nothing")
	}
}

// A presigner's stack has no retry loop and sends nothing: presigning with
// an installed config takes no token or slot and counts no call.
func TestPresignNotGoverned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}})
		hold := holdSlot(t, g, "other")
		defer hold.End(nil)
		ctx, stats := resilience.WithStats(context.Background())
		req, err := sts.NewPresignClient(sts.NewFromConfig(cfg)).PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err != nil || !strings.Contains(req.URL, "Action=GetCallerIdentity") {
			t.Fatalf("presign: %+v, %v", req, err)
		}
		if tot := g.Summary(stats).Totals; tot.Calls != 0 || f.count("GetCallerIdentity") != 0 {
			t.Fatalf("totals %+v", tot)
		}
	})
}

// With the provider disabled the clients work as if nothing were
// installed: nothing is counted, and the SDK retries as configured.
func TestDisabledProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.always("DescribeVpcs", ec2Throttle)
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{Enabled: ptr(false), RetryBudget: ptr(0)}},
			cloudgaws.WithMaxRetries(3))
		ctx, stats := resilience.WithStats(context.Background())
		err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "RequestLimitExceeded" || f.count("DescribeVpcs") != 4 {
			t.Fatalf("err = %v, sent %d", err, f.count("DescribeVpcs"))
		}
		if tot := g.Summary(stats).Totals; tot.Calls != 0 || tot.Throttled != 0 {
			t.Fatalf("totals %+v", tot)
		}
	})
}
