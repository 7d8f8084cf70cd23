// Package fleet shares one governor's learned state among the processes of
// a fleet, on Redis.
//
// AWS throttles per account, region and API action, ARM per subscription:
// eight collectors against the same accounts with per-process limits send
// eight times the rate, each learning the same lesson alone. With fleet
// mode the processes share, per scope, the leaf's adaptive rate (a throttle
// seen by any process halves it for all, still once per one-second event),
// the pauses for Retry-After, the provider and account buckets, the
// breakers (open, and half-open with one probe for the whole fleet) and
// the retry budget. Stats stay per process.
//
// A Store implements state.Store: give it to a governor with
// resilience.WithStateStore.
//
//	store, err := fleet.Open("rediss://user:pass@redis:6379/0")
//	...
//	defer store.Close()
//	gov, err := resilience.NewGovernor(cfg, resilience.WithStateStore(store))
//	resilience.SetDefault(gov)
//
// Open reads go-redis's URL forms: one server, a Redis Cluster (its nodes
// as addr= parameters) or Sentinel (master_name=); New takes any
// redis.UniversalClient the caller made (a custom TLS configuration, say).
//
// Every update is a Lua script that runs atomically in Redis with Redis's
// clock (TIME); no lock is held across a call.
//
// # Leases
//
// A call does not pay a Redis round trip for every token when the rate
// allows more: a process borrows up to n tokens at a time, n being the
// tokens the fleet's current rate gives in one lease window (100 ms by
// default) divided among the live processes, capped at 64. Taking a
// borrowed token is local (a mutex, no I/O); tokens not used within the
// window go back to Redis with the next request, or when the governor
// drops the bucket (the scope went quiet and the bucket idle, or a
// Configure or Reset replaced it with a new one): the bucket is a
// state.Dropper, told so, and until its lease goes, Redis counts its
// tokens as taken. Store.Close gives back the leases of the buckets the
// governor still holds, so that a process that shuts down leaves none
// spent. What it trades: a process
// may spend the tokens it borrowed after another process's throttle halved
// the rate (at most n per process; the throttled process drops its own
// lease at once). At 20 rps shared by 8 processes the lease is one token,
// so every token is a round trip and pacing is exact; at 1,000 rps in one
// process it is 64 tokens, one round trip per 64 calls. WithLeaseWindow
// and WithMaxLease tune it. A bucket's snapshot (the governor's Inspect)
// counts the tokens the process's lease holds as the bucket's while the
// lease lasts, so that its Queued counts the fleet's callers waiting for
// a token, not tokens borrowed; those of other processes' leases, which Redis cannot tell
// from their callers', count as queued until their times: at most a lease
// window ahead, but for the tokens of callers refused (their limit) or
// gone while they waited for a lease answer, which stay in the lease at
// those callers' places in the fleet's queue, however far ahead; a pause
// set meanwhile moves them past its end (a lease dropped for a pause gives
// its tokens back, but a process that makes no call during the pause
// keeps its lease).
//
// A fleet bucket gives its burst as the in-process bucket does: the tokens
// its stored balance holds are usable at once, whether a process takes
// them from an answer or from its lease (at 10 rps with a burst of 100, 20
// tokens taken one after the other all wait 0); the tokens after them are
// usable at the fleet's rate.
//
// The callers that find the lease empty queue for the lease request in
// flight; the next request asks for a token for each of them, so that no
// caller waits for more than two Redis answers, each bounded by
// WithTimeout. The store's buckets also have a method that state.Bucket
// lacks, ReserveContext(ctx, now) (wait, err): Reserve that stops waiting
// for Redis when ctx ends, taking nothing. The wait a caller is given
// counts from the time it has its token.
//
// Breakers are read from a cache that every token request refreshes and
// that a process trusts for at most a second (WithBreakerStaleness); a
// reading replaces the cache only when it is newer (its request was sent
// after the cache's answer came back, or Redis read the breaker later by
// its clock), so that a late answer does not undo what the process knows. A
// success is sent to Redis when the cache shows failures, and otherwise
// once per WithBreakerStaleness period, so that it resets the failures of
// other processes that the cache does not show yet: while a process keeps
// succeeding, others' failures count as consecutive across its successes
// only within about one period. A store keeps one breaker for a scope and
// its settings while anything holds it (Store.Breaker gives it again): a
// read of a scope the governor holds no entry of (Inspect) goes through
// the breaker the scope's calls use, if any. The refunds of successes to
// the retry budget are sent a token at a time.
//
// A dead scope (breaker_dead_seconds) is found by each process from the
// answers of its own calls; the process that finds it opens the fleet's
// breaker, saying why, so that every process refuses its calls, and
// Delay and Inspect say so while the breaker is not closed. A success
// Redis recorded for the breaker (the fleet's probe that closed it, or a
// success sent as above, whether or not it found failures to reset),
// whichever process's, ends every process's streak of failures that began
// before it, as its own success would: no process finds the scope dead
// while another process's calls to it succeed, nor again, opening the
// fleet's breaker again, once the fleet's probe found it alive.
//
// # When Redis fails
//
// No Redis wait outlasts the timeout (WithTimeout, 250 ms), whichever
// client the store has: Open's clients end a call at its deadline, and a
// call of any other client is left to finish alone. Nor does any client
// send a script twice: the scripts are not idempotent (the write-backs
// are made so: see below), and the store's
// commands are ones go-redis does not retry (whatever the client's
// MaxRetries), so that an answer lost to a closed connection is an
// operation Redis did not answer, never one run again. An operation Redis
// does not answer in time goes on with local limits, and counts as a
// Redis error (StoreStats.RedisErrors); the rest of the process stays on
// the shared state while Redis answers the operations after it, so that
// a busy host's scheduling, delaying one answer or those of the
// operations in flight at one moment past the timeout, costs no more. A
// Redis that gives no answer to an operation sent a timeout or more after
// the first one it did not answer, and none between them (frozen,
// unreachable, dead when go-redis tries a refused connection again until
// the operation's deadline), switches the process to local limits within
// two timeouts of its first unanswered operation while operations keep
// coming, and at the heartbeat's probe otherwise. Only a timeout is taken
// for a late answer: a Redis that closes or resets the connection under
// an operation (killed, restarted), refuses the connection, or refuses
// every command (loading, a replica, a cluster down, an authentication
// failure, out of memory) switches it at that operation (a connection
// refused or lost does not when Redis answered another operation since
// this one was sent: what it met is older than that answer), and so does the first operation unanswered before Redis ever
// answered the store (nothing shows yet that a Redis is there). While Redis stays silent, a
// call waits for it at most two timeouts; a Redis that answers some
// operations between its late ones (a cluster with one node frozen) is
// not left, and each operation its silence holds waits a timeout. The
// local limits are the
// buckets (each with its ceiling, burst and floor) and the fleet's retry
// budget as last read, divided by the number of live processes at the
// last heartbeat (each process announces itself every second), or by
// WithExpectedProcesses when more (a process that starts during an outage
// has counted only itself), each bucket starting at that share of the
// fleet's last known rate and climbing from there as its controller does,
// up to its share of the ceiling, slowing on the process's own throttles;
// and the breakers as the process last knew them (one the fleet opened
// stays open until its cooldown ends, with the fleet's current cooldown,
// which a failed local probe doubles; a closed one keeps its failures).
// The switch is logged once and counted (StoreStats.Fallbacks).
// The heartbeat keeps probing, and the first answer switches back to the
// shared state (rebuilt from the defaults if Redis lost it), after writing
// back what the local breakers learned meanwhile (they opened, let a probe
// through, closed after one; the failures they counted, a success that
// reset them): the local state replaces the fleet's when it changed after
// the fleet's last did, so that the fleet neither forgets a scope found
// dead during the outage nor keeps open one found alive, and the failures
// join the fleet's in the order they came (those of several processes add
// up; a success drops the failures before it), so that the fleet's breaker
// opens when the failures seen warrant it. The write-backs (a breaker's,
// and a bucket's of its throttles, below) are the scripts the store sends
// again when their answer was lost (Redis may have run them): at the next
// heartbeat, the same, each event's age counted from the new send; each
// carries its number, and Redis, which records in the breaker's or the
// bucket's key the last one of that breaker or bucket it applied, applies
// it at most once, so that what the outage taught reaches the fleet, once,
// whether the first send ran or not. The throttles Redis did not
// run (it refused the throttle's script, or did not answer it) are
// written back too, each congestion event as of the time it came, so that
// they slow the fleet as they slowed the local limits, and the fleet does
// not go on at the old rate after the outage. Each write-back tells a rate
// of the fleet: the local limits' rate times what the fleet's rate was
// divided by for them, or the rate its events leave (halved once per
// congestion event) when higher. The write-backs of one outage (within
// three heartbeats of the first, with no other decrease between) leave
// the fleet's rate at the mean of what they told, never above where it
// was: several processes' throttles add up to the rates their local
// limits reached together, not to a product of every process's halvings.
// A scope whose breaker holds
// what was not written back yet is not reclaimed by the governor, and the
// store holds such a breaker until it is written back, whatever lets go of
// it meanwhile (the governor's Reset, a Configure that replaced it).
// Store.Close writes back what was not written back yet when Redis answers
// it (it may have come back since the last heartbeat), within its
// deadline, and lets go of the rest: a breaker it let go of is then
// pristine, its scope reclaimable, once its local breaker is closed with
// no failures. At
// either switch, the callers already queued keep their tokens and their
// times, and the new bucket is charged for them: they take the head of its
// queue instead of going on top of its balance. A failover is such an outage:
// local limits until the client reaches the new master, then the state the
// new master holds. No call fails because Redis failed.
//
// Redis refusing one operation on its keys (a key of another type, an
// ACL that does not cover it) is that operation's: it goes on with local
// limits, the rest of the process stays on the shared state, and the
// refusal is logged at most once a minute.
//
// Every fallback to a local breaker (an outage's start, one operation
// Redis refuses or does not answer, every call after Close) starts from
// the latest state of the fleet's breaker this process read, once what an
// earlier outage's local breaker learned was written back: a local breaker
// that holds nothing unwritten is made again from a newer reading (or at a
// new outage), so that a process does not refuse calls for the rest of a
// cooldown the fleet has ended since. One that holds what Redis has not
// heard of yet (it opened, let a probe through or closed, a success reset
// its failures) stays until it is written back, and the failures it alone
// counted still count on the one made after it and are still written
// back, until a success ends their run: one the local breaker counts, or
// one Redis runs (a success is then sent to Redis even in a period whose
// success was sent already). So for a local bucket: an outage's serves that outage, and once
// the store is back on the shared state the next fallback makes one from
// the fleet's rate as last read (a pause the process knows of holds it
// too), not from the rate a throttle left on the outage's local bucket.
// And for the local retry budget: once back on the shared state, it
// starts from the fleet's budget as last read, not from an outage's,
// spent then; after Close it is the budget alone, which the successes
// refill as they refill the in-process one.
//
// # What Redis holds is not trusted
//
// The scripts validate what they read. A key of another type, and a
// bucket or breaker holding a value the local settings could not have
// written (not a finite number, a rate below the floor and below a token
// per horizon (the key's TTL and the longest pause), a pause past the
// key's TTL and the longest pause ahead, a balance time past the key's own
// expiry, a breaker state, cooldown, wait or change time no settings
// give), count as absent: a script that writes deletes such a key and
// rebuilds it from the local settings; a rate
// above the ceiling (one lowered by configuration) is brought down to it,
// and one below the floor (another process's lower floor) up to it, a
// breaker's cooldown or wait past its longest, within the horizon (another
// process's longer cooldown), down to it; a
// budget below zero is full. A queue of reserved tokens is as long as the callers queued make
// it, past that horizon if need be, and is kept with the bucket's rate:
// every write puts the key's expiry past the time the bucket is full again.
// Every script that writes gives the keys it touches their TTL again, so
// that no key lives forever, counted from the time what the key holds
// stops mattering (a bucket's pause over and its balance full again, a
// breaker's cooldown over), so that no key expires with a pause, a queue
// or an open breaker in it. A read (the governor's Inspect and Delay, a
// bucket's look for a pause) changes nothing in Redis: not a key's TTL,
// not a key it finds invalid. An answer that is not what its script answers (another type or
// length, a number that is none, a lease of fewer tokens than asked for,
// a closed breaker refusing a call, a nil) is not read: that operation
// goes on with local limits, as one Redis refused, and the store logs it
// at most once a minute. Three such answers in a row, none readable
// between them, are an outage, as a Redis that does not answer is (a
// server that cannot run the scripts would otherwise cost a round trip
// per operation for nothing): the process switches to local limits,
// counts and logs the switch, and the heartbeat probes until Redis answers
// it as its script does (echoing the process's id).
//
// # Keys
//
// Keys are namespaced by a prefix (WithPrefix, default "cloudg") and
// expire when idle (WithKeyTTL, default 15 minutes): that long after their
// last write, or after what they hold stops mattering if later. A scope's
// keys are built from the governor's state key, in which each part of the
// scope is escaped, so that no two scopes share a key, and no account's or
// provider's bucket a leaf's; that key, in braces, is the Redis Cluster
// hash tag that keeps a scope's bucket and breaker in one slot, a brace
// it holds written %7B or %7D, so that the tag is the whole key whatever
// a provider's name or a part holds. A brace in the prefix is written
// %7B or %7D in the keys too (WithPrefix), so that it takes no key's tag.
//
// # Controllers
//
// The shared leaf runs the in-process bucket's controllers with its
// constants: AIMD, or the measured-goodput controller, whose success
// counts are the fleet's: each process counts its successes per 100 ms
// slot and sends them with its next lease request or throttle, or within
// a slot, into the bucket's Redis state, where a throttle measures what
// the whole fleet was served. As in process, a first event less than a
// second after counting began measures nothing (what was served then is
// mostly the provider's burst, whose counts from the other processes may
// not be in Redis yet); it moves the rate to 97% of itself (in process,
// to half of it, starting the moving mode below). After more than 5 s
// without a success since the last one or the previous event, counting
// starts again, and an event then measures nothing: it halves the rate,
// as in process.
// The goodput controller's sprint (doubling the rate when the queue of
// callers shows the demand ending) is a rule fleet mode leaves out: the
// callers queued in a fleet hold tokens leased at fixed times, which a
// rate change does not move, so a sprint would reach none of them. Its
// moving mode (draining at twice the rate every few seconds once the limit
// was seen to move; in process that first event halves the rate and
// starts it) is not in the shared leaf's script either.
package fleet
