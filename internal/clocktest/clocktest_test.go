package clocktest

import (
	"context"
	"testing"
	"time"
)

// The clock moves by Advance and by Sleep, and only by them.
func TestManual(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := Start(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("Now %v, want %v", got, t0)
	}
	c.Advance(time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.Sleep(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := c.Sleep(ctx, time.Second); err != context.Canceled {
		t.Fatalf("Sleep on a done context: %v, want context.Canceled", err)
	}
	if got, want := c.Now(), t0.Add(time.Minute+2*time.Second); !got.Equal(want) {
		t.Fatalf("Now %v, want %v", got, want)
	}
}
