//go:build go1.25

package resilience

import (
	"context"
	"log/slog"
	"regexp"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/internal/doctest"
)

// The refusal docs/configuration.md quotes for a built-in rate too slow
// for deadline_seconds ("deadline exceeded ... a wait of 6.0s would
// overrun it", code_search under providers: {github: {deadline_seconds:
// 5}}) is the error of the second of two calls in a row, but for the
// words its "..." leaves out.
func TestTheDocumentedSlowBuiltInRefusalIsTheCodes(t *testing.T) {
	m := regexp.MustCompile(`"(deadline exceeded [^"]*)"`).FindStringSubmatch(configurationMD(t))
	if m == nil {
		t.Fatal(`docs/configuration.md quotes no refusal "deadline exceeded ..."`)
	}
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, accepted(t, "providers: {github: {deadline_seconds: 5}}\n"), WithLogger(slog.New(&warnings{})))
		scope := Scope{Provider: "github", Account: "a", Region: "r", Service: "code_search"}
		ok := func(context.Context) error { return nil }
		if err := Do(t.Context(), scope, ok, WithGovernor(g)); err != nil {
			t.Fatalf("the first call: %v", err)
		}
		err := Do(t.Context(), scope, ok, WithGovernor(g))
		if err == nil {
			t.Fatal("the second call in a row was not refused")
		}
		if !doctest.Quotes(m[1], []string{err.Error()}) {
			t.Errorf("docs/configuration.md quotes %q; the second call ends %q", m[1], err.Error())
		}
	})
}
