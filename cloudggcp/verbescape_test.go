package cloudggcp

import (
	"net/http"
	"strings"
	"testing"
)

// TestRESTScopeReadsAVerbAsItReadsASegment states that a custom method's
// verb, after the last segment's colon, is read unescaped as the path's
// segments are: an escaped letter is the letter (the operation of
// s:addVer%73ion is s:addVersion's), and an escaped newline is a newline,
// so that the operation is not plain and is none, as a segment's is.
func TestRESTScopeReadsAVerbAsItReadsASegment(t *testing.T) {
	const base = "https://secretmanager.googleapis.com/v1/projects/p1/secrets/"
	plain, err := http.NewRequest("POST", base+"s:addVersion", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := RESTScope()(plain).String()
	if want != "gcp/projects/p1/*/secretmanager/secrets_addVersion" {
		t.Fatalf("RESTScope(POST %ss:addVersion) = %q", base, want)
	}
	for _, tc := range []struct{ verb, want string }{
		{"s:addVer%73ion", want},
		{"s:add%56ersion", want},
		{"s:add%0AVersion", "gcp/projects/p1/*/secretmanager"},
		{"s:add%20Version", "gcp/projects/p1/*/secretmanager"},
		{"s:add%FFVersion", "gcp/projects/p1/*/secretmanager"},
		{"s:add%E2%80%AEVersion", "gcp/projects/p1/*/secretmanager"},
	} {
		r, err := http.NewRequest("POST", base+tc.verb, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope()(r).String(); got != tc.want {
			t.Errorf("RESTScope(POST %s%s) = %q, want %q", base, tc.verb, got, tc.want)
		}
	}
}

// TestRESTScopeKeepsTheServiceItIsGiven states that the service
// WithService names is the scope's as it is: only a part read from the
// request is held to scopekey.Plain, and a name the program gives is not
// one (the core takes any part), so that a service named with a space or
// at length is not silently none, out of its configuration's reach.
func TestRESTScopeKeepsTheServiceItIsGiven(t *testing.T) {
	long := strings.Repeat("s", 129)
	for _, name := range []string{"my things", long, "línea\tuno"} {
		r, err := http.NewRequest("GET", "https://things.example.com/v1/projects/p1/things/t1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := RESTScope(WithService(name))(r); got.Service != name {
			t.Errorf("RESTScope(WithService(%.20q)) = %q, want the service %.20q", name, got, name)
		}
	}
}
