//go:build go1.25

package resilience

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
)

// A scope's parts may hold any text (a newline, a byte that is not
// UTF-8, a line separator), but Messages gives one line per eventful
// scope: a scope whose string holds a character that is not printable is
// written quoted, its characters escaped as Go escapes them, so that no
// part can end a message's line or forge another; a printable one is
// written as it is. The lines keep the order of the scopes' strings.
func TestAMessageIsOneLineWhateverItsScopeHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGov(t, Config{})
		ctx, stats := WithStats(context.Background())
		for _, sc := range []Scope{
			{Provider: "gcp", Service: "dri\nve", Operation: "files_get"},
			{Provider: "gcp", Service: "pubsub", Operation: "top\r\nics_list"},
			{Provider: "gcp", Service: "s\xffx"},
			{Provider: "gcp", Service: "s\u2028x"},
			{Provider: "gcp", Service: "plain"},
		} {
			Do(ctx, sc, func(context.Context) error { return errors.New("boom") }, WithGovernor(g))
		}
		want := []string{
			`"gcp/*/*/dri\nve": 1 call errored`,
			`gcp/*/*/plain: 1 call errored`,
			`gcp/*/*/pubsub: 1 call errored`,
			`"gcp/*/*/s\u2028x": 1 call errored`,
			`"gcp/*/*/s\xffx": 1 call errored`,
		}
		for _, msgs := range [][]string{stats.Messages(), g.Summary(stats).Messages} {
			if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
				t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
			}
		}
	})
}
