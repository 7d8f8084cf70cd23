// Package scopekey writes a scope's parts as text: the form people read,
// and the escaped form no two scopes share. Package state's Scope and the
// governor's state keys (an account's bucket, a provider's) both use it.
package scopekey

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Format writes the first n of parts (provider, account, region, service,
// operation): n is 1, 2 or 4, and with 4 the operation follows when it is
// set. An empty part is written *; with escape set each part's '%', '/'
// and '*' are written %25, %2F and %2A, so that no part can pass for two
// and no part for an empty one, and each byte that is not part of UTF-8
// text as %XX, its value in upper-case hexadecimal (\xff as %FF), so that
// the escaped form is UTF-8, which JSON and other text formats keep as
// it is (JSON writes such a byte as U+FFFD: two scopes would share a
// key).
func Format(parts *[5]string, escape bool, n int) string {
	var b strings.Builder
	b.Grow(len(parts[0]) + len(parts[1]) + len(parts[2]) + len(parts[3]) + len(parts[4]) + 8)
	part := func(p string) {
		if p == "" {
			b.WriteByte('*')
			return
		}
		if !escape {
			b.WriteString(p)
			return
		}
		for i := 0; i < len(p); i++ {
			switch c := p[i]; {
			case c == '%':
				b.WriteString("%25")
			case c == '/':
				b.WriteString("%2F")
			case c == '*':
				b.WriteString("%2A")
			case c >= utf8.RuneSelf:
				if n := runeLen(p[i:]); n > 0 {
					b.WriteString(p[i : i+n])
					i += n - 1
				} else {
					b.WriteString(escapedByte(c))
				}
			default:
				b.WriteByte(c)
			}
		}
	}
	part(parts[0])
	if n == 1 {
		return b.String()
	}
	b.WriteByte('/')
	part(parts[1])
	if n == 2 {
		return b.String()
	}
	b.WriteByte('/')
	part(parts[2])
	b.WriteByte('/')
	part(parts[3])
	if parts[4] != "" {
		b.WriteByte('/')
		part(parts[4])
	}
	return b.String()
}

// Unescape reverses Format's escaping of one part: %25, %2F and %2A are
// '%', '/' and '*', and %XX (80 to FF, upper case) is the byte XX, which
// Format writes so only for a byte that is not part of UTF-8 text. Any
// other '%', an unescaped '*' or '/', and a %XX that Format would have
// written as it is, is an error: Format never writes them, so that no
// two escaped parts read as one part.
func Unescape(p string) (string, error) {
	if !strings.ContainsAny(p, "%*/") && utf8.ValidString(p) {
		return p, nil
	}
	var b strings.Builder
	bytes := false // a %XX of a byte that is not UTF-8
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '%':
			if i+2 >= len(p) {
				return "", errBadEscape
			}
			switch e := p[i+1 : i+3]; e {
			case "25":
				b.WriteByte('%')
			case "2F":
				b.WriteByte('/')
			case "2A":
				b.WriteByte('*')
			default:
				v, ok := unhex(e)
				if !ok || v < utf8.RuneSelf {
					return "", errBadEscape
				}
				b.WriteByte(v)
				bytes = true
			}
			i += 2
		case '*', '/':
			return "", errBadEscape
		default:
			b.WriteByte(c)
		}
	}
	u := b.String()
	if (bytes || !utf8.ValidString(p)) && Format(&[5]string{u}, true, 1) != p {
		// A byte Format writes as it is, written %XX, or one it writes
		// %XX, written as it is.
		return "", errBadEscape
	}
	return u, nil
}

// runeLen returns the length of the rune s begins with, or 0 when s
// begins with a byte that is not part of UTF-8 text: one that begins no
// rune, or begins one cut short, overlong or a surrogate.
func runeLen(s string) int {
	if r, n := utf8.DecodeRuneInString(s); r != utf8.RuneError || n > 1 {
		return n
	}
	return 0
}

const upperHex = "0123456789ABCDEF"

// escapedByte returns %XX for c.
func escapedByte(c byte) string {
	return string([]byte{'%', upperHex[c>>4], upperHex[c&15]})
}

// unhex reads XX, two upper-case hexadecimal digits, as the byte they
// write.
func unhex(xx string) (byte, bool) {
	hi, lo := strings.IndexByte(upperHex, xx[0]), strings.IndexByte(upperHex, xx[1])
	if hi < 0 || lo < 0 {
		return 0, false
	}
	return byte(hi<<4 | lo), true
}

var errBadEscape = errors.New("scopekey: not an escaped part")

// AppendKey appends Format(parts, true, 4), the escaped form of a scope
// (Scope.Key), to dst: for a reader that compares keys without making a
// string of each.
func AppendKey(dst []byte, parts *[5]string) []byte {
	part := func(p string) {
		if p == "" {
			dst = append(dst, '*')
			return
		}
		for i := 0; i < len(p); i++ {
			switch c := p[i]; {
			case c == '%':
				dst = append(dst, "%25"...)
			case c == '/':
				dst = append(dst, "%2F"...)
			case c == '*':
				dst = append(dst, "%2A"...)
			case c >= utf8.RuneSelf:
				if n := runeLen(p[i:]); n > 0 {
					dst = append(dst, p[i:i+n]...)
					i += n - 1
				} else {
					dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
				}
			default:
				dst = append(dst, c)
			}
		}
	}
	for i := range 4 {
		if i > 0 {
			dst = append(dst, '/')
		}
		part(parts[i])
	}
	if parts[4] != "" {
		dst = append(dst, '/')
		part(parts[4])
	}
	return dst
}

// Printable reports whether s is valid UTF-8 whose every character is
// printable (unicode.IsPrint: letters, marks, numbers, punctuation,
// symbols and the ASCII space), so that it reads on one line as it is:
// no control character (a newline), no line or paragraph separator, no
// format character (a bidirectional override), and no U+FFFD, which is
// what a byte that is not UTF-8 reads as.
func Printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' {
			return printableRunes(s[i:])
		}
	}
	return true
}

// OneLine returns s as it is when it is Printable, and quoted as
// strconv.Quote quotes it when it is not, so that a name a caller or a
// document gave (a scope, a configuration key) reads on one line of an
// error or a log and forges no line of its own.
func OneLine(s string) string {
	if Printable(s) {
		return s
	}
	return strconv.Quote(s)
}

func printableRunes(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false // RuneError: a byte that is not UTF-8 (or U+FFFD itself)
		}
	}
	return true
}

// MaxPlain is the most bytes of a part Plain takes: more than any
// provider's name of a service, an operation, an account or a region
// (DNS labels have 63 at most), so that a long segment of a request's
// path (10 KB of it) does not become a scope.
const MaxPlain = 128

// Plain reports whether p, a part an integration reads from a request (a
// URL's host, a path segment, unescaped), may be a scope's part: at most
// MaxPlain bytes of Printable text, without a space. An integration gives
// a part that is not the part's fallback (none, or its provider's
// generic name for the service), so that a newline sent in a URL
// (/dri%0Ave/v3/files) reaches no log line, metric label or page, and no
// request's text makes scopes without bound.
func Plain(p string) bool {
	return len(p) <= MaxPlain && strings.IndexByte(p, ' ') < 0 && Printable(p)
}

// Endpoint returns a request's host as a scope part, for a host that
// names no account of the provider's own (an emulator, a self-hosted
// server): the host name in lower case without a final dot, an IPv6
// address bracketed ([::1]), and the port when hostport names one other
// than the default of scheme, 443 for https and 80 for http
// (localhost:8081, [::1]:8081), so that two servers on one host's ports
// are two endpoints; "" when hostport names no host. hostport is a URL's
// Host or a request's Host header. The part is not checked against
// Plain.
func Endpoint(hostport, scheme string) string {
	u := url.URL{Host: hostport}
	name := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if name == "" {
		return ""
	}
	if strings.IndexByte(name, ':') >= 0 {
		name = "[" + name + "]"
	}
	if port := u.Port(); port != "" && port != defaultPort(scheme) {
		name += ":" + port
	}
	return name
}

// defaultPort is the port a URL of scheme names when it names none.
func defaultPort(scheme string) string {
	switch strings.ToLower(scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}
