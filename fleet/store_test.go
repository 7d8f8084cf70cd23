package fleet

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// The Store's own parts that need no Redis answering: the client Open
// makes from a URL, and what it lets go. Everything that talks to Redis is
// tested in the module fleet/test, against miniredis, redis-server and a
// Redis Cluster.

// unreachable is a client of an address where nothing listens.
func unreachable() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
}

func TestOpenReadsCredentialsTLSAndDatabaseFromTheURL(t *testing.T) {
	s, err := Open("rediss://alice:s3cret@127.0.0.1:1/3", WithLogger(quiet), WithTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := s.rdb.(*redis.Client).Options()
	if o.Username != "alice" || o.Password != "s3cret" || o.DB != 3 || o.TLSConfig == nil || o.Addr != "127.0.0.1:1" {
		t.Fatalf("options %+v", o)
	}
	if _, err := Open("http://nope"); err == nil {
		t.Fatal("a malformed URL was accepted")
	}
}

// The breakers of scopes the governor dropped are forgotten.
func TestDroppedBreakersAreForgotten(t *testing.T) {
	s := New(unreachable(), WithLogger(quiet))
	defer s.Close()
	for i := range 100 {
		key := fmt.Sprintf("aws/%d/us-east-1/ec2/DescribeVpcs", i)
		s.Breaker(key, state.BreakerSpec{Threshold: 5, Cooldown: time.Minute, MaxCooldown: time.Hour})
	}
	runtime.GC()
	s.forgetDroppedBreakers()
	n := 0
	s.breakers.Range(func(any, any) bool { n++; return true })
	if n > 5 { // a breaker may survive one GC cycle
		t.Fatalf("%d breakers remembered after the governor dropped them", n)
	}
}

// Store.Breaker gives the breaker it made for a key and spec while
// something holds it, so that reads of a scope (the governor's Inspect of
// a scope it holds no entry of, every time) make no breaker beside the one
// the scope's entry holds; a breaker of other settings is made anew, and
// both stay registered (refreshed, written back) while held.
func TestOneBreakerPerKeyAndSpec(t *testing.T) {
	s := New(unreachable(), WithLogger(quiet))
	defer s.Close()
	key := "aws/1/us-east-1/ec2/DescribeVpcs"
	spec := state.BreakerSpec{Threshold: 5, Cooldown: time.Minute, MaxCooldown: time.Hour}
	other := spec
	other.Threshold = 3
	a := s.Breaker(key, spec)
	if b := s.Breaker(key, spec); b != a {
		t.Fatal("Store.Breaker made a second breaker of a key and spec while the first is held")
	}
	registered := func() []*sharedBreaker {
		var bs []*sharedBreaker
		s.breakers.Range(func(_, v any) bool {
			for _, w := range v.(*breakerRefs).ws {
				if b := w.Value(); b != nil {
					bs = append(bs, b)
				}
			}
			return true
		})
		return bs
	}
	func() {
		o := s.Breaker(key, other)
		if o == a || o.(*sharedBreaker).spec != other {
			t.Fatalf("Store.Breaker of other settings gave %p (spec %+v), the first %p", o, o.(*sharedBreaker).spec, a)
		}
		if bs := registered(); len(bs) != 2 || !slices.Contains(bs, a.(*sharedBreaker)) || !slices.Contains(bs, o.(*sharedBreaker)) {
			t.Fatalf("registered %d breakers of the key; want both held ones", len(bs))
		}
		runtime.KeepAlive(o)
	}()
	runtime.GC()
	runtime.GC()
	s.forgetDroppedBreakers()
	if v, ok := s.breakers.Load(s.key("{"+key+"}", "breaker")); !ok || len(v.(*breakerRefs).ws) != 1 || v.(*breakerRefs).ws[0].Value() != a {
		t.Fatal("after the breaker of other settings was let go of and the registry swept: want the held one alone registered")
	}
	runtime.KeepAlive(a)
}

// registered registers b, a bucket of the store's, in the store's
// registry of live buckets, as its first lease request does, and returns
// it.
func registered(b state.Bucket) state.Bucket {
	sb := b.(*sharedBucket)
	sb.mu.Lock()
	sb.register()
	sb.mu.Unlock()
	return b
}

// The store's registry of live buckets, whose leases Close gives back,
// lets go of a bucket the governor dropped (Drop) at once, and keeps
// alive none the governor let go of without Drop.
func TestTheLiveBucketsAreThoseTheGovernorHolds(t *testing.T) {
	s := New(unreachable(), WithLogger(quiet))
	defer s.Close()
	spec := state.BucketSpec{Rate: 10, Burst: 10}
	held := make([]state.Bucket, 0, 50)
	for i := range 100 {
		b := registered(s.Bucket(fmt.Sprintf("aws/%d/us-east-1/ec2/DescribeVpcs", i), spec, 0))
		if i%2 == 0 {
			b.(state.Dropper).Drop(0)
		}
		held = append(held, b)
	}
	live := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.live)
	}
	if n := live(); n != 50 {
		t.Fatalf("%d buckets live after the governor dropped 50 of the 100 it holds; want 50", n)
	}
	runtime.KeepAlive(held)
	held = nil
	runtime.GC()
	s.forgetLostBuckets()
	if n := live(); n > 5 { // a bucket may survive one GC cycle
		t.Fatalf("%d buckets live after the governor let go of them all; want none", n)
	}
}

// A read of a scope the governor holds no entry of (Inspect, through
// buckets made for the read and dropped) leaves nothing in the store's
// registry of live buckets, which is for the buckets with tokens of
// Redis's to give back at Close: a status page or a pool polling the
// scopes it has queued read each again and again. (Every bucket the store
// made went into the registry, under the store's lock, and stayed there
// until the heartbeat's sweep, once a minute, after the collector had
// taken it: 10,000 reads of a scope, 10,000 entries.)
func TestAReadLeavesNoBucketInTheRegistry(t *testing.T) {
	s := New(unreachable(), WithLogger(quiet))
	defer s.Close()
	g, err := resilience.NewGovernor(resilience.Config{}, resilience.WithStateStore(s))
	if err != nil {
		t.Fatal(err)
	}
	sc := resilience.Scope{Provider: "aws", Account: "123456789012", Region: "us-east-1", Service: "ec2", Operation: "DescribeVpcs"}
	const reads = 10_000
	for range reads {
		g.Inspect(sc)
	}
	s.mu.Lock()
	n := len(s.live)
	s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d entries in the store's registry of live buckets after %d reads of a scope no call used; want none", n, reads)
	}
}

// The heartbeat's sweep of the registry of live buckets
// (forgetLostBuckets), which walks every entry, does not hold the store's
// lock for the whole walk: a bucket's registration (at its first lease
// request) and its Drop, called in a loop while the sweep walks 200,000
// entries of buckets the governor let go of, get the lock before the
// sweep is done, as the count of the entries left shows. Holding it
// throughout, the sweep kept every registration, Drop and Budget of the
// process waiting for about 0.1 µs an entry (0.1 s a minute for a million
// live scopes).
func TestBucketDoesNotWaitForAWholeSweep(t *testing.T) {
	const n = 200_000
	s := New(unreachable(), WithLogger(quiet), WithHeartbeat(time.Hour)) // no sweep but the test's
	defer s.Close()
	spec := state.BucketSpec{Rate: 10, Burst: 10}
	for i := range n {
		registered(s.Bucket("aws/"+strconv.Itoa(i)+"/us-east-1/ec2/DescribeVpcs", spec, 0))
	}
	runtime.GC() // a bucket may survive one GC cycle: two
	runtime.GC()
	entries := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.live)
	}
	lost := 0
	s.mu.Lock()
	for w := range s.live {
		if w.Value() == nil {
			lost++
		}
	}
	s.mu.Unlock()
	if lost < n/2 {
		t.Fatalf("%d of the %d buckets let go of are collected; want most", lost, n)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.forgetLostBuckets()
	}()
	// Each Bucket, and its Drop, leaves the registry as it was: between
	// them, it holds n entries before the sweep and n-lost after it.
	var seen []int
	for swept := false; !swept; {
		select {
		case <-done:
			swept = true
		default:
		}
		registered(s.Bucket("aws/123456789012/us-east-1/ec2/DescribeSubnets", spec, 0)).(state.Dropper).Drop(0)
		if k := entries(); k < n && k > n-lost {
			seen = append(seen, k)
			break // got in mid-sweep
		}
	}
	<-done
	if len(seen) == 0 {
		t.Fatalf("Store.Bucket and Drop, called in a loop during the sweep of the registry of live buckets (%d entries, %d of them lost), got the store's lock only before it or after it: the sweep held it throughout; want them to get in while entries of lost buckets are still to be swept", n, lost)
	}
	if k := entries(); k != n-lost {
		t.Fatalf("%d entries in the registry after the sweep; want %d: the lost ones gone", k, n-lost)
	}
}

// BenchmarkBucketDuringSweep measures how long Store.Bucket and the
// bucket's registration (at its first lease request) wait while the
// heartbeat's sweep of the registry of live buckets (forgetLostBuckets)
// walks a million of them, every one still held by the governor: the
// longest and the 99th percentile wait of the calls made during a
// sweep (max-Bucket-ns, p99-Bucket-ns), and the longest sweep (sweep-ns).
// Run it with -benchtime=5x: the million buckets are made anew for each
// run of the function.
func BenchmarkBucketDuringSweep(b *testing.B) {
	const n = 1_000_000
	s := New(unreachable(), WithLogger(quiet), WithHeartbeat(time.Hour)) // no sweep but the benchmark's
	defer s.Close()
	spec := state.BucketSpec{Rate: 10, Burst: 10}
	held := make([]state.Bucket, n)
	for i := range held {
		held[i] = registered(s.Bucket("aws/"+strconv.Itoa(i)+"/us-east-1/ec2/DescribeVpcs", spec, 0))
	}
	var sweep time.Duration
	var waits []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		started, done := make(chan struct{}), make(chan struct{})
		go func() {
			close(started)
			t := time.Now()
			s.forgetLostBuckets()
			sweep = max(sweep, time.Since(t))
			close(done)
		}()
		<-started
		for swept := false; !swept; {
			select {
			case <-done:
				swept = true
			default:
			}
			t := time.Now()
			bk := registered(s.Bucket("aws/123456789012/us-east-1/ec2/DescribeSubnets", spec, 0))
			waits = append(waits, time.Since(t))
			bk.(state.Dropper).Drop(0)
		}
	}
	b.StopTimer()
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)-1].Nanoseconds()), "max-Bucket-ns")
	b.ReportMetric(float64(waits[len(waits)*99/100].Nanoseconds()), "p99-Bucket-ns")
	b.ReportMetric(float64(sweep.Nanoseconds()), "sweep-ns")
	b.ReportMetric(float64(len(waits))/float64(b.N), "Bucket-calls/sweep")
	runtime.KeepAlive(held)
}

// Durations Redis counts in milliseconds are at least one: a key TTL under
// a millisecond would be PEXPIRE key 0 (deleting every key), a heartbeat
// under a third of one would give the process's entry in the heartbeat
// set no time to live.
func TestSubMillisecondDurationsAreAMillisecond(t *testing.T) {
	s := New(unreachable(), WithLogger(quiet), WithKeyTTL(500*time.Microsecond), WithHeartbeat(10*time.Microsecond))
	defer s.Close()
	if ms := s.ttlMS(); ms != 1 {
		t.Fatalf("a key TTL of 500µs is %d ms in the scripts, want 1", ms)
	}
	if s.cfg.heartbeat != time.Millisecond {
		t.Fatalf("a heartbeat of 10µs is %v, want 1ms", s.cfg.heartbeat)
	}
}

// A nil Option changes nothing.
func TestANilOptionChangesNothing(t *testing.T) {
	s := New(unreachable(), nil, WithLogger(quiet), nil)
	defer s.Close()
	if s.cfg.keyTTL != 15*time.Minute || s.cfg.heartbeat != time.Second {
		t.Fatalf("config %+v after nil options", s.cfg)
	}
}

// The zero Store is not usable, as its documentation says: its operations
// panic.
func TestTheZeroStoreIsNotUsable(t *testing.T) {
	for name, op := range map[string]func(s *Store){
		"Close": func(s *Store) { s.Close() },
		"Reserve": func(s *Store) {
			s.Bucket("aws/123456789012/us-east-1/ec2/DescribeVpcs", state.BucketSpec{Rate: 1, Burst: 1}, 0).Reserve(0)
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s on the zero Store did not panic", name)
				}
			}()
			op(new(Store))
		}()
	}
}
