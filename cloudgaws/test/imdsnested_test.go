package test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// An IMDS client made from an installed config is not governed, but it
// gets the config's retryer, the governed one. When it is the source of
// a governed call's credentials (ec2rolecreds over imds.NewFromConfig of
// the installed config), it is called inside that call's attempt, with
// its context, in which the governed retryer finds the enclosing call's
// state. Its retries are not that call's: they must not be asked of that
// call's guard, nor start a watch of that call's breaker while the call's
// attempt is in flight, which the guard forbids: the watch reads the
// guard, when the breaker opens, as the attempt's answer is recorded in
// it (a data race, which -race reports).
func TestANestedIMDSCallsRetryIsNotTheEnclosingCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var imdsFails atomic.Int32
		imdsFails.Store(0)
		metadata := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut {
				w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
				io.WriteString(w, "token")
				return
			}
			if imdsFails.Add(-1) == -2 { // the retry's credentials
				http.Error(w, "busy", http.StatusInternalServerError) // the IMDS client retries it
				return
			}
			io.WriteString(w, "AKIDFROMIMDS")
		})
		f := newFake(t)
		f.always("DescribeVpcs", ec2Throttle) // the others' answers
		answers := newFake(t)                 // the call's: a success
		cfg, g := governed(t, f, resilience.Config{})
		md := imds.NewFromConfig(cfg, func(o *imds.Options) {
			o.Endpoint = "http://169.254.169.254"
			o.HTTPClient = memClient{metadata}
		})
		withIMDS := cfg.Copy()
		withIMDS.Credentials = aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
			out, err := md.GetMetadata(ctx, &imds.GetMetadataInput{Path: "iam/security-credentials/role"})
			if err != nil {
				return aws.Credentials{}, err
			}
			defer out.Content.Close()
			id, _ := io.ReadAll(out.Content)
			// Expired at once: each attempt fetches its own.
			return aws.Credentials{AccessKeyID: string(id), SecretAccessKey: "secret", Source: "imds", CanExpire: true, Expires: time.Now()}, nil
		})
		// The call's request is held in flight until the others have
		// opened the scope's breaker.
		inFlight, release := make(chan struct{}), make(chan struct{})
		var attempts atomic.Int32
		held := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if attempts.Add(1) == 1 {
				writeError(w, "ec2", ec2Internal) // the SDK retries it
				return
			}
			close(inFlight)
			<-release
			answers.ServeHTTP(w, r)
		})
		done := make(chan error)
		go func() {
			done <- describeVpcs(context.Background(), ec2.NewFromConfig(withIMDS, func(o *ec2.Options) { o.HTTPClient = memClient{held} }))
		}()
		<-inFlight
		once, _ := governedWith(t, f, g)
		once.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
		others := ec2.NewFromConfig(once)
		for range 5 {
			_ = describeVpcs(context.Background(), others) // each gives up: the breaker opens
		}
		if s := g.Inspect(mustScope(ec2Key + "/DescribeVpcs")).Breaker.State; s != state.Open {
			t.Fatalf("the breaker is %v, want open", s)
		}
		time.Sleep(time.Nanosecond) // whatever watches the call's guard sees the breaker open
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("the call whose credentials IMDS gave after a retry: %v; want its request, sent before the breaker opened, answered", err)
		}
		if n := -imdsFails.Load(); n != 3 {
			t.Fatalf("IMDS answered %d requests for credentials; want 3 (the first attempt's, and the retry's twice)", n)
		}
	})
}
