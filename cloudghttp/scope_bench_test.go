package cloudghttp_test

import (
	"net/http"
	"testing"

	"github.com/cloudg/cloudg/cloudghttp"
)

// BenchmarkGitHubScope measures GitHub's scope of a request, which the
// transport computes on every call: a repository's, an organisation's
// audit log's and GraphQL's.
func BenchmarkGitHubScope(b *testing.B) {
	scope := cloudghttp.GitHub("octo")
	for _, c := range []struct{ name, url string }{
		{"repo", "https://api.github.com/repos/octo/hello/issues"},
		{"auditlog", "https://api.github.com/orgs/Octo-Org/audit-log"},
		{"graphql", "https://api.github.com/graphql"},
	} {
		req, err := http.NewRequest(http.MethodGet, c.url, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				scope(req)
			}
		})
	}
}
