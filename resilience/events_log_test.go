//go:build go1.26

package resilience

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/cloudg/cloudg/observe"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The log: throttles at Debug, give-ups and a breaker opening at Warn,
// its probe and close at Info, each part of the scope an attribute of its
// own.
func TestLogLevelsAndScopeAttributes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{}, WithLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		n := 0
		for range 5 {
			Do(context.Background(), iamUsers, always(&n, throttle()), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		}
		time.Sleep(time.Minute) // the breaker's cooldown
		Do(context.Background(), iamUsers, always(&n, nil), WithGovernor(g))
		out := buf.String()
		for _, want := range []string{
			`level=DEBUG msg="cloudg: throttled"`,
			`level=WARN msg="cloudg: call gave up"`,
			`level=WARN msg="cloudg: circuit breaker open" from=closed`,
			`level=INFO msg="cloudg: circuit breaker half_open" from=open`,
			`level=INFO msg="cloudg: circuit breaker closed" from=half_open`,
			`provider=aws account=123456789012 service=iam operation=ListUsers`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %q:\n%s", want, out)
			}
		}
	})
}

// Pauses of a second or more are logged at Info with their length and
// bucket; shorter ones are the ordinary pacing of a busy scope and are
// not. An empty budget is logged at Info.
func TestLogPausesAndTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{AWS: ProviderConfig{RetryBudget: new(0)}}, WithLogger(buf.logger()))
		ctx := context.Background()
		gd, _ := g.Begin(ctx, iamUsers)
		gd.Pause(500 * time.Millisecond)
		if buf.contains("paused") {
			t.Fatalf("a half-second pause was logged:\n%s", buf.String())
		}
		gd.Pause(2 * time.Second)
		if !buf.contains(`level=INFO msg="cloudg: scope paused" for=2s bucket=leaf`) {
			t.Fatalf("log:\n%s", buf.String())
		}
		n := 0
		Do(ctx, iamUsers, always(&n, throttle()), WithGovernor(g))
		if !buf.contains(`level=INFO msg="cloudg: retry budget exhausted" retries=1 error=`) ||
			!buf.contains(`msg="cloudg: call gave up" reason=budget`) {
			t.Fatalf("log:\n%s", buf.String())
		}
	})
}

// A line's attributes never take the name of a key the handler writes
// itself (time, level, msg): with a JSON handler a pause's line named its
// bucket "level", and a log pipeline that reads the last of two equal keys
// took the line for one of level "leaf".
func TestLogAttributesKeepTheHandlersKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{}, WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
		gd, _ := g.Begin(context.Background(), iamUsers)
		gd.Pause(2 * time.Second)
		gd.End(nil)
		var line map[string]any
		if err := json.Unmarshal(bytes.TrimSpace([]byte(buf.String())), &line); err != nil {
			t.Fatalf("%v:\n%s", err, buf.String())
		}
		if line[slog.MessageKey] != "cloudg: scope paused" || line[slog.LevelKey] != "INFO" || line["bucket"] != "leaf" {
			t.Fatalf("msg %q, level %q, bucket %q; want the pause at INFO, its bucket leaf:\n%s",
				line[slog.MessageKey], line[slog.LevelKey], line["bucket"], buf.String())
		}
	})
}

// A GCP account's "/" stays inside its attribute: a log query selects the
// project without parsing the scope's string form.
func TestLogScopePartsAreAttributes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf logBuffer
		g := newGov(t, Config{}, WithLogger(buf.logger()))
		gcp := Scope{Provider: "gcp", Account: "projects/p1", Service: "cloudasset", Operation: "ListAssets"}
		n := 0
		Do(context.Background(), gcp, always(&n, &apiErr{code: "ResourceExhausted", status: 429}), WithGovernor(g), WithPolicy(RetryPolicy{MaxAttempts: 1}))
		want := `scope=gcp/projects/p1/*/cloudasset/ListAssets provider=gcp account=projects/p1 service=cloudasset operation=ListAssets`
		if !strings.Contains(buf.String(), want) {
			t.Fatalf("log lacks %q:\n%s", want, buf.String())
		}
	})
}

// tickingClock advances a millisecond at every reading, as a busy real
// clock would between two readings of one step.
type tickingClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func (c *tickingClock) Sleep(ctx context.Context, d time.Duration) error { return ctx.Err() }

// A pause of exactly a second is logged, for exactly a second, however
// the clock moved while it was recorded.
func TestLogAPauseOfOneSecond(t *testing.T) {
	var buf logBuffer
	rec := &recorder{}
	g := newGov(t, Config{}, WithLogger(buf.logger()), WithObserver(rec), WithClock(&tickingClock{t: time.Unix(1e9, 0)}))
	gd, _ := g.Begin(context.Background(), iamUsers)
	gd.Pause(time.Second)
	if !buf.contains(`msg="cloudg: scope paused" for=1s bucket=leaf`) {
		t.Fatalf("log:\n%s", buf.String())
	}
	if p := rec.first(observe.Pause); p.Until.Sub(p.Time) != time.Second {
		t.Fatalf("pause %+v", p)
	}
}
