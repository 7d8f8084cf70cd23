package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The example against its fake endpoint prints the same whatever the
// machine's AWS configuration: a profile that does not exist here, retry
// settings in the environment or in the shared config file change nothing,
// for the fake is no account of the user's. Before, a machine with
// AWS_PROFILE set to a profile of its own failed with "failed to get shared
// config profile", and one with AWS_MAX_ATTEMPTS=1 lost the throttled page.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "config")
	if err := os.WriteFile(shared, []byte("[default]\nmax_attempts = 1\nretry_mode = adaptive\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string]map[string]string{
		"none":                  {},
		"profile not here":      {"AWS_PROFILE": "not-on-this-machine"},
		"retries in env":        {"AWS_MAX_ATTEMPTS": "1", "AWS_RETRY_MODE": "adaptive"},
		"retries in the config": {"AWS_CONFIG_FILE": shared},
		"missing CA bundle":     {"AWS_CA_BUNDLE": filepath.Join(dir, "no-such-bundle.pem")},
	} {
		t.Run(name, func(t *testing.T) {
			for _, k := range []string{"AWS_PROFILE", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE", "AWS_CA_BUNDLE"} {
				t.Setenv(k, env[k])
			}
			t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
			if f, ok := env["AWS_CONFIG_FILE"]; ok {
				t.Setenv("AWS_CONFIG_FILE", f)
			}
			var out bytes.Buffer
			if err := run(context.Background(), &out, false, ""); err != nil {
				t.Fatalf("environment %v: %v", env, err)
			}
			// The account comes from STS; the calls are EC2's (the STS call was
			// made before Install).
			want := "account 123456789012\nvpc-1\nvpc-2\nvpc-3\ncalls 3, throttled 1, retries 1, gave up 0\n"
			if out.String() != want {
				t.Fatalf("environment %v: output\n%s\nwant\n%s", env, out.String(), want)
			}
		})
	}
}

// The command line is -real and -account, nothing else: an account given
// without -account is an error, written with the usage, not a run that
// asks STS for the account instead.
func TestParseArgsRefusesAWordThatIsNoFlag(t *testing.T) {
	if real, account, err := parseArgs([]string{"-real", "-account", "123456789012"}, io.Discard); err != nil || !real || account != "123456789012" {
		t.Fatalf("-real -account 123456789012: %v %q %v", real, account, err)
	}
	for _, args := range [][]string{{"123456789012"}, {"-real", "123456789012"}, {"-acount", "1"}} {
		var stderr strings.Builder
		if _, _, err := parseArgs(args, &stderr); err == nil || !strings.Contains(stderr.String(), "Usage of install") {
			t.Errorf("%q: %v, wrote %q; want an error and the usage", args, err, stderr.String())
		}
	}
}
