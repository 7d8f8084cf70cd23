package cloudggcp_test

import (
	"net/http"
	"testing"

	"github.com/cloudg/cloudg/cloudggcp"
)

// BenchmarkRESTScope measures RESTScope's scope of a request, which the
// transport computes on every call: a compute get, a Pub/Sub list, a
// Secret Manager custom method, and a regional endpoint's.
func BenchmarkRESTScope(b *testing.B) {
	scope := cloudggcp.RESTScope()
	for _, u := range []string{
		"https://compute.googleapis.com/compute/v1/projects/p1/zones/us-central1-a/instances/i1",
		"https://pubsub.googleapis.com/v1/projects/p1/topics",
		"https://secretmanager.googleapis.com/v1/projects/p1/secrets/s:addVersion",
		"https://us-central1-aiplatform.googleapis.com/v1/projects/p1/locations/us-central1/endpoints/e1:predict",
	} {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(req.URL.Host, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				scope(req)
			}
		})
	}
}
