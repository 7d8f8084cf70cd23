//go:build go1.25

package cloudghttp_test

import (
	"net/http"
	"testing"

	"github.com/cloudg/cloudg/cloudghttp"
)

// TestGitHubReadsAnEscapedSlashAsPartOfItsSegment states that GitHub's
// scope function reads a path's segments as they were sent: a slash sent
// escaped (%2F) is part of its segment, as GitHub reads it, not a
// boundary, so that /orgs/acme%2Faudit-log (the organisation
// "acme/audit-log", which GitHub does not find) is no audit log of acme's,
// and /orgs/a%2Fb/audit-log names no organisation.
func TestGitHubReadsAnEscapedSlashAsPartOfItsSegment(t *testing.T) {
	scope := cloudghttp.GitHub("octo")
	for _, c := range []struct{ path, want string }{
		{"/orgs/acme%2Faudit-log", "github/octo/*/rest"},
		{"/orgs/acme%2faudit-log", "github/octo/*/rest"},
		{"/orgs/a%2Fb/audit-log", "github/octo/*/audit_log"},
		{"/enterprises/e%2Faudit-log%2Fstreams", "github/octo/*/rest"},
		// An escape of a character that needs none reads as it.
		{"/orgs/Acm%65/audit-log", "github/octo/orgs/acme/audit_log"},
		{"/orgs/acme/audit-log", "github/octo/orgs/acme/audit_log"},
	} {
		for u, want := range map[string]string{"https://api.github.com" + c.path: c.want, "https://ghe.example.com/api/v3" + c.path: onGHES(c.want)} {
			req, err := http.NewRequest(http.MethodGet, u, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := scope(req).String(); got != want {
				t.Errorf("GET %s: scope %q, want %q", u, got, want)
			}
		}
	}
}
