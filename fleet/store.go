package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/internal/breaker"
	"github.com/cloudg/cloudg/internal/hint"
	"github.com/cloudg/cloudg/internal/scopekey"
	"github.com/cloudg/cloudg/resilience"
	"github.com/cloudg/cloudg/state"
)

// Store is a state.Store on Redis: the learned state of every governor that
// uses it is shared by the fleet. It is safe for concurrent
// use. Make one per process with New or Open, give it to the governor with
// resilience.WithStateStore, and Close it when the process is done. The
// zero Store is not usable: its operations panic (it has no client and no
// heartbeat); only New and Open make one.
type Store struct {
	rdb     redis.UniversalClient
	ownsRDB bool
	bounded bool // rdb ends a call at its context's deadline itself
	cfg     config
	local   state.Store   // the fallback while Redis does not answer
	horizon time.Duration // no valid pause reaches further (a queue may: queueMicros)
	// wbPrefix begins the field of a breaker's hash in which Redis records
	// the last write-back of one of the store's breakers it applied
	// (sharedBreaker.wbField): "wb:" and random bytes, new for each store,
	// so that a process that starts again under the same WithProcessID,
	// whose write-backs are numbered from 1 again, does not find them taken
	// for ones Redis ran; wbMade counts the breakers given a field.
	wbPrefix string
	wbMade   atomic.Int64
	// longestWait is the longest wait of the breakers the store made (µs):
	// their longest cooldown and the clock skew, and at least the horizon.
	// A lease request's answer carries its scope's breaker, valid within
	// it (the breaker's own settings bound it again: update).
	longestWait atomic.Int64

	// mode is the store's outage and whether it is in it, as one word
	// (episode<<1 | 1 on local limits): the switches to local limits
	// counted, and Redis not answering. One word, so that no reader sees
	// the switch half made, local limits under the episode before it
	// (degraded, outage, toLocal, toShared).
	mode      atomic.Int64
	shut      atomic.Bool  // Close is done with Redis: local limits for good
	pending   atomic.Bool  // a local breaker or bucket holds what was not written back yet
	procs     atomic.Int64 // live processes at the last heartbeat, at least 1
	staleTick atomic.Int64 // counts the periods of WithBreakerStaleness

	calls, errors, hits, misses, fallbacks atomic.Int64
	refusedLogged                          atomic.Int64 // when a line about one operation was last logged (Unix ns): warnOneOperation
	// garbled counts the answers in a row that no script of the store
	// gives (unreadable); garbageOutage of them are an outage.
	garbled atomic.Int64
	// redirKey is the key of the last operation Redis redirected (MOVED,
	// ASK: a client of one server on a node of a cluster), nil once the
	// heartbeat found Redis serving it: while Redis redirects it, the
	// heartbeat's answer, whose key the node may hold, does not end local
	// limits (see heartbeat).
	redirKey atomic.Pointer[string]
	// answered is when (mono) Redis last answered an operation of the
	// store, whatever the answer (math.MinInt64 before the first), and
	// silentSince when the earliest operation Redis has given no answer to
	// since was sent (math.MaxInt64 for none, and stale once answered is
	// later): see unanswered.
	answered, silentSince atomic.Int64

	log atomic.Pointer[slog.Logger] // WithLogger's, the governor's (UseLogger), or slog.Default()
	ctx context.Context             // the parent of its operations' contexts, naming the store to go-redis's log

	// opening is set while New runs its first heartbeat, before the
	// governor could give the store its logger (UseLogger); atOpen holds
	// the line of a switch to local limits made then, until UseLogger,
	// the heartbeat's next tick or Close logs it (logAtOpen).
	opening atomic.Bool
	atOpen  atomic.Pointer[logLine]

	mu      sync.Mutex
	budgets map[string]*sharedBudget // by key: one per provider
	// live holds, under mu, a weak pointer to each bucket the store made
	// that asked Redis for tokens or gave some back (sharedBucket.register)
	// and that the governor has not dropped (Drop removes it), so that
	// Close gives their leases back; a bucket made for a read never enters
	// it. Weak, so that it keeps alive none the governor let go of without
	// telling it (the heartbeat removes their entries). closing is set,
	// under mu, as Close gathers them: a bucket that registers after it
	// borrows no lease.
	live    map[weak.Pointer[sharedBucket]]struct{}
	closing bool
	// closeBy is when (mono) Close's operations with Redis must be done,
	// its start and the operation timeout; 0 before Close (see call).
	closeBy atomic.Int64
	// breakers maps a scope's breaker key to its breakerRefs: weak
	// pointers to the breakers of the key the store made that something
	// still holds, one for each spec, so that the answers to token
	// requests refresh each, without keeping alive a breaker the governor
	// dropped; the heartbeat removes the pointers whose breaker is gone.
	breakers sync.Map
	// owed holds the buckets with a pause set on the local limits, or a
	// throttle Redis did not run, that is not written to Redis yet
	// (sharedBucket.owe, sharedBucket.oweThrottle), and
	// unwrittenBreakers the breakers whose local breaker learned what is
	// not written back yet (sharedBreaker.setUnwritten), each until the
	// heartbeat writes it (writeBack) or Close lets go of it (hold):
	// strongly, so that what the governor let go of meanwhile (a Reset,
	// a Configure that replaced it) is written back all the same, whether
	// or not the collector ran.
	owed              sync.Map
	unwrittenBreakers sync.Map

	// dropMu guards drops and dropSenders: the buckets the governor
	// dropped with tokens to give back to Redis (sharedBucket.Drop), in the
	// order they came, and the goroutines sending them, at most
	// maxDropSenders.
	dropMu      sync.Mutex
	drops       []droppedBucket
	dropSenders int
	dropsDone   sync.Cond // on dropMu: broadcast when a sender of dropped buckets ends

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

type config struct {
	prefix        string
	id            string
	leaseWindow   time.Duration
	maxLease      int
	timeout       time.Duration
	keyTTL        time.Duration
	heartbeat     time.Duration
	breakerStale  time.Duration
	successPeriod time.Duration
	expected      int64
	logger        *slog.Logger
}

// An Option configures a Store. Options are values, safe to share among
// goroutines and stores; a nil Option changes nothing.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithPrefix namespaces every key (default "cloudg"), so that several
// fleets, or tests, share one Redis. A brace the prefix holds is written
// %7B or %7D in the keys, as in a scope's hash tag (hashTag): a Redis
// Cluster takes the first '{' of a key and the first '}' after it for the
// tag, which a prefix's braces would take the place of (with "x{}" every
// key's tag empty, a scope's bucket and breaker in two slots, a CROSSSLOT
// error for every lease; with "app{1}" every key in one slot). A prefix
// without a brace is used as it is.
func WithPrefix(p string) Option {
	return optionFunc(func(c *config) { c.prefix = braces.Replace(p) })
}

// WithProcessID names this process in the heartbeat set (default: host,
// pid and a random suffix).
func WithProcessID(id string) Option { return optionFunc(func(c *config) { c.id = id }) }

// WithLeaseWindow sets how many tokens a process borrows at a time, as the
// time they last at the current rate divided among the live processes
// (default 100 ms; see the package documentation for what it trades). A d
// of 0 or less keeps the default, as the other durations' options do: it
// would lease no token ahead and read the bucket's pause again from Redis
// at every call. WithMaxLease(1) is how to borrow one token at a time.
func WithLeaseWindow(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.leaseWindow = d
		}
	})
}

// WithMaxLease caps the tokens borrowed at a time (default 64); 1 makes
// every token a Redis round trip.
func WithMaxLease(n int) Option { return optionFunc(func(c *config) { c.maxLease = max(1, n) }) }

// WithTimeout bounds each Redis operation (default 250 ms); past it the
// operation goes on with local limits, and counts as a Redis error. One
// late answer, or those of the operations in flight at one moment (a busy
// host's scheduling), switch nothing else: the process goes to local
// limits when an operation sent d or more after the first one Redis did
// not answer gets no answer either, with none answered between them, so
// that a frozen Redis is left within 2d of its first unanswered
// operation while operations keep coming, and while it stays silent a
// call waits for it at most 2d (see Store.Stats for the counts). A connection Redis closed or
// refused is no late answer: it switches at once. A d of 0 or less keeps the
// default.
// It is also how long a local success written back after an outage is
// taken as older than it came (Redis may run the write-back up to d
// after it is sent): one that came less than d after the fleet's
// failures or its last reset ends none of them, so that a longer d
// keeps more of the fleet's failures, and may open a failing scope
// sooner.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	})
}

// WithKeyTTL sets how long an idle key lives in Redis (default 15
// minutes), at least a millisecond (Redis's unit: less would be a TTL of
// 0, which deletes the key). A key is idle from its last write, or from
// when what it holds stops mattering if that is later: a bucket's pause
// over and its balance full again, a breaker's cooldown over; a TTL
// shorter than those does not cut them short. A d of 0 or less keeps the
// default.
func WithKeyTTL(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.keyTTL = max(d, time.Millisecond)
		}
	})
}

// WithHeartbeat sets how often the process announces itself and, while
// Redis does not answer, probes it (default 1 s), at least every
// millisecond. Processes silent for three heartbeats no longer count as
// live. A d of 0 or less keeps the default.
func WithHeartbeat(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.heartbeat = max(d, time.Millisecond)
		}
	})
}

// WithBreakerStaleness bounds how long a process trusts its cached view of
// a closed breaker before asking Redis again (default 1 s); token requests
// refresh it too. It is also the period in which a process whose view
// shows no failure tells Redis of one success (the first), which resets
// the failures other processes counted since; a d of 0 or less sends
// every success.
func WithBreakerStaleness(d time.Duration) Option {
	return optionFunc(func(c *config) { c.breakerStale = d })
}

// WithExpectedProcesses sets the most processes the fleet runs at once
// (default 1). While Redis does not answer, a process takes its share of
// the fleet's limits: the buckets' settings, the last known rates (from
// which its local buckets climb) and the retry budget divided by the live
// processes it counted at its last heartbeat, and by n when n is more. A
// process that starts while Redis does not answer has counted none but
// itself: with n, the processes of a fleet of at most n never take
// more than the fleet's limits together, however many of them started
// during the outage, each at a share of 1/n even when fewer run; without
// it, each takes the whole of the configured limits, and k of them k
// times as much. An n below 1 keeps the default.
func WithExpectedProcesses(n int) Option {
	return optionFunc(func(c *config) { c.expected = int64(max(1, n)) })
}

// WithLogger logs the switches between shared and local limits, and
// go-redis's own lines about the store's client (a failed dial, say),
// rate-limited. By default the store logs to the logger of the governor
// it is given to (resilience.WithLogger), or else to slog.Default().
func WithLogger(l *slog.Logger) Option { return optionFunc(func(c *config) { c.logger = l }) }

// Open connects to the Redis named by url and returns a Store on it. The
// URL takes go-redis's forms (credentials, TLS with rediss://, the
// database, and options such as dial_timeout as query parameters):
//
//	redis://user:pass@host:6379/0                          one server
//	redis://user:pass@node1:6379?addr=node2:6379&addr=...   a Redis Cluster: its nodes (no database)
//	redis://user:pass@sentinel1:26379/0?master_name=m&addr=sentinel2:26379
//	                                                       Sentinel: the sentinels, and the master's name
//
// With Sentinel the URL's credentials are the sentinels'; the master's
// come as the username and password query parameters. Every client Open
// makes ends a call at its context's deadline (go-redis's
// ContextTimeoutEnabled), so that no Redis wait outlasts WithTimeout, and
// tries a dial once (go-redis's DialerRetries: 1, unless a Cluster or
// Sentinel URL gives dialer_retries), so that a Redis that refuses the
// connection is seen as one at once, not as a silence. Open
// fails only for a malformed URL, and its error never shows the URL's
// password: a Redis that does not answer yet means local limits until it
// does. Like New, it returns after the store's first heartbeat, which
// announces the process and counts the live ones, so that the first calls
// take their share: against a Redis that does not answer, after the
// operation timeout (WithTimeout, 250 ms by default), on local limits.
func Open(url string, opts ...Option) (*Store, error) {
	rdb, err := openClient(url)
	if err != nil {
		return nil, err
	}
	s := New(rdb, opts...)
	s.ownsRDB = true
	return s, nil
}

// New returns a Store on rdb, a client the caller made (and closes). It
// returns after the store's first heartbeat, which announces the process
// and counts the live ones: against a Redis that does not answer, after
// the operation timeout (WithTimeout), on local limits. A client that
// dials again after a refused dial (go-redis's DialerRetries, 5 by
// default) keeps the store waiting for it until the operation's deadline,
// and the store takes a Redis that refuses connections for a silent one:
// give rdb DialerRetries: 1, as the clients Open makes have.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	cfg := config{
		prefix:        "cloudg",
		leaseWindow:   100 * time.Millisecond,
		maxLease:      64,
		timeout:       250 * time.Millisecond,
		keyTTL:        15 * time.Minute,
		heartbeat:     time.Second,
		breakerStale:  time.Second,
		successPeriod: time.Second,
		expected:      1,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.id == "" {
		host, _ := os.Hostname()
		var r [4]byte
		rand.Read(r[:])
		cfg.id = host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(r[:])
	}
	var wb [8]byte
	rand.Read(wb[:])
	s := &Store{
		rdb: rdb, bounded: endsAtDeadline(rdb), cfg: cfg, local: resilience.MemoryStore(),
		wbPrefix: "wb:" + hex.EncodeToString(wb[:]) + ":",
		horizon:  cfg.keyTTL + hint.MaxPause, budgets: map[string]*sharedBudget{},
		live: map[weak.Pointer[sharedBucket]]struct{}{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	s.dropsDone.L = &s.dropMu
	if cfg.logger != nil {
		s.log.Store(cfg.logger)
	} else {
		s.log.Store(slog.Default())
	}
	s.ctx = context.WithValue(context.Background(), storeKey{}, s)
	routeRedisLog()
	redisLog.add(s)
	s.procs.Store(1)
	s.answered.Store(math.MinInt64)
	s.silentSince.Store(math.MaxInt64)
	s.longestWait.Store(s.horizon.Microseconds())
	s.opening.Store(cfg.logger == nil)
	s.heartbeat()
	s.opening.Store(false)
	go s.loop()
	return s
}

// logLine is a line to log at Warn.
type logLine struct {
	msg   string
	attrs []any
}

// logAtOpen logs the line of a switch to local limits made by New's first
// heartbeat, if not logged yet, to the store's logger: the governor's once
// NewGovernor gave it (UseLogger), which comes right after Open. Without
// it, the line would go to slog.Default(), and a program logging through
// its own logger would never see that a process started on local limits.
func (s *Store) logAtOpen() {
	if l := s.atOpen.Swap(nil); l != nil {
		s.logger().Warn(l.msg, l.attrs...)
	}
}

// Close stops the heartbeat, and first writes back what the local limits
// learned while Redis did not answer and the heartbeat has not written
// back yet (a pause set on a bucket, a throttle Redis did not run, a
// breaker's change of state or failures), as the heartbeat's next tick
// would: Redis may have come back
// since its last, and what a process learned then reaches the fleet. It
// gives that up at the first operation Redis does not answer. It then
// gives back to Redis the tokens the buckets the store made hold and no
// caller took: their leases (Redis counts them as taken, and the fleet's
// other processes would lose them until their times pass), the tokens
// given back and not sent yet, and those of the buckets the governor
// dropped whose give-back is still queued or whose operation was in flight
// as it dropped them; a bucket the governor dropped is not given back
// twice. It then saves the retry budgets' spending (a fraction of a token
// each, where a lease is up to 64: a slow Redis spends Close's time on the
// write-back and the leases first). Then, for a Store made by Open, it
// closes its Redis client. Close's operations with Redis end within the
// operation timeout (WithTimeout) from its start, however many buckets
// have tokens to give back or breakers and buckets have something to write
// back, and whether or not Redis answers: a Close while Redis does not
// answer takes that timeout when there is something to write back, and no
// time otherwise; the tokens not given back by then stay spent until
// their times pass. A Sentinel client still asking unreachable sentinels
// where the master is goes on closing in the background once the deadline
// has passed. A call through the store after Close (or in flight at
// Close) goes on with local limits, and reports no Redis outage: a bucket
// Close gave its lease back borrows no new one. What Close did not write
// back (Redis did not answer, or the deadline passed) is not written back
// later: Close lets go of it, and the store keeps none of what the local
// limits learn once Close began, nothing being written back any more.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		s.closeBy.Store(int64(mono() + s.cfg.timeout))
		close(s.stop)
		<-s.done
		s.logAtOpen()
		// What the heartbeat would have written back at its next tick:
		// Redis may have come back since its last. Bounded by closeBy, and
		// given up at the first operation Redis does not answer.
		s.writeBack()
		s.owed.Clear() // the heartbeat, which writes them back, is done (hold)
		s.unwrittenBreakers.Clear()
		s.giveBackLeases()
		s.shut.Store(true)
		if s.ownsRDB {
			err = s.closeClient()
		} else {
			redisLog.remove(s)
		}
	})
	return err
}

// closeClient closes the Redis client Open made, waiting for it until
// Close's deadline (closeBy). A client's Close is quick, except a Sentinel
// client's while it is still asking the sentinels where the master is: it
// waits for that dial, which go-redis makes in the background with
// retries and the client's own timeouts, seconds against sentinels that
// do not answer. Past the deadline the client goes on closing in the
// background, where it ends with that dial, and closeClient returns nil.
// The store takes go-redis's lines about its client until the client is
// closed: a line of that dial goes to the store's logger, not to
// slog.Default.
func (s *Store) closeClient() error {
	var err error
	done := make(chan struct{})
	go func() {
		err = s.rdb.Close()
		redisLog.remove(s)
		close(done)
	}()
	if !s.closeWait(done) {
		return nil
	}
	return err
}

// UseLogger makes l the store's logger when it was given none with
// WithLogger: resilience.NewGovernor calls it with the governor's logger
// (resilience.WithLogger), so that one logger takes the governor's lines,
// the store's and its Redis client's. The line of a switch to local limits
// that Open's first heartbeat made (Redis did not answer as the process
// started) waits for it, and goes to l; without UseLogger, it goes to
// slog.Default() at the heartbeat's next tick or at Close. A nil l changes
// nothing.
func (s *Store) UseLogger(l *slog.Logger) {
	if l != nil && s.cfg.logger == nil {
		s.log.Store(l)
		s.logAtOpen()
	}
}

// logger returns the store's logger.
func (s *Store) logger() *slog.Logger { return s.log.Load() }

// closed reports whether Close was called.
func (s *Store) closed() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// StoreStats are a process's counters of its use of the shared state: its
// Redis operations and leases, not the governor's call statistics. A
// StoreStats is a copy (Store.Stats makes one) that nothing updates, so it
// may be read from several goroutines at once; Store.Stats reads its
// counters one by one, not all at one instant. The zero value is a
// store's that has done nothing.
type StoreStats struct {
	RedisCalls  int64 // operations sent to Redis
	RedisErrors int64 // operations that failed or timed out
	LeaseHits   int64 // tokens taken from a local lease, without Redis
	LeaseMisses int64 // tokens that waited for Redis's answer to a lease request
	Fallbacks   int64 // switches from shared to local limits
	Degraded    bool  // on local limits now
	Processes   int64 // live processes at the last heartbeat
}

// Stats returns the process's counters.
func (s *Store) Stats() StoreStats {
	return StoreStats{
		RedisCalls: s.calls.Load(), RedisErrors: s.errors.Load(),
		LeaseHits: s.hits.Load(), LeaseMisses: s.misses.Load(),
		Fallbacks: s.fallbacks.Load(), Degraded: s.degraded(), Processes: s.procs.Load(),
	}
}

func (s *Store) loop() {
	defer close(s.done)
	t := time.NewTicker(s.cfg.heartbeat)
	defer t.Stop()
	var stale <-chan time.Time // see sharedBreaker.Success
	if s.cfg.breakerStale > 0 {
		st := time.NewTicker(s.cfg.breakerStale)
		defer st.Stop()
		stale = st.C
	}
	beat := 0
	for {
		select {
		case <-s.stop:
			return
		case <-stale:
			s.staleTick.Add(1)
		case <-t.C:
			beat++
			s.logAtOpen() // before a switch back this heartbeat may log
			s.heartbeat()
			s.flushBudgets()
			redisLog.flush()
			if beat%60 == 0 {
				s.forgetDroppedBreakers()
				s.forgetLostBuckets()
			}
		}
	}
}

// droppedBucket is a bucket the governor dropped at now (its clock), with
// tokens to give back.
type droppedBucket struct {
	b   *sharedBucket
	now time.Duration
}

// maxDropSenders bounds the goroutines that give back the tokens of the
// buckets the governor dropped, and so their operations in flight: a
// sweep of the governor may drop thousands of buckets at once.
const maxDropSenders = 4

// giveBackDropped gives back the tokens of b, which the governor dropped
// at now, in the background (sharedBucket.sendGiveBack), after those of
// the buckets dropped before it.
func (s *Store) giveBackDropped(b *sharedBucket, now time.Duration) {
	s.dropMu.Lock()
	s.drops = append(s.drops, droppedBucket{b, now})
	start := s.dropSenders < maxDropSenders
	if start {
		s.dropSenders++
	}
	s.dropMu.Unlock()
	if start {
		go s.sendDropped()
	}
}

// sendDropped gives back the tokens of the dropped buckets queued, one
// bucket at a time, until none is left.
func (s *Store) sendDropped() {
	for {
		s.dropMu.Lock()
		if len(s.drops) == 0 {
			s.drops = nil
			s.dropSenders--
			s.dropsDone.Broadcast()
			s.dropMu.Unlock()
			return
		}
		d := s.drops[0]
		s.drops[0] = droppedBucket{}
		s.drops = s.drops[1:]
		s.dropMu.Unlock()
		d.b.sendGiveBack(d.now)
	}
}

// giveBackLeases is Close's: it gives back the tokens of every live
// bucket (sharedBucket.closeOut) and of the dropped buckets still
// queued, maxDropSenders at a time, waits for the senders of dropped
// buckets to end, and then saves the retry budgets' spending, all within
// closeBy: a slow Redis spends the deadline on the leases, up to a
// lease's tokens each, before the budgets, whose refunds are a fraction
// of a token each.
func (s *Store) giveBackLeases() {
	s.mu.Lock()
	s.closing = true
	live := s.live
	s.live = nil
	budgets := make([]*sharedBudget, 0, len(s.budgets))
	for _, b := range s.budgets {
		budgets = append(budgets, b)
	}
	s.mu.Unlock()
	s.dropMu.Lock()
	queued := s.drops
	s.drops = nil
	s.dropMu.Unlock()
	work := make([]func(), 0, len(live)+len(queued))
	for _, d := range queued { // Drop set giving: theirs to send
		work = append(work, func() { d.b.sendGiveBack(d.now) })
	}
	for w := range live {
		if b := w.Value(); b != nil {
			work = append(work, b.closeOut)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(maxDropSenders, len(work)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(work)); i = next.Add(1) - 1 {
				work[i]()
			}
		}()
	}
	wg.Wait()
	s.dropMu.Lock()
	for s.dropSenders > 0 {
		s.dropsDone.Wait()
	}
	s.dropMu.Unlock()
	for _, b := range budgets {
		b.flush()
	}
}

// closeWait waits for ch to be closed until Close's deadline (closeBy),
// and reports whether it was: false when the deadline came first.
func (s *Store) closeWait(ch <-chan struct{}) bool {
	d := time.Duration(s.closeBy.Load()) - mono()
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// forget removes b from the live buckets: the governor dropped it.
func (s *Store) forget(b *sharedBucket) {
	s.mu.Lock()
	delete(s.live, weak.Make(b))
	s.mu.Unlock()
}

// forgetLostBuckets removes the entries of buckets gone without Drop. It
// walks the registry sweepChunk entries at a time, releasing mu between
// them, so that a bucket's registration (sharedBucket.register), Drop and
// Budget wait for a chunk at most, not for the whole walk (about 0.1 s for
// a million live buckets). An entry made meanwhile is walked now or at the next sweep, one removed meanwhile not
// at all (Go's map iteration allows both); Close, which takes the
// registry, waits first for the heartbeat's loop, which runs the sweep.
func (s *Store) forgetLostBuckets() {
	s.mu.Lock()
	defer s.mu.Unlock()
	live, n := s.live, 0
	for w := range live {
		if w.Value() == nil {
			delete(live, w)
		}
		if n++; n%sweepChunk == 0 {
			s.mu.Unlock()
			// The caller Unlock woke is this P's next to run: it takes
			// the lock now rather than at the sweep's next preemption.
			runtime.Gosched()
			s.mu.Lock()
			if s.closing {
				return // the registry is Close's now
			}
		}
	}
}

// sweepChunk is how many entries of the registry of live buckets
// forgetLostBuckets walks per hold of the store's lock: about 0.1 ms.
const sweepChunk = 1024

// forgetDroppedBreakers removes the pointers to breakers nothing holds
// any longer (reclaimed idle scopes, reads' handles), and the entries left
// with none.
func (s *Store) forgetDroppedBreakers() {
	s.breakers.Range(func(k, v any) bool {
		refs := v.(*breakerRefs)
		switch live := refs.live(); {
		case len(live) == 0:
			s.breakers.CompareAndDelete(k, v)
		case len(live) < len(refs.ws):
			s.breakers.CompareAndSwap(k, v, &breakerRefs{live}) // else Breaker changed it: swept next time
		}
		return true
	})
}

// heartbeat announces the process and counts the live ones. It is also the
// probe that ends local limits when Redis answers again: an answer, even a
// refusal (an error of the heartbeat's own key), means Redis is there.
// Before the switch back, what the local breakers learned is written back
// to Redis (writeBack), so that the fleet does not forget a scope this
// process found dead while Redis did not answer, nor keep open one it
// found alive; and again after it, for a change a call that was still on
// the local breaker made meanwhile. While a local breaker holds what was
// not written back (a write-back Redis did not answer, a change made after
// it), every heartbeat tries again.
func (s *Store) heartbeat() {
	s.calls.Add(1)
	sent := mono()
	res, err := s.call(heartbeatScript, []string{s.key("procs")},
		[]any{s.cfg.id, (3 * s.cfg.heartbeat).Milliseconds(), s.ttlMS()})
	switch {
	case err != nil && s.closed():
		return // see run
	case err != nil && unavailable(err):
		s.unanswered(err, sent)
		return
	case err != nil && !errors.Is(err, redis.Nil):
		s.refused(s.key("procs"), err)
	case err != nil || !heartbeatScript.fits(res) || toString(res[1]) != s.cfg.id:
		// Not the script's answer (it echoes the process's id): no answer
		// from Redis, on local limits (see unreadable).
		s.unreadable(s.key("procs"), res)
		if s.degraded() {
			return
		}
	default:
		s.readable()
		s.procs.Store(max(1, toInt(res[0])))
	}
	if s.degraded() && !s.servesRedirected() {
		return // a node of a cluster that holds the heartbeat's key, not the others'
	}
	if (s.degraded() || s.pending.Load()) && !s.writeBack() && s.degraded() {
		return // Redis stopped answering again: still local limits
	}
	if s.toShared() {
		s.logger().Info("cloudg fleet: Redis answers again; back to shared limits", "processes", s.procs.Load())
		s.writeBack()
	}
}

// servesRedirected reports whether Redis serves the key of the last
// operation it redirected (redirKey), asking it with probeScript, a
// script Redis routes as the store's by its key: a client of one server
// given a node of a cluster finds MOVED again, and stays on local limits,
// the cluster's other nodes holding the keys of most scopes (so does one
// Redis does not answer in time: the next heartbeat asks again). Without
// a key redirected, or once Redis served it or refused it for itself (the
// cluster became one server, or the client another's), it reports true.
func (s *Store) servesRedirected() bool {
	k := s.redirKey.Load()
	if k == nil {
		return true
	}
	s.calls.Add(1)
	if _, err := s.call(probeScript, []string{*k}, nil); err != nil && unavailable(err) {
		return false
	}
	s.redirKey.CompareAndSwap(k, nil)
	return true
}

// writeBack writes back the pauses set on the local limits that have not
// ended (sharedBucket.owe), the throttles Redis did not run
// (sharedBucket.oweThrottle), and what the breakers' local breakers learned
// while Redis did not answer and was not written back yet (the store holds
// each such breaker, whoever else still does: unwrittenBreakers); false
// when Redis stopped answering, pending then set again for the next
// heartbeat.
func (s *Store) writeBack() bool {
	s.pending.Store(false)
	ok := true
	s.owed.Range(func(k, _ any) bool {
		ok = k.(*sharedBucket).writeOwed()
		return ok
	})
	if ok {
		s.unwrittenBreakers.Range(func(k, _ any) bool {
			ok = k.(*sharedBreaker).writeBack()
			return ok
		})
	}
	if !ok {
		s.pending.Store(true)
	}
	return ok
}

// hold keeps k in m, one of the store's sets of what the heartbeat writes
// back to Redis (owed, unwrittenBreakers), until it is written back,
// and reports whether it
// does: once Close began, nothing is written back, and the store keeps
// nothing for it (Close lets go of what m holds after the heartbeat
// stopped; one kept as it did is let go of here).
func (s *Store) hold(m *sync.Map, k any) bool {
	m.Store(k, struct{}{})
	if s.closed() {
		m.Delete(k)
		return false
	}
	return true
}

// degraded reports whether the store is on local limits: Redis is not
// answering.
func (s *Store) degraded() bool { return s.mode.Load()&1 == 1 }

// outage returns the store's outage, counted from 1 (0: none yet), and
// whether the store is in it, read together: a local limit made for the
// pair is made for the outage it names (sharedBucket.fallback).
func (s *Store) outage() (ep int64, out bool) {
	m := s.mode.Load()
	return m >> 1, m&1 == 1
}

// toLocal switches the store to local limits in a new outage, and
// reports whether it did (false: it was on them).
func (s *Store) toLocal() bool {
	for {
		m := s.mode.Load()
		if m&1 == 1 {
			return false
		}
		if s.mode.CompareAndSwap(m, (m>>1+1)<<1|1) {
			return true
		}
	}
}

// toShared switches the store back to the shared state, in the outage it
// was in, and reports whether it did (false: it was on it).
func (s *Store) toShared() bool {
	for {
		m := s.mode.Load()
		if m&1 == 0 {
			return false
		}
		if s.mode.CompareAndSwap(m, m&^1) {
			return true
		}
	}
}

// fail records that Redis does not answer and switches to local limits,
// logging once.
func (s *Store) fail(err error) {
	s.errors.Add(1)
	if s.toLocal() {
		s.fallbacks.Add(1)
		msg := "cloudg fleet: Redis does not answer; local limits divided among the live processes"
		switch {
		case redirected(err):
			msg = "cloudg fleet: Redis answers as a cluster node; local limits divided among the live processes (give Open the cluster's nodes as addr= parameters, or New a *redis.ClusterClient)"
		case errors.Is(err, errUnreadable):
			msg = "cloudg fleet: Redis gives answers no script of the store gives; local limits divided among the live processes"
		}
		attrs := []any{"processes", s.procs.Load(), "error", err.Error()}
		if s.opening.Load() {
			s.atOpen.Store(&logLine{msg, attrs}) // for the governor's logger (logAtOpen)
			return
		}
		s.logger().Warn(msg, attrs...)
	}
}

// unanswered records an operation sent at sent (mono) that Redis did not
// serve (unavailable(err)): it goes on with local limits, and counts as a
// Redis error. An error that only a Redis that cannot serve gives (not
// late: an error reply refusing every command, a connection refused, one
// Redis closed or reset under the operation) switches the store to local
// limits at once (fail), but for a connection refused or lost when Redis
// answered another operation since this one was sent (what it met is
// older than that answer: a dial go-redis tried again and again while
// Redis came back); and so does any
// operation unanswered before Redis first answered one: nothing shows
// yet that Redis is there (an address that names none, a Redis down as
// the process starts). Once
// Redis answered, an answer not come by the deadline (late) switches only
// when it is an outage: Redis gave no answer to an operation sent at
// least the operation timeout after the first one it did not answer
// either, and none to any operation between them. A busy host's
// scheduling delays one answer, or those of the operations in flight at
// one moment, past the timeout with no fault, and the answers after it
// come; a frozen or unreachable Redis answers none (go-redis tries a
// refused connection again until the operation's deadline), and is left
// within two timeouts of the first operation it did not answer when
// operations keep coming, and otherwise at the heartbeat's probe after
// it. A late answer alone is logged as a refusal is, at most once a
// minute.
func (s *Store) unanswered(err error, sent time.Duration) {
	ans := s.answered.Load()
	_, reply := errorCode(err) // an answer itself, which answered counts
	switch {
	case s.degraded(), ans == math.MinInt64:
		s.fail(err)
		return
	case !late(err) && (reply || ans <= int64(sent)):
		s.fail(err)
		return
	case !late(err):
		// A connection refused or lost, and Redis answered an operation
		// since this one was sent: what this one met (a dial refused
		// before Redis came back, go-redis dialing again until it gave
		// up) is older than that answer.
	case s.silentFor(sent) >= s.cfg.timeout:
		s.fail(err)
		return
	}
	s.errors.Add(1)
	s.warnOneOperation("cloudg fleet: Redis did not answer an operation in time; it went on with local limits",
		"error", err.Error())
}

// silentFor returns how long before sent (mono), an operation Redis gave
// no answer to, Redis has answered nothing: since the first operation of
// the silence that sent is part of was sent; 0 when Redis answered an
// operation since sent, the lateness then sent's alone, or when sent
// starts a silence.
func (s *Store) silentFor(sent time.Duration) time.Duration {
	ans := s.answered.Load()
	if ans > int64(sent) {
		return 0
	}
	for {
		first := s.silentSince.Load()
		if first >= ans && first <= int64(sent) {
			return sent - time.Duration(first)
		}
		// None yet, one Redis answered since, or one that began after
		// sent: the silence starts at sent.
		if s.silentSince.CompareAndSwap(first, int64(sent)) {
			return 0
		}
	}
}

// errUnreadable is why a store went to local limits when Redis gave,
// garbageOutage times in a row, answers that no script of the store gives
// (see Store's unreadable): the error its log line of the switch carries.
var errUnreadable = errors.New("redis: answers no script of the store gives")

// garbageOutage is how many answers in a row that no script gives are an
// outage: one may be a proxy's hiccup, a few in a row a server that cannot
// run the scripts, whose every operation would cost a round trip for
// nothing.
const garbageOutage = 3

// readable records an answer that is what its script answers: it ends a
// run of unreadable ones. A store that never had any pays one atomic load.
func (s *Store) readable() {
	if s.garbled.Load() != 0 {
		s.garbled.Store(0)
	}
}

// unreadable records an answer to an operation on key that is not what its
// script answers (script.fits): not Redis's script's, whatever sent it (a
// server that only speaks the protocol, a proxy in the way, a broken
// script engine). The operation goes on with local limits, as one Redis
// refused (whether the script ran is not known: nothing it counted is
// sent again), and the answer is logged as a refusal is, at most once a
// minute. garbageOutage such answers in a row, with none readable between
// them, are an outage (fail, with errUnreadable): the store switches
// to local limits, counts and logs the switch, and sends nothing but the
// heartbeat's probe until Redis answers it as its script does, as for a
// Redis that does not answer.
func (s *Store) unreadable(key string, res []any) {
	if s.garbled.Add(1) >= garbageOutage {
		s.fail(errUnreadable)
		return
	}
	s.errors.Add(1)
	s.warnOneOperation("cloudg fleet: Redis gave an answer no script of the store gives; the operation went on with local limits",
		"key", key, "elements", len(res)) // not the answer itself: whatever sent it, it is not ours to log
}

// refused records Redis refusing an operation on key (a key of the wrong
// type, an ACL that does not cover it): the operation goes on with local
// limits, and the rest of the process stays on the shared state. It logs
// at most once a minute.
func (s *Store) refused(key string, err error) {
	s.errors.Add(1)
	s.warnOneOperation("cloudg fleet: Redis refused an operation; it went on with local limits",
		"key", key, "error", err.Error())
}

// warnOneOperation logs msg at Warn, unless a line about one operation
// that went on with local limits (a refusal, an unreadable answer, a late
// one) was logged less than a minute ago.
func (s *Store) warnOneOperation(msg string, attrs ...any) {
	now := time.Now().UnixNano()
	if last := s.refusedLogged.Load(); now-last >= int64(time.Minute) && s.refusedLogged.CompareAndSwap(last, now) {
		s.logger().Warn(msg, attrs...)
	}
}

// call runs script within the operation timeout, whichever client the
// store has: one that ignores its context's deadline is left to finish
// alone when the timeout passes. Once Close began, it runs it by Close's
// deadline (closeBy), and sends nothing past it.
func (s *Store) call(script *script, keys []string, args []any) ([]any, error) {
	d := s.cfg.timeout
	if by := s.closeBy.Load(); by != 0 {
		if d = min(d, time.Duration(by)-mono()); d <= 0 {
			return nil, context.DeadlineExceeded
		}
	}
	ctx, cancel := context.WithTimeout(s.ctx, d)
	defer cancel()
	if s.bounded {
		return s.heard(script.run(ctx, s.rdb, keys, args))
	}
	type answer struct {
		res []any
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := script.run(ctx, s.rdb, keys, args)
		ch <- answer{res, err}
	}()
	select {
	case a := <-ch:
		return s.heard(a.res, a.err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// heard passes on an operation's outcome, recording when Redis answered
// it (answered): any answer, an error reply or one no script gives
// included, shows that Redis and the host's way to it work.
func (s *Store) heard(res []any, err error) ([]any, error) {
	if _, reply := errorCode(err); err == nil || reply {
		storeMax(&s.answered, int64(mono()))
	}
	return res, err
}

// run runs a script with the operation timeout. It reports false when
// Redis does not answer, having switched to local limits, or when it
// refused this operation. Once the store is closed, no operation is sent
// (the client may be the caller's, still open): it goes on with local
// limits; one in flight at Close that fails (Open's client closed under
// it: "redis: client is closed") is not Redis failing either, and no
// outage is reported (no switch, no log, no error counted).
func (s *Store) run(script *script, keys []string, args ...any) ([]any, bool) {
	res, ok, _ := s.runOnce(script, keys, args...)
	return res, ok
}

// runOnce is run that also reports, when it fails, whether Redis did not
// run the script for certain (unsent): it was not sent (the store was on
// local limits already), Redis refused it, or the connection could not be
// made. A script sent without an answer may have run. After Close,
// unsent is false: nothing is written back any more.
func (s *Store) runOnce(script *script, keys []string, args ...any) (res []any, ok, unsent bool) {
	if s.shut.Load() {
		return nil, false, false
	}
	if s.degraded() {
		return nil, false, true
	}
	s.calls.Add(1)
	sent := mono()
	res, err := s.call(script, keys, args)
	switch {
	case err == nil && !script.fits(res), errors.Is(err, redis.Nil):
		// No script answers nil: nor is it a refusal (whether the script
		// ran is not known).
		s.unreadable(keys[0], res)
		return nil, false, false
	case err == nil:
		s.readable()
		return res, true, false
	case s.closed():
	case unavailable(err):
		if redirected(err) {
			s.redirKey.Store(&keys[0])
		}
		s.unanswered(err, sent)
	default:
		s.refused(keys[0], err)
	}
	return nil, false, notRun(err)
}

func (s *Store) key(parts ...string) string {
	k := s.cfg.prefix
	for _, p := range parts {
		k += ":" + p
	}
	return k
}

// scopeKeys returns the Redis keys of the bucket and the breaker of the
// scope whose state key is key (the governor's, unambiguous: each part of
// the scope escaped). The braces make key the hash tag of both, so that
// they share a Redis Cluster slot, as a script touching both needs; a
// brace the key holds (a provider a user names, a part a URL gives) is
// written %7B or %7D in it (hashTag), for a '}' would end the tag early:
// at the key's start it left the tag empty, and the cluster hashed each
// whole key, the bucket's and the breaker's apart (CROSSSLOT).
func (s *Store) scopeKeys(key string) (bucket, brk string) {
	tag := "{" + hashTag(key) + "}"
	return s.key(tag, "bucket"), s.key(tag, "breaker")
}

// hashTag returns key with its '{' and '}' written %7B and %7D, so that
// it is whole between the braces of a Redis Cluster hash tag. The key
// is the governor's escaped form, whose every '%' starts %25, %2F or
// %2A, so no two keys give one tag; a key without a brace comes back as
// it is.
func hashTag(key string) string {
	if !strings.ContainsAny(key, "{}") {
		return key
	}
	return braces.Replace(key)
}

var braces = strings.NewReplacer("{", "%7B", "}", "%7D")

// Bucket returns the shared bucket of the scope whose state key is key.
func (s *Store) Bucket(key string, spec state.BucketSpec, now time.Duration) state.Bucket {
	bk, brk := s.scopeKeys(key)
	return newSharedBucket(s, bk, brk, spec) // registered at its first lease request or give-back
}

// Breaker returns the shared breaker of the scope whose state key is key:
// the one the store made for key with the same spec while anything holds
// it (a governor's scope, a read's handle), so that the process has one
// view of the scope's breaker, which every answer that carries the
// breaker refreshes and whose local breaker's knowledge of an outage is
// written back, however often it is asked: a governor's read of a scope
// it holds no entry of (Inspect), another governor on the store. A
// breaker of other settings (a Configure changed them, another governor
// has its own) is made anew, and kept beside the other while held, each
// refreshed and written back. spec.Threshold is read as the
// in-process breaker reads it, below 1 as 1 and above 1<<28 (the most
// failures it counts) as 1<<28, so that the fleet's breaker and its local
// fallback open at the same count.
func (s *Store) Breaker(key string, spec state.BreakerSpec) state.Breaker {
	spec.Threshold = min(max(spec.Threshold, 1), breaker.MaxThreshold)
	_, brk := s.scopeKeys(key)
	for {
		v, found := s.breakers.Load(brk)
		var live []weak.Pointer[sharedBreaker]
		if found {
			refs := v.(*breakerRefs)
			for _, w := range refs.ws {
				if b := w.Value(); b != nil && b.spec == spec {
					return b
				}
			}
			live = refs.live()
		}
		b := newSharedBreaker(s, brk, spec)
		refs := &breakerRefs{append(live, weak.Make(b))}
		if found && !s.breakers.CompareAndSwap(brk, v, refs) {
			continue // another Breaker of the key came first: its breaker may be this one's
		}
		if !found {
			if _, loaded := s.breakers.LoadOrStore(brk, refs); loaded {
				continue
			}
		}
		for w := b.maxWait().Microseconds(); ; {
			if l := s.longestWait.Load(); l >= w || s.longestWait.CompareAndSwap(l, w) {
				break
			}
		}
		return b
	}
}

// breakerRefs is the store's registry entry of a breaker key: weak
// pointers to the breakers of the key it made, one for each spec. It is
// not changed once stored: a change stores a new one.
type breakerRefs struct {
	ws []weak.Pointer[sharedBreaker]
}

// live returns a new slice of the pointers whose breaker is not gone.
func (r *breakerRefs) live() []weak.Pointer[sharedBreaker] {
	live := make([]weak.Pointer[sharedBreaker], 0, len(r.ws)+1)
	for _, w := range r.ws {
		if w.Value() != nil {
			live = append(live, w)
		}
	}
	return live
}

// budgetKey is the key of provider's retry budget, before the prefix: its
// name escaped as a scope's part is ('%', '/' and '*'), then its braces
// as in a hash tag (hashTag), so that the name is whole between the
// braces of the key's tag and no two providers share a key. A provider's
// name a user gives may hold a brace: "}x" would end the tag early.
func budgetKey(provider string) string {
	return "{budget:" + hashTag(scopekey.Format(&[5]string{provider}, true, 1)) + "}"
}

// Budget returns the shared retry budget of provider: one per provider,
// of the size asked last, however often the governor asks (it does on
// every Reset and Configure). Asked again, it keeps the tokens Redis holds,
// where the in-process store makes a full new budget: one process's Reset,
// or each process of a rolling deploy resizing it, does not hand the whole
// fleet a full budget of retries. A budget grown keeps what it held, and
// reads as spent by the difference until the successes' refunds fill it;
// one shrunk holds at most its new size, and so does the budget of a fleet
// whose processes ask for different sizes: each clamps it to its own.
func (s *Store) Budget(provider string, size int) state.Budget {
	key := s.key(budgetKey(provider))
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.budgets[key]; ok {
		b.resize(size)
		return b
	}
	b := newSharedBudget(s, key, size)
	s.budgets[key] = b
	return b
}

func (s *Store) flushBudgets() {
	s.mu.Lock()
	bs := make([]*sharedBudget, 0, len(s.budgets))
	for _, b := range s.budgets {
		bs = append(bs, b)
	}
	s.mu.Unlock()
	for _, b := range bs {
		b.flush()
	}
}

// share returns this process's share of a fleet-wide limit while Redis
// does not answer: divided by the live processes at the last heartbeat, or
// by the processes expected (WithExpectedProcesses) when more.
func (s *Store) share(v float64) float64 { return v / float64(s.sharers()) }

// sharers returns what share divides by: the live processes counted at the
// last heartbeat, or the processes expected when more.
func (s *Store) sharers() int64 { return max(1, s.procs.Load(), s.cfg.expected) }

func (s *Store) ttlMS() int64 { return s.cfg.keyTTL.Milliseconds() }

var _ state.Store = (*Store)(nil)

// resendable reports whether a write-back first sent at first (mono) may
// be sent again at t: within the keys' TTL less the operation timeout of
// it, while Redis still holds its record of the write-backs it applied
// (the key, or the record alone, goes past that TTL), so that one it
// applied is not applied again.
func (s *Store) resendable(first, t time.Duration) bool {
	return t-first <= s.cfg.keyTTL-s.cfg.timeout
}
