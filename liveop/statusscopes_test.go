package liveop

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// A running operation of a Request without scopes marshals its scopes in
// a Status as an empty list, not null, as the Status's own collections
// are, so that a client iterates every operation's scopes without a
// check.
func TestAnOperationWithoutScopesMarshalsAnEmptyList(t *testing.T) {
	g, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	started, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		_, err := Run(context.Background(), g, Request{Key: "inventory"}, func(context.Context) (int, error) {
			close(started)
			<-release
			return 1, nil
		})
		done <- err
	}()
	<-started
	b, err := json.Marshal(g.Status())
	close(release)
	if rerr := <-done; rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"scopes":[]`) {
		t.Errorf("the Status of an operation without scopes: %s, want \"scopes\":[] in it", b)
	}
}
