package test

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// TestSwitchesKeepTheRate: 32 callers keep a scope of 100 rps with a burst
// of 10 busy while Redis goes away (shared to local limits) and comes back
// (local to shared). The callers queued in the old bucket at a switch are
// moved into the new bucket's queue, not added on top of its balance: no
// second across either switch holds more tokens than the rate plus one
// burst, counted over every one-second window that starts at a token.
//
// The bound is 111: the rate and one burst (110), and one token for the
// phase between the two buckets' schedules, each spaced 10 ms: a window
// may start just after one of the old bucket's tokens and end just after
// one of the new bucket's (the steady state, one bucket alone, shows 101
// for the same reason). Before the fix a switch let about one extra token
// through per queued caller: 131 to 144.
//
// The tokens are counted at the times the bucket gave them (a store in
// front of the fleet's records each reservation), not at the times the
// callers woke up to use them: on a loaded machine a wakeup comes late,
// and a stall of a few tens of milliseconds bunches the calls after it
// whatever the limits (the calls' own counts are logged).
//
// Redis going away is seen at once (the proxy closes its connections and
// refuses new ones), so the process's Redis timeout is 2 s, not the
// default 250 ms: in-process miniredis under -race on a loaded machine
// answered past 250 ms now and then, a second switch to local limits
// that the test's one-down-one-up count then reported as Fallbacks:2 (in
// 1 of 6 runs with three busy loops beside it; in none of 16 with 2 s).
func TestSwitchesKeepTheRate(t *testing.T) {
	const (
		rate    = 100
		burst   = 10
		callers = 32
	)
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: rate, Burst: burst}}}}
		var logs syncBuffer // what the store logged of its switches, for a failure's message
		p := newProcess(t, at(px.Addr()), uniquePrefix(t), cfg, fleet.WithTimeout(2*time.Second),
			fleet.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		fallsBack(p.store) // the switches: the proxy goes down under it, and up
		rec := &recordingStore{Store: p.store, key: vpcsKey}
		gov, err := resilience.NewGovernor(cfg, resilience.WithStateStore(rec))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var sent []time.Time
		call := func(context.Context) error {
			now := time.Now()
			mu.Lock()
			sent = append(sent, now)
			mu.Unlock()
			return nil
		}
		stop := inLoops(t, callers, func() bool {
			if err := resilience.Do(context.Background(), vpcs, call, resilience.WithGovernor(gov)); err != nil {
				t.Error(err)
				return false
			}
			return true
		})
		time.Sleep(2 * time.Second)
		down := time.Now()
		px.Down()
		time.Sleep(2 * time.Second)
		if st := p.store.Stats(); !st.Degraded {
			t.Fatalf("Redis down, and the store is not on local limits: %+v", st)
		}
		if err := px.Up(); err != nil {
			t.Fatal(err)
		}
		up := time.Now()
		time.Sleep(2 * time.Second)
		stop()
		if st := p.store.Stats(); st.Degraded || st.Fallbacks != 1 {
			t.Fatalf("after Redis came back: %+v, want the shared state after one switch; the store logged:\n%s", st, logs.String())
		}
		tokens := rec.times()
		mu.Lock()
		defer mu.Unlock()
		sort.Slice(sent, func(i, j int) bool { return sent[i].Before(sent[j]) })
		// The windows that overlap a switch (the run's first second is the
		// bucket's first burst, not a switch), and for comparison those of
		// the steady state on either side.
		across := func(ts []time.Time, at time.Time) int {
			return maxInWindow(ts, at.Add(-time.Second), at.Add(time.Second))
		}
		steady := func(ts []time.Time) int {
			return maxInWindow(ts, ts[0].Add(200*time.Millisecond), down.Add(-1050*time.Millisecond))
		}
		t.Logf("%s: %d tokens; the most in one second across the switch to local limits %d, across the switch back %d, in the steady state %d (rate + burst = %d)",
			be.name, len(tokens), across(tokens, down), across(tokens, up), steady(tokens), rate+burst)
		t.Logf("%s: %d calls as the callers sent them: the most in one second across the switches %d and %d, in the steady state %d",
			be.name, len(sent), across(sent, down), across(sent, up), steady(sent))
		if d, u := across(tokens, down), across(tokens, up); d > rate+burst+1 || u > rate+burst+1 {
			t.Errorf("%d and %d tokens in one second across the two switches, more than the rate plus one burst (%d) and a token of phase", d, u, rate+burst)
		}
	})
}

// TestFlappingRedisKeepsTheRate: the same 32 callers while Redis goes
// away and comes back every 200 ms for three seconds (a switch to local
// limits and back about every 300 ms, the heartbeat probing every 100 ms).
// A new bucket starts with what the process has left of its burst, not
// full: no one-second window holds more tokens than the rate plus one
// burst and a token of phase (111), however many switches it spans.
// Charging the new bucket only for the callers queued let each switch add
// a burst: 120 to 130.
func TestFlappingRedisKeepsTheRate(t *testing.T) {
	const (
		rate    = 100
		burst   = 10
		callers = 32
	)
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: rate, Burst: burst}}}}
		// A timeout of 50 ms: Redis silent for it switches the store
		// (Store.unanswered), so that each 200 ms down may; with the
		// default 250 ms none did.
		p := newProcess(t, at(px.Addr()), uniquePrefix(t), cfg, fleet.WithTimeout(50*time.Millisecond))
		fallsBack(p.store) // the flapping: the proxy goes down under it every 300 ms
		rec := &recordingStore{Store: p.store, key: vpcsKey}
		gov, err := resilience.NewGovernor(cfg, resilience.WithStateStore(rec))
		if err != nil {
			t.Fatal(err)
		}
		stop := inLoops(t, callers, func() bool {
			if err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(gov)); err != nil {
				t.Error(err)
				return false
			}
			return true
		})
		time.Sleep(1500 * time.Millisecond)
		from := time.Now()
		for range 8 {
			px.Down()
			time.Sleep(200 * time.Millisecond)
			if err := px.Up(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		to := time.Now()
		time.Sleep(time.Second)
		stop()
		tokens := rec.times()
		worst := maxInWindow(tokens, from.Add(-time.Second), to)
		steady := maxInWindow(tokens, tokens[0].Add(200*time.Millisecond), from.Add(-1050*time.Millisecond))
		t.Logf("%s: %d switches to local limits in %v; the most tokens in one second %d, in the steady state before %d (rate + burst = %d)",
			be.name, p.store.Stats().Fallbacks, to.Sub(from).Round(100*time.Millisecond), worst, steady, rate+burst)
		if p.store.Stats().Fallbacks == 0 {
			t.Errorf("Redis down 8 times for 200 ms: no switch to local limits, nothing tested (%+v)", p.store.Stats())
		}
		if worst > rate+burst+1 {
			t.Errorf("%d tokens in one second while Redis flapped, more than the rate plus one burst (%d) and a token of phase", worst, rate+burst)
		}
	})
}

// TestRedisNearItsTimeoutKeepsTheRate is the shrunk case TestFleetModel
// found on the code before the switches charged the new bucket (a slow
// Redis, calls, a pause, a join): Redis answers in about 20 ms, against a
// WithTimeout of 30 ms, so that some requests time out and the process
// switches to local limits and back, again and again, while 32 callers
// keep a scope of 100 rps with a burst of 10 busy for 3 s. No one-second
// window holds more tokens than the rate, one burst and a token of phase.
func TestRedisNearItsTimeoutKeepsTheRate(t *testing.T) {
	const (
		rate    = 100
		burst   = 10
		callers = 32
	)
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: rate, Burst: burst}}}}
		p := newProcess(t, at(px.Addr()), uniquePrefix(t), cfg, fleet.WithTimeout(30*time.Millisecond), fleet.WithHeartbeat(50*time.Millisecond))
		fallsBack(p.store) // Redis's round trips near its 30 ms timeout: some outlast it
		rec := &recordingStore{Store: p.store, key: vpcsKey}
		gov, err := resilience.NewGovernor(cfg, resilience.WithStateStore(rec))
		if err != nil {
			t.Fatal(err)
		}
		px.SetDelay(10 * time.Millisecond)
		stop := inLoops(t, callers, func() bool {
			if err := resilience.Do(context.Background(), vpcs, ok, resilience.WithGovernor(gov)); err != nil {
				t.Error(err)
				return false
			}
			return true
		})
		time.Sleep(3 * time.Second)
		stop()
		tokens := rec.times()
		worst := maxInWindow(tokens, tokens[0], tokens[len(tokens)-1])
		t.Logf("%s: %d tokens, %d switches to local limits in 3 s; the most in one second %d (rate + burst = %d)",
			be.name, len(tokens), p.store.Stats().Fallbacks, worst, rate+burst)
		if worst > rate+burst+1 {
			t.Errorf("%d tokens in one second with Redis near its timeout, more than the rate plus one burst (%d) and a token of phase", worst, rate+burst)
		}
	})
}

// maxInWindow returns the most times of ts (sorted) in a one-second
// window [s, s+1s) that starts at one of them between from and to.
func maxInWindow(ts []time.Time, from, to time.Time) int {
	worst := 0
	j := 0
	for i, s := range ts {
		if s.Before(from) || s.After(to) {
			continue
		}
		j = max(j, i)
		for j < len(ts) && ts[j].Before(s.Add(time.Second)) {
			j++
		}
		worst = max(worst, j-i)
	}
	return worst
}

// recordingStore is a state.Store in front of another that records when
// each token reserved from key's bucket is usable (a token given back is
// forgotten).
type recordingStore struct {
	state.Store
	key     string
	mu      sync.Mutex
	at      []time.Time
	cancels []time.Time // when tokens were given back
}

func (s *recordingStore) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	b := s.Store.Bucket(key, spec, now)
	if key != s.key {
		return b
	}
	return &recordingBucket{Bucket: b, s: s}
}

// cancelTimes returns when tokens were given back.
func (s *recordingStore) cancelTimes() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.cancels...)
}

// times returns the times recorded, sorted.
func (s *recordingStore) times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := append([]time.Time(nil), s.at...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	return ts
}

type recordingBucket struct {
	state.Bucket
	s *recordingStore
}

func (b *recordingBucket) record(wait time.Duration) {
	at := time.Now().Add(wait)
	b.s.mu.Lock()
	b.s.at = append(b.s.at, at)
	b.s.mu.Unlock()
}

func (b *recordingBucket) Reserve(now time.Duration) time.Duration {
	w := b.Bucket.Reserve(now)
	b.record(w)
	return w
}

func (b *recordingBucket) TryReserve(now time.Duration) bool {
	ok := b.Bucket.TryReserve(now)
	if ok {
		b.record(0)
	}
	return ok
}

// Cancel forgets the latest token: the one a caller whose deadline it
// would pass gives back is at the end of the queue.
func (b *recordingBucket) Cancel(now time.Duration) {
	b.s.mu.Lock()
	if n := len(b.s.at); n > 0 {
		last := 0
		for i, at := range b.s.at {
			if at.After(b.s.at[last]) {
				last = i
			}
		}
		b.s.at[last] = b.s.at[n-1]
		b.s.at = b.s.at[:n-1]
	}
	b.s.cancels = append(b.s.cancels, time.Now())
	b.s.mu.Unlock()
	b.Bucket.Cancel(now)
}
