package resilience

import (
	"context"
	"runtime"
	"strings"
	"testing"
)

// A guard dropped without End gives its slot back when it is garbage
// collected, and the first such leak is logged once, at Warn, with its
// scope. The collector runs on its own goroutine, so this test runs in real
// time (it loops on runtime.GC, it does not sleep).
func TestDroppedGuardReleasesItsSlotWhenCollected(t *testing.T) {
	var buf logBuffer
	g := newGov(t, Config{GCP: ProviderConfig{MaxConcurrency: 2}}, WithLogger(buf.logger()))
	sc := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
	// The two guards stay reachable until the third call has been refused,
	// so that a collection meanwhile cannot free their slots early.
	var abandoned []*Guard
	for range 2 {
		gd, _ := g.Begin(context.Background(), sc)
		if err := gd.Enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		abandoned = append(abandoned, gd)
	}
	other, _ := g.Begin(context.Background(), sc)
	if err := other.TryEnter(); err == nil {
		t.Fatal("a third slot with a cap of 2")
	}
	runtime.KeepAlive(abandoned)
	for i := 0; g.Inspect(sc).InFlight != 0; i++ {
		if i == 1000 {
			t.Fatalf("%d slots still held after %d collections", g.Inspect(sc).InFlight, i)
		}
		runtime.GC()
	}
	if err := other.TryEnter(); err != nil {
		t.Fatalf("after the collection: %v", err)
	}
	other.End(nil)
	if n := strings.Count(buf.String(), "dropped without End"); n != 1 || !strings.Contains(buf.String(), "level=WARN") || !buf.contains("gcp/projects/p1/*/cloudasset/ListAssets") {
		t.Fatalf("log (%d lines): %s", n, buf.String())
	}
}

// A guard that released its slot leaves nothing for the collector to do.
func TestEndedGuardIsNotReleasedAgain(t *testing.T) {
	g := newGov(t, Config{GCP: ProviderConfig{MaxConcurrency: 1}})
	sc := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset"}
	func() {
		gd, _ := g.Begin(context.Background(), sc)
		gd.Enter(context.Background())
		gd.End(nil)
	}()
	held, _ := g.Begin(context.Background(), sc)
	if err := held.Enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		runtime.GC() // a second release would panic in the bulkhead, or free held's slot
	}
	if s := g.Inspect(sc); s.InFlight != 1 {
		t.Fatalf("%d in flight, want the held one", s.InFlight)
	}
	held.End(nil)
}
