package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The example serves cloudgotel's instruments at /metrics and the status
// page at /debug/cloudg while its workload runs, prints both URLs, and
// exits after its duration with the run's report.
func TestServesMetricsAndTheStatusPage(t *testing.T) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(context.Background(), pw, options{addr: "127.0.0.1:0", duration: 5 * time.Second, perScope: 2})
		pw.CloseWithError(err)
		done <- err
	}()
	out := bufio.NewScanner(pr)
	urls := map[string]string{}
	for len(urls) < 2 && out.Scan() {
		name, url, _ := strings.Cut(out.Text(), ":")
		urls[name] = strings.TrimSpace(url)
	}
	metrics, status := urls["metrics"], urls["status"]
	if !strings.HasSuffix(metrics, "/metrics") || !strings.HasSuffix(status, "/debug/cloudg") {
		t.Fatalf("printed %v", urls)
	}

	// The workload is throttled within its first second; the scrape shows
	// counters, the wait histogram and the gauges.
	want := []string{"cloudg_calls_total", "cloudg_throttles_total", "cloudg_retries_total",
		"cloudg_wait_duration_seconds", "cloudg_rate_per_second", "cloudg_rate_ceiling_per_second",
		"cloudg_breaker_state", "cloudg_inflight", "cloudg_retry_budget", "cloudg_queued", "cloudg_pause_remaining_seconds",
		"cloudg_waiting", "cloudg_lost_total"}
	var missing []string
	var fams map[string]any
	for deadline := time.Now().Add(4 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		fams = scrape(t, metrics)
		missing = missing[:0]
		for _, name := range want {
			if _, ok := fams[name]; !ok {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(missing) > 0 {
		t.Errorf("/metrics lacks %v", missing)
	}
	checkREADMEsHelp(t, fams, want)
	checkREADMEsAccounts(t, get(t, metrics))

	body := get(t, status)
	if !strings.Contains(body, "governor status") || strings.Count(body, ` data-scope="`) != len(estate) {
		t.Errorf("the status page shows %d scopes, want %d", strings.Count(body, ` data-scope="`), len(estate))
	}
	var page struct {
		Live   int `json:"live_scopes"`
		Scopes []struct {
			Status string `json:"status"`
		} `json:"scopes"`
	}
	if err := json.Unmarshal([]byte(get(t, status+"?format=json")), &page); err != nil {
		t.Fatal(err)
	}
	if page.Live != len(estate) || len(page.Scopes) != len(estate) || page.Scopes[0].Status == "ok" {
		t.Errorf("the JSON: %d live scopes, the first %+v", page.Live, page.Scopes[:min(1, len(page.Scopes))])
	}

	rest, _ := io.ReadAll(pr)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rest), "totals: {calls: ") || !strings.Contains(string(rest), "throttled") {
		t.Errorf("the report:\n%s", rest)
	}
}

// checkREADMEsHelp checks that the scrape the README shows says what the
// instruments say: each of its HELP lines of a family in fams (scraped
// from the example) is the family's help, and the README shows each
// family of want.
func checkREADMEsHelp(t *testing.T, fams map[string]any, want []string) {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, l := range strings.Split(string(readme), "\n") {
		name, help, ok := strings.Cut(strings.TrimPrefix(l, "# HELP "), " ")
		if !ok || !strings.HasPrefix(l, "# HELP ") {
			continue
		}
		shown[name] = true
		f, ok := fams[name].(interface{ GetHelp() string })
		if !ok {
			continue // not in this run's scrape
		}
		if f.GetHelp() != help {
			t.Errorf("the README's scrape says of %s %q; the example serves %q", name, help, f.GetHelp())
		}
	}
	for _, name := range want {
		if !shown[name] {
			t.Errorf("the README's scrape has no HELP line of %s", name)
		}
	}
}

// checkREADMEsAccounts checks that each account the README's scrape
// shows (its cloud_account_id labels) is one the example's series carry,
// as cloudgotel writes it: a label value the README shows and the example
// never serves is output the program does not print.
func checkREADMEsAccounts(t *testing.T, scraped string) {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	const label = `cloud_account_id="`
	seen := map[string]bool{}
	for _, l := range strings.Split(string(readme), "\n") {
		_, rest, ok := strings.Cut(l, label)
		if !ok || !strings.HasPrefix(l, "cloudg_") {
			continue
		}
		id, _, _ := strings.Cut(rest, `"`)
		if seen[id] {
			continue
		}
		seen[id] = true
		if !strings.Contains(scraped, label+id+`"`) {
			t.Errorf("the README's scrape shows cloud_account_id=%q, which no series of the example carries", id)
		}
	}
	if len(seen) == 0 {
		t.Error("the README's scrape shows no cloud_account_id")
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %s", url, err, resp.Status)
	}
	return string(b)
}

func scrape(t *testing.T, url string) map[string]any {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(get(t, url)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for name, f := range fams {
		out[name] = f
	}
	return out
}

// The command line says what runs: a -duration that is not positive (a
// run of nothing), a -workers under 1 or a word that is no flag (a
// duration given without -duration, ignored) is an error, written with
// the usage.
func TestParseArgsRefusesWhatWouldNotRun(t *testing.T) {
	o, err := parseArgs([]string{"-addr", "127.0.0.1:0", "-duration", "5s", "-workers", "3", "-v"}, io.Discard)
	if err != nil || o != (options{addr: "127.0.0.1:0", duration: 5 * time.Second, perScope: 3, verbose: true}) {
		t.Fatalf("%+v, %v", o, err)
	}
	for _, args := range [][]string{{"30s"}, {"-duration", "0s"}, {"-duration", "-1s"}, {"-workers", "0"}, {"-workers", "-5"}} {
		var stderr strings.Builder
		if _, err := parseArgs(args, &stderr); err == nil || !strings.Contains(stderr.String(), "Usage of observe") {
			t.Errorf("%q: %v, wrote %q; want an error and the usage", args, err, stderr.String())
		}
	}
}
