package resilience

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/observe"
)

// A governor made without WithLogger still says, once each, the three
// things it says whatever the logger: a Guard dropped without End whose
// slot it gave back (Warn) and the first panic of its observer (Error)
// or of a scheduler's Admission; they go to slog.Default, and
// WithLogger's godoc, which says what the governor logs, says so rather
// than that it logs nothing. Real time: the collector runs on its own
// goroutine (the test loops on runtime.GC, it does not sleep).
func TestAGovernorWithoutALoggerSaysItsOnceLinesToSlogDefault(t *testing.T) {
	var buf logBuffer
	prev := slog.Default()
	slog.SetDefault(buf.logger())
	defer slog.SetDefault(prev)

	panicky := observe.Func(func(observe.Event) { panic("the observer's bug") })
	g := newGov(t, Config{GCP: ProviderConfig{MaxConcurrency: 1}}, WithObserver(panicky))
	sc := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
	func() {
		gd, _ := g.Begin(context.Background(), sc)
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
	}()
	for i := 0; g.Inspect(sc).InFlight != 0; i++ {
		if i == 1000 {
			t.Fatalf("the dropped Guard's slot still held after %d collections", i)
		}
		runtime.GC()
	}
	buf.collectedLine()
	for _, want := range []string{"dropped without End", "the observer panicked"} {
		if !buf.contains(want) {
			t.Errorf("slog.Default has no line saying %q: %s", want, buf.String())
		}
	}

	for _, typ := range packageDoc(t).Types {
		for _, f := range typ.Funcs {
			if f.Name == "WithLogger" && (strings.Contains(f.Doc, "logs nothing") || !strings.Contains(f.Doc, "slog.Default")) {
				t.Errorf("WithLogger's godoc says where the governor's lines go without a logger as:\n%s", f.Doc)
			}
		}
	}
}
