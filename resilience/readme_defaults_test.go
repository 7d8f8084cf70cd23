package resilience

import (
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/doctest"
	"github.com/cloudg/cloudg/internal/hint"
)

// The README's configuration reference tells the settings and their
// built-in defaults three times, and each is what the code has: its
// reference block names every key the reader reads (a commented line
// counts), with aws's defaults as its values; its table of built-in
// defaults is each provider's; and the line under the table is every
// provider's breaker, retries and budget. TestREADMEConfigBlocksParse
// checks only that the blocks load.
func TestREADMEConfigReferenceIsTheCodes(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	md := string(data)
	var ref *doctest.Fenced
	for _, b := range doctest.Blocks(md, "yaml") {
		if strings.HasPrefix(b.Text, "ratelimit:\n  enabled:") {
			ref = &b
			break
		}
	}
	if ref == nil {
		t.Fatal("README.md: no reference block (ratelimit:, then enabled:)")
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[Config](), reflect.TypeFor[ProviderConfig](), reflect.TypeFor[ServiceConfig]()} {
		for i := range typ.NumField() {
			key, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
			named := `(?m)(^\s*#?\s*|[{,]\s*)` + key + `:`
			if typ == reflect.TypeFor[Config]() {
				named = `\b` + key + `\b` // # also azure and gcp
			}
			if !regexp.MustCompile(named).MatchString(ref.Text) {
				t.Errorf("README.md:%d: the reference block does not name %s (%v.%s)", ref.Line, key, typ, typ.Field(i).Name)
			}
		}
	}
	cfg, err := ParseConfig([]byte(ref.Text))
	if err != nil {
		t.Fatalf("README.md:%d: %v", ref.Line, err)
	}
	// Its aws values, but for the services it overrides as examples, are
	// aws's defaults.
	shown := cfg.AWS
	shown.Services = nil
	got, want := resolveProvider("aws", shown, true), resolveProvider("aws", ProviderConfig{}, true)
	for _, f := range []struct {
		what      string
		got, want any
	}{
		{"leaf", got.leaf, want.leaf}, {"global bucket", got.global, want.global}, {"account bucket", got.account, want.account},
		{"max_concurrency", got.bulkhead, want.bulkhead}, {"breaker", got.breaker, want.breaker}, {"retries", got.retry, want.retry},
		{"retry_budget", got.budget, want.budget}, {"breaker_dead_seconds", got.dead, want.dead}, {"breaker_wait", got.breakerWait, want.breakerWait},
		{"per_operation", got.allOps, want.allOps},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Errorf("README.md:%d: the reference block's aws %s is %+v, aws's default %+v", ref.Line, f.what, f.got, f.want)
		}
	}

	// The table: | `aws` | 20 / 40 / 0.2 | off | 128 | `ec2` 20/100 per operation, ... |
	rows := regexp.MustCompile("(?m)^\\| (`\\w+`|any other) \\| ([\\d.]+) / ([\\d.]+) / ([\\d.]+) \\| ([^|]+) \\| (\\d+) \\| ([^|]+) \\|$").FindAllStringSubmatch(md, -1)
	seen := map[string]bool{}
	for _, r := range rows {
		name := strings.Trim(r[1], "`")
		d, ok := providerDefaults[name]
		if name == "any other" {
			d, ok = genericDefault, true
		}
		if !ok {
			t.Errorf("README.md: a defaults row for %q, which has none", name)
			continue
		}
		seen[name] = true
		var table providerDefault
		table.rate, table.burst, table.floor = number(t, r[2]), number(t, r[3]), number(t, r[4])
		if a := regexp.MustCompile(`^([\d.]+) rps, burst ([\d.]+) `).FindStringSubmatch(r[5]); a != nil {
			table.accountRate, table.accountBurst = number(t, a[1]), number(t, a[2])
		} else if strings.TrimSpace(r[5]) != "off" {
			t.Errorf("README.md: %s's account bucket %q", name, r[5])
		}
		table.concurrency = int(number(t, r[6]))
		for _, s := range regexp.MustCompile("`([\\w.]+)` ([\\d.]+)/([\\d.]+)( per operation)?").FindAllStringSubmatch(r[7], -1) {
			if table.services == nil {
				table.services = map[string]serviceDefault{}
			}
			table.services[s[1]] = serviceDefault{number(t, s[2]), number(t, s[3]), s[4] != ""}
		}
		if !reflect.DeepEqual(table, d) {
			t.Errorf("README.md: the defaults row of %s says\n %+v\nthe code has\n %+v", name, table, d)
		}
	}
	if want := append(slices.Sorted(maps.Keys(providerDefaults)), "any other"); len(seen) != len(want) {
		t.Errorf("README.md: defaults rows for %v, want %v", seen, want)
	}

	// The line under it.
	line := regexp.MustCompile(`Every provider: breaker (\d+) failures, (\d+) s cooldown doubling to (\d+) s on a failed probe, open\s+` +
		`at once after (\d+) s of nothing but failures from (\d+) calls; (\d+)\s+` +
		`retries, base ([\d.]+) s, max backoff (\d+) s, deadline (\d+) s, budget (\d+) \(each success refunds 0.1\);\s+` +
		"pauses for `Retry-After` capped at (\\d+) s.").FindStringSubmatch(md)
	if line == nil {
		t.Fatal("README.md: no line of every provider's defaults (Every provider: breaker ...)")
	}
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) }
	for i, want := range []string{
		fmt.Sprint(defaultBreakerThreshold), secs(defaultBreakerCooldown), secs(defaultBreakerMaxCooldown),
		secs(defaultBreakerDead), fmt.Sprint(defaultBreakerThreshold), fmt.Sprint(defaultMaxRetries),
		secs(defaultBaseDelay), secs(defaultMaxBackoff), secs(defaultDeadline), fmt.Sprint(defaultRetryBudget),
		secs(hint.MaxPause),
	} {
		if line[i+1] != want {
			t.Errorf("README.md: every provider's defaults: %q where the code has %s (%q)", line[i+1], want, line[0])
		}
	}
}

func number(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
