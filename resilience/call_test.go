//go:build go1.26

package resilience

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestWorkedExample is the original system's worked example: a
// throttled-twice EC2 call and six concurrent calls at 2 rps burst 2.
func TestWorkedExample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{
			"secretsmanager": {MaxRPS: 2, Burst: 2},
		}}})
		ctx, stats := WithStats(context.Background())
		attempts := 0
		vpcs, err := Call(ctx, ec2Vpcs, func(context.Context) (string, error) {
			attempts++
			if attempts <= 2 {
				return "", &apiErr{code: "RequestLimitExceeded", status: 503, msg: "Rate exceeded"}
			}
			return "vpc-0a1b2c3d", nil
		}, WithGovernor(g))
		if err != nil || vpcs != "vpc-0a1b2c3d" || attempts != 3 {
			t.Fatalf("Call = %q, %v after %d attempts; want the VPC after 3", vpcs, err, attempts)
		}
		secret := Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "secretsmanager", Operation: "DescribeSecret"}
		start := time.Now()
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				if err := Do(ctx, secret, func(context.Context) error { return nil }, WithGovernor(g)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if el := time.Since(start); el != 2*time.Second {
			t.Fatalf("6 calls at 2 rps burst 2 took %v, want 2.0s", el)
		}
		sum := g.Summary(stats)
		want := "{calls: 9, throttled: 2, transient_errors: 0, retries: 2, gave_up: 0, rejected: 0, breaker_trips: 0, wait_seconds: 5.000}"
		if got := sum.Totals.String(); got != want {
			t.Fatalf("totals %s, want %s", got, want)
		}
		// The throttles were a second or more apart (10 rps, then 5) or
		// closer (one congestion event: 10 rps), as the spec explains.
		r := sum.SlowedBuckets[sk("aws/123456789012/us-east-1/ec2/DescribeVpcs")].Rate
		if r != 5 && r != 10 {
			t.Fatalf("DescribeVpcs at %v rps, want 5 or 10", r)
		}
		msgs := stats.Messages()
		if len(msgs) != 2 || msgs[1] != "aws/123456789012/us-east-1/secretsmanager: waited 5.0s for rate limit" {
			t.Fatalf("messages %q", msgs)
		}
	})
}

func TestFatalReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		n := 0
		err := Do(context.Background(), iamUsers, always(&n, accessDenied()), WithGovernor(g))
		if n != 1 || err.Error() != "AccessDenied" {
			t.Fatalf("%d attempts, err %v", n, err)
		}
	})
}

func TestDisabledProviderCallsFnOnceDirectly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, cfg := range []Config{{Enabled: new(false)}, {AWS: ProviderConfig{Enabled: new(false)}}} {
			g := newGov(t, cfg)
			ctx, stats := WithStats(context.Background())
			n := 0
			orig := throttle()
			if err := Do(ctx, iamUsers, always(&n, orig), WithGovernor(g)); err != orig || n != 1 {
				t.Fatalf("disabled: err %v after %d calls", err, n)
			}
			if stats.Messages() != nil || g.Summary(stats).Totals.Calls != 0 {
				t.Fatal("disabled provider recorded stats")
			}
		}
		// Only the disabled provider is off.
		g := newGov(t, Config{AWS: ProviderConfig{Enabled: new(false)}})
		if !g.Enabled("azure") || g.Enabled("aws") {
			t.Fatal("Enabled wrong")
		}
	})
}

func TestBadInput(t *testing.T) {
	if err := Do(context.Background(), Scope{}, func(context.Context) error { return nil }); !errors.Is(err, ErrNoProvider) {
		t.Fatalf("empty provider: %v", err)
	}
	if err := Do(context.Background(), iamUsers, nil); !errors.Is(err, ErrNilFunc) {
		t.Fatalf("nil fn: %v", err)
	}
	var fn func(context.Context) (int, error)
	if _, err := Call(context.Background(), iamUsers, fn); !errors.Is(err, ErrNilFunc) {
		t.Fatalf("nil fn: %v", err)
	}
	if _, err := Default().Begin(context.Background(), Scope{}); !errors.Is(err, ErrNoProvider) {
		t.Fatalf("Begin with an empty provider: %v", err)
	}
	if _, err := Wrap(iamUsers, fn)(context.Background()); !errors.Is(err, ErrNilFunc) {
		t.Fatalf("Wrap of nil: %v", err)
	}
	scopeOf := func(string) Scope { return iamUsers }
	if _, err := WrapArg[string, int](scopeOf, nil)(context.Background(), "a"); !errors.Is(err, ErrNilFunc) {
		t.Fatalf("WrapArg of nil: %v", err)
	}
	if _, err := WrapArg(nil, func(context.Context, string) (int, error) { return 1, nil })(context.Background(), "a"); !errors.Is(err, ErrNilFunc) {
		t.Fatalf("WrapArg with a nil scope function: %v", err)
	}
}

func TestUnknownProviderWorksAtGenericDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		sc := Scope{Provider: "github", Account: "my-org", Service: "rest"}
		start := time.Now()
		var wg sync.WaitGroup
		for range 60 {
			wg.Go(func() { Do(context.Background(), sc, func(context.Context) error { return nil }, WithGovernor(g)) })
		}
		wg.Wait()
		// 40 from the burst, 20 more at 20 rps: 1 s.
		if el := time.Since(start); el != time.Second {
			t.Fatalf("60 calls took %v, want 1s", el)
		}
		ps := g.provider("github")
		if ps.set.bulkhead != 64 || ps.set.retry.attempts != 9 || ps.set.leaf.Floor != 0.2 {
			t.Fatalf("generic settings %+v", ps.set)
		}
	})
}

func TestWrapAndWrapArg(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		n := 0
		f := Wrap(iamUsers, func(context.Context) (int, error) {
			n++
			if n == 1 {
				return 0, throttle()
			}
			return 42, nil
		}, WithGovernor(g))
		if v, err := f(context.Background()); v != 42 || err != nil {
			t.Fatalf("Wrap: %v %v", v, err)
		}
		var scopes []Scope
		h := WrapArg(func(region string) Scope {
			s := Scope{Provider: "aws", Account: "1", Region: region, Service: "ec2", Operation: "DescribeVpcs"}
			scopes = append(scopes, s)
			return s
		}, func(_ context.Context, region string) (string, error) { return region, nil }, WithGovernor(g))
		if v, err := h(context.Background(), "eu-west-1"); v != "eu-west-1" || err != nil {
			t.Fatal(v, err)
		}
		if scopes[0].Region != "eu-west-1" {
			t.Fatal("scope not computed from the argument")
		}
	})
}

func TestCallerCancellationIsNotRetriedNorCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		n := 0
		err := Do(ctx, iamUsers, func(ctx context.Context) error {
			n++
			cancel()
			return ctx.Err()
		}, WithGovernor(g))
		if !errors.Is(err, context.Canceled) || n != 1 {
			t.Fatalf("err %v after %d calls", err, n)
		}
		if b := g.Summary(nil).Breakers; len(b) != 0 {
			t.Fatal("a cancelled call counted toward the breaker")
		}
	})
}

func TestDefaultGovernorAndConfigure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		SetDefault(nil)
		defer SetDefault(nil)
		if err := Configure(Config{AWS: ProviderConfig{Services: map[string]ServiceConfig{"iam": {MaxRPS: 1, Burst: 1}}}}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for range 3 {
			if err := Do(context.Background(), iamUsers, func(context.Context) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
		if el := time.Since(start); el != 2*time.Second {
			t.Fatalf("3 calls at 1 rps burst 1 took %v", el)
		}
		if err := Configure(Config{AWS: ProviderConfig{MaxRPS: -1}}); err == nil {
			t.Fatal("invalid config accepted")
		}
		if Default().Config().AWS.Services["iam"].MaxRPS != 1 {
			t.Fatal("an invalid Configure changed the configuration")
		}
	})
}
