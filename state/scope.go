package state

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cloudg/cloudg/internal/scopekey"
)

// Scope says where a call goes. Its string form is what telemetry shows:
// aws/123456789012/us-east-1/ec2/DescribeVpcs, with * for an empty part and
// the operation only when it is set.
//
//	Part       AWS                 Azure                            GCP
//	Provider   "aws"               "azure"                          "gcp"
//	Account    account id          subscription id, lower-case      projects/<id>, organizations/<id>, folders/<id>
//	Region     client region       "" or a regional host's region   ""
//	Service    ec2, iam, sts       network, compute; resourcegraph  cloudasset
//	Operation  DescribeVpcs        ""                               ListAssets
//
// Use the values the SDK integrations use, or your calls land in other
// buckets and protect nothing. Scope is a comparable value, which any
// number of goroutines may copy and read at once; the zero Scope is
// invalid (a call needs a provider). Package resilience names it
// resilience.Scope; it is defined here so that the packages below the
// governor (the stores, package observe's events) share it.
//
// A part may hold any text, '/' included (GCP accounts are
// "projects/<id>"), and no call is refused for it. String is for reading
// and may print two scopes alike (account "a/b" in region "c", and account
// "a" in region "b/c"); Key is unambiguous, and the governor keys its state
// and the Summary's maps by it. What shows a scope escapes it as its
// medium asks: the governor's log lines as log/slog quotes an attribute,
// the status page as HTML; package resilience's Stats.Messages, its
// errors' messages (CircuitOpenError's, ...) and its Ledger's lines write
// String quoted, as strconv.Quote quotes it, when a part holds a
// character that is not printable, so that no part ends a line.
//
// The SDK integrations of this module read parts from requests (a URL's
// host and path segments, unescaped) and never put in a scope a part that
// holds a character that is not printable (a control character such as a
// newline, a byte that is not UTF-8), a space, or more than 128 bytes: a
// part read so that does gives the part's fallback instead, none (*) or
// the provider's generic service (azure's resources), so that a request's
// text reaches no log line or metric label as it is, and makes no scope
// without bound. A scope function of your own should do the same.
type Scope struct {
	Provider  string `json:"provider"`
	Account   string `json:"account,omitempty"`
	Region    string `json:"region,omitempty"`
	Service   string `json:"service,omitempty"`
	Operation string `json:"operation,omitempty"`
}

// String returns provider/account/region/service[/operation], with * for
// each empty part but the operation.
func (s Scope) String() string { return scopekey.Format(s.parts(), false, 4) }

// Key returns the scope in a form no other scope shares: String's form
// with each part's '%', '/' and '*' escaped as %25, %2F and %2A, so that no
// part can pass for two, and * for an empty part, which no escaped part
// can be. A byte that is not part of UTF-8 text is escaped too, as %XX
// (\xff as %FF), so that the key is UTF-8, which JSON keeps as it is: JSON
// writes such a byte as U+FFFD, and two scopes would share a key there.
// Scopes whose parts are UTF-8 and hold none of '%', '/' and '*' have the
// same Key and String: aws/123456789012/us-east-1/ec2/DescribeVpcs; a GCP
// project's is gcp/projects%2Fp1/*/cloudasset.
func (s Scope) Key() string { return scopekey.Format(s.parts(), true, 4) }

func (s Scope) parts() *[5]string {
	return &[5]string{s.Provider, s.Account, s.Region, s.Service, s.Operation}
}

// ServiceScope returns the scope without its operation: the service scope
// whose counters a call's are (a run's Stats count per service).
func (s Scope) ServiceScope() Scope {
	s.Operation = ""
	return s
}

// MarshalText returns Key, so that a map keyed by Scope encodes its keys
// (in JSON, say) in the form no two scopes share.
func (s Scope) MarshalText() ([]byte, error) { return []byte(s.Key()), nil }

// UnmarshalText reads Key's form (ParseScope).
func (s *Scope) UnmarshalText(b []byte) error {
	sc, err := ParseScope(string(b))
	if err != nil {
		return err
	}
	*s = sc
	return nil
}

// scopeFields is Scope's JSON object: a Scope as a value encodes as its
// parts, not as the text of a map key.
type scopeFields struct {
	Provider  string `json:"provider"`
	Account   string `json:"account,omitempty"`
	Region    string `json:"region,omitempty"`
	Service   string `json:"service,omitempty"`
	Operation string `json:"operation,omitempty"`
}

// MarshalJSON encodes a Scope as an object of its parts
// ({"provider": "aws", "account": ...}), its text form being for map keys.
func (s Scope) MarshalJSON() ([]byte, error) { return json.Marshal(scopeFields(s)) }

// UnmarshalJSON reads the object MarshalJSON writes, or a string in Key's
// form (a map key's, which encoding/json hands to UnmarshalJSON). A null
// leaves s as it is, as encoding/json leaves any value it reads null into.
func (s *Scope) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var key string
		if err := json.Unmarshal(b, &key); err != nil {
			return err
		}
		return s.UnmarshalText([]byte(key))
	}
	var f scopeFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*s = Scope(f)
	return nil
}

// ScopeKeyError is ParseScope's error, and Scope's when it reads a key
// as text (a JSON map's key, a JSON string): the text Key is not a scope
// in the form Scope.Key writes, for Reason. Nothing changes a
// ScopeKeyError once returned: several goroutines may read one at once.
// The zero ScopeKeyError, of no key and no reason, reads
// state: scope key "": (as package yamlconf's zero Error reads ": ").
type ScopeKeyError struct {
	Key    string // the text read
	Reason string // what is wrong with it: "no provider", ...
}

// Error returns state: scope key "<key>": <reason>, the key quoted as
// strconv.Quote quotes it, so that a stored key's newline reads as \n.
func (e *ScopeKeyError) Error() string {
	return fmt.Sprintf("state: scope key %q: %s", e.Key, e.Reason)
}

// ParseScope reads a scope in Key's form:
// provider/account/region/service[/operation], each part escaped as Key
// escapes it and * for an empty one. It is Key's inverse: ParseScope(s.Key())
// is s, for every scope with a provider. A key it refuses is a
// *ScopeKeyError.
func ParseScope(key string) (Scope, error) {
	parts := strings.Split(key, "/")
	if len(parts) != 4 && len(parts) != 5 {
		return Scope{}, &ScopeKeyError{Key: key, Reason: "want provider/account/region/service[/operation]"}
	}
	var out [5]string
	for i, p := range parts {
		if p == "*" {
			continue
		}
		v, err := scopekey.Unescape(p)
		if err != nil || v == "" {
			return Scope{}, &ScopeKeyError{Key: key, Reason: fmt.Sprintf("part %d %q is not escaped as Key escapes it", i+1, p)}
		}
		out[i] = v
	}
	if out[0] == "" {
		return Scope{}, &ScopeKeyError{Key: key, Reason: "no provider"}
	}
	return Scope{Provider: out[0], Account: out[1], Region: out[2], Service: out[3], Operation: out[4]}, nil
}
