//go:build go1.25

package liveop

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestRefusalJSON(t *testing.T) {
	for _, c := range []struct {
		err  *RefusedError
		want string
	}{
		{cooldownError([]string{"aws/1", "aws/2"}, 119960*time.Millisecond),
			`{"reason":"cooldown","message":"live collection of aws/1, aws/2 ran recently; cooling down, retry in 120s or use the cached dataset","retry_after_seconds":120,"scopes":["aws/1","aws/2"]}`},
		{quotaError("agent", 3, "90.5", 12340*time.Millisecond),
			`{"reason":"quota","message":"caller 'agent' reached its quota of 3 live operations per 90.5s; retry in 13s or use the cached dataset","retry_after_seconds":12.4}`},
		{busyError(nil, nil),
			`{"reason":"busy","message":"a live operation is already running for all scopes; retry when it finishes or use the cached dataset"}`},
		{timeoutError([]string{"gcp/projects/p"}, 1500*time.Millisecond, context.DeadlineExceeded),
			`{"reason":"timeout","message":"live operation did not finish within 1.5s and was cancelled; retry later or use the cached dataset","scopes":["gcp/projects/p"]}`},
	} {
		b, err := json.Marshal(c.err)
		if err != nil || string(b) != c.want {
			t.Errorf("got  %s %v\nwant %s", b, err, c.want)
		}
	}
	r := quotaError("agent", 3, "60", time.Second)
	r.Caller = "agent"
	if b, _ := json.Marshal(r); string(b) != `{"reason":"quota","message":"caller 'agent' reached its quota of 3 live operations per 60s; retry in 1s or use the cached dataset","retry_after_seconds":1,"caller":"agent"}` {
		t.Fatal(string(b))
	}
}

func TestRefusalSentinels(t *testing.T) {
	sentinels := map[Reason]error{ReasonCooldown: ErrCooldown, ReasonBusy: ErrBusy, ReasonQuota: ErrQuota, ReasonTimeout: ErrTimeout}
	for reason, sentinel := range sentinels {
		var err error = &RefusedError{Reason: reason}
		for other, s := range sentinels {
			if errors.Is(err, s) != (other == reason) {
				t.Errorf("%s: errors.Is(%v) = %v", reason, s, !(other == reason))
			}
		}
		var r *RefusedError
		if !errors.As(errors.Join(errors.New("scan"), err), &r) || !errors.Is(r, sentinel) {
			t.Errorf("%s: not found through wrapping", reason)
		}
	}
	if errors.Is(&RefusedError{Reason: "other"}, ErrBusy) {
		t.Fatal("an unknown reason matched")
	}
}

// A refusal Run returns marshals with its retry-after rounded up to 0.1 s
// (the message rounds up to whole seconds) and its caller; a retry at that
// time goes.
func TestRefusalJSONFromRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGuard(t, Config{})
		g.MarkCompleted("aws/1")
		time.Sleep(30270 * time.Millisecond) // 89.73 s left
		_, err := Run(context.Background(), g, req("k", "aws/1"), (&counted{}).run)
		b, merr := json.Marshal(err)
		want := `{"reason":"cooldown","message":"live collection of aws/1 ran recently; cooling down, retry in 90s or use the cached dataset","retry_after_seconds":89.8,"scopes":["aws/1"],"caller":"agent"}`
		if merr != nil || string(b) != want {
			t.Fatalf("got  %s %v\nwant %s", b, merr, want)
		}
		time.Sleep(89800 * time.Millisecond)
		if _, err := Run(context.Background(), g, req("k", "aws/1"), (&counted{}).run); err != nil {
			t.Fatalf("the retry at retry_after_seconds: %v", err)
		}
	})
}

// A refusal whose retry-after rounds to zero tenths still says when to
// retry: its JSON keeps retry_after_seconds (0.1, the least it shows), as
// its message says "retry in 1s", rather than leave it out as a busy
// refusal's, whose retry-after is unknown.
func TestRefusalJSONKeepsAShortRetryAfter(t *testing.T) {
	for _, left := range []time.Duration{40 * time.Millisecond, 400 * time.Nanosecond} {
		t.Run(left.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGuard(t, Config{})
				g.MarkCompleted("aws/1")
				time.Sleep(120*time.Second - left)
				_, err := Run(context.Background(), g, req("k", "aws/1"), (&counted{}).run)
				b, merr := json.Marshal(err)
				want := `{"reason":"cooldown","message":"live collection of aws/1 ran recently; cooling down, retry in 1s or use the cached dataset","retry_after_seconds":0.1,"scopes":["aws/1"],"caller":"agent"}`
				if merr != nil || string(b) != want {
					t.Fatalf("got  %s %v\nwant %s", b, merr, want)
				}
				if st := g.Status(); st.Cooling["aws/1"] != 0.1 {
					t.Fatalf("cooling %v, want 0.1 s left", st.Cooling)
				}
			})
		})
	}
}

// An idle Guard's Status, new or zero, marshals its collections as empty
// ones, not null, so that a client iterates it without a check.
func TestIdleStatusMarshalsEmptyCollections(t *testing.T) {
	g, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]Status{"New": g.Status(), "zero Guard": new(Guard).Status()} {
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"in_flight":[]`, `"active_scopes":{}`, `"cooling":{}`, `"active":0`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s: %s, want %s in it", name, b, want)
			}
		}
	}
}
