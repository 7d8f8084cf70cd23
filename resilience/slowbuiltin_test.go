package resilience

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
)

// warnings is a slog.Handler that keeps each Warn record's message and
// attributes.
type warnings struct {
	mu    sync.Mutex
	lines []string
}

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *warnings) WithGroup(string) slog.Handler            { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level != slog.LevelWarn {
		return nil
	}
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += fmt.Sprintf(" %s=%v", a.Key, a.Value)
		return true
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, line)
	return nil
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.lines
	w.lines = nil
	return l
}

// A built-in rate too slow for a deadline_seconds the user sets is
// accepted (a rate the user did not write does not make the
// configuration wrong), but every call that waits for its token is
// refused, "deadline exceeded ... a wait of 6.0s would overrun it": the
// governor says so at Warn, once for each such leaf of a configuration
// it is made with or given (a Configure that keeps it says nothing
// again), naming the setting, its built-in rate and the deadline, and
// what to set. A leaf whose rate the user writes is no built-in one, and
// Validate refuses it where it is too slow.
func TestABuiltInRateTooSlowForTheDeadlineIsWarnedOf(t *testing.T) {
	const (
		codeSearch = "cloudg: a built-in rate is too slow for deadline_seconds setting=ratelimit.providers.github.services.code_search.max_rps built_in_rps=0.166 deadline_seconds=5 effect=a token every 6.02 s, longer than the deadline: a call that waits for one is refused fix=set ratelimit.providers.github.deadline_seconds to 6.03 s or more, or the service's max_rps to 0.201 rps or more if its provider allows it"
		storage    = "cloudg: a built-in rate is too slow for deadline_seconds setting=ratelimit.azure.services.storage.max_rps built_in_rps=0.33 deadline_seconds=3 effect=a token every 3.03 s, longer than the deadline: a call that waits for one is refused fix=set ratelimit.azure.deadline_seconds to 3.04 s or more, or the service's max_rps to 0.334 rps or more if its provider allows it"
	)
	cfg := accepted(t, "azure: {deadline_seconds: 3}\nproviders: {github: {deadline_seconds: 5}}\n")
	w := &warnings{}
	g := newGov(t, cfg, WithLogger(slog.New(w)))
	if got := w.take(); !slices.Equal(got, []string{storage, codeSearch}) {
		t.Errorf("NewGovernor warned:\n%q\nwant:\n%q", got, []string{storage, codeSearch})
	}
	if err := g.Configure(cfg); err != nil {
		t.Fatal(err)
	}
	if got := w.take(); len(got) != 0 {
		t.Errorf("a Configure of the same configuration warned again: %q", got)
	}
	if err := g.Configure(accepted(t, "providers: {github: {deadline_seconds: 5}}\n")); err != nil {
		t.Fatal(err)
	}
	if got := w.take(); len(got) != 0 {
		t.Errorf("a Configure keeping code_search's deadline warned again: %q", got)
	}
	if err := g.Configure(accepted(t, "azure: {deadline_seconds: 3}\n")); err != nil {
		t.Fatal(err)
	}
	if got := w.take(); !slices.Equal(got, []string{storage}) {
		t.Errorf("a Configure bringing storage's deadline back warned %q, want %q", got, []string{storage})
	}
	// Written by the user, the rate is the user's: no warning.
	for _, doc := range []string{
		"azure: {deadline_seconds: 3, services: {storage: {max_rps: 0.5}}}\n",
		"azure: {deadline_seconds: 4}\n",
		"azure: {deadline_seconds: 3, enabled: false}\n",
	} {
		w := &warnings{}
		newGov(t, accepted(t, doc), WithLogger(slog.New(w)))
		if got := w.take(); len(got) != 0 {
			t.Errorf("%q warned: %q", doc, got)
		}
	}
	// Without WithLogger, the warning goes to slog.Default.
	prev := slog.Default()
	defer slog.SetDefault(prev)
	d := &warnings{}
	slog.SetDefault(slog.New(d))
	newGov(t, accepted(t, "providers: {github: {deadline_seconds: 5}}\n"))
	if got := d.take(); !slices.Equal(got, []string{codeSearch}) {
		t.Errorf("without WithLogger, slog.Default was told %q, want %q", got, []string{codeSearch})
	}
}
