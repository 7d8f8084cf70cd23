package main

import (
	"bytes"
	"context"
	"testing"
)

func TestRun(t *testing.T) {
	// The program's own environment must not change its retries.
	t.Setenv("AWS_MAX_ATTEMPTS", "")
	t.Setenv("AWS_RETRY_MODE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	var out bytes.Buffer
	if err := run(context.Background(), &out, false, ""); err != nil {
		t.Fatal(err)
	}
	// The account comes from STS; the calls are EC2's (the STS call was
	// made before Install).
	want := "account 123456789012\nvpc-1\nvpc-2\nvpc-3\ncalls 3, throttled 1, retries 1, gave up 0\n"
	if out.String() != want {
		t.Fatalf("output\n%s\nwant\n%s", out.String(), want)
	}
}
