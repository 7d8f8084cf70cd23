package test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/internal/clocktest"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// pauseReader is the fleet bucket's PausedFor, which the governor asks
// before it sends a call.
type pauseReader interface {
	PausedFor(ctx context.Context) (time.Duration, error)
}

// TestALeaseDroppedForAPauseGivesTheLocalLimitsNothing: the tokens of a
// lease dropped for a pause another process set are Redis's, given back
// at once, in an operation of their own when no request is in flight; when
// the operation carrying them fails (Redis gone, frozen, or answering
// garbage as it goes), they are dropped, not given to the local limits,
// which never had them. Given there, they filled the local bucket up to
// its burst, which the pause (known to the local limits too) would
// otherwise have left empty at its end, so that the process sent a burst
// above its local share as the pause ended, with Redis down.
func TestALeaseDroppedForAPauseGivesTheLocalLimitsNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fail   func(px *redisproxy.Proxy)
		outage bool // the store is on local limits after it
	}{
		{"Redis gone", func(px *redisproxy.Proxy) { px.Down() }, true},
		{"Redis frozen", func(px *redisproxy.Proxy) { px.Freeze() }, true},
		// The lease request's answer and the snapshot's, which then reads
		// the local limits: two answers of garbage are no outage yet.
		{"garbage", func(px *redisproxy.Proxy) { px.Garble(2) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachSingleNode(t, func(t *testing.T, be backend) {
				px, url := proxied(t, be)
				t.Cleanup(px.Thaw)
				prefix := uniquePrefix(t)
				// 100 rps with a burst of 20 and a lease window of 500 ms:
				// a lease of 50 tokens, 20 of them usable at once.
				a := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour),
					fleet.WithLeaseWindow(500*time.Millisecond))
				fallsBack(a) // each case takes Redis from it: gone, frozen, or answering garbage
				spec := state.BucketSpec{Rate: 100, Burst: 20}
				ab := a.Bucket(vpcsKey, spec, 0)
				ab.Reserve(0) // A borrows a lease: 49 tokens left in it
				other := newProcess(t, be, prefix, resilience.Config{})
				other.store.Bucket(vpcsKey, spec, 0).Pause(0, 5*time.Second)
				// A lease window later, A reads the pause and drops its lease,
				// to give it back (before Redis fails, or as it does).
				time.Sleep(600 * time.Millisecond)
				if p, err := ab.(pauseReader).PausedFor(context.Background()); err != nil || p < 4*time.Second {
					t.Fatalf("A's PausedFor: %v, %v; want most of the other process's 5 s pause", p, err)
				}
				tc.fail(px)
				ab.Reserve(0) // its request fails: a token of the local limits
				// The local limits know of the pause, which leaves no token
				// stored at its end; A took one of them.
				snap := ab.Snapshot(0)
				if snap.Paused < 3*time.Second {
					t.Fatalf("A's local limits: paused %v, want most of the other process's 5 s pause (%+v)", snap.Paused, snap)
				}
				if snap.Tokens > 0.5 {
					t.Errorf("A's local limits hold %.1f tokens at the pause's end, want none: the 49 tokens of the lease dropped for the pause were Redis's, and went to the local limits when the request giving them back failed", snap.Tokens)
				}
				if !tc.outage {
					return
				}
				// The token A took of the local limits, given back, goes back
				// to them.
				ab.Cancel(0)
				if after := ab.Snapshot(0); after.Tokens < snap.Tokens+0.9 || after.Tokens > snap.Tokens+1.1 {
					t.Errorf("A's local limits hold %.2f tokens after A gave back the token it took of them, %.2f before; want one more", after.Tokens, snap.Tokens)
				}
			})
		})
	}
}

// TestTheTokensOfGoneCallersGiveTheLocalLimitsNothing: the tokens a lease
// request's answer brings for callers whose contexts ended while they
// waited for it (past a lease's worth) are Redis's too, given back in an
// operation of their own; when Redis does not take them (here it answers
// after the operation timeout), they are dropped, not given to the local
// limits, which the process's calls before had drained.
func TestTheTokensOfGoneCallersGiveTheLocalLimitsNothing(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		// 10 rps with a burst of 50: a lease of one token (100 ms), and
		// a call at the start charges the local limits of an outage in
		// the next 5 s (the burst's time) with their whole burst.
		a := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour),
			fleet.WithTimeout(2*time.Second))
		fallsBack(a) // its give-back is answered 3 s late, past its 2 s timeout: an outage
		spec := state.BucketSpec{Rate: 10, Burst: 50}
		ab := a.Bucket(vpcsKey, spec, 0)
		ab.Reserve(0) // Redis holds the scripts: EVALSHA, not EVAL
		ab.Reserve(0)
		// Lease requests are answered 500 ms late; the operation giving
		// tokens back ("*1\r\n:1\r\n"), 3 s late, past the timeout.
		px.SlowAnswers(func(answer []byte) bool {
			if string(answer) == "*1\r\n:1\r\n" {
				time.Sleep(3 * time.Second)
				return false
			}
			return strings.HasPrefix(string(answer), "*14\r\n")
		}, 500*time.Millisecond)
		t.Cleanup(func() { px.SlowAnswers(nil, 0) })
		first := make(chan struct{})
		go func() { // its request in flight, the others queue for the next
			ab.Reserve(0)
			close(first)
		}()
		time.Sleep(50 * time.Millisecond)
		const gone = 15
		var wg sync.WaitGroup
		for range gone {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
				defer cancel()
				if _, err := ab.(interface {
					ReserveContext(context.Context, time.Duration) (time.Duration, error)
				}).ReserveContext(ctx, 0); err == nil {
					t.Error("a caller queued behind a request 500 ms late, and for the next, took a token within 700 ms")
				}
			})
		}
		wg.Wait()
		<-first
		px.Down() // a late answer goes on local limits alone: Redis silent for a timeout switches the store
		untilLocal(t, a)
		if snap := ab.Snapshot(0); snap.Tokens > 5 {
			t.Errorf("A's local limits hold %.1f tokens; want none but their refill: A drained them (a call in their burst's time), and the %d tokens of its callers gone went to them when Redis did not take them back", snap.Tokens, gone-1)
		}
	})
}

// TestALeaseDroppedForAThrottleStaysSpent pins why a lease dropped for a
// throttle without a pause is not given back, as one dropped for a pause
// is: its tokens were granted at the rate the throttle halved, and those
// another process borrowed after them keep their times at that rate.
// Given back, they would move the fleet's queue back under those times,
// so that the tokens granted after the throttle, at the halved rate, went
// among them: more than the old rate right after a throttle. Kept spent,
// they hold the fleet's next tokens back by the lease's span, at most a
// lease window, and the tokens after the throttle follow the old ones.
func TestALeaseDroppedForAThrottleStaysSpent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// 100 rps with a burst of 1, adaptive: leases of 15 tokens, 10 ms
		// apart; A's first, then B's after it.
		spec := state.BucketSpec{Rate: 100, Burst: 1, Floor: 1, Adaptive: true}
		opts := []fleet.Option{fleet.WithLeaseWindow(300 * time.Millisecond), fleet.WithMaxLease(15)}
		a := newProcess(t, be, prefix, resilience.Config{}, opts...)
		b := newProcess(t, be, prefix, resilience.Config{}, opts...)
		ba := a.store.Bucket(vpcsKey, spec, 0)
		bb := b.store.Bucket(vpcsKey, spec, 0)
		ba.Reserve(0) // A borrows a lease: 14 tokens left in it
		var bLast time.Time
		for range 15 { // B borrows the next and takes them all
			if at := time.Now().Add(bb.Reserve(0)); at.After(bLast) {
				bLast = at
			}
		}
		ba.Throttle(0, 0) // halves the rate to 50 rps; A drops its lease
		w := ba.Reserve(0)
		aNext := time.Now().Add(w)
		// A's next token follows B's last, 20 ms on; given back, A's 14
		// would have put it 140 ms earlier, among B's.
		if aNext.Before(bLast) {
			t.Errorf("A's first token after the throttle is due %v before the last B borrowed at the old rate: the tokens of A's dropped lease were given back under B's, and the tokens after the throttle go among them", bLast.Sub(aNext))
		}
		t.Logf("%s: A's first token after the throttle is due %v after the last B borrowed", be.name, aNext.Sub(bLast))
		if r := ba.Snapshot(0).Rate; r != 50 {
			t.Errorf("rate %v after the throttle, want 50", r)
		}
	})
}

// TestADroppedBucketGivesItsLeaseBack: a quiet scope whose lease ended
// with tokens no caller took is idle, and the governor's reclaimer drops
// its bucket; the lease's tokens, which Redis counts as taken, go back to
// Redis then, as the bucket's next lease request would have given them
// (a dropped bucket sends none). While other processes keep the bucket
// drained, tokens not given back are lost to the fleet, not late. A call
// to the scope right after the drop makes a new bucket, which takes its
// token beside the give-back: the tokens given back count once.
func TestADroppedBucketGivesItsLeaseBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		again bool // a call to the scope right after the drop
		want  float64
	}{
		{"dropped", false, 49}, // the lease's 49 tokens back
		// The new bucket's token taken beside them (its lease request
		// borrows no more: the drained bucket has none due within a
		// lease window).
		{"made again at once", true, 48},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, be backend) {
				prefix := uniquePrefix(t)
				clock := clocktest.Start(time.Now())
				a := leasedProcess(t, be, prefix, resilience.WithClock(clock), resilience.WithReclaimAfter(time.Minute))
				g := a.gov
				bal := drainedBalance(t, be, prefix, state.BucketSpec{Rate: 100, Burst: 20, Floor: 1, Adaptive: true})
				time.Sleep(600 * time.Millisecond) // A's lease ended
				bal.mark()
				clock.Advance(2 * time.Minute) // vpcs idle past WithReclaimAfter
				other := vpcs
				other.Operation = "DescribeSubnets"
				for range 3 { // calls take the reclaimer's steps
					if err := a.do(t, other, ok); err != nil {
						t.Fatal(err)
					}
				}
				for sc := range g.Scopes() {
					if sc == vpcs {
						t.Fatal("the reclaimer kept vpcs, idle for two minutes")
					}
				}
				if tc.again {
					if err := a.do(t, vpcs, ok); err != nil {
						t.Fatal(err)
					}
				}
				gain, now := bal.gainBy(tc.want)
				if gain < tc.want-2.5 || gain > tc.want+2.5 {
					t.Errorf("%s: Redis's balance moved by %.1f tokens (its refill aside) after the reclaimer dropped A's bucket, whose ended lease held 49 tokens no caller took; want %v", tc.name, gain, tc.want)
				}
				t.Logf("%s: balance %.1f, then %.1f %v later", be.name, bal.was, now, time.Since(bal.start).Round(time.Millisecond))
				runtime.KeepAlive(g)
			})
		})
	}
}

// TestAReplacedBucketGivesItsLeaseBack: a Configure that changes a
// provider's bucket settings, and a Reset, replace its buckets with new
// ones; the lease a replaced bucket holds, which Redis counts as taken,
// goes back to Redis, as it does when the reclaimer drops the bucket
// (TestADroppedBucketGivesItsLeaseBack). While other processes keep the
// bucket drained, tokens not given back are lost to the fleet. Here the
// Configure adds an account bucket, which leaves the scope's leaf spec as
// it was: the balance Redis holds reads the same after the change.
func TestAReplacedBucketGivesItsLeaseBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(g *resilience.Governor, cfg resilience.Config) error
	}{
		{"Configure", func(g *resilience.Governor, cfg resilience.Config) error {
			account := 1000.0
			cfg.AWS.AccountMaxRPS = &account
			return g.Configure(cfg)
		}},
		{"Reset", func(g *resilience.Governor, _ resilience.Config) error {
			g.Reset()
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, be backend) {
				prefix := uniquePrefix(t)
				g := leasedProcess(t, be, prefix).gov
				bal := drainedBalance(t, be, prefix, state.BucketSpec{Rate: 100, Burst: 20, Floor: 1, Adaptive: true})
				bal.mark()
				if err := tc.change(g, leasedConfig); err != nil {
					t.Fatal(err)
				}
				const want = 49 // the lease's tokens back
				gain, now := bal.gainBy(want)
				if gain < want-2.5 || gain > want+2.5 {
					t.Errorf("%s: Redis's balance moved by %.1f tokens (its refill aside) after the %s replaced A's bucket, whose lease held 49 tokens no caller took; want %v", be.name, gain, tc.name, want)
				}
				t.Logf("%s: balance %.1f, then %.1f %v later", be.name, bal.was, now, time.Since(bal.start).Round(time.Millisecond))
				runtime.KeepAlive(g)
			})
		})
	}
}

// TestADroppedBucketBorrowsNoLease: a call that held a bucket as the
// governor dropped it (it took its scope before the drop) may still take
// a token of it after Drop gave its lease back; it takes that token, and
// no lease beyond it, which no one would give back: the governor tells a
// bucket it dropped once.
func TestADroppedBucketBorrowsNoLease(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// 100 rps with a burst of 20 and a lease window of 500 ms, A the
		// only process it counts: leases of 50 tokens.
		a := openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour),
			fleet.WithLeaseWindow(500*time.Millisecond))
		spec := state.BucketSpec{Rate: 100, Burst: 20}
		ab := a.Bucket(vpcsKey, spec, 0)
		ab.Reserve(0) // A borrows a lease: 49 tokens left in it
		ab.(state.Dropper).Drop(0)
		// The reader waits 2 s for Redis: on local limits (a read over the
		// default 250 ms, on a loaded machine) it would read its own burst,
		// 20, whatever Redis holds.
		rp := newProcess(t, be, prefix, resilience.Config{}, fleet.WithTimeout(2*time.Second))
		reader := rp.store.Bucket(vpcsKey, spec, 0)
		waitFor(t, 2*time.Second, "the dropped lease given back", func() bool { return reader.Snapshot(0).Tokens > 15 })
		ab.Reserve(0) // a call that held the bucket as it was dropped
		tokens := reader.Snapshot(0).Tokens
		if st := rp.store.Stats(); st.Fallbacks > 0 {
			t.Fatalf("the reader went on local limits (its stats: %+v): what it read is not Redis's", st)
		}
		if tokens < 17 {
			t.Errorf("the bucket holds %.1f tokens after a call took one of the dropped bucket (its burst of 20 given back); want 19: the dropped bucket borrowed a lease beyond it, which no one gives back", tokens)
		}
	})
}

// TestABucketDroppedWithARequestInFlightKeepsNoLease: the answer to a
// lease request that was in flight when the governor dropped the bucket
// (a call that held it as it was dropped sent it) leaves no lease in the
// bucket: the tokens beyond its callers' go back to Redis.
func TestABucketDroppedWithARequestInFlightKeepsNoLease(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		prefix := uniquePrefix(t)
		// 10 rps with a burst of 20 and a lease window of 5 s, A the only
		// process it counts: leases of 50 tokens, and a refill slow beside
		// them.
		a := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour),
			fleet.WithLeaseWindow(5*time.Second), fleet.WithTimeout(2*time.Second))
		spec := state.BucketSpec{Rate: 10, Burst: 20}
		rp := newProcess(t, be, prefix, resilience.Config{}, fleet.WithTimeout(2*time.Second)) // as above
		reader := rp.store.Bucket(vpcsKey, spec, 0)
		reader.Snapshot(0)
		// Lease requests are answered 300 ms late.
		px.SlowAnswers(func(answer []byte) bool { return strings.HasPrefix(string(answer), "*14\r\n") }, 300*time.Millisecond)
		t.Cleanup(func() { px.SlowAnswers(nil, 0) })
		ab := a.Bucket(vpcsKey, spec, 0)
		done := make(chan struct{})
		go func() {
			ab.Reserve(0) // its request asks for a lease of 50
			close(done)
		}()
		time.Sleep(100 * time.Millisecond)
		ab.(state.Dropper).Drop(0)
		<-done
		// The burst of 20, less the one token taken: 19; with the lease of
		// 50 kept, -30 and its refill.
		var tokens float64
		for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if tokens = reader.Snapshot(0).Tokens; tokens > 15 {
				break
			}
		}
		if st := rp.store.Stats(); st.Fallbacks > 0 {
			t.Fatalf("the reader went on local limits (its stats: %+v): what it read is not Redis's", st)
		}
		if tokens <= 15 {
			t.Errorf("the bucket holds %.1f tokens a second after the answer to a lease request the dropped bucket sent before the drop; want 19: the answer's lease stayed in the dropped bucket, which no one gives back", tokens)
		}
	})
}

// TestAClosedStoreGivesItsLeaseBack: a process that shuts down (a CI
// job, a scanner run, a pod rolled) closes its Store while a bucket it
// uses holds a lease with tokens no caller took; Close gives them back
// to Redis before it returns, as the governor's Drop does for a bucket it
// drops (TestADroppedBucketGivesItsLeaseBack). While other processes keep
// the bucket drained, tokens not given back are lost to the fleet until
// their times pass.
func TestAClosedStoreGivesItsLeaseBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		a := leasedProcess(t, be, prefix)
		st, g := a.store, a.gov
		spec := state.BucketSpec{Rate: 100, Burst: 20, Floor: 1, Adaptive: true}
		bal := drainedBalance(t, be, prefix, spec)
		bal.mark()
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		// Read as Close returned: it gave them back before it did.
		gain, now := bal.gain()
		const want = 49 // the lease's tokens back
		if gain < want-2.5 || gain > want+2.5 {
			t.Errorf("%s: Redis's balance moved by %.1f tokens (its refill aside) after A closed its Store, whose bucket's lease held 49 tokens no caller took; want %v", be.name, gain, want)
		}
		// A call in flight at Close, or after it, goes on with local
		// limits: the closed bucket borrows no lease of Redis's.
		if err := a.do(t, vpcs, ok); err != nil {
			t.Fatal(err)
		}
		if again, _ := bal.gain(); again-gain < -2.5 {
			t.Errorf("%s: Redis's balance moved by %.1f tokens (its refill aside) after a call of A's closed governor; want none taken", be.name, again-gain)
		}
		t.Logf("%s: balance %.1f, then %.1f at Close's return %v later", be.name, bal.was, now, time.Since(bal.start).Round(time.Millisecond))
		runtime.KeepAlive(g)
	})
}

// TestCloseGivesADroppedBucketsLeaseBackOnce: a bucket the governor
// dropped just before Close has its give-back queued; Close sends it
// before it returns, and not a second time as a live bucket's.
func TestCloseGivesADroppedBucketsLeaseBackOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		prefix := uniquePrefix(t)
		// 100 rps with a burst of 20 and a lease window of 500 ms, A the
		// only process it counts: leases of 50 tokens.
		a := openStore(t, be.url(), fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour),
			fleet.WithLeaseWindow(500*time.Millisecond))
		spec := state.BucketSpec{Rate: 100, Burst: 20, Floor: 1, Adaptive: true}
		ab := a.Bucket(vpcsKey, spec, 0)
		ab.Reserve(0) // A borrows a lease: 49 tokens left in it
		bal := drainedBalance(t, be, prefix, spec)
		bal.mark()
		ab.(state.Dropper).Drop(0)
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		gain, _ := bal.gain()
		const want = 49 // the lease's tokens back, once
		if gain < want-2.5 || gain > want+2.5 {
			t.Errorf("%s: Redis's balance moved by %.1f tokens (its refill aside) as Close returned, after the governor dropped A's bucket, whose lease held 49 tokens no caller took, just before; want %v", be.name, gain, want)
		}
	})
}

// TestCloseIsBoundedWhenRedisDoesNotAnswer: Close gives the leases of
// many buckets back, a few at a time; when Redis stops answering, it
// returns within the store's operation timeout all the same, not a
// timeout for each round of them.
func TestCloseIsBoundedWhenRedisDoesNotAnswer(t *testing.T) {
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, url := proxied(t, be)
		t.Cleanup(px.Thaw)
		prefix := uniquePrefix(t)
		const timeout = time.Second
		a := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour),
			fleet.WithLeaseWindow(500*time.Millisecond), fleet.WithTimeout(timeout))
		spec := state.BucketSpec{Rate: 100, Burst: 20}
		const scopes = 16 // four rounds of the four senders
		for i := range scopes {
			a.Bucket(vpcsKey+strconv.Itoa(i), spec, 0).Reserve(0) // each borrows a lease
		}
		px.Freeze()
		start := time.Now()
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > timeout+timeout/2 {
			t.Errorf("Close took %v with Redis frozen and %d buckets' leases to give back; want at most the operation timeout, %v", took.Round(time.Millisecond), scopes, timeout)
		}
	})
}

// TestAStoreClosedWithARequestInFlightKeepsNoLease: the answer to a lease
// request in flight at Close (a call in flight sent it) leaves no lease
// of Redis's in the closed bucket: Close waits for it, within its
// deadline, and gives the tokens beyond the caller's back; so it does for
// a bucket the governor dropped just before (a Configure or a Reset
// replaced it), which Drop leaves among the store's live buckets while
// its request is in flight (before 67ad054, Close did not wait for it,
// and its give-back, sent after the store had shut, was dropped: "the
// bucket holds -24.0 tokens after Close ...; want 19").
func TestAStoreClosedWithARequestInFlightKeepsNoLease(t *testing.T) {
	for _, tc := range []struct {
		name string
		drop bool // the governor drops the bucket before Close
	}{
		{"live", false},
		{"dropped just before", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachSingleNode(t, func(t *testing.T, be backend) {
				px, url := proxied(t, be)
				prefix := uniquePrefix(t)
				// 10 rps with a burst of 20 and a lease window of 5 s, A the
				// only process it counts: leases of 50 tokens, and a refill
				// slow beside them.
				a := openStore(t, url, fleet.WithPrefix(prefix), fleet.WithLogger(quiet), fleet.WithHeartbeat(time.Hour),
					fleet.WithLeaseWindow(5*time.Second), fleet.WithTimeout(2*time.Second))
				spec := state.BucketSpec{Rate: 10, Burst: 20}
				reader := newProcess(t, be, prefix, resilience.Config{}).store.Bucket(vpcsKey, spec, 0)
				reader.Snapshot(0)
				// Lease requests are answered 300 ms late.
				px.SlowAnswers(func(answer []byte) bool { return strings.HasPrefix(string(answer), "*14\r\n") }, 300*time.Millisecond)
				t.Cleanup(func() { px.SlowAnswers(nil, 0) })
				ab := a.Bucket(vpcsKey, spec, 0)
				done := make(chan struct{})
				go func() {
					ab.Reserve(0) // its request asks for a lease of 50
					close(done)
				}()
				time.Sleep(100 * time.Millisecond)
				if tc.drop {
					ab.(state.Dropper).Drop(0)
				}
				if err := a.Close(); err != nil {
					t.Fatal(err)
				}
				<-done
				// The burst of 20, less the one token taken: 19; with the
				// lease of 50 kept, -30 and its refill.
				if tokens := reader.Snapshot(0).Tokens; tokens <= 15 {
					t.Errorf("%s: the bucket holds %.1f tokens as Close returned, whose store had a lease request in flight; want 19: the answer's lease stayed in the closed bucket, which no one gives back", tc.name, tokens)
				}
			})
		})
	}
}
