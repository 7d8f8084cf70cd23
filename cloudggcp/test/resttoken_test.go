package test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"

	"github.com/cloudg/cloudg/resilience"
)

// serviceAccountJSON returns the JSON key of a service account whose
// tokens come from tokenURL.
func serviceAccountJSON(t *testing.T, tokenURL string) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     "p1",
		"private_key_id": "k1",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   "sa@p1.iam.gserviceaccount.com",
		"client_id":      "1",
		"token_uri":      tokenURL,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A REST request whose token could not be had (the token endpoint, on
// 127.0.0.1 here, refuses the connection, or answers 429 "Rate exceeded"
// or a 500) was never sent to Compute: it says nothing of Compute's
// scope, which is neither slowed, paused nor failed, and the call is lost
// as errored (a local error), not as Compute's throttle or transient
// error. The client gets the token's error.
func TestRESTTokenFailureIsNoAnswerOfTheAPI(t *testing.T) {
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr + "/token"
	}
	answering := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, body, status)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/token"
	}
	for name, tokenURL := range map[string]func() string{
		"refused":       closed,
		"rate exceeded": func() string { return answering(http.StatusTooManyRequests, "Rate exceeded") },
		"500":           func() string { return answering(http.StatusInternalServerError, "backend error") },
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeCompute{}
			var hits atomic.Int32
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				f.ServeHTTP(w, r)
			}))
			t.Cleanup(api.Close)
			gov, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{
				BaseDelaySeconds: 0.001, MaxBackoffSeconds: 0.01,
			}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			c := restInstances(t, gov, api.URL, option.WithAuthCredentialsJSON(option.ServiceAccount, serviceAccountJSON(t, tokenURL())))

			ctx, stats := resilience.WithStats(ctx)
			ctx, ledger := resilience.WithLedger(ctx, "get")
			_, err = c.Get(ctx, &computepb.GetInstanceRequest{Project: "p1", Zone: "europe-west1-b", Instance: "vm-1"})
			if err == nil {
				t.Fatal("the get succeeded without a token")
			}
			if n := hits.Load(); n != 0 {
				t.Fatalf("Compute got %d requests without a token", n)
			}
			tot := gov.Summary(stats).Totals
			if tot.Throttled != 0 || tot.TransientErrors != 0 || tot.Failed != 0 || tot.GaveUp != 0 || tot.Errored != 1 {
				t.Fatalf("totals %v; want no throttle, no transient error, the call errored (err %v)", tot, err)
			}
			if ledger.Count(resilience.LossErrored) != 1 || ledger.Lost() != 1 {
				t.Fatalf("ledger %q, want the call lost as errored", ledger.Describe())
			}
			snap := gov.Inspect(scope("instances_get"))
			if snap.Leaf.Rate != snap.Leaf.Ceiling || snap.Leaf.Paused != 0 || snap.Breaker.Failures != 0 {
				t.Fatalf("scope %+v; want its rate, pause and breaker untouched", snap)
			}
		})
	}
}

// Compute's own endpoint refusing the connection is its scope's transient
// error, as before: the request left the process for it.
func TestRESTRefusedAPIIsTheScopesTransientError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	retries := 2
	gov, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{
		BaseDelaySeconds: 0.001, MaxBackoffSeconds: 0.01, MaxRetries: &retries,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := restInstances(t, gov, "http://"+addr, option.WithoutAuthentication())
	ctx, stats := resilience.WithStats(ctx)
	if _, err := c.Get(ctx, &computepb.GetInstanceRequest{Project: "p1", Zone: "z", Instance: "vm-1"}); err == nil {
		t.Fatal("the get succeeded against a closed port")
	}
	if tot := gov.Summary(stats).Totals; tot.TransientErrors != 3 || tot.Failed != 1 {
		t.Fatalf("totals %v; want 3 transient errors, the call failed", tot)
	}
}

// A token endpoint on 127.0.0.1 that answers 503 or 500 twice, then a
// token: cloud.google.com/go/auth's error (an *auth.Error that carries the
// token server's answer) is a failure that passes, and the Transport
// sends the request again until the token comes; the get succeeds,
// Compute gets one request, and its scope counts one call, no retry, no
// throttle or transient error, nothing lost.
func TestRESTTokenOutageIsRiddenOut(t *testing.T) {
	for name, status := range map[string]int{"503": http.StatusServiceUnavailable, "500": http.StatusInternalServerError} {
		t.Run(name, func(t *testing.T) {
			var asked atomic.Int32
			tok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if asked.Add(1) <= 2 {
					http.Error(w, "backend error", status)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"access_token":"t0k3n","token_type":"Bearer","expires_in":3600}`))
			}))
			t.Cleanup(tok.Close)
			f := &fakeCompute{}
			var hits atomic.Int32
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				f.ServeHTTP(w, r)
			}))
			t.Cleanup(api.Close)
			gov, err := resilience.NewGovernor(resilience.Config{GCP: resilience.ProviderConfig{
				BaseDelaySeconds: 0.001, MaxBackoffSeconds: 0.01,
			}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			c := restInstances(t, gov, api.URL, option.WithAuthCredentialsJSON(option.ServiceAccount, serviceAccountJSON(t, tok.URL+"/token")))
			ctx, stats := resilience.WithStats(ctx)
			ctx, ledger := resilience.WithLedger(ctx, "get")
			if _, err := c.Get(ctx, &computepb.GetInstanceRequest{Project: "p1", Zone: "europe-west1-b", Instance: "vm-1"}); err != nil {
				t.Fatalf("err %v; want the get to succeed once it has its token", err)
			}
			if n, a := hits.Load(), asked.Load(); n != 1 || a != 3 {
				t.Fatalf("Compute got %d requests, the token was asked for %d times; want 1 and 3", n, a)
			}
			tot := gov.Summary(stats).Totals
			if tot.Calls != 1 || tot.Retries != 0 || tot.Throttled != 0 || tot.TransientErrors != 0 || ledger.Lost() != 0 {
				t.Fatalf("totals %v, ledger %q; want one call, no retry, no throttle or transient error, nothing lost", tot, ledger.Describe())
			}
		})
	}
}
