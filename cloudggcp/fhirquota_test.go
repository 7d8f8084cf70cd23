//go:build go1.25

package cloudggcp

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/resilience"
)

// Cloud Healthcare counts a project's FHIR requests in a region against
// one quota per kind of request: reads, writes, searches ("Quotas and
// limits": per project, per region; the console's FHIR read, write and
// search quotas). RESTScope's operation of a FHIR interaction is that
// kind: fhir_read for a read and a vread (of any type, Binary's
// included), fhir_write for a create, an update, a patch and a delete,
// conditional or not, fhir_search for every form of search. With
// per_operation (the README's advice for scans), an operation per method
// (fhir_read, fhir_vread) would be a leaf bucket per method, each at the
// whole quota's rate, and a scan that reads and vreads would send twice
// the rate the quota allows; a throttled read would halve and pause its
// own method's leaf, the vreads going on into the spent quota.
func TestRESTScopeOfAFHIRInteractionIsItsKindOfQuota(t *testing.T) {
	const st = "https://healthcare.googleapis.com/v1/projects/p1/locations/us-central1/datasets/d1/fhirStores/s1/fhir"
	for _, kind := range []struct {
		op    string
		calls []struct{ method, url string }
	}{
		{"fhir_read", []struct{ method, url string }{
			{"GET", st + "/Patient/pat-123"},
			{"HEAD", st + "/Patient/pat-123"},
			{"GET", st + "/Patient/pat-123/_history/7"},
			{"GET", st + "/Binary/b1"},
			{"GET", st + "/Binary/b1/_history/2"},
		}},
		{"fhir_write", []struct{ method, url string }{
			{"POST", st + "/Patient"},
			{"POST", st + "/Binary"},
			{"PUT", st + "/Patient/pat-123"},
			{"PUT", st + "/Binary/b1"},
			{"PATCH", st + "/Patient/pat-123"},
			{"DELETE", st + "/Patient/pat-123"},
			{"PUT", st + "/Patient?identifier=x"},
			{"PATCH", st + "/Patient?identifier=x"},
			{"DELETE", st + "/Patient?identifier=x"},
		}},
		{"fhir_search", []struct{ method, url string }{
			{"GET", st + "/Patient?name=smith"},
			{"GET", st + "?_type=Patient"},
			{"POST", st + "/Patient/_search"},
			{"POST", st + "/_search"},
			{"GET", st + "/Patient/pat-123/Observation?code=x"},
		}},
	} {
		for _, c := range kind.calls {
			req, err := http.NewRequest(c.method, c.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := RESTScope()(req).Operation; got != kind.op {
				t.Errorf("RESTScope(%s %s).Operation = %q, want %q: Cloud Healthcare's quota of its kind", c.method, c.url, got, kind.op)
			}
		}
	}

	// A scan that reads a patient and vreads a version, under
	// per_operation and a fixed 1 rps: one quota, one bucket, so that
	// the second request waits its token.
	synctest.Test(t, func(t *testing.T) {
		on, off := true, false
		gov := newGov(t, resilience.Config{GCP: resilience.ProviderConfig{MaxRPS: 1, Burst: 1, PerOperation: &on, Adaptive: &off}})
		ok := roundTripper(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
		c := &http.Client{Transport: RESTTransport(ok, WithGovernor(gov))}
		start := time.Now()
		for _, u := range []string{st + "/Patient/pat-123", st + "/Patient/pat-123/_history/7"} {
			resp, err := c.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if took := time.Since(start); took < time.Second {
			t.Errorf("a read and a vread at a fixed 1 rps per operation took %v, want 1s: the read quota's one bucket", took)
		}
	})
}
