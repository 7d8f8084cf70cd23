package breaker

import (
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/modeltest"
	"github.com/cloudg/cloudg/state"
	"pgregory.net/rapid"
)

// model is the breaker of the spec (section 2.6), kept apart from the
// code: closed, open for a cooldown after Threshold consecutive failures,
// then half-open with one probe that holds a lease of one cooldown; a
// failed probe (or a trip of a half-open breaker) doubles the cooldown up
// to MaxCooldown, a success closes it with the base cooldown restored.
type model struct {
	spec     state.BreakerSpec
	st       state.BreakerState
	failures int
	cooldown time.Duration
	until    time.Duration // open: the cooldown's end; half-open: the lease's end
}

func (m *model) double() { m.cooldown = min(2*m.cooldown, m.spec.MaxCooldown) }

func (m *model) open(now time.Duration) {
	m.st, m.failures, m.until = state.Open, 0, now+m.cooldown
}

// wait is how long a caller waits at now: never more than one cooldown,
// whatever the clock did (a cooldown is a span of the clock's time, and
// a clock set back does not make it longer).
func (m *model) wait(now time.Duration) time.Duration {
	return max(0, min(m.until-now, m.cooldown))
}

// rebase moves the end of a cooldown or a lease that lies more than one
// cooldown past now (the clock went back) to one cooldown from now.
func (m *model) rebase(now time.Duration) {
	if m.st != state.Closed && m.until-now > m.cooldown {
		m.until = now + m.cooldown
	}
}

var reached modeltest.Tally

// TestModel drives a breaker with random sequences of its verbs, at times
// that mostly move forward and sometimes back (a wall clock stepped back),
// against the model, and checks after every step that the breaker
// answers and reads as the model does: the state, the failures, the
// cooldown within [Cooldown, MaxCooldown], a wait never longer than one
// cooldown, at most one probe per lease, and reads without side effects.
func TestModel(t *testing.T) {
	modeltest.Budget(t, 200, 100)
	reached.Reset()
	defer reached.Log(t)
	rapid.Check(t, func(t *rapid.T) {
		s := state.BreakerSpec{
			Threshold:   rapid.IntRange(1, 4).Draw(t, "threshold"),
			Cooldown:    time.Duration(rapid.IntRange(1, 60).Draw(t, "cooldown s")) * time.Second,
			MaxCooldown: time.Duration(rapid.IntRange(1, 600).Draw(t, "max cooldown s")) * time.Second,
		}
		b := New(s)
		s.MaxCooldown = max(s.MaxCooldown, s.Cooldown)
		m := &model{spec: s, cooldown: s.Cooldown}
		now := time.Duration(rapid.IntRange(0, 1000).Draw(t, "start s")) * time.Second

		t.Repeat(map[string]func(*rapid.T){
			"advance": func(t *rapid.T) {
				now += time.Duration(rapid.IntRange(0, 1300).Draw(t, "advance s")) * time.Second
			},
			"back": func(t *rapid.T) {
				now -= time.Duration(rapid.IntRange(1, 3000).Draw(t, "back s")) * time.Second
				reached.Add("clock set back")
			},
			"allow": func(t *rapid.T) {
				wait, ok, probe := b.Allow(now)
				m.rebase(now)
				var wWait time.Duration
				wOK, wProbe := true, false
				switch m.st {
				case state.Open, state.HalfOpen:
					if now < m.until {
						wWait, wOK = m.wait(now), false
						break
					}
					m.st, m.until, wProbe = state.HalfOpen, now+m.cooldown, true
				}
				if wait != wWait || ok != wOK || probe != wProbe {
					t.Fatalf("Allow(%v) = %v, %v, %v; want %v, %v, %v", now, wait, ok, probe, wWait, wOK, wProbe)
				}
				if probe {
					reached.Add("probe")
				} else if !ok {
					reached.Add("refused in " + m.st.String())
				}
			},
			"allowProbe": func(t *rapid.T) {
				wait, ok := b.AllowProbe(now)
				m.rebase(now)
				wWait, wOK := time.Duration(0), m.st != state.Open
				if !wOK {
					wWait = m.wait(now)
				}
				if wait != wWait || ok != wOK {
					t.Fatalf("AllowProbe(%v) = %v, %v; want %v, %v", now, wait, ok, wWait, wOK)
				}
			},
			"success": func(t *rapid.T) {
				closed := b.Success()
				wClosed := m.st == state.HalfOpen
				if wClosed {
					m.st, m.cooldown, m.until = state.Closed, s.Cooldown, 0
					reached.Add("probe succeeded")
				}
				m.failures = 0
				if closed != wClosed {
					t.Fatalf("Success() = %v; want %v", closed, wClosed)
				}
			},
			"failure": func(t *rapid.T) {
				opened, from := b.FailureFrom(now)
				wFrom, wOpened := m.st, false
				switch m.st {
				case state.Closed:
					if m.failures++; m.failures >= s.Threshold {
						m.open(now)
						wOpened = true
						reached.Add("opened at the threshold")
					}
				case state.HalfOpen:
					m.double()
					m.open(now)
					wOpened = true
					reached.Add("probe failed")
				}
				if opened != wOpened || from != wFrom {
					t.Fatalf("FailureFrom(%v) = %v, %v; want %v, %v", now, opened, from, wOpened, wFrom)
				}
			},
			"trip": func(t *rapid.T) {
				opened := b.Trip(now)
				wOpened := m.st != state.Open
				if m.st == state.HalfOpen {
					m.double()
				}
				if wOpened {
					m.open(now)
					reached.Add("tripped")
				}
				if opened != wOpened {
					t.Fatalf("Trip(%v) = %v; want %v", now, opened, wOpened)
				}
			},
			"": func(t *rapid.T) {
				got := b.Snapshot(now)
				if again := b.Snapshot(now); again != got {
					t.Fatalf("two Snapshots at %v differ: %+v, then %+v", now, got, again)
				}
				want := state.BreakerSnapshot{State: m.st, Failures: m.failures, Cooldown: m.cooldown}
				if m.st != state.Closed {
					want.Wait = m.wait(now)
				}
				if got != want {
					t.Fatalf("Snapshot(%v) = %+v; want %+v", now, got, want)
				}
				if got.Cooldown < s.Cooldown || got.Cooldown > s.MaxCooldown || got.Wait > got.Cooldown {
					t.Fatalf("Snapshot(%v) = %+v: cooldown outside [%v, %v], or a wait past it", now, got, s.Cooldown, s.MaxCooldown)
				}
			},
		})
	})
}
