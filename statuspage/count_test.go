//go:build go1.25

package statuspage

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/cloudg/cloudg/resilience"
)

// A count cell holds at most five characters: every digit up to 99,999,
// then three significant figures and a unit, the whole figure in the
// cell's title, so that a long-running governor's counts do not widen the
// page past a laptop's window (12,345,678 calls, with six-digit throttles
// and retries, made it 1271 px wide in a 1265 px window).
func TestCountsFitFiveCharacters(t *testing.T) {
	for _, tc := range []struct {
		n           int64
		shown, full string
	}{
		{0, "·", ""},
		{7, "7", ""},
		{99_999, "99999", ""},
		{100_000, "100k", "100000"},
		{123_456, "123k", "123456"},
		{1_234_567, "1.23M", "1234567"},
		{12_345_678, "12.3M", "12345678"},
		{123_456_789, "123M", "123456789"},
		{math.MaxInt64, "9.22E", "9223372036854775807"},
	} {
		if got, full := count(tc.n), whole(tc.n); got != tc.shown || full != tc.full {
			t.Errorf("count(%d) = %q, whole %q; want %q, %q", tc.n, got, full, tc.shown, tc.full)
		}
	}
	for f := 1.0; f < math.MaxInt64/2; f *= 1.07 {
		for _, n := range []int64{int64(f) - 1, int64(f), int64(f) + 1} {
			s := count(n)
			if len(s) > 5 {
				t.Fatalf("count(%d) = %q, %d characters", n, s, len(s))
			}
			if n < compactFrom {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimRight(s, "kMGTPE"), 64)
			if err != nil {
				t.Fatalf("count(%d) = %q", n, s)
			}
			v *= math.Pow(1000, float64(strings.Index("kMGTPE", s[len(s)-1:])+1))
			if r := math.Abs(v-float64(n)) / float64(n); r > 0.005 {
				t.Fatalf("count(%d) = %q, %.2f%% off", n, s, 100*r)
			}
		}
	}
}

// The page shows a service's large counts cut short, the whole on hover.
func TestLargeCountsAreCutWithTheWholeOnHover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{
			Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 1000, Burst: 1000}}}})
		if err != nil {
			t.Fatal(err)
		}
		sc := resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "ec2", Operation: "DescribeVpcs"}
		for range 123_456 {
			if err := resilience.Do(context.Background(), sc, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
				t.Fatal(err)
			}
		}
		body := get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String()
		if want := `data-label="calls" title="123456">123k</td>`; !strings.Contains(body, want) {
			t.Errorf("the page has no %s:\n%s", want, body)
		}
	})
}

// A rate from 0.1 up holds at most five characters, as a count does: three
// significant digits below 1000, every digit up to 99,999, then three
// figures and a unit. A scope or an account configured at 100,000 calls
// per second or more, written in every digit, made the page wider than a
// 1024 or a 961 px window (1017 px in a 1009 px viewport at 100,000 rps,
// 1049 px with an account of 23,456,789).
func TestRatesFitFiveCharacters(t *testing.T) {
	for _, tc := range []struct {
		r     float64
		shown string
	}{
		{0.5, "0.5"}, {1.2345, "1.23"}, {999.7, "1000"}, {1234.5, "1235"}, {99_999, "99999"},
		{100_000, "100k"}, {123_456, "123k"}, {999_600, "1.00M"}, {12_345_678, "12.3M"}, {1e18, "1.00E"},
	} {
		if got := rate(tc.r); got != tc.shown {
			t.Errorf("rate(%v) = %q, want %q", tc.r, got, tc.shown)
		}
	}
	for f := 0.1; f < math.MaxInt64/2; f *= 1.07 {
		if s := rate(f); len(s) > 5 {
			t.Fatalf("rate(%v) = %q, %d characters", f, s, len(s))
		}
	}
	synctest.Test(t, func(t *testing.T) {
		account := 23_456_789.0
		g, err := resilience.NewGovernor(resilience.Config{AWS: resilience.ProviderConfig{AccountMaxRPS: &account,
			Services: map[string]resilience.ServiceConfig{"s3": {MaxRPS: 12_345_678, Burst: 10}}}})
		if err != nil {
			t.Fatal(err)
		}
		sc := resilience.Scope{Provider: "aws", Account: "111111111111", Region: "eu-west-1", Service: "s3"}
		if err := resilience.Do(context.Background(), sc, func(context.Context) error { return nil }, resilience.WithGovernor(g)); err != nil {
			t.Fatal(err)
		}
		body := get(t, New(WithGovernor(g)), http.MethodGet, "/").Body.String()
		for _, want := range []string{`<span class="num">12.3M / 12.3M</span>`, `data-label="account rate / ceiling">23.5M / 23.5M</td>`} {
			if !strings.Contains(body, want) {
				i := strings.Index(body, `<td class="rate now"`)
				j := strings.Index(body, `data-label="account rate / ceiling"`)
				t.Errorf("the page lacks %s; its rate cells are\n%s\n%s", want, body[i:i+strings.Index(body[i:], "\n")], body[j:j+strings.Index(body[j:], "\n")])
			}
		}
	})
}
