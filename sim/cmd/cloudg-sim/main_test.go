package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/sim"
)

// A small scenario from a file, every strategy, scaled 50 times: the table,
// the rate table, the progress line and the chart.
func TestRunFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "small.yaml")
	chart := filepath.Join(dir, "chart.png")
	doc := "name: small\nworkload: {workers: 16, calls: 240, actions: [DescribeInstances, DescribeVolumes]}\nprovider: {rate: 10, burst: 20}\nclient: {burst: 20}\n"
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run([]string{"-file", file, "-scale", "50", "-chart", chart, "-rates"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	text := out.String()
	t.Log("\n" + text)
	for _, want := range append([]string{"scenario small:", "16 workers, 240 calls over DescribeInstances, DescribeVolumes; provider 10 rps, burst 20 per action", "ideal makespan", "rejected %", "each cell:", "chart: " + chart}, sim.StrategyNames...) {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) > 8 && (f[0] == sim.CloudgAIMD || f[0] == sim.CloudgGoodput) && f[8] != "0" {
			t.Errorf("the governor lost calls: %s", line)
		}
	}
	if !strings.Contains(errOut.String(), "wall, t=") || !strings.Contains(errOut.String(), "100%") {
		t.Errorf("no progress line: %q", errOut.String())
	}
	png, err := os.ReadFile(chart)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 10000 {
		t.Fatalf("chart: %d bytes, %v", len(png), err)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("provider:\n  changes:\n    - {at_seconds: 60, rat: 8}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-file", bad}, "bad.yaml: provider.changes[0].rat: unknown key"},
		{[]string{"-scenario", "nope"}, `unknown scenario "nope"`},
		{[]string{"-strategies", "aws-standard,nope"}, `strategies[1]: unknown strategy "nope"`},
		{[]string{"-scale", "0"}, "-scale must be > 0"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var out, errOut bytes.Buffer
		err := run(c.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
