package test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go/middleware"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// An attempt that fails before its request leaves the process (its
// credentials could not be had, here from a credential server on
// 127.0.0.1 that refuses the connection, or that answers in words of
// throttling) says nothing of the service it was for, to which nothing
// was sent: it is not the service's transient error or throttle, the
// scope is neither slowed nor failed, and the call, lost, is in the
// ledger as errored (a local error). The caller gets the SDK's error.
func TestAnAttemptThatNeverLeftIsNoAnswer(t *testing.T) {
	refusing := "http://" + closedAddr(t) + "/credentials"
	for name, creds := range map[string]aws.CredentialsProviderFunc{
		"refused": func(ctx context.Context) (aws.Credentials, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, refusing, nil)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				return aws.Credentials{}, errors.New("the credential server answered")
			}
			return aws.Credentials{}, err
		},
		"throttling words": func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, fmt.Errorf("credential server: Rate exceeded")
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t)
			cfg, g := tcpGoverned(t, f, fastEC2, cloudgaws.WithMaxRetries(2), cloudgaws.WithBaseRetryer(quickRetryer))
			cfg.Credentials = creds
			ctx, stats := resilience.WithStats(context.Background())
			ctx, ledger := resilience.WithLedger(ctx, "vpcs")
			err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
			if err == nil || !strings.Contains(err.Error(), "get identity") {
				t.Fatalf("err %v, want the SDK's credentials error", err)
			}
			if n := f.count("DescribeVpcs"); n != 0 {
				t.Fatalf("DescribeVpcs sent %d times without credentials", n)
			}
			s := scopeStats(g, stats, ec2Key)
			if s.Throttled != 0 || s.TransientErrors != 0 || s.Failed != 0 || s.GaveUp != 0 || s.Errored != 1 {
				t.Fatalf("ec2 counters %v; want no throttle, no transient error, the call errored", s)
			}
			if ledger.Count(resilience.LossErrored) != 1 || ledger.Lost() != 1 {
				t.Fatalf("ledger %q, want the call lost as errored", ledger.Describe())
			}
			snap := g.Inspect(vpcsScope)
			if snap.Leaf.Rate != snap.Leaf.Ceiling || snap.Leaf.Paused != 0 || snap.Breaker.Failures != 0 {
				t.Fatalf("scope %+v; want its rate, pause and breaker untouched", snap)
			}
		})
	}
}

// The service's own endpoint refusing the connection is the scope's
// transient error, as before: the request left the process for it.
func TestARefusedEndpointIsTheScopesTransientError(t *testing.T) {
	f := newFake(t)
	cfg, g := tcpGoverned(t, f, fastEC2, cloudgaws.WithMaxRetries(2), cloudgaws.WithBaseRetryer(quickRetryer))
	cfg.BaseEndpoint = aws.String("http://" + closedAddr(t))
	ctx, stats := resilience.WithStats(context.Background())
	err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Fatalf("err %v, want the connection's *url.Error", err)
	}
	if s := scopeStats(g, stats, ec2Key); s.TransientErrors != 3 || s.Failed != 1 {
		t.Fatalf("ec2 counters %v; want 3 transient errors, the call failed", s)
	}
}

// The SDK's retries of attempts that never left the process (credentials
// that could not be had, the credential server on 127.0.0.1 refusing the
// connection three times) add no load to the service: they are not
// counted as retries of the scope and cost nothing of the provider's
// retry budget, the shared budget against retry storms on the provider.
// The attempt that gets its credentials at last is the call's first to
// EC2, and succeeds, whatever the budget holds.
func TestRetriesOfAttemptsThatNeverLeftCostNoBudget(t *testing.T) {
	refusing := "http://" + closedAddr(t) + "/credentials"
	var asked atomic.Int32
	creds := aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
		if asked.Add(1) <= 3 {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, refusing, nil)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				return aws.Credentials{}, errors.New("the credential server answered")
			}
			return aws.Credentials{}, err
		}
		return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret", Source: "test"}, nil
	})
	budget := 0
	rc := resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: &budget, Services: fastEC2.AWS.Services}}
	f := newFake(t)
	cfg, g := tcpGoverned(t, f, rc, cloudgaws.WithMaxRetries(4), cloudgaws.WithBaseRetryer(quickRetryer))
	cfg.Credentials = creds
	ctx, stats := resilience.WithStats(context.Background())
	if err := describeVpcs(ctx, ec2.NewFromConfig(cfg)); err != nil {
		t.Fatalf("err %v; want the call to succeed once it has its credentials", err)
	}
	if n, a := f.count("DescribeVpcs"), asked.Load(); n != 1 || a != 4 {
		t.Fatalf("DescribeVpcs sent %d times, credentials asked %d times; want 1 and 4", n, a)
	}
	s := scopeStats(g, stats, ec2Key)
	if s.Calls != 1 || s.Retries != 0 || s.Errored != 0 || s.TransientErrors != 0 {
		t.Fatalf("ec2 counters %v; want one call, no retry, nothing lost", s)
	}
}

// In a stack without the SDK's AddRawResponseToMetadata (every AWS
// client's has it; an APIOption of the caller's, listed before the
// installation, removed it here), whose metadata says nothing of the
// attempt's raw response, the governor marks the attempts that reached
// the HTTP client itself: the service's own refused endpoint is still
// the scope's transient error, not a local one.
func TestARefusedEndpointIsTheScopesTransientErrorWithoutTheRawResponse(t *testing.T) {
	f := newFake(t)
	g, err := resilience.NewGovernor(fastEC2)
	if err != nil {
		t.Fatal(err)
	}
	cfg := loopbackConfig(t, f)
	cfg.APIOptions = append(cfg.APIOptions, func(s *middleware.Stack) error {
		_, err := s.Deserialize.Remove("AddRawResponseToMetadata")
		return err
	})
	if err := cloudgaws.Install(&cfg, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithMaxRetries(2), cloudgaws.WithBaseRetryer(quickRetryer)); err != nil {
		t.Fatal(err)
	}
	cfg.BaseEndpoint = aws.String("http://" + closedAddr(t))
	ctx, stats := resilience.WithStats(context.Background())
	err = describeVpcs(ctx, ec2.NewFromConfig(cfg))
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Fatalf("err %v, want the connection's *url.Error", err)
	}
	if s := scopeStats(g, stats, ec2Key); s.TransientErrors != 3 || s.Failed != 1 {
		t.Fatalf("ec2 counters %v; want 3 transient errors, the call failed", s)
	}
}

// withoutRawResponse removes the SDK's AddRawResponseToMetadata from a
// call's stack.
func withoutRawResponse(s *middleware.Stack) error {
	_, err := s.Deserialize.Remove("AddRawResponseToMetadata")
	return err
}

// Whatever order a call's options run in, an attempt that reached the
// HTTP client is the scope's: the SDK's AddRawResponseToMetadata removed
// by an option that runs after the installation's (a client's option, a
// call's) leaves the service's answers what they are, a throttle that
// halves the scope's rate, a transient error, not local errors of an
// attempt that never left the process.
func TestAnswersAreTheScopesWhicheverOptionRemovesTheRawResponse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(aws.Config) *ec2.Client
		call   []func(*ec2.Options)
	}{
		{"client option", func(cfg aws.Config) *ec2.Client {
			return ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.APIOptions = append(o.APIOptions, withoutRawResponse) })
		}, nil},
		{"call option", func(cfg aws.Config) *ec2.Client { return ec2.NewFromConfig(cfg) },
			[]func(*ec2.Options){func(o *ec2.Options) { o.APIOptions = append(o.APIOptions, withoutRawResponse) }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t)
				f.script("DescribeVpcs", ec2Throttle, ec2Internal, ok)
				cfg, g := governed(t, f, resilience.Config{})
				ctx, stats := resilience.WithStats(context.Background())
				if _, err := tc.client(cfg).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{}, tc.call...); err != nil {
					t.Fatalf("err %v; want the call to succeed at its third attempt", err)
				}
				s := scopeStats(g, stats, ec2Key)
				if s.Calls != 1 || s.Throttled != 1 || s.TransientErrors != 1 || s.Retries != 2 || s.Errored != 0 {
					t.Fatalf("ec2 counters %v; want one call, one throttle, one transient error, two retries, nothing local", s)
				}
				snap := g.Inspect(vpcsScope)
				if snap.Leaf.Rate >= snap.Leaf.Ceiling {
					t.Fatalf("leaf %+v; want its rate halved by the throttle", snap.Leaf)
				}
			})
		})
	}
}

// A stack run twice (a middleware of the caller's, outside the
// governor's, that sends the call again) is two governed calls, each
// with a state of its own: the second does not end with the governor's
// stop of the first (an empty retry budget).
func TestAStackRunTwiceIsTwoCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeVpcs", ec2Throttle, ec2Throttle, ec2Throttle, ec2Throttle, ok)
		cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{RetryBudget: ptr(1)}})
		var first error
		twice := middleware.InitializeMiddlewareFunc("twice", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			_, _, first = next.HandleInitialize(ctx, in)
			return next.HandleInitialize(ctx, in)
		})
		client := ec2.NewFromConfig(cfg, func(o *ec2.Options) {
			o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error { return s.Initialize.Add(twice, middleware.Before) })
		})
		ctx, stats := resilience.WithStats(context.Background())
		err := describeVpcs(ctx, client)
		var rbe *resilience.RetryBudgetExhaustedError
		if !errors.As(first, &rbe) || err != nil {
			t.Fatalf("first run %v, second %v; want the budget's stop of the first, the second's success", first, err)
		}
		if s := scopeStats(g, stats, ec2Key); s.Calls != 2 || s.GaveUp != 1 || f.count("DescribeVpcs") != 5 {
			t.Fatalf("ec2 counters %v, sent %d; want two calls, one given up, sent 5 times", s, f.count("DescribeVpcs"))
		}
	})
}
