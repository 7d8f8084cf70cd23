package cloudgotel

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

var ec2 = resilience.Scope{Provider: "aws", Account: "123456789012", Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcs"}

func attrsOf(kv []attribute.KeyValue) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, a := range kv {
		m[a.Key] = a.Value.Emit()
	}
	return m
}

// A scope's parts are the semantic conventions' attributes, each only when
// set; the options drop the account or the operation.
func TestScopeAttributes(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  config
		sc   resilience.Scope
		want map[attribute.Key]string
	}{
		{"all", config{}, ec2, map[attribute.Key]string{"cloud.provider": "aws", "cloud.account.id": "123456789012", "cloud.region": "eu-west-1", "rpc.service": "ec2", "rpc.method": "DescribeVpcs"}},
		// A GCP project's account is its bare id, as OpenTelemetry's GCP
		// resource detectors write cloud.account.id (the project id of
		// the metadata server), so that the two join; an organization's
		// or a folder's, which is no project, keeps its kind, and another
		// provider's account is as written.
		{"gcp", config{}, resilience.Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset"}, map[attribute.Key]string{"cloud.provider": "gcp", "cloud.account.id": "p1", "rpc.service": "cloudasset"}},
		{"gcp organization", config{}, resilience.Scope{Provider: "gcp", Account: "organizations/123", Service: "cloudasset"}, map[attribute.Key]string{"cloud.provider": "gcp", "cloud.account.id": "organizations/123", "rpc.service": "cloudasset"}},
		{"gcp folder", config{}, resilience.Scope{Provider: "gcp", Account: "folders/456", Service: "cloudasset"}, map[attribute.Key]string{"cloud.provider": "gcp", "cloud.account.id": "folders/456", "rpc.service": "cloudasset"}},
		{"other provider", config{}, resilience.Scope{Provider: "myapi", Account: "projects/p1", Service: "rest"}, map[attribute.Key]string{"cloud.provider": "myapi", "cloud.account.id": "projects/p1", "rpc.service": "rest"}},
		{"without account", config{noAccount: true}, ec2, map[attribute.Key]string{"cloud.provider": "aws", "cloud.region": "eu-west-1", "rpc.service": "ec2", "rpc.method": "DescribeVpcs"}},
		{"without operation", config{noOperation: true}, ec2, map[attribute.Key]string{"cloud.provider": "aws", "cloud.account.id": "123456789012", "cloud.region": "eu-west-1", "rpc.service": "ec2"}},
	} {
		got := attrsOf(c.cfg.scopeAttrs(c.sc))
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	}
}

// The cache gives one scope the same set each time, and forgets
// everything rather than grow past its bound.
func TestAttributeCacheIsBounded(t *testing.T) {
	a := attrCache{c: &config{}}
	first := a.of(ec2, "", "")
	if a.of(ec2, "", "") != first {
		t.Fatal("the cached set was made again")
	}
	if w := a.of(ec2, levelKey, "leaf"); w == first || !w.set.HasValue(levelKey) {
		t.Fatalf("the wait's set %v", w.set)
	}
	for i := range 2 * maxCached {
		sc := ec2
		sc.Account = string(rune('a'+i%26)) + string(rune(i))
		a.of(sc, "", "")
	}
	if n := a.n.Load(); n > maxCached {
		t.Fatalf("%d sets cached", n)
	}
}

// The breaker gauge's numbers are the contract's, whatever the state
// package's constants are.
func TestBreakerValues(t *testing.T) {
	if breakerValue(state.Closed) != 0 || breakerValue(state.HalfOpen) != 1 || breakerValue(state.Open) != 2 {
		t.Fatal("breaker values")
	}
}

// A part is caller data of any length: each attribute of a scope is at
// most maxValue bytes of valid UTF-8, cut at a rune, so that a 10 KB part
// makes no 10 KB label on every series (a backend refuses, or drops, a
// label value past its limit), and a throttle's answer on a span is
// bounded too, at 1 KB.
func TestAttributesAreBounded(t *testing.T) {
	const maxValue = 256                          // the bound the package's documentation gives
	long := strings.Repeat("é", 5<<10) + "\n\xff" // 10 KB of two-byte runes, then a newline and a byte that is not UTF-8
	sc := resilience.Scope{Provider: "x" + long, Account: long, Region: long, Service: long, Operation: "a" + long}
	kv := (&config{}).scopeAttrs(sc)
	if len(kv) != 5 {
		t.Fatalf("%d attributes, want 5", len(kv))
	}
	for _, a := range kv {
		v := a.Value.AsString()
		if len(v) > maxValue || !utf8.ValidString(v) {
			t.Errorf("%s: %d bytes (valid UTF-8: %t), want at most %d of valid UTF-8", a.Key, len(v), utf8.ValidString(v), maxValue)
		}
		if !strings.HasSuffix(v, "…") {
			t.Errorf("%s does not say it was cut: ...%q", a.Key, v[max(0, len(v)-8):])
		}
	}
	if v := errorText(errors.New(long)); len(v) > 1<<10 || !utf8.ValidString(v) || !strings.HasSuffix(v, "…") {
		t.Errorf("cloudg.error: %d bytes (valid UTF-8: %t), want at most %d of valid UTF-8, marked cut", len(v), utf8.ValidString(v), 1<<10)
	}
	// A part within the bound is as it is.
	short := strings.Repeat("a", maxValue)
	if got := attrsOf((&config{}).scopeAttrs(resilience.Scope{Provider: "aws", Service: short}))["rpc.service"]; got != short {
		t.Errorf("a part of %d bytes was changed to %q", maxValue, got)
	}
}

// The cache holds its scopes as their attributes say them: a scope of
// 10 KB parts is kept as its bounded attributes, not as 50 KB of the
// caller's strings (16,384 of them would hold 800 MB), and scopes whose
// parts differ only past the bound share one entry, as they share their
// series.
func TestAttributeCacheHoldsBoundedParts(t *testing.T) {
	a := attrCache{c: &config{}}
	long := strings.Repeat("x", 10<<10)
	first := a.of(resilience.Scope{Provider: "aws", Account: long + "1", Region: long, Service: long, Operation: long}, "", "")
	if a.of(resilience.Scope{Provider: "aws", Account: long + "2", Region: long, Service: long, Operation: long}, "", "") != first {
		t.Error("two scopes of one attribute set have two entries")
	}
	a.m.Range(func(k, _ any) bool {
		sc := k.(cacheKey).scope
		for _, p := range []string{sc.Provider, sc.Account, sc.Region, sc.Service, sc.Operation} {
			if len(p) > maxValue {
				t.Errorf("the cache holds a part of %d bytes", len(p))
			}
		}
		return true
	})
}
