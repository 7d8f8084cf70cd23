package test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
)

// A process that starts while Redis does not answer logs its switch to
// local limits to the governor's logger (resilience.WithLogger), as every
// later switch is: Open's first heartbeat fails before NewGovernor gives
// the store that logger, and the line waits for it, instead of going to
// slog.Default(), where a program that logs through its own logger never
// sees that its process runs on local limits. Redis is down (the proxy
// refuses connections) or frozen (it holds every byte) at Open.
func TestASwitchAtOpenIsLoggedToTheGovernorsLogger(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		for _, how := range []string{"down", "frozen"} {
			t.Run(how, func(t *testing.T) {
				px, url := proxied(t, be)
				if how == "down" {
					px.Down()
				} else {
					px.Freeze()
					defer px.Thaw()
				}
				var gov syncBuffer
				dflt := logDefaultTo(t)
				s, err := fleet.Open(url, fleet.WithPrefix(uniquePrefix(t)), fleet.WithTimeout(100*time.Millisecond), fleet.WithHeartbeat(time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if _, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(s),
					resilience.WithLogger(slog.New(slog.NewTextHandler(&gov, nil)))); err != nil {
					t.Fatal(err)
				}
				if st := s.Stats(); !st.Degraded || st.Fallbacks != 1 {
					t.Fatalf("Redis %s at Open: %+v, want on local limits", how, st)
				}
				const line = "Redis does not answer; local limits"
				if n := countLines(gov.String(), line); n != 1 || countLines(dflt.String(), line) != 0 {
					t.Fatalf("Redis %s at Open: the switch logged %d times to the governor's logger, want once; slog.Default() got:\n%s", how, n, dflt.String())
				}
			})
		}
	})
}

// A store given to no governor with a logger logs its switch at Open to
// slog.Default(), once, at the latest when it is closed.
func TestASwitchAtOpenIsLoggedWithoutAGovernorsLogger(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		px.Down()
		dflt := logDefaultTo(t)
		s, err := fleet.Open(url, fleet.WithPrefix(uniquePrefix(t)), fleet.WithTimeout(100*time.Millisecond), fleet.WithHeartbeat(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(s)); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if n := countLines(dflt.String(), "Redis does not answer; local limits"); n != 1 {
			t.Fatalf("the switch at Open logged %d times to slog.Default(), want once:\n%s", n, dflt.String())
		}
	})
}

// countLines counts the lines of logs that contain s.
func countLines(logs, s string) int {
	n := 0
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// logDefaultTo makes slog.Default() write to the buffer it returns until
// the test ends.
func logDefaultTo(t *testing.T) *syncBuffer {
	var b syncBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&b, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &b
}
