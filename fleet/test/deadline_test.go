package test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/cloudg/cloudg/fleet"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// TestNoCallOutlastsItsDeadlineOnASlowRedis: Redis answers each command in
// 20 ms (a proxy delays each way by 10 ms, well under WithTimeout), and 40
// callers with 700 ms contexts share a scope at 50 rps with a lease of one
// token, so that most callers wait for another's lease request. No call
// is sent, or returns unsent, more than the margin after its context
// ended; a call sent returns within the store's operation timeout after
// it.
//
// The governor waits for the store with the call's context (the fleet
// bucket's ReserveContext and ReserveBy, the pause's read), so a caller
// stops waiting for Redis when its context ends, and it checks the
// deadline again once its reservation returns. (Without that, calls
// returned up to two Redis round trips late: 63-72 ms here; with a pause's
// read that does not wait on the context, 15 to 40 ms.) The margin is
// scheduling's, less than a round trip. After its operation, a call reports its success to the
// fleet's breaker (once per WithBreakerStaleness when its view shows no
// failure): a round trip bounded by the operation timeout, not by the
// call's context, so that a call its token let go just before its
// deadline returns up to a round trip after it (traced here: 20 to 69 ms,
// a new connection of the client's pool costing three round trips).
//
// The context ended when a goroutine waiting on it saw it end, which is
// how soon the scheduler lets any waiter see it: on a loaded machine the
// process may not run at all for tens of milliseconds after a deadline
// (traced here: no event of the process for up to 96 ms after a timer was
// due, the two cores busy with other processes), and such a stall is no
// wait of the governor's. A caller refused at once (its token would come
// past its deadline: no token taken, no Redis operation) backs off for an
// interval before it calls again, as a caller would: one calling again at
// once spins, 40 such callers ~20,000 calls in the run against ~200, and
// their busy loop starves the process's timers and the waiting callers
// (traced: the late callers runnable, or waiting on a timer due before
// their deadline, both cores running the busy callers for 95-100% of the
// time they were late), which measures the test's own loop, not the
// governor.
func TestNoCallOutlastsItsDeadlineOnASlowRedis(t *testing.T) {
	const (
		oneWay   = 10 * time.Millisecond
		callers  = 40
		rps      = 50
		ctxLimit = 700 * time.Millisecond
		margin   = 15 * time.Millisecond  // less than a round trip: a wait for Redis the context does not bound shows
		timeout  = 250 * time.Millisecond // the store's default
	)
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: rps, Burst: 1}}}}
		p := newProcess(t, at(px.Addr()), uniquePrefix(t), cfg, fleet.WithMaxLease(1), fleet.WithTimeout(timeout))
		if err := p.do(t, vpcs, ok); err != nil { // the scripts are loaded
			t.Fatal(err)
		}
		px.SetDelay(oneWay)
		r := lateness(t, p, callers, ctxLimit, 1200*time.Millisecond, time.Second/rps)
		t.Logf("%s: %s", be.name, r)
		if r.worst > margin {
			t.Errorf("%d of %d calls were sent (or returned unsent) more than %v after their context ended, the latest %v after it", r.over(margin), r.calls, margin, r.worst)
		}
		if r.worstAfterSent > timeout+margin {
			t.Errorf("a call returned %v after it was sent; want at most the operation timeout (%v) and %v", r.worstAfterSent, timeout, margin)
		}
		if st := p.store.Stats(); st.Fallbacks != 0 {
			t.Errorf("a 20 ms Redis switched to local limits: %+v", st)
		}
	})
}

// lateReport is how late the calls of a run were sent, or returned unsent,
// after their contexts ended.
type lateReport struct {
	calls, failed    int
	failedAtDeadline int             // failed calls that waited until their deadline (a token granted past it, not refused at once)
	late             []time.Duration // one per call sent, or returned unsent, after its context ended
	worst            time.Duration
	worstDeadline    time.Duration // the latest a call returned after its deadline itself, scheduling's delay and the report of a success included
	worstAfterSent   time.Duration // the longest a call took to return once sent (its operation returns at once)
}

func (r lateReport) over(d time.Duration) int {
	n := 0
	for _, l := range r.late {
		if l > d {
			n++
		}
	}
	return n
}

func (r lateReport) String() string {
	return fmt.Sprintf("calls %d, failed %d (at the deadline %d), sent or returned unsent after the context ended %d, more than 100 ms late %d, the latest %v late; returned at most %v after the deadline, %v after sent",
		r.calls, r.failed, r.failedAtDeadline, len(r.late), r.over(100*time.Millisecond), r.worst.Round(time.Millisecond), r.worstDeadline.Round(time.Millisecond), r.worstAfterSent.Round(time.Millisecond))
}

// lateness runs callers goroutines that call vpcs through p, each with a
// fresh context of ctxLimit, until run has passed, and measures how long
// after its context ended each call was sent (its operation called), or
// returned unsent: after the later of its deadline and the time a
// goroutine waiting on the context saw it end. A caller refused before its
// deadline backs off for pace before it calls again.
func lateness(t *testing.T, p *process, callers int, ctxLimit, run, pace time.Duration) lateReport {
	t.Helper()
	var mu sync.Mutex
	var r lateReport
	stop := time.Now().Add(run)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				ctx, cancel := context.WithTimeout(context.Background(), ctxLimit)
				dl, _ := ctx.Deadline()
				seen := make(chan time.Time, 1)
				go func() {
					<-ctx.Done()
					seen <- time.Now()
				}()
				var sent time.Time
				err := resilience.Do(ctx, vpcs, func(context.Context) error {
					sent = time.Now()
					return nil
				}, resilience.WithGovernor(p.gov))
				returned := time.Now()
				cancel()
				at := returned // when the governor's wait ended
				if !sent.IsZero() {
					at = sent
				}
				ended := dl
				if sawEnd := <-seen; at.After(dl) && sawEnd.After(dl) {
					ended = sawEnd
				}
				late := at.Sub(ended)
				mu.Lock()
				r.calls++
				if err != nil {
					r.failed++
					if returned.Sub(dl) > -5*time.Millisecond {
						r.failedAtDeadline++
					}
				}
				if late > 0 {
					r.late = append(r.late, late)
					r.worst = max(r.worst, late)
				}
				r.worstDeadline = max(r.worstDeadline, returned.Sub(dl))
				if !sent.IsZero() {
					r.worstAfterSent = max(r.worstAfterSent, returned.Sub(sent))
				}
				mu.Unlock()
				if err != nil && returned.Before(dl) {
					time.Sleep(pace)
				}
			}
		})
	}
	wg.Wait()
	sort.Slice(r.late, func(i, j int) bool { return r.late[i] < r.late[j] })
	return r
}

// contextBucket is the method fleet's buckets add to state.Bucket: a
// reservation that waits for Redis no longer than its context allows.
type contextBucket interface {
	ReserveContext(ctx context.Context, now time.Duration) (time.Duration, error)
}

// TestReserveContextWaitsOnItsOwnContext: with every Redis command taking
// 200 ms (within WithTimeout's 1 s), callers with 50 ms contexts queued
// for a lease request stop waiting at their deadline, take nothing, and
// return context.DeadlineExceeded; a caller with a context long enough
// gets its token. The margin is 25 ms of scheduling.
func TestReserveContextWaitsOnItsOwnContext(t *testing.T) {
	const margin = 25 * time.Millisecond
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, _ := proxied(t, be)
		p := newProcess(t, at(px.Addr()), uniquePrefix(t), resilience.Config{}, fleet.WithMaxLease(1), fleet.WithTimeout(time.Second))
		b, ok := p.store.Bucket(vpcsKey, state.BucketSpec{Rate: 1000, Burst: 1000}, 0).(contextBucket)
		if !ok {
			t.Fatal("fleet's bucket has no ReserveContext")
		}
		if _, err := b.ReserveContext(context.Background(), 0); err != nil { // the scripts are loaded
			t.Fatal(err)
		}
		px.SetDelay(100 * time.Millisecond)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var worst time.Duration
		for range 10 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				dl, _ := ctx.Deadline()
				_, err := b.ReserveContext(ctx, 0)
				late := time.Since(dl)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("ReserveContext with a 50 ms context on a 200 ms Redis: %v", err)
				}
				mu.Lock()
				worst = max(worst, late)
				mu.Unlock()
			})
		}
		wg.Wait()
		if worst > margin {
			t.Errorf("a caller returned %v after its context's deadline", worst)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		if _, err := b.ReserveContext(ctx, 0); err != nil {
			t.Fatalf("ReserveContext with a 2 s context on a 200 ms Redis: %v", err)
		}
		t.Logf("%s: 10 callers with 50 ms contexts returned at most %v after their deadline; one with 2 s took its token in %v", be.name, worst, time.Since(start))
		if st := p.store.Stats(); st.Degraded || st.Fallbacks != 0 {
			t.Errorf("a 200 ms Redis with a 1 s timeout switched to local limits: %+v", st)
		}
	})
}
