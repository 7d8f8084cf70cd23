package test

import (
	"context"
	"encoding/base64"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/cloudg/cloudg/cloudgazure"
	"github.com/cloudg/cloudg/resilience"
)

// caeTransport answers a request first with a continuous access
// evaluation challenge (401, insufficient_claims), then with 429 and a
// Retry-After of 30 s, and records when each answer went.
type caeTransport struct{ sent *[]time.Time }

func (c caeTransport) Do(req *http.Request) (*http.Response, error) {
	*c.sent = append(*c.sent, time.Now())
	resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{}, Body: http.NoBody, Request: req}
	if len(*c.sent) == 1 {
		resp.StatusCode = http.StatusUnauthorized
		claims := base64.StdEncoding.EncodeToString([]byte(`{"access_token":{"nbf":{"essential":true,"value":"1"}}}`))
		resp.Header.Set("WWW-Authenticate", `Bearer realm="", authorization_uri="https://login.microsoftonline.com/common/oauth2/authorize", error="insufficient_claims", claims="`+claims+`"`)
	} else {
		resp.Header.Set("Retry-After", "30")
	}
	return resp, nil
}

// azcore's bearer token policy answers a continuous access evaluation
// challenge by sending the attempt again, with a new token, inside the
// same try of azcore's retry loop: the per-retry policy counted it as a
// try of azcore's, so it took azcore's last retry but one for its last,
// and left that answer's Retry-After for azcore to read, which gave up on
// a hint past MaxRetryDelay (30 s, past 10 s) and ended the request a
// retry early. A resend of the same try is now no try of its own: every
// retry azcore may make is made, after the hint.
func TestAChallengeResendIsNoTryOfAzcores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gov := newGov(t, resilience.Config{Azure: resilience.ProviderConfig{MaxRetries: ptr(2), BaseDelaySeconds: 1, MaxBackoffSeconds: 10}})
		var sent []time.Time
		base := armOptions("http://127.0.0.1:1", caeTransport{&sent})
		cl, err := arm.NewClient("cloudgazure.test", "v0.0.1", fakeCred{}, cloudgazure.ClientOptions(base, cloudgazure.WithGovernor(gov)))
		if err != nil {
			t.Fatal(err)
		}
		req, err := runtime.NewRequest(context.Background(), http.MethodGet, "http://127.0.0.1:1/subscriptions/"+subA+"/resourcegroups/rg?api-version=1")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := cl.Pipeline().Do(req)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("%v, %v; want the last 429", resp, err)
		}
		// The challenge, its resend, and azcore's two retries.
		if len(sent) != 4 {
			t.Fatalf("%d attempts sent, want 4: the challenge, its resend and azcore's two retries", len(sent))
		}
		for i := 2; i < len(sent); i++ {
			if d := sent[i].Sub(sent[i-1]); d < 30*time.Second {
				t.Fatalf("retry %d went %v after the 429 before it, want 30 s at least (its Retry-After)", i-1, d)
			}
		}
	})
}
