package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cloudg/cloudg/liveop"
	"github.com/cloudg/cloudg/resilience"
)

// The configuration file sets the governor and the guard from one
// ratelimit section.
func TestNewScannerReadsTheConfiguration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "cloudg.yaml")
		doc := "ratelimit:\n  aws:\n    max_rps: 5\n    live_cooldown_seconds: 300\n  live_cooldown_seconds: 30\n"
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := newScanner(path)
		if err != nil {
			t.Fatal(err)
		}
		aws := resilience.Scope{Provider: "aws", Account: "1", Region: "eu-west-1", Service: "s3"}
		if c := s.gov.Inspect(aws).Leaf.Ceiling; c != 5 {
			t.Fatalf("aws leaf ceiling %v, want 5", c)
		}
		s.guard.MarkCompleted("aws/1", "gcp/projects/p")
		if a, g := s.guard.CooldownRemaining("aws/1"), s.guard.CooldownRemaining("gcp/projects/p"); a != 300*time.Second || g != 30*time.Second {
			t.Fatalf("cooldowns aws %v, gcp %v; want 300s and 30s", a, g)
		}
	})
}

// Without a file the guard has a configuration file's defaults, the
// operation timeout included; a bad file is an error naming its key.
func TestNewScannerDefaultsAndErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := newScanner("")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = liveop.Run(context.Background(), s.guard, liveop.Request{Scopes: []string{"aws/1"}},
			func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() })
		if !errors.Is(err, liveop.ErrTimeout) || time.Since(start) != time.Hour {
			t.Fatalf("%v after %v, want the timeout refusal after 3600s", err, time.Since(start))
		}
	})
	dir := t.TempDir()
	for doc, want := range map[string]string{
		"ratelimit: {live_max_concurrent: 0}\n": "ratelimit.live_max_concurrent: must be > 0",
		"ratelimit: {aws: {max_rsp: 1}}\n":      "ratelimit.aws.max_rsp: unknown key (did you mean max_rps?)",
	} {
		path := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := newScanner(path); err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%q: %v, want ...%s", doc, err, want)
		}
	}
}

// The command line is -config and nothing else: a configuration file
// given without -config is an error, written with the usage, not a server
// that runs on the defaults while its operator believes the file read.
func TestParseArgsRefusesAWordThatIsNoFlag(t *testing.T) {
	if config, err := parseArgs([]string{"-config", "cloudg.yaml"}, io.Discard); err != nil || config != "cloudg.yaml" {
		t.Fatalf("-config cloudg.yaml: %q, %v", config, err)
	}
	for _, args := range [][]string{{"cloudg.yaml"}, {"-config", "a.yaml", "b.yaml"}, {"-conf", "x"}} {
		var stderr strings.Builder
		if _, err := parseArgs(args, &stderr); err == nil || !strings.Contains(stderr.String(), "Usage of mcpscan") {
			t.Errorf("%q: %v, wrote %q; want an error and the usage", args, err, stderr.String())
		}
	}
}

// The configuration file the README's command names is in the repository,
// and sets what its comments say.
func TestTheREADMEsConfigurationFileLoads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := newScanner("cloudg.yaml")
		if err != nil {
			t.Fatal(err)
		}
		aws := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "eu-west-1", Service: "s3", Operation: "ListBuckets"}
		if c := s.gov.Inspect(aws).Provider.Ceiling; c != 40 {
			t.Errorf("aws provider bucket's ceiling %v, want 40", c)
		}
		s.guard.MarkCompleted("aws/123456789012", "gcp/projects/inventory-prod")
		if a, g := s.guard.CooldownRemaining("aws/123456789012"), s.guard.CooldownRemaining("gcp/projects/inventory-prod"); a != 300*time.Second || g != 120*time.Second {
			t.Errorf("cooldowns aws %v, gcp %v; want 300s and 120s", a, g)
		}
	})
}
