package scopekey

import (
	"strings"
	"testing"
)

// Printable takes text that reads on one line as it is, and nothing that
// a terminal, a log or a page would read otherwise.
func TestPrintable(t *testing.T) {
	for s, want := range map[string]bool{
		"":                       true,
		"aws/123456789012/*/ec2": true,
		"a b":                    true,
		"ünïcödé 東京":             true,
		"a\nb":                   false,
		"a\rb":                   false,
		"a\tb":                   false,
		"\x00":                   false,
		"\x7f":                   false,
		"\u0085":                 false, // NEL, a C1 control
		"a\u2028b":               false, // line separator
		"\u202eevil":             false, // right-to-left override
		"\xff":                   false,
		"ok\xc3":                 false, // a truncated rune
		"\ufffd":                 false, // the replacement character reads as a byte that was not UTF-8
		strings.Repeat("x", 1e4): true,
	} {
		if got := Printable(s); got != want {
			t.Errorf("Printable(%q) = %v, want %v", s, got, want)
		}
	}
}

// Plain takes a part read from a request only when it is Printable, holds
// no space and is MaxPlain bytes at most.
func TestPlain(t *testing.T) {
	for s, want := range map[string]bool{
		"":                              true,
		"pubsub":                        true,
		"instances_get":                 true,
		"projects/p1":                   true,
		strings.Repeat("x", MaxPlain):   true,
		strings.Repeat("x", MaxPlain+1): false,
		"dri ve":                        false,
		"dri\nve":                       false,
		"dri\xffve":                     false,
	} {
		if got := Plain(s); got != want {
			t.Errorf("Plain(%.40q) = %v, want %v", s, got, want)
		}
	}
}

// An endpoint is the host name in lower case without a final dot, an IPv6
// address bracketed, with its port unless it is the scheme's default, so
// that two servers on one host's two ports are two endpoints.
func TestEndpoint(t *testing.T) {
	for _, c := range []struct{ hostport, scheme, want string }{
		{"localhost:8081", "https", "localhost:8081"},
		{"localhost:8082", "https", "localhost:8082"},
		{"LocalHost:443", "https", "localhost"},
		{"localhost:80", "http", "localhost"},
		{"localhost:443", "http", "localhost:443"},
		{"ghe.example.com.", "https", "ghe.example.com"},
		{"[::1]", "https", "[::1]"},
		{"[::1]:8081", "HTTPS", "[::1]:8081"},
		{"[FE80::1%eth0]:443", "https", "[fe80::1%eth0]"},
		{"", "https", ""},
		{":8081", "https", ""},
	} {
		if got := Endpoint(c.hostport, c.scheme); got != c.want {
			t.Errorf("Endpoint(%q, %q) = %q, want %q", c.hostport, c.scheme, got, c.want)
		}
	}
}

// OneLine leaves printable text as it is and quotes any other.
func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{"ec2": "ec2", "a b.c": "a b.c", "ec2\nINFO x": `"ec2\nINFO x"`, "\u202eabc": `"\u202eabc"`, "\xff": `"\xff"`} {
		if got := OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %s, want %s", in, got, want)
		}
	}
}
