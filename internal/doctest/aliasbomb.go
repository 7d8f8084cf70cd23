package doctest

import (
	"fmt"
	"strings"
)

// AliasBomb returns a configuration document of a few kilobytes whose
// aliases expand it to n*n provider mappings, each holding n service
// mappings: n providers that name the same mapping, which names one
// service mapping n times. docs/configuration.md quotes the error a
// reader returns for AliasBomb(1000), and package yamlconf's tests refuse
// it; both build it here, so that the document the doc's figures come
// from is the one the reader's test checks.
func AliasBomb(n int) string {
	var b strings.Builder
	b.WriteString("v: &v {max_rps: 5}\ns: &s {")
	for i := range n {
		fmt.Fprintf(&b, "e%d: *v, ", i)
	}
	b.WriteString("}\np: &p {services: *s}\nratelimit:\n  providers: {")
	for i := range n {
		fmt.Fprintf(&b, "p%d: *p, ", i)
	}
	b.WriteString("}\n")
	return b.String()
}
