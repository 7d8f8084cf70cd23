package test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/cloudg/cloudg/resilience"
)

// The instance metadata service (IMDS) is the instance's, not an AWS
// account's API: an IMDS client made from an installed config (which
// carries the installation's middleware) is not governed. Its calls take
// none of the account's tokens or slots, are held by none of its
// breakers or pauses, and count in no scope: a scan holding every slot
// of its account does not keep the program from reading its region or
// its role's credentials.
func TestTheInstanceMetadataServiceIsNotGoverned(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			io.WriteString(w, "token")
		case r.Method == http.MethodGet && r.URL.Path == "/latest/dynamic/instance-identity/document":
			io.WriteString(w, `{"region": "eu-west-1", "accountId": "123456789012"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f := newFake(t)
	cfg, g := governed(t, f, resilience.Config{AWS: resilience.ProviderConfig{MaxConcurrency: 1}})
	// Another call holds the account's only slot meanwhile.
	held, err := g.Begin(context.Background(), vpcsScope)
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer held.End(nil)
	client := imds.NewFromConfig(cfg, func(o *imds.Options) {
		o.Endpoint = srv.URL
		o.HTTPClient = srv.Client()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := client.GetRegion(ctx, nil)
	if err != nil || out.Region != "eu-west-1" {
		t.Fatalf("GetRegion with the account's only slot held: %v, %v; want eu-west-1 at once", out, err)
	}
	for sc := range g.Scopes() {
		if sc.Service != "ec2" {
			t.Errorf("scope %s: the IMDS call is governed", sc.Key())
		}
	}
}
