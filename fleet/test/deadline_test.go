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
	"github.com/cloudg/cloudg/fleet/test/internal/redisproxy"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// TestNoCallOutlastsItsDeadlineOnASlowRedis: Redis answers each command in
// 20 ms (a proxy delays each way by 10 ms, well under WithTimeout), and 40
// callers with 700 ms contexts share a scope at 50 rps with a lease of one
// token, so that most callers wait for another's lease request. No call
// returns more than the margin after its context's deadline.
//
// The margin is a loaded machine's scheduling only: the governor waits
// for the store with the call's context (the fleet bucket's
// ReserveContext), so a caller stops waiting for Redis when its context
// ends, and it checks the deadline again once its reservation returns.
// (Without that, calls returned up to two Redis round trips late: 63-72
// ms here.)
func TestNoCallOutlastsItsDeadlineOnASlowRedis(t *testing.T) {
	const (
		oneWay   = 10 * time.Millisecond
		callers  = 40
		ctxLimit = 700 * time.Millisecond
		margin   = 40 * time.Millisecond
	)
	forEachSingleNode(t, func(t *testing.T, be backend) {
		px, err := redisproxy.Start(be.addr())
		if err != nil {
			t.Fatal(err)
		}
		defer px.Close()
		cfg := resilience.Config{AWS: resilience.ProviderConfig{Services: map[string]resilience.ServiceConfig{"ec2": {MaxRPS: 50, Burst: 1}}}}
		p := newProcess(t, at(px.Addr()), uniquePrefix(t), cfg, fleet.WithMaxLease(1))
		if err := p.do(t, vpcs, ok); err != nil { // the scripts are loaded
			t.Fatal(err)
		}
		px.SetDelay(oneWay)
		r := lateness(t, p, callers, ctxLimit, 1200*time.Millisecond)
		t.Logf("%s: %s", be.name, r)
		if r.worst > margin {
			t.Errorf("%d of %d calls returned more than %v after their deadline, the slowest %v after it", r.over(margin), r.calls, margin, r.worst)
		}
		if st := p.store.Stats(); st.Fallbacks != 0 {
			t.Errorf("a 20 ms Redis switched to local limits: %+v", st)
		}
	})
}

// lateReport is how late the calls of a run returned after their
// contexts' deadlines.
type lateReport struct {
	calls, failed    int
	failedAtDeadline int             // failed calls that waited until their deadline (a token granted past it, not refused at once)
	late             []time.Duration // one per call that returned after its deadline
	worst            time.Duration
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
	return fmt.Sprintf("calls %d, failed %d (at the deadline %d), returned after the deadline %d, more than 100 ms late %d, the latest %v late",
		r.calls, r.failed, r.failedAtDeadline, len(r.late), r.over(100*time.Millisecond), r.worst.Round(time.Millisecond))
}

// lateness runs callers goroutines that call vpcs through p, each with a
// fresh context of ctxLimit, until run has passed, and measures how long
// after its deadline each call returned.
func lateness(t *testing.T, p *process, callers int, ctxLimit, run time.Duration) lateReport {
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
				err := resilience.Do(ctx, vpcs, ok, resilience.WithGovernor(p.gov))
				late := time.Since(dl)
				cancel()
				mu.Lock()
				r.calls++
				if err != nil {
					r.failed++
					if late > -5*time.Millisecond {
						r.failedAtDeadline++
					}
				}
				if late > 0 {
					r.late = append(r.late, late)
					r.worst = max(r.worst, late)
				}
				mu.Unlock()
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
		px, err := redisproxy.Start(be.addr())
		if err != nil {
			t.Fatal(err)
		}
		defer px.Close()
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
