package test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	bigquery "google.golang.org/api/bigquery/v2"
	cloudkms "google.golang.org/api/cloudkms/v1"
	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/option"
	storage "google.golang.org/api/storage/v1"

	"github.com/cloudg/cloudg/cloudggcp"
	"github.com/cloudg/cloudg/cloudghttp"
	"github.com/cloudg/cloudg/resilience"
)

// The operations RESTScope reads from the URLs that Google's own REST
// clients (google.golang.org/api's storage, bigquery, cloudkms and dns)
// send, against a fake on 127.0.0.1 that answers every request with an
// empty JSON object: each method is its collection's operation, whatever
// the names of the bucket, object, key ring, table or record set
// (cloudggcp's rest_test.go reads the same URLs written out).
func TestRealClientsURLsNameTheirMethods(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	gov, err := resilience.NewGovernor(resilience.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ops []string
	// A client governed as RESTTransport governs it, its scopes recorded.
	recorded := func(opts ...cloudggcp.Option) *http.Client {
		scope := cloudggcp.RESTScope(opts...)
		return &http.Client{Transport: cloudghttp.NewTransport(http.DefaultTransport, func(r *http.Request) resilience.Scope {
			s := scope(r)
			mu.Lock()
			ops = append(ops, s.Service+"/"+s.Operation)
			mu.Unlock()
			return s
		}, cloudghttp.WithGovernor(gov))}
	}
	// Each client pointed at the fake: the scope's service comes from the
	// path (/storage/v1, /bigquery/v2, /dns/v1), or, for an API whose paths
	// start with the version (KMS's), from WithService, as it comes from
	// the host cloudkms.googleapis.com.
	hc := recorded()
	ctx := context.Background()
	st, err := storage.NewService(ctx, option.WithHTTPClient(hc), option.WithEndpoint(srv.URL+"/storage/v1/"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = st.Objects.List("bkt-1").Prefix("logs/").Do()
	_, _ = st.Objects.Insert("bkt-1", &storage.Object{Name: "dir/a.txt"}).Media(strings.NewReader("hello")).Do()
	_, _ = st.Objects.Rewrite("bkt-1", "dir/a.txt", "bkt-2", "dir/b.txt", &storage.Object{}).Do()
	bq, err := bigquery.NewService(ctx, option.WithHTTPClient(hc), option.WithEndpoint(srv.URL+"/bigquery/v2/"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = bq.Tables.List("p1", "d1").Do()
	_, _ = bq.Tabledata.List("p1", "d1", "t1").Do()
	kms, err := cloudkms.NewService(ctx, option.WithHTTPClient(recorded(cloudggcp.WithService("cloudkms"))), option.WithEndpoint(srv.URL+"/"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = kms.Projects.Locations.KeyRings.CryptoKeys.List("projects/p1/locations/global/keyRings/k1").Do()
	dn, err := dns.NewService(ctx, option.WithHTTPClient(hc), option.WithEndpoint(srv.URL+"/"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = dn.ResourceRecordSets.Get("p1", "z1", "www.example.com.", "A").Do()
	_, _ = dn.Changes.List("p1", "z1").Do()

	want := []string{
		"storage/o_list", "storage/o_insert", "storage/o_rewriteTo",
		"bigquery/tables_list", "bigquery/data_list",
		"cloudkms/cryptoKeys_list",
		"dns/rrsets_get", "dns/changes_list",
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(ops, want) {
		t.Errorf("operations %q, want %q", ops, want)
	}
}
