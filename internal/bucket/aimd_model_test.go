//go:build go1.25

package bucket

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cloudg/cloudg/internal/modeltest"
	"pgregory.net/rapid"
)

// aimdModel is the adaptive rate of spec 2.4, kept apart from the code:
// a throttle halves the rate, not below the floor, once per
// DecreaseInterval, and pauses for its hint (a later, shorter hint never
// shortens a pause); after IncreaseInterval without a throttle a success
// adds IncreaseStep of the ceiling (at least MinIncrease), at most once
// per IncreaseInterval, up to the ceiling.
type aimdModel struct {
	ceiling, floor                           float64
	adaptive                                 bool
	rate                                     float64
	lastDecrease, lastThrottle, lastIncrease time.Duration
	pausedUntil                              time.Duration
}

func (m *aimdModel) throttle(now, pause time.Duration) (float64, bool) {
	m.lastThrottle = now
	decreased := false
	if m.adaptive && now-m.lastDecrease >= DecreaseInterval {
		m.lastDecrease = now
		if r := math.Max(m.floor, m.rate*DecreaseFactor); r < m.rate {
			m.rate, decreased = r, true
		}
	}
	m.pause(now, pause)
	return m.rate, decreased
}

func (m *aimdModel) pause(now, pause time.Duration) {
	if pause > 0 {
		m.pausedUntil = max(m.pausedUntil, now+pause)
	}
}

func (m *aimdModel) success(now time.Duration) (float64, bool) {
	if m.rate < m.ceiling && now-m.lastThrottle >= IncreaseInterval && now-m.lastIncrease >= IncreaseInterval {
		m.rate += math.Max(IncreaseStep*m.ceiling, MinIncrease)
		if m.rate >= m.ceiling*(1-1e-9) {
			m.rate = m.ceiling
		}
		m.lastIncrease = now
		return m.rate, true
	}
	return m.rate, false
}

var aimdReached modeltest.Tally

// TestAIMDModel drives an AIMD bucket (adaptive or not) with random
// sequences of reservations (with their tickets), cancelled reservations,
// throttles with and without a hint, pauses, successes and time passing,
// against aimdModel, and checks after every step: the rate and the pause
// as the model has them, the rate within [floor, ceiling]; the tickets
// of the callers still waiting, followed to date, in the order they were
// taken, one interval apart at least (no two callers let go closer than
// the rate allows), none before the end of a pause in force; and a balance never above the capacity at the rate.
func TestAIMDModel(t *testing.T) {
	modeltest.Budget(t, 200, 60)
	aimdReached.Reset()
	defer aimdReached.Log(t)
	rapid.Check(t, func(t *rapid.T) {
		ceiling := rapid.SampledFrom([]float64{1, 2, 5, 20, 100}).Draw(t, "ceiling")
		floor := rapid.SampledFrom([]float64{0, 0.1, 0.5, 1}).Draw(t, "floor")
		adaptive := rapid.Bool().Draw(t, "adaptive")
		burst := rapid.SampledFrom([]float64{0, 1, 3, 40}).Draw(t, "burst")
		s := Spec{Rate: ceiling, Burst: burst, Floor: floor, Adaptive: adaptive}
		now := time.Duration(rapid.IntRange(0, 10).Draw(t, "start s")) * time.Second
		b := New(s, now)
		fl := floor
		if fl <= 0 {
			fl = DefaultFloor
		}
		m := &aimdModel{ceiling: ceiling, floor: math.Min(fl, ceiling), adaptive: adaptive, rate: ceiling,
			lastDecrease: never, lastThrottle: never, lastIncrease: never, pausedUntil: never}
		ratio := s.Capacity() / ceiling

		type held struct {
			tk    Ticket
			taken time.Duration // when it was taken
		}
		var queue []held // the reservations whose callers still wait, in the order taken

		// follow brings every ticket up to date and drops those due.
		follow := func() {
			queue = slices.DeleteFunc(queue, func(h held) bool { return h.tk.At() <= now })
			for i := range queue {
				queue[i].tk, _ = b.Follow(queue[i].tk)
			}
			queue = slices.DeleteFunc(queue, func(h held) bool { return h.tk.At() <= now })
		}

		t.Repeat(map[string]func(*rapid.T){
			"wait": func(t *rapid.T) {
				now += time.Duration(rapid.IntRange(1, 3000).Draw(t, "ms")) * time.Millisecond
				follow()
			},
			"reserve": func(t *rapid.T) {
				for range rapid.IntRange(1, 30).Draw(t, "n") {
					wait, tk := b.ReserveTicket(now)
					if now+wait < m.pausedUntil {
						t.Fatalf("a token usable at %v, during a pause until %v", now+wait, m.pausedUntil)
					}
					if wait > 0 {
						queue = append(queue, held{tk: tk, taken: now})
						aimdReached.Add("reservation waits")
					}
				}
			},
			"cancel": func(t *rapid.T) {
				follow()
				if len(queue) == 0 {
					t.Skip("nobody waits")
				}
				i := rapid.IntRange(0, len(queue)-1).Draw(t, "which")
				b.CancelTicket(now, queue[i].tk)
				queue = slices.Delete(queue, i, i+1)
				aimdReached.Add("cancelled")
			},
			"throttle": func(t *rapid.T) {
				pause := time.Duration(rapid.SampledFrom([]int{0, 0, 100, 1000, 3000, 10000}).Draw(t, "pause ms")) * time.Millisecond
				rate, decreased := b.Throttle(now, pause)
				wRate, wDecreased := m.throttle(now, pause)
				if rate != wRate || decreased != wDecreased {
					t.Fatalf("Throttle(%v, %v) = %v, %v; want %v, %v", now, pause, rate, decreased, wRate, wDecreased)
				}
				if decreased {
					aimdReached.Add("decreased")
				}
				if rate == m.floor && m.floor < ceiling {
					aimdReached.Add("at the floor")
				}
			},
			"pause": func(t *rapid.T) {
				pause := time.Duration(rapid.IntRange(1, 5000).Draw(t, "pause ms")) * time.Millisecond
				b.Pause(now, pause)
				m.pause(now, pause)
			},
			"success": func(t *rapid.T) {
				for range rapid.IntRange(1, 5).Draw(t, "n") {
					rate, increased := b.Success(now)
					wRate, wIncreased := m.success(now)
					if rate != wRate || increased != wIncreased {
						t.Fatalf("Success(%v) = %v, %v; want %v, %v", now, rate, increased, wRate, wIncreased)
					}
					if increased {
						aimdReached.Add("increased")
					}
					now += time.Duration(rapid.IntRange(0, 2000).Draw(t, "ms")) * time.Millisecond
				}
				follow()
			},
			"": func(t *rapid.T) {
				snap := b.Snapshot(now)
				if snap.Rate != m.rate || snap.Rate < m.floor || snap.Rate > ceiling {
					t.Fatalf("rate %v; want %v, within [%v, %v]", snap.Rate, m.rate, m.floor, ceiling)
				}
				if want := max(0, m.pausedUntil-now); snap.Paused != want {
					t.Fatalf("paused for %v at %v; want %v", snap.Paused, now, want)
				}
				if capacity := math.Max(1, ratio*m.rate); snap.Tokens > capacity+1e-9 {
					t.Fatalf("%v tokens at %v rps; the capacity is %v", snap.Tokens, m.rate, capacity)
				}
				follow()
				interval := 1e9 / m.rate
				for i, h := range queue {
					if h.tk.At() < m.pausedUntil {
						// Waiting as the pause began, or taken during it.
						t.Fatalf("ticket %d (taken at %v) usable at %v, during a pause until %v", i, h.taken, h.tk.At(), m.pausedUntil)
					}
					if i == 0 {
						continue
					}
					gap := float64(h.tk.At() - queue[i-1].tk.At())
					if gap < interval*(1-1e-6)-2 {
						t.Fatalf("tickets %d and %d at %v and %v: %v apart, under the interval %v at %v rps",
							i-1, i, queue[i-1].tk.At(), h.tk.At(), time.Duration(gap), time.Duration(interval), m.rate)
					}
				}
			},
		})
	})
}
