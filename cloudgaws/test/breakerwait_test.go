package test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/observe"
	"github.com/cloudg/cloudg/resilience"
)

// waitConfig is an AWS provider that waits for its breakers' verdicts
// (breaker_wait): one failed call opens a breaker for 10 s.
func waitConfig(wait bool) resilience.Config {
	return resilience.Config{AWS: resilience.ProviderConfig{BreakerWait: wait, BreakerThreshold: 1, BreakerCooldownSeconds: 10}}
}

// With breaker_wait, a call whose SDK attempts all fail on a transient
// error is not lost: its failure opens the breaker, and the call is sent
// again, with the SDK's attempts renewed, as the breaker's probe when the
// cooldown ends. Without breaker_wait the SDK's loop ends the call.
func TestBreakerWaitResendsACallWhoseSDKAttemptsRanOut(t *testing.T) {
	for _, wait := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			f := newFake(t)
			f.script("DescribeVpcs", ec2Internal, ec2Internal, ec2Internal, ok)
			cfg, g := governed(t, f, waitConfig(wait), cloudgaws.WithMaxRetries(2))
			ctx, stats := resilience.WithStats(context.Background())
			err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
			sent := f.sentAt("DescribeVpcs")
			var mae *retry.MaxAttemptsError
			if !wait {
				if !errors.As(err, &mae) || len(sent) != 3 {
					t.Fatalf("without breaker_wait: error %v after %d attempts, want the SDK's MaxAttemptsError after 3", err, len(sent))
				}
				return
			}
			if err != nil || len(sent) != 4 {
				t.Fatalf("error %v after %d attempts, want success on the 4th", err, len(sent))
			}
			if gap := sent[3].Sub(sent[2]); gap < 10*time.Second || gap > 11*time.Second {
				t.Fatalf("sent again %v after the SDK's last attempt, want when the breaker's 10 s cooldown ended", gap)
			}
			st := scopeStats(g, stats, ec2Key)
			if st.Calls != 1 || st.BreakerTrips != 1 || st.Retries != 3 || st.TransientErrors != 3 || st.GaveUp != 0 {
				t.Fatalf("stats %+v: want 1 call, 1 breaker trip, 3 retries (the SDK's 2 and the resend), 3 transient errors, no give-up", st)
			}
			if s := g.Inspect(vpcsScope).Breaker; s.State.String() != "closed" {
				t.Fatalf("breaker %v after the probe's success", s.State)
			}
		})
	}
}

// A retry that the breaker held until its verdict renews the call's
// attempts: when the SDK's attempts then run out on a throttle (not a
// transient error, which is resent anyway), the call is sent again rather
// than lost, since the SDK's count holds the attempts spent as the scope
// went down. Here the SDK has four attempts; another call opens the
// breaker during the second; the third waits for the cooldown, and the
// third and fourth are throttled; the fifth, the resend, succeeds.
//
// The resend is one: a call whose resent loop is throttled to its end
// (thrice more) is given up after those four attempts, not sent again.
// And a resend is a retry: with no retry budget left for it, or when the
// last throttle asks for a longer wait than the call's max wait, the call
// is not resent, and ends as the SDK left it, its failure the probe's
// verdict (the breaker opens again rather than waiting on a probe that is
// gone).
func TestBreakerWaitResendsAThrottledCallWhoseRetryItHeld(t *testing.T) {
	for _, c := range []struct {
		name    string
		forGood bool
		budget  int
		maxWait time.Duration // 0: unbounded; else the 4th throttle asks for a minute
	}{
		{"resent", false, 500, 0},
		{"throttled for good", true, 500, 0},
		{"no budget left", false, 1, 0},
		{"hint past the max wait", false, 500, 30 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			testResendAfterAHeldRetry(t, c.forGood, c.budget, c.maxWait)
		})
	}
}

func testResendAfterAHeldRetry(t *testing.T, forGood bool, budget int, maxWait time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		switch {
		case forGood:
			f.script("DescribeVpcs", ec2Internal, ec2Internal, ec2Throttle)
		case maxWait > 0:
			f.script("DescribeVpcs", ec2Internal, ec2Internal, ec2Throttle, tooManyRequests("60"), ok)
		default:
			f.script("DescribeVpcs", ec2Internal, ec2Internal, ec2Throttle, ec2Throttle, ok)
		}
		rc := waitConfig(true)
		rc.AWS.RetryBudget = &budget
		cfg, g := governed(t, f, rc, cloudgaws.WithMaxRetries(3))
		f.hold = func(*http.Request) {
			if f.count("DescribeVpcs") != 2 {
				return
			}
			// Another call of the scope fails: its failure opens the
			// breaker (threshold 1); it stops waiting for the verdict
			// when its context ends.
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				resilience.Do(ctx, vpcsScope, func(context.Context) error { return &smithy.GenericAPIError{Code: "InternalError"} },
					resilience.WithGovernor(g), resilience.WithPolicy(resilience.RetryPolicy{MaxAttempts: 1}))
			}()
			synctest.Wait()
			cancel()
			<-done
			if s := g.Inspect(vpcsScope).Breaker.State.String(); s != "open" {
				t.Errorf("breaker %v after the other call's failure, want open", s)
			}
		}
		ctx, stats := resilience.WithStats(context.Background())
		if maxWait > 0 {
			ctx = resilience.WithMaxWait(ctx, maxWait)
		}
		err := describeVpcs(ctx, ec2.NewFromConfig(cfg))
		sent := f.sentAt("DescribeVpcs")
		if budget == 1 || maxWait > 0 {
			var mae *retry.MaxAttemptsError
			if !errors.As(err, &mae) || len(sent) != 4 {
				t.Fatalf("error %v after %d attempts, want the SDK's MaxAttemptsError after 4: no resend", err, len(sent))
			}
			if st := scopeStats(g, stats, ec2Key); st.GaveUp != 1 {
				t.Fatalf("stats %+v: want the call given up once", st)
			}
			if s := g.Inspect(vpcsScope).Breaker.State.String(); s != "open" {
				t.Fatalf("breaker %v after its probe was given up, want open again", s)
			}
			return
		}
		if forGood {
			var mae *retry.MaxAttemptsError
			if !errors.As(err, &mae) || len(sent) != 8 {
				t.Fatalf("error %v after %d attempts, want the SDK's MaxAttemptsError after 8 (4, then the resend's 4)", err, len(sent))
			}
			return
		}
		if err != nil || len(sent) != 5 {
			t.Fatalf("error %v after %d attempts, want success on the 5th (the resend)", err, len(sent))
		}
		if gap := sent[2].Sub(sent[1]); gap < 10*time.Second {
			t.Fatalf("the third attempt went %v after the second, want after the breaker's 10 s cooldown", gap)
		}
	})
}

// A retryer of the user's (WithBaseRetryer) counts its own attempts: when
// they run out, the call is sent again as with the SDK's own retryer.
func TestBreakerWaitResendsTheCallsOfAUserRetryer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeVpcs", ec2Internal, ec2Internal, ec2Internal, ok)
		base := func() aws.Retryer { return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3 }) }
		cfg, _ := governed(t, f, waitConfig(true), cloudgaws.WithBaseRetryer(base))
		if err := describeVpcs(context.Background(), ec2.NewFromConfig(cfg)); err != nil || f.count("DescribeVpcs") != 4 {
			t.Fatalf("error %v after %d attempts, want success on the 4th", err, f.count("DescribeVpcs"))
		}
	})
}

// A per-operation attempt count (the client option RetryMaxAttempts) is
// the SDK's to keep: the call is sent again only once its loop has made
// them all.
func TestBreakerWaitResendsAfterAPerOperationAttemptCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		f.script("DescribeVpcs", ec2Internal, ec2Internal, ec2Internal, ec2Internal, ec2Internal, ok)
		cfg, _ := governed(t, f, waitConfig(true), cloudgaws.WithMaxRetries(1))
		_, err := ec2.NewFromConfig(cfg).DescribeVpcs(context.Background(), &ec2.DescribeVpcsInput{}, func(o *ec2.Options) { o.RetryMaxAttempts = 5 })
		sent := f.sentAt("DescribeVpcs")
		if err != nil || len(sent) != 6 {
			t.Fatalf("error %v after %d attempts, want success on the 6th", err, len(sent))
		}
		if gap := sent[5].Sub(sent[4]); gap < 10*time.Second {
			t.Fatalf("sent again %v after the 5th attempt, want after the breaker's cooldown", gap)
		}
		for i := 1; i < 5; i++ {
			if gap := sent[i].Sub(sent[i-1]); gap >= 10*time.Second {
				t.Fatalf("attempt %d went %v after the one before: the SDK's five attempts should not wait for the breaker", i+1, gap)
			}
		}
	})
}

// fakeS3 answers PutObject with InternalError (500, transient) fail times,
// then succeeds; it records every body it was sent.
type fakeS3 struct {
	fail   int
	mu     sync.Mutex
	bodies []string
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b []byte
	if r.Body != nil {
		b, _ = io.ReadAll(r.Body)
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, string(b))
	n := len(f.bodies)
	f.mu.Unlock()
	if n <= f.fail {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message><RequestId>req-err</RequestId></Error>`)
		return
	}
	w.Header().Set("ETag", `"etag"`)
}

// A call sent again after its SDK attempts ran out sends its whole body
// again: the stream the caller gave (an upload's) is rewound to where the
// call's first attempt began, as the SDK rewinds it before each retry.
func TestBreakerWaitResendsTheWholeBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeS3{fail: 3}
		g, err := resilience.NewGovernor(waitConfig(true))
		if err != nil {
			t.Fatal(err)
		}
		cfg := aws.Config{
			Region:       testRegion,
			HTTPClient:   memClient{f},
			BaseEndpoint: aws.String("http://s3.fake"),
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", Source: "test"}, nil
			}),
			RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		}
		if err := cloudgaws.Install(&cfg, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithMaxRetries(2)); err != nil {
			t.Fatal(err)
		}
		client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
		const content = "the object's bytes, all of them"
		body := strings.NewReader("skipped: " + content)
		body.Seek(int64(len("skipped: ")), io.SeekStart) // the upload starts mid-stream
		_, err = client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bucket"), Key: aws.String("key"), Body: body})
		if err != nil {
			t.Fatalf("PutObject: %v", err)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.bodies) != 4 {
			t.Fatalf("%d attempts, want 4 (3 failed, then the resend)", len(f.bodies))
		}
		for i, b := range f.bodies {
			if b != content {
				t.Fatalf("attempt %d sent %q, want %q", i+1, b, content)
			}
		}
	})
}

// breakerLog records a governor's breaker changes with their times.
type breakerLog struct {
	mu      sync.Mutex
	changes []observe.Event
}

func (l *breakerLog) Observe(e observe.Event) {
	if e.Kind == observe.BreakerChange {
		l.mu.Lock()
		l.changes = append(l.changes, e)
		l.mu.Unlock()
	}
}

// During an outage the breaker still sends a single call while the others
// wait for its verdict: eight SDK calls in flight when the scope goes
// down for 15 s send nothing while the breaker is open, only the probe
// (and its own SDK retries) while it is half-open, and all succeed once
// the scope is back.
func TestBreakerWaitSendsOneProbeAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t)
		start := time.Now()
		f.scripts["DescribeVpcs"] = func(int) reply {
			if time.Since(start) < 15*time.Second {
				return ec2Internal
			}
			return ok
		}
		log := &breakerLog{}
		g, err := resilience.NewGovernor(waitConfig(true), resilience.WithObserver(log))
		if err != nil {
			t.Fatal(err)
		}
		cfg := awsConfig(f, nil)
		if err := cloudgaws.Install(&cfg, testAccount, cloudgaws.WithGovernor(g), cloudgaws.WithRetryMode(aws.RetryModeStandard), cloudgaws.WithMaxRetries(2)); err != nil {
			t.Fatal(err)
		}
		client := ec2.NewFromConfig(cfg)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				if err := describeVpcs(context.Background(), client); err != nil {
					t.Errorf("call %d lost: %v", i, err)
				}
			})
		}
		wg.Wait()
		sent := f.sentAt("DescribeVpcs")
		log.mu.Lock()
		defer log.mu.Unlock()
		if len(log.changes) < 3 || log.changes[0].To.String() != "open" {
			t.Fatalf("breaker changes %v: want it to open, let a probe through and close", log.changes)
		}
		// Between the breaker's opening and its closing, attempts go only
		// as a probe: the one the breaker let through, at the instant it
		// did, and that probe's own SDK retries while it is half-open.
		opened, closed := log.changes[0].Time, log.changes[len(log.changes)-1].Time
		probeSent := 0
		for _, at := range sent {
			if !at.After(opened) || !at.Before(closed) {
				continue
			}
			halfOpen := false
			for i, c := range log.changes {
				if c.To.String() == "half_open" && !at.Before(c.Time) && i+1 < len(log.changes) && !at.After(log.changes[i+1].Time) {
					halfOpen = true
				}
			}
			if !halfOpen {
				t.Errorf("an attempt went at %v while the breaker was open", at.Sub(start))
			}
			probeSent++
		}
		probes := 0
		for _, c := range log.changes {
			if c.To.String() == "half_open" {
				probes++
			}
		}
		if probeSent > 3*probes {
			t.Errorf("%d attempts during %d probes, want at most the probe and its 2 SDK retries each", probeSent, probes)
		}
		if last := log.changes[len(log.changes)-1]; last.To.String() != "closed" {
			t.Fatalf("the breaker ended %v, want closed", last.To)
		}
	})
}
