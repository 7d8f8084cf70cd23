package cloudgazure

import (
	"encoding/base64"
	"testing"
)

// tenantOf reads the tid claim of a bearer JWT's payload, and only a
// GUID: anything else names no tenant, so that no token can make up
// scopes of its own.
func TestTenantOf(t *testing.T) {
	jwt := func(payload string) string {
		enc := base64.RawURLEncoding.EncodeToString
		return "Bearer " + enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(payload)) + ".sig"
	}
	const tid = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	for _, tc := range []struct {
		name, authorization, want string
	}{
		{"a tenant", jwt(`{"tid":"` + tid + `"}`), tid},
		{"upper case", jwt(`{"tid":"72F988BF-86F1-41AF-91AB-2D7CD011DB47"}`), tid},
		{"padded payload", "Bearer e30." + base64.URLEncoding.EncodeToString([]byte(`{"tid":"`+tid+`"}`)) + ".sig", tid},
		{"no tid", jwt(`{"oid":"` + tid + `"}`), ""},
		{"a tid that is no GUID", jwt(`{"tid":"common"}`), ""},
		{"a tid with a slash", jwt(`{"tid":"72f988bf-86f1-41af-91ab-2d7cd011db4/"}`), ""},
		{"a tid that is no string", jwt(`{"tid":7}`), ""},
		{"not a JWT", "Bearer fake-token", ""},
		{"a payload that is no base64", "Bearer a.!!.c", ""},
		{"another scheme", "PoP " + jwt(`{"tid":"` + tid + `"}`)[len("Bearer "):], ""},
		{"none", "", ""},
	} {
		if got := tenantOf(tc.authorization); got != tc.want {
			t.Errorf("%s: tenantOf(%q) = %q, want %q", tc.name, tc.authorization, got, tc.want)
		}
	}
}

// A client's policies remember the last token's tenant: a token of
// another tenant, or one that names none, is read anew.
func TestTenantAccountOfTheLastToken(t *testing.T) {
	jwt := func(tid string) string {
		enc := base64.RawURLEncoding.EncodeToString
		return "Bearer " + enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(`{"tid":"`+tid+`"}`)) + ".sig"
	}
	const a, b = "72f988bf-86f1-41af-91ab-2d7cd011db47", "4a1b2c3d-0000-4000-8000-00000000000b"
	s := newShared(config{}, nil)
	for i, tc := range []struct{ authorization, want string }{
		{jwt(a), "tenants/" + a},
		{jwt(a), "tenants/" + a},
		{jwt(b), "tenants/" + b},
		{"Bearer fake-token", ""},
		{jwt(a), "tenants/" + a},
	} {
		if got := s.tenantAccount(tc.authorization); got != tc.want {
			t.Errorf("token %d: tenantAccount = %q, want %q", i, got, tc.want)
		}
	}
}
