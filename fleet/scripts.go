package fleet

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/internal/budget"
	"github.com/cloudg/cloudg/internal/hint"
)

// The Lua scripts that update the shared state. Each runs atomically in
// Redis and reads the time from Redis (TIME), so that every process of the
// fleet agrees on it; times are microseconds since the Unix epoch. Numbers
// that must survive Lua's conversion of replies to integers are returned as
// strings.
//
// Nothing read from Redis is trusted: anyone with access to the keys, an
// older version or a bug may have written anything there. A key of another
// type counts as absent, and so does a hash holding a value the local
// settings could not have written (not a number, infinite, a rate below
// the floor and below a token per horizon, a time past the horizon); a
// script that writes deletes it,
// and gives the keys it touches their TTL again (one it only reads, when
// it has none), counted from the time their state stops mattering: the
// end of a bucket's pause and the time its balance is full again, the end
// of a breaker's cooldown or of its probe's lease. A script that only
// reads (bucketSnapshotScript, breakerSnapshotScript: a read of the
// fleet's state) changes nothing, not a key's TTL, not an invalid key.

// A script is one of the Lua scripts below. The store runs it with
// EVALSHA, and with EVAL when Redis does not hold it yet, as go-redis's
// Script.Run does, but in commands that go-redis never sends again: the
// scripts are not idempotent (a failure counted twice may open a breaker,
// tokens given back twice raise the balance by two), and a connection that
// closes after Redis ran a script and before its answer arrived would
// otherwise make go-redis send it again (MaxRetries, 3 by default, and a
// cluster client's retries on a network error, which MaxRetries does not
// govern). A script runs at most once per call, whatever the client's
// options: one whose answer is lost is an operation Redis did not answer.
// The store sends the write-backs again itself when their answer was
// lost (sharedBreaker.writeBack, sharedBucket.writeOwed), which
// breakerLearnedScript and throttledScript apply at most once by their
// number (applied).
type script struct {
	src, hash any    // strings, boxed once: the command's arguments
	shape     string // what its reply holds (see fits)
}

func newScript(src string) *script {
	h := sha1.Sum([]byte(src))
	return &script{src: src, hash: hex.EncodeToString(h[:])}
}

// answers sets the shape of the script's reply, which fits checks: one
// letter per element, n for a finite number (an integer, or a string that
// reads as one), s for a breaker's state, S for a breaker's state or
// "invalid", and . for any value.
func (sc *script) answers(shape string) *script {
	sc.shape = shape
	return sc
}

// The commands' names, boxed once.
var evalsha, eval any = "evalsha", "eval"

// onceCmd is a command go-redis does not retry.
type onceCmd struct{ *redis.Cmd }

func (onceCmd) NoRetry() bool { return true }

// run runs the script on keys with args, once.
func (sc *script) run(ctx context.Context, rdb redis.UniversalClient, keys []string, args []any) ([]any, error) {
	res, err := sc.send(ctx, rdb, evalsha, sc.hash, keys, args)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") { // not run: Redis does not hold it
		res, err = sc.send(ctx, rdb, eval, sc.src, keys, args)
	}
	return res, err
}

func (sc *script) send(ctx context.Context, rdb redis.UniversalClient, name, payload any, keys []string, args []any) ([]any, error) {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, name, payload, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // a cluster client routes it by its first key
	}
	_ = rdb.Process(ctx, onceCmd{cmd})
	return cmd.Slice()
}

// common are the helpers of every script.
const common = `
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function num(s) return string.format('%.0f', s) end
-- finite is true for a number that is neither NaN nor infinite.
local function finite(x) return x ~= nil and x == x and x > -math.huge and x < math.huge end
-- why_of reads why a breaker opened: one of the reasons the governor
-- gives, '' for any other value or none.
local function why_of(v)
  if v == 'throttling' or v == 'errors' or v == 'throttled for good' or v == 'down' then return v end
  return ''
end
-- call runs a command on key; when key holds a value of another type
-- (WRONGTYPE), it deletes it and runs the command again on nothing. Any
-- other error (OOM, READONLY, NOPERM) ends the script with it, deleting
-- nothing: a write refused for memory would otherwise delete the key, and
-- then run (a script that has written is not refused for memory any more).
local function call(cmd, key, ...)
  local r = redis.pcall(cmd, key, ...)
  if type(r) == 'table' and r.err then
    if string.sub(r.err, 1, 10) ~= 'WRONGTYPE ' then error(r) end
    redis.call('DEL', key)
    r = redis.call(cmd, key, ...)
  end
  return r
end
-- read runs a read command on key for a script that only reads: when key
-- holds a value of another type, it answers {}, as for no key, and
-- leaves it as it is.
local function read(cmd, key, ...)
  local r = redis.pcall(cmd, key, ...)
  if type(r) == 'table' and r.err then return {} end
  return r
end
-- wb_of reads a write-back's record and number (see applied): nil unless
-- the record names a field 'wb:...' and the number is one, at least 1.
local function wb_of(f, n)
  n = tonumber(n)
  if type(f) ~= 'string' or string.sub(f, 1, 3) ~= 'wb:' or not finite(n) or n < 1 then return nil, nil end
  return f, n
end
-- applied reports whether Redis applied the write-back numbered seq of a
-- process's limit already: the record wbf, a field of key, holds the
-- number of the last one it applied and when ('seq time'), and a
-- write-back sent again (its first answer lost) is numbered no higher.
local function applied(key, wbf, seq)
  local m = string.match(redis.call('HGET', key, wbf) or '', '^(%S+)')
  local last = tonumber(m or '')
  return last ~= nil and last >= seq
end
-- record notes in wbf, a field of key, that Redis applied the write-back
-- seq at now, and drops the other records of key older than ttl (ms) and
-- skew (µs): their processes send no write-back that old again; and so
-- the tells of rounds (throttledScript's 'wt:' fields) that ended as long
-- ago.
local function record(key, wbf, seq, now, ttl, skew)
  local keep = now - tonumber(ttl) * 1000 - skew
  local h = redis.call('HGETALL', key)
  for i = 1, #h, 2 do
    local p = string.sub(h[i], 1, 3)
    if (p == 'wb:' or p == 'wt:') and h[i] ~= wbf then
      local m = string.match(h[i + 1], '^%S+%s+(%S+)$')
      local at = tonumber(m or '')
      if not finite(at) or at < keep then redis.call('HDEL', key, h[i]) end
    end
  end
  redis.call('HSET', key, wbf, num(seq) .. ' ' .. num(now))
end
-- expire gives key the key TTL (ttl, in ms) counted from at, the time its
-- state stops mattering (microseconds on Redis's clock: the end of a pause
-- or a cooldown), or from now when that time is past: a key outlives what
-- it holds by the TTL, however short the TTL.
local function expire(key, ttl, now, at)
  local ms = tonumber(ttl)
  if at > now then ms = ms + math.ceil((at - now) / 1000) end
  redis.call('PEXPIRE', key, num(ms))
end
-- touch gives key its TTL again, as expire does, when someone made it
-- persistent.
local function touch(key, ttl, now, at)
  if redis.call('PTTL', key) == -1 then expire(key, ttl, now, at) end
end
`

// A bucket is a hash {t0, paused, rate, ldec, lthr, linc} and, for the
// goodput controller, its climbs since the last throttle {gcl} and its
// success counts {born, gfrom, gn, gk, gcur, gprev, glast} (see the
// controllers below): the balance at time t is (t - t0) / interval tokens,
// capped at the capacity, as in the in-process bucket, with its
// controllers but for what the controllers' block below says: the tokens
// of the stored balance are usable at once (the burst), the others at the
// rate.
// Every bucket script takes the arguments of bucketArgs (ceiling,
// capacity/rate ratio, floor, mode, key TTL, horizon, clock skew, then the
// controllers' constants from package bucket), and its own from ARGV[ARG0]
// on.
const bucketPrelude = common + `
local CEILING, RATIO, FLOOR, MODE = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local TTL_MS, HORIZON_US, SKEW_US = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local DECREASE_FACTOR, DECREASE_INTERVAL_US = tonumber(ARGV[8]), tonumber(ARGV[9])
local INCREASE_INTERVAL_US, INCREASE_STEP, MIN_INCREASE = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local GOODPUT_SHARE, GOODPUT_CAP, GOODPUT_STEP = tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15])
local GOODPUT_WINDOW_US, SLOT_US = tonumber(ARGV[16]), tonumber(ARGV[17])
local GOODPUT_QUIET_US, GOODPUT_CLIMB_US, GOODPUT_MAX_DOUBLINGS = tonumber(ARGV[18]), tonumber(ARGV[19]), tonumber(ARGV[20])
local ARG0 = 21
local NEVER = -1e18

-- The goodput controller's counts (MODE 2 only): born, gfrom, gn, gk,
-- gcur, gprev, glast, in this order; see served below.
local SERVED_FIELDS = {'born', 'gfrom', 'gn', 'gk', 'gcur', 'gprev', 'glast'}
local function fresh_served(now)
  return {born = now, from = 0, n = 0, k = 0, cur = 0, prev = 0, last = 0, dirty = true}
end
-- load_served reads the counts from h[i], h[i+1], ...: absent ones are
-- those of counting that starts now; nil when one is invalid (a time past
-- now, a negative count, a window that has not begun).
local function load_served(h, i, now)
  local past = now + SKEW_US
  local g = {born = tonumber(h[i] or now), from = tonumber(h[i + 1] or 0), n = tonumber(h[i + 2] or 0),
    k = tonumber(h[i + 3] or 0), cur = tonumber(h[i + 4] or 0), prev = tonumber(h[i + 5] or 0),
    last = tonumber(h[i + 6] or 0), dirty = not h[i]}
  if finite(g.born) and g.born <= past and finite(g.from) and g.from >= 0 and g.from <= past + SLOT_US and
      finite(g.n) and g.n >= 0 and finite(g.k) and g.k >= 0 and g.k == math.floor(g.k) and
      g.born + g.k * GOODPUT_WINDOW_US <= past and finite(g.cur) and g.cur >= 0 and
      finite(g.prev) and g.prev >= 0 and finite(g.last) and g.last >= 0 and g.last <= past then
    return g
  end
  return nil
end

local function fresh(b, now)
  b.rate = CEILING
  b.interval = 1000000 / b.rate
  b.capus = math.max(1, RATIO * b.rate) * b.interval
  b.t0, b.paused = now - b.capus, 0
  b.ldec, b.lthr, b.linc, b.climbs = NEVER, NEVER, NEVER, 0
  if MODE == '2' then b.g = fresh_served(now) end
end

-- load_bucket reads the bucket at key; invalid state is deleted and the
-- bucket starts afresh, full at its ceiling. With ro (a script that only
-- reads), nothing is deleted: invalid state, or a key of another type,
-- reads as a fresh bucket and is left for the next write to repair. A rate above the ceiling (one
-- lowered by configuration) is brought down to it, and one below the floor
-- (another process's settings, with a lower floor, let it go there) up to
-- it, the bucket keeping its pause and its queue, when it gives a token
-- at least once per horizon: a slower one is invalid. The goodput
-- controller's counts are read only by a bucket of MODE 2.
--
-- A pause ends within the horizon (the key's TTL and the longest pause),
-- but a queue of reserved tokens reaches as far as the callers queued make
-- it (each caller waiting for an answer is given a token however far
-- ahead, and a pause moves the queue later by as much): t0, the time the
-- balance is zero, is bounded by the key's own expiry instead, which
-- every write puts past the time the bucket is full again (save_bucket),
-- with the clock skew a failover may bring; by the horizon when that is
-- later (a key written by an older version, or made persistent).
local function load_bucket(key, now, ro)
  local h
  local call = ro and read or call
  if MODE == '2' then
    h = call('HMGET', key, 't0', 'paused', 'rate', 'ldec', 'lthr', 'linc', 'gcl', unpack(SERVED_FIELDS))
  else
    h = call('HMGET', key, 't0', 'paused', 'rate', 'ldec', 'lthr', 'linc')
  end
  local t0, paused, rate = tonumber(h[1]), tonumber(h[2]), tonumber(h[3])
  local ldec, lthr, linc = tonumber(h[4]), tonumber(h[5]), tonumber(h[6])
  local soon, past = now + HORIZON_US, now + SKEW_US
  -- The key's expiry is read only for a queue past the horizon (rare).
  local queue_ok = finite(t0) and (t0 <= soon or t0 <= now + redis.call('PTTL', key) * 1000 + SKEW_US)
  local b = {}
  -- gcl, the goodput controller's climbs, is absent from a bucket written
  -- before it existed: none since the last throttle.
  local climbs = 0
  if MODE == '2' then
    climbs = tonumber(h[7] or 0)
    b.g = load_served(h, 8, now)
  end
  if queue_ok and finite(paused) and paused <= soon and finite(rate) and (rate >= FLOOR * (1 - 1e-9) or rate * HORIZON_US >= 1e6) and
      finite(ldec) and ldec <= past and finite(lthr) and lthr <= past and finite(linc) and linc <= past and
      finite(climbs) and climbs >= 0 and climbs == math.floor(climbs) and (MODE ~= '2' or b.g) then
    b.rate = math.min(math.max(rate, FLOOR), CEILING)
    b.interval = 1000000 / b.rate
    b.capus = math.max(1, RATIO * b.rate) * b.interval
    b.t0, b.paused = t0, paused
    b.ldec, b.lthr, b.linc, b.climbs = ldec, lthr, linc, climbs
    return b
  end
  if not ro and redis.call('EXISTS', key) == 1 then redis.call('DEL', key) end
  fresh(b, now)
  return b
end
-- set_rate keeps stored tokens (capped; dropped when draining) and keeps a
-- queue of callers as a time: those waiting go when they were told (the
-- in-process bucket's setRate keeps a queue as a number of tokens, its
-- callers moving to the new rate; in a fleet they hold tokens leased at
-- fixed times).
local function set_rate(b, now, r, drain)
  local eff = math.max(now, b.paused)
  b.t0 = math.max(b.t0, eff - b.capus)
  local bal = (eff - b.t0) / b.interval
  b.rate = r
  b.interval = 1000000 / r
  local cap = math.max(1, RATIO * r)
  b.capus = cap * b.interval
  if bal > 0 then
    if drain then bal = 0 end
    if bal > cap then bal = cap end
    b.t0 = eff - bal * b.interval
  end
end
-- pause holds every caller until now + d and leaves no stored burst: the
-- balance is empty at its end, so that the callers who waited it out leave
-- at the rate, not all at once; a queue of reserved tokens moves later by
-- the new part of the pause (its end: the callers who hold tokens of it
-- keep the times they were told, where the in-process bucket's move).
local function pause(b, now, d)
  if not finite(d) or d <= 0 then return end
  local untilp = now + math.min(d, HORIZON_US)
  if untilp <= b.paused then return end
  local start = math.max(now, b.paused)
  b.t0 = math.max(b.t0 + (untilp - start), untilp)
  b.paused = untilp
end
-- give_back gives back n tokens reserved and not used (a lease's that no
-- caller took, a caller's that would have passed its deadline): the
-- balance goes up by that many, never above the capacity.
local function give_back(b, now, n)
  n = tonumber(n) or 0
  if not finite(n) then n = 0 end
  b.t0 = math.max(b.t0 - math.max(0, n) * b.interval, math.max(now, b.paused) - b.capus)
end
-- settled is when the bucket's state stops mattering: its pause is over
-- and its balance full again, as a fresh bucket's.
local function settled(b) return math.max(b.paused, b.t0 + b.capus) end
-- save_bucket writes the bucket, and the goodput controller's counts when
-- they changed; the key lives for its TTL after the bucket has settled.
local function save_bucket(key, b, now)
  local f = {'t0', num(b.t0), 'paused', num(b.paused), 'rate', tostring(b.rate),
    'ldec', num(b.ldec), 'lthr', num(b.lthr), 'linc', num(b.linc)}
  if MODE == '2' then
    f[#f + 1] = 'gcl'
    f[#f + 1] = num(b.climbs)
  end
  local g = b.g
  if g and g.dirty then
    local v = {g.born, g.from, g.n, g.k, g.cur, g.prev, g.last}
    for i, name in ipairs(SERVED_FIELDS) do
      f[#f + 1] = name
      f[#f + 1] = num(v[i])
    end
  end
  redis.call('HSET', key, unpack(f))
  expire(key, TTL_MS, now, settled(b))
end

-- ===== The adaptive controllers =====================================
-- AIMD (MODE 1) and the measured-goodput controller (MODE 2), shared by
-- the fleet. They are internal/bucket's (Bucket.Throttle, Bucket.Success,
-- and served's count and rate), with its constants passed as arguments.
-- What differs: where the success counts live (in the bucket's hash, sent
-- by every process of the fleet with the time of each slot of SLOT_US, so
-- that a count that arrives late is counted at its own time), and what a
-- rate change does to the callers already queued, who hold tokens leased
-- at fixed times: set_rate keeps a queue as a time, where internal/bucket
-- moves its callers to the new rate. Keep these functions in step with
-- internal/bucket, but for those and for the goodput controller's sprint,
-- which fleet mode leaves out: a sprint moves the callers already queued
-- sooner, which a fleet's cannot be.
--
-- The goodput counts (b.g): from (gfrom) is the start of the slot after
-- the previous congestion event (0: none since counting started) and n
-- (gn) the successes since then; born is when counting (re)started, k (gk)
-- the number of the current window of GOODPUT_WINDOW_US since born, cur
-- and prev (gcur, gprev) the successes of that window and of the one
-- before, counted until the first event; last (glast) the last success (0:
-- none yet).

-- gap starts counting again at t, as if no event had happened, after more
-- than GOODPUT_WINDOW_US without a success since the later of the last
-- success and the slot after the latest event.
local function gap(g, t)
  local ref = math.max(g.last, g.from)
  if ref > 0 and t - ref > GOODPUT_WINDOW_US then
    g.from, g.n, g.born, g.k, g.cur, g.prev, g.dirty = 0, 0, t, 0, 0, 0, true
  end
end

-- count counts c successes at t, after a gap (see gap) counting again. A
-- count older than what it would be counted in (before the slot after the
-- latest event, or before the windows) is left out: those successes
-- answered requests sent before that event.
local function count(g, t, c)
  gap(g, t)
  g.last = math.max(g.last, t)
  g.dirty = true
  if g.from > 0 then
    if t >= g.from then g.n = g.n + c end
  elseif t >= g.born then
    local k = math.floor((t - g.born) / GOODPUT_WINDOW_US)
    if k == g.k + 1 then
      g.prev, g.cur, g.k = g.cur, 0, k
    elseif k > g.k then
      g.prev, g.cur, g.k = 0, 0, k
    end
    if k == g.k then g.cur = g.cur + c elseif k == g.k - 1 then g.prev = g.prev + c end
  end
end

-- record_served counts the successes of ARGV[first], ARGV[first+1], ...:
-- pairs of an age (microseconds before now) and a count, oldest first.
local function record_served(b, now, first)
  if not b.g then return end
  for i = first, #ARGV - 1, 2 do
    local age, n = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
    if finite(age) and age >= 0 and finite(n) and n > 0 then count(b.g, now - age, n) end
  end
end

-- goodput_rate is the rate the goodput controller moves to on a congestion
-- event at now: GOODPUT_SHARE of the successes per second since the slot
-- after the previous event (for the first, over the current and the
-- previous window), never above GOODPUT_CAP of the current rate; with
-- nothing served it multiplies by DECREASE_FACTOR. A first event less than
-- a second after counting began, with successes counted, measures nothing
-- (internal/bucket's goodputLeast): the successes of the fleet's other
-- processes reach Redis up to a slot after their answers, and most of what
-- was served then was the provider's burst; it moves to GOODPUT_CAP of the
-- rate. An event after a gap (see gap) measures nothing, as a success
-- after one starts counting again: the fleet was not drawing on the
-- provider's bucket then; with nothing counted since, it multiplies by
-- DECREASE_FACTOR. The next measurement starts at the slot after this
-- event.
local function goodput_rate(b, now)
  local g = b.g
  gap(g, now)
  local n, since, first = 0, g.from, g.from == 0
  if not first then
    n = g.n
  else
    local k = math.max(0, math.floor((now - g.born) / GOODPUT_WINDOW_US))
    if k == g.k then n = g.cur + g.prev elseif k == g.k + 1 then n = g.cur end
    since = math.max(g.born, g.born + (k - 1) * GOODPUT_WINDOW_US)
  end
  g.from, g.n, g.dirty = (math.floor(now / SLOT_US) + 1) * SLOT_US, 0, true
  local secs = (now - since) / 1000000
  if n == 0 or secs <= 0 then return b.rate * DECREASE_FACTOR end
  if first and secs < 1 then return GOODPUT_CAP * b.rate end
  return math.min(GOODPUT_CAP * b.rate, GOODPUT_SHARE * n / math.max(secs, 1))
end

-- throttle records a throttling answer: an adaptive bucket decreases its
-- rate (not below the floor) and drains its burst, at most once per
-- DECREASE_INTERVAL across the fleet. The goodput controller measures the
-- event as of at (now when nil: a throttle written back measures it as of
-- when it came). It returns 1 when it decreased.
local function throttle(b, now, at)
  b.lthr, b.climbs = now, 0
  if MODE == '0' or now - b.ldec < DECREASE_INTERVAL_US then return 0 end
  b.ldec = now
  local r = b.rate * DECREASE_FACTOR
  if b.g then r = goodput_rate(b, at or now) end
  r = math.max(FLOOR, r)
  local dec = 0
  if r < b.rate then dec = 1 else r = b.rate end
  set_rate(b, now, r, true)
  return dec
end

-- increase gives an adaptive bucket below its ceiling a step of the
-- ceiling back, at least MIN_INCREASE, and returns 1 when it did. AIMD
-- gives INCREASE_STEP after INCREASE_INTERVAL without a throttle, at most
-- once per INCREASE_INTERVAL across the fleet; the goodput controller
-- climbs after GOODPUT_QUIET_US without a throttle, at most once per
-- GOODPUT_CLIMB_US, by GOODPUT_STEP doubled with each climb since the
-- last throttle (at most GOODPUT_MAX_DOUBLINGS times).
local function increase(b, now)
  local quiet, every, step = INCREASE_INTERVAL_US, INCREASE_INTERVAL_US, INCREASE_STEP
  if MODE == '2' then
    quiet, every = GOODPUT_QUIET_US, GOODPUT_CLIMB_US
    step = GOODPUT_STEP * 2 ^ math.min(b.climbs, GOODPUT_MAX_DOUBLINGS)
  end
  if MODE == '0' or b.rate >= CEILING or now - b.lthr < quiet or now - b.linc < every then
    return 0
  end
  -- Steps added up may end a hair below the ceiling: that is the ceiling.
  local r = b.rate + math.max(step * CEILING, MIN_INCREASE)
  if r >= CEILING * (1 - 1e-9) then r = CEILING end
  set_rate(b, now, r, false)
  b.linc = now
  if MODE == '2' then b.climbs = b.climbs + 1 end
  return 1
end
-- ===== end of the adaptive controllers ===============================
`

// takeScript reserves a lease of up to ARGV[ARG0] tokens, after giving
// back ARGV[ARG0+1] unused ones: the tokens usable now and, in order, the
// next ones, as far as ARGV[ARG0+3] microseconds ahead, and at least
// ARGV[ARG0+4] (the callers waiting for this answer, each of whom takes one
// however far ahead it is). Before it, ARGV[ARG0+5] tokens are charged:
// those of callers already queued in this process's local limits, while
// Redis did not answer, who go at their own times; the bucket's queue
// moves behind them instead of its balance going on top of them. With
// ARGV[ARG0+2] (try only) set to 1 it takes one token, and only if it is
// usable now. KEYS[2] is the
// scope's breaker, whose state comes back with the answer, so that lease
// misses refresh every process's view of it.
// Reply: {granted, first_wait_us, interval_us, rate, breaker_state,
// breaker_wait_us, breaker_failures, usable_now, next_wait_us, now_us,
// breaker_cooldown_us, paused_us, breaker_why, breaker_ok_age_us}
// (now_us: Redis's clock when it read the breaker; see update): the first
// usable_now tokens of the lease are usable at once (the bucket's stored
// balance: its burst, as in the in-process bucket), and token i from
// usable_now on next_wait + (i-usable_now)*interval after now. first_wait
// is token 0's wait (0 when usable_now > 0). The breaker's reading ends
// with its cooldown_us; ARGV[ARG0+6] bounds its wait and cooldown (the
// longest cooldown of the store's breakers and the clock skew: past it,
// the state is 'invalid'), and the success counts follow from
// ARGV[ARG0+7].
var takeScript = newScript(bucketPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now)
local want = math.max(1, tonumber(ARGV[ARG0]) or 1)
local give = math.max(0, tonumber(ARGV[ARG0 + 1]) or 0)
local need = math.max(1, math.min(want, tonumber(ARGV[ARG0 + 4]) or 1))
local charge = math.max(0, tonumber(ARGV[ARG0 + 5]) or 0)
record_served(b, now, ARG0 + 7)
local eff = math.max(now, b.paused)
give_back(b, now, give)
if charge > 0 then b.t0 = b.t0 + math.min(charge * b.interval, HORIZON_US) end
local k, wait, usable, nextw = 0, 0, 0, 0
if ARGV[ARG0 + 2] == '1' then
  if now >= b.paused and now - b.t0 >= b.interval then
    k, usable = 1, 1
    b.t0 = b.t0 + b.interval
  end
else
  local ahead = math.floor((now + tonumber(ARGV[ARG0 + 3]) - b.t0) / b.interval)
  k = math.max(need, math.min(want, ahead))
  -- Token i is usable at t0 + (i+1)*interval, and not before the pause
  -- ends: those of the stored balance at once.
  wait = math.max(0, b.t0 + b.interval - now, b.paused - now)
  if now >= b.paused then usable = math.min(k, math.max(0, math.floor((now - b.t0) / b.interval))) end
  nextw = math.max(0, b.t0 + (usable + 1) * b.interval - now, b.paused - now)
  b.t0 = b.t0 + k * b.interval
end
save_bucket(KEYS[1], b, now)
local br = call('HMGET', KEYS[2], 'state', 'until', 'failures', 'cooldown', 'why', 'since', 'reset')
local bwait, bcool, blong = tonumber(br[2]) or 0, tonumber(br[4]) or 0, tonumber(ARGV[ARG0 + 6])
local bstate = br[1] or 'closed'
if not finite(bwait) or bwait > now + blong or not finite(bcool) or bcool > blong then bstate = 'invalid' end
-- The last success (see the breaker's ok_age): none known for times that
-- are not ones, or in the future.
local bsince, breset = tonumber(br[6]) or 0, tonumber(br[7]) or 0
if not finite(bsince) or bsince > now + SKEW_US then bsince = 0 end
if not finite(breset) or breset > now + SKEW_US then breset = 0 end
local boka = '-1'
if bstate ~= 'invalid' then
  local at = breset
  if bstate == 'closed' and bsince > at then at = bsince end
  if at > 0 then boka = num(math.max(0, now - at)) end
end
if br[1] then touch(KEYS[2], TTL_MS, now, bstate == 'invalid' and now or bwait) end
return {k, num(wait), num(b.interval), tostring(b.rate), bstate, num(math.max(0, bwait - now)), num(tonumber(br[3]) or 0),
  usable, num(nextw), num(now), num(math.max(0, bcool)), num(math.max(0, b.paused - now)), why_of(br[5]), boka}
`).answers("nnnnSnnnnnnn.n")

// giveScript gives back ARGV[ARG0] tokens reserved and not used (a caller
// whose wait would have passed its deadline): the balance goes up by that
// many, never above the capacity.
var giveScript = newScript(bucketPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now)
give_back(b, now, ARGV[ARG0])
save_bucket(KEYS[1], b, now)
return {1}
`).answers("n")

// throttleScript records a throttling answer with the controller of the
// bucket's mode; ARGV[ARG0] > 0 pauses it that many microseconds. First it
// gives back ARGV[ARG0+1] tokens: those of the lease the throttled process
// drops for a pause, which no caller took (the pause would otherwise move
// them past its end, where they would count as callers queued). The
// throttled process's success counts follow from ARGV[ARG0+2].
// Reply: {decreased, rate}.
var throttleScript = newScript(bucketPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now)
give_back(b, now, ARGV[ARG0 + 1])
record_served(b, now, ARG0 + 2)
local dec = throttle(b, now)
pause(b, now, tonumber(ARGV[ARG0]))
save_bucket(KEYS[1], b, now)
return {dec, tostring(b.rate)}
`).answers("nn")

// throttledScript writes back the throttles Redis did not run when they
// came (it refused their script, or did not answer): ARGV[ARG0+2] (k)
// congestion events, their first throttles ARGV[ARG0+3] to
// ARGV[ARG0+2+k] microseconds before the process sent it, oldest first,
// and the latest throttle ARGV[ARG0] microseconds before, as of then: the
// controller of the bucket's mode records each as throttleScript would
// have, a decrease at most once per DECREASE_INTERVAL across the fleet,
// counted from the event's time, so that a decrease Redis made since, or
// within the interval before it (a throttle of the same event by another
// process; this one, when its answer was lost and Redis ran it), takes
// its place; the last throttle is the later of Redis's and the latest
// one. The ages are counted from when the script runs, which is later
// than when the process sent it by the time the script took to reach
// Redis, at most ARGV[ARG0+1] microseconds (the operation timeout): an
// event came that much earlier at most, and a decrease Redis made within
// the interval before that earliest time takes its place too, so that a
// write-back slow on its way is not counted as an event of its own; the
// events of the write-back are as far apart as the process saw them.
// ARGV[ARG0+3+k] is what the process's local limits tell of the fleet's
// rate (their rate times what the fleet's rate was divided by for them; a
// negative number when unknown: then the events' decreases stand), and the
// write-back tells that rate, or the one its events left when Redis
// counted any and it is higher. The write-backs of one outage make a
// round: the first starts it, and it lasts ARGV[ARG0+5+k] microseconds
// (three of the process's heartbeats: every process on local limits then
// is back within it), unless a decrease not its own comes meanwhile. The
// round leaves the fleet's rate at the mean of what its processes told
// (a process's latest write-back in it standing for it: ARGV[ARG0+4+k]
// names the process's bucket), never above the rate it started from, in place of the events'
// decreases: each process's local limits had a share of the fleet's rate,
// so several processes' throttles add up to the rates they reached
// together (their sum, once all wrote back), not to a product of every
// process's halvings. A write-back is applied at most once, as
// breakerLearnedScript's are: ARGV[ARG0+4+k] names the process's bucket (a
// field of the bucket's hash that records the last write-back of it Redis
// applied) and ARGV[ARG0+6+k] numbers its write-backs; one numbered no
// higher (sent again, its first answer lost) changes nothing. The
// process's success counts not sent
// yet follow from ARGV[ARG0+7+k] (pairs of an age and a count, oldest
// first), each recorded before the first event that came after it, so
// that the goodput controller measures each event, as of its time, by the
// successes since the event before, as the local limits did; those after
// the last event are recorded last, for the next. Reply: {decreased,
// rate}.
var throttledScript = newScript(bucketPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now)
local before = b.rate
local k = tonumber(ARGV[ARG0 + 2])
if not finite(k) or k < 0 then k = 0 end
k = math.max(0, math.min(math.floor(k), #ARGV - ARG0 - 6))
local est, within = tonumber(ARGV[ARG0 + 3 + k]), tonumber(ARGV[ARG0 + 5 + k])
-- A write-back Redis applied already (sent again, its first answer lost)
-- changes nothing.
local wbf, seq = wb_of(ARGV[ARG0 + 4 + k], ARGV[ARG0 + 6 + k])
if wbf and applied(KEYS[1], wbf, seq) then
  touch(KEYS[1], TTL_MS, now, settled(b))
  return {0, tostring(b.rate)}
end
-- count_to counts the success counts sent (oldest first) that came no
-- later than t, all of them when t is nil, each once.
local ci = ARG0 + 7 + k
local function count_to(t)
  while ci < #ARGV do
    local age, n = tonumber(ARGV[ci]), tonumber(ARGV[ci + 1])
    local ok = finite(age) and age >= 0
    if t and ok and now - age > t then return end
    if b.g and ok and finite(n) and n > 0 then count(b.g, now - age, n) end
    ci = ci + 2
  end
end
local age, slack = tonumber(ARGV[ARG0]), tonumber(ARGV[ARG0 + 1])
local dec, counted, ldec = 0, false, b.ldec
if finite(age) and age >= 0 then
  if not finite(slack) or slack < 0 then slack = 0 end
  slack = math.min(slack, HORIZON_US)
  local lthr, climbs, base, own = b.lthr, b.climbs, b.ldec, NEVER
  for i = 1, k do
    local ev = tonumber(ARGV[ARG0 + 2 + i])
    if MODE ~= '0' and finite(ev) and ev >= 0 then
      local at = now - math.min(ev, HORIZON_US)
      if at - slack - base >= DECREASE_INTERVAL_US and at - own >= DECREASE_INTERVAL_US then
        count_to(at)
        dec = math.max(dec, throttle(b, now, at))
        b.ldec, own, counted = at, at, true
      end
    end
  end
  local at = now - math.min(age, HORIZON_US)
  if at >= lthr then b.lthr, b.climbs = at, 0 else b.lthr, b.climbs = lthr, climbs end
  -- What this write-back tells of the fleet's rate: the rate its events
  -- left, when Redis counted any, or, when higher, est. The round's rate
  -- takes the place of the events' own decreases: the mean of what its
  -- write-backs told, never above the rate it started from. A round is
  -- over once its window ends, or once a decrease not its own came (ldec
  -- is no longer its last).
  if MODE ~= '0' and k > 0 and finite(est) and est >= 0 then
    local tell = est
    if counted and b.rate > tell then tell = b.rate end
    tell = math.min(CEILING, math.max(FLOOR, tell))
    if not finite(within) or within < 0 then within = 0 end
    within = math.min(within, HORIZON_US)
    local w = call('HMGET', KEYS[1], 'wbase', 'wsum', 'wn', 'wend', 'wdec')
    local wbase, wsum, wn, wend = tonumber(w[1]), tonumber(w[2]), tonumber(w[3]), tonumber(w[4])
    -- A round the local settings could not have written (each write-back
    -- told a rate between the floor and the ceiling) counts as absent.
    if not (finite(wbase) and wbase >= FLOOR * (1 - 1e-9) and wbase <= CEILING * (1 + 1e-9) and
        finite(wn) and wn >= 1 and wn == math.floor(wn) and finite(wsum) and
        wsum >= wn * FLOOR * (1 - 1e-9) and wsum <= wn * CEILING * (1 + 1e-9) and
        finite(wend) and wend > now and wend <= now + HORIZON_US and tonumber(w[5]) == ldec) then
      wbase, wsum, wn, wend = before, 0, 0, now + within
    end
    -- A write-back of a process that told the round already (its first
    -- answer lost, it stayed on local limits and wrote back what came
    -- since) takes the place of what it told: the round counts each
    -- process once, at the rate its local limits last reached. Its tell
    -- is kept in the field 'wt:...' named as its record, with the round's
    -- end.
    local tf = nil
    if wbf then
      tf = 'wt' .. string.sub(wbf, 3)
      local m1, m2 = string.match(redis.call('HGET', KEYS[1], tf) or '', '^(%S+)%s+(%S+)$')
      local prev = tonumber(m1 or '')
      if wn >= 1 and tonumber(m2 or '') == wend and finite(prev) and prev >= FLOOR * (1 - 1e-9) and
          prev <= CEILING * (1 + 1e-9) then
        wsum, wn = math.max(0, wsum - prev), wn - 1
      end
    end
    wsum, wn = wsum + tell, wn + 1
    local r = math.max(FLOOR, math.min(wbase, wsum / wn))
    if r ~= b.rate then set_rate(b, now, r, true) end
    if r < before then dec = 1 else dec = 0 end
    call('HSET', KEYS[1], 'wbase', tostring(wbase), 'wsum', tostring(wsum), 'wn', num(wn), 'wend', num(wend), 'wdec', num(b.ldec))
    if tf then redis.call('HSET', KEYS[1], tf, tostring(tell) .. ' ' .. num(wend)) end
  end
end
count_to(nil)
if wbf then record(KEYS[1], wbf, seq, now, TTL_MS, SKEW_US) end
save_bucket(KEYS[1], b, now)
return {dec, tostring(b.rate)}
`).answers("nn")

// successScript records the success counts from ARGV[ARG0] on, and gives
// the rate its increase when one is due. Reply: {increased, rate}.
var successScript = newScript(bucketPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now)
record_served(b, now, ARG0)
local inc = increase(b, now)
save_bucket(KEYS[1], b, now)
return {inc, tostring(b.rate)}
`).answers("nn")

// servedScript records the success counts from ARGV[ARG0] on.
var servedScript = newScript(bucketPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now)
record_served(b, now, ARG0)
save_bucket(KEYS[1], b, now)
return {1}
`).answers("n")

// pauseScript holds every caller of the bucket for ARGV[ARG0]
// microseconds, after giving back ARGV[ARG0+1] tokens (when given): those
// of the lease the pausing process drops, as throttleScript does.
var pauseScript = newScript(bucketPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now)
give_back(b, now, ARGV[ARG0 + 1])
pause(b, now, tonumber(ARGV[ARG0]))
save_bucket(KEYS[1], b, now)
return {1}
`).answers("n")

// bucketSnapshotScript reads a bucket, and changes nothing: not its
// value, not its TTL, not an invalid one (load_bucket's ro). Reply: {rate,
// tokens, paused_us}.
var bucketSnapshotScript = newScript(bucketPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now, true)
local eff = math.max(now, b.paused)
local t0 = math.max(b.t0, eff - b.capus)
return {tostring(b.rate), tostring((eff - t0) / b.interval), num(math.max(0, b.paused - now))}
`).answers("nnn")

// A breaker is a hash {state, failures, cooldown, until, since, reset, ft, why}:
// since is when its state last changed (it opened, let a probe through, or
// closed after one), on Redis's clock, absent before any change; reset is
// when a success last reset a count of failures; and ft holds the times of
// the latest failures counted, at most 64 of them (a list of microseconds,
// oldest first; those before are of unknown times, after the last reset or
// change of state and before the others), so that a
// write-back of failures counted elsewhere can order them against the
// successes; why is why it last opened, as the process that opened it
// said (breakerFailureScript's ARGV[6]: "throttling", "errors", "throttled
// for good" or "down"; empty when that process did not say, or a write-back
// opened it), and whyat the since it holds for: a script of a version
// before why changes since without it, and the breaker then reads as not
// saying why. Every breaker script takes ARGV[1] the base cooldown in
// microseconds, ARGV[2] the key TTL in ms, ARGV[3] the threshold, ARGV[4]
// the longest cooldown in microseconds and ARGV[5] the clock skew allowed,
// in microseconds. Every reply holds now_us, Redis's clock when the script
// read the breaker, which orders the readings of answers that cross (see
// update), and the breaker's current cooldown_us (its base doubled by
// failed probes).
var breakerPrelude = common + fmt.Sprintf(`
local BASE_US, TTL_MS, THRESHOLD = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local MAX_US = math.max(BASE_US, tonumber(ARGV[4]))
local SKEW_US = tonumber(ARGV[5])
-- FAR_US bounds the cooldown and the wait another process's settings may
-- give: the horizon (the key's TTL and the longest pause, as Store's), or
-- this process's longest cooldown when that is longer.
local FAR_US = math.max(MAX_US, tonumber(TTL_MS) * 1000 + %d)
`, hint.MaxPause.Microseconds()) + `
-- load_breaker reads the breaker at key; invalid state (an unknown state,
-- a cooldown or a wait past the horizon and the longest, a change or a
-- reset in the future) is deleted and the breaker is closed; with ro (a
-- script that only reads), nothing is deleted: invalid state, or a key of
-- another type, reads as a closed breaker and is left for the next write
-- to repair. A cooldown longer than the longest, or a wait past it, within
-- the horizon (another process's settings, with a longer cooldown, gave
-- it) is brought down to the longest, as the ceiling brings down a rate:
-- the breaker stays open. ft, the failures' times, is read as a string:
-- run_times parses it when a script needs it.
local function load_breaker(key, now, ro)
  local h = (ro and read or call)('HMGET', key, 'state', 'failures', 'cooldown', 'until', 'since', 'reset', 'ft', 'why', 'whyat')
  local br = {state = h[1] or 'closed', failures = tonumber(h[2] or 0), cooldown = tonumber(h[3] or BASE_US),
    untilv = tonumber(h[4] or 0), since = tonumber(h[5] or 0), reset = tonumber(h[6] or 0), ft = h[7] or '',
    why = why_of(h[8])}
  -- why holds while the breaker's last change is the one whyat names: a
  -- script of an earlier version changes the state without it.
  if tonumber(h[9]) ~= br.since then br.why = '' end
  if (br.state == 'closed' or br.state == 'open' or br.state == 'half_open') and
      finite(br.failures) and br.failures >= 0 and finite(br.cooldown) and br.cooldown > 0 and br.cooldown <= FAR_US and
      finite(br.untilv) and br.untilv <= now + FAR_US + SKEW_US and finite(br.since) and br.since <= now + SKEW_US and
      finite(br.reset) and br.reset <= now + SKEW_US then
    br.cooldown = math.min(br.cooldown, MAX_US)
    br.untilv = math.min(br.untilv, now + MAX_US + SKEW_US)
    return br
  end
  if not ro then redis.call('DEL', key) end
  return {state = 'closed', failures = 0, cooldown = BASE_US, untilv = 0, since = 0, reset = 0, ft = '', why = ''}
end
-- ok_age is how long ago (µs) the last success Redis recorded for the
-- breaker came: the probe's that closed it (since, while closed), or one
-- that reset its failures; -1 when none.
local function ok_age(state, since, reset, now)
  local at = reset
  if state == 'closed' and since > at then at = since end
  if not (at > 0) then return '-1' end
  return num(math.max(0, now - at))
end
-- reading is a breaker's reply: {state, failures, cooldown_us, wait_us, now_us, why, ok_age_us}.
local function reading(br, now)
  return {br.state, br.failures, num(br.cooldown), num(math.max(0, br.untilv - now)), num(now), br.why,
    ok_age(br.state, br.since, br.reset, now)}
end
-- FT_MAX bounds the failure times ft keeps: the latest FT_MAX, so that
-- a failure rewrites a short list whatever the threshold; the failures
-- counted before them are of unknown times.
local FT_MAX = 64
-- counted appends the time now to the times of the failures counted
-- before it (failures), keeping the latest FT_MAX: a list longer than
-- that many failures could hold (written by something else) is dropped,
-- its failures then of unknown times.
local function counted(br, now)
  if br.failures == 0 or #br.ft > 24 * br.failures then return num(now) end
  local t = {}
  for w in string.gmatch(br.ft, '%S+') do t[#t + 1] = w end
  t[#t + 1] = num(now)
  return table.concat(t, ' ', math.max(1, #t - FT_MAX + 1))
end
-- run_times returns the number of the breaker's failures (as many as it
-- counts, at most THRESHOLD) whose times are not known, as old as can be
-- (more than the list holds, or a time that is not one), and the times of
-- the others, oldest first (at most FT_MAX).
local function run_times(br, now)
  local n = math.min(math.floor(br.failures), THRESHOLD)
  local t = {}
  for w in string.gmatch(br.ft, '%S+') do
    local x = tonumber(w)
    if finite(x) and x >= 0 and x <= now + SKEW_US then t[#t + 1] = x end
  end
  table.sort(t)
  local out = {}
  for i = math.max(1, #t - math.min(n, FT_MAX) + 1), #t do out[#out + 1] = t[i] end
  return n - #out, out
end
`

// allowScript lets a call through a closed breaker; an open breaker whose
// cooldown ended (or a half-open one whose probe's lease ran out) lets this
// caller through as the fleet's one probe, with a lease of one cooldown.
// Reply: {ok, wait_us, state, failures, now_us, cooldown_us, why, ok_age_us}.
var allowScript = newScript(breakerPrelude + `
local now = now_us()
local br = load_breaker(KEYS[1], now)
local cd = num(br.cooldown)
touch(KEYS[1], TTL_MS, now, br.untilv)
local oka = ok_age(br.state, br.since, br.reset, now)
if br.state == 'closed' then return {1, '0', 'closed', br.failures, num(now), cd, br.why, oka} end
if now < br.untilv then return {0, num(br.untilv - now), br.state, br.failures, num(now), cd, br.why, oka} end
redis.call('HSET', KEYS[1], 'state', 'half_open', 'until', num(now + br.cooldown), 'cooldown', cd,
  'failures', num(br.failures), 'since', num(now), 'whyat', num(now))
expire(KEYS[1], TTL_MS, now, now + br.cooldown)
return {1, '0', 'half_open', br.failures, num(now), cd, br.why, oka}
`).answers("nnsnnn.n")

// breakerSuccessScript resets the failures and closes a half-open breaker
// with the base cooldown. It records the success as the breaker's last
// (reset) in every state but half-open, where closing records it (since),
// also when there was no failure to reset: every process reads it as the
// scope's last success (ok_age), which ends the streaks of failed answers
// that began before it (a process does not find dead a scope another's
// calls succeed on). Reply: {closed, state, now_us, cooldown_us}.
var breakerSuccessScript = newScript(breakerPrelude + `
local now = now_us()
local br = load_breaker(KEYS[1], now)
if br.state == 'closed' and br.failures == 0 then
  redis.call('HSET', KEYS[1], 'reset', num(now))
  expire(KEYS[1], TTL_MS, now, br.untilv)
  return {0, br.state, num(now), num(br.cooldown)}
end
if br.state == 'half_open' then
  redis.call('HSET', KEYS[1], 'state', 'closed', 'failures', 0, 'cooldown', ARGV[1], 'until', 0, 'since', num(now),
    'ft', '', 'whyat', num(now))
  expire(KEYS[1], TTL_MS, now, now)
  return {1, 'closed', num(now), ARGV[1]}
end
redis.call('HSET', KEYS[1], 'state', br.state, 'failures', 0, 'cooldown', num(br.cooldown), 'until', num(br.untilv),
  'reset', num(now), 'ft', '')
expire(KEYS[1], TTL_MS, now, br.untilv)
return {0, br.state, num(now), num(br.cooldown)}
`).answers("nsnn")

// breakerFailureScript counts a failed call: THRESHOLD consecutive
// failures open a closed breaker; a failed probe reopens a half-open one
// with the cooldown doubled up to the longest. ARGV[6], when given, is
// why (see the breaker's hash), written when the failure opens it.
// Reply: {opened, state, failures, wait_us, now_us, cooldown_us, why,
// ok_age_us}.
var breakerFailureScript = newScript(breakerPrelude + `
local now = now_us()
local br = load_breaker(KEYS[1], now)
local cooldown = br.cooldown
if br.state == 'closed' then
  local failures = br.failures + 1
  if failures < THRESHOLD then
    redis.call('HSET', KEYS[1], 'state', 'closed', 'failures', num(failures), 'cooldown', num(cooldown), 'until', 0,
      'ft', counted(br, now))
    expire(KEYS[1], TTL_MS, now, now)
    return {0, 'closed', failures, '0', num(now), num(cooldown), br.why, ok_age('closed', br.since, br.reset, now)}
  end
elseif br.state == 'half_open' then
  cooldown = math.min(2 * cooldown, MAX_US)
else
  touch(KEYS[1], TTL_MS, now, br.untilv)
  return {0, br.state, br.failures, num(math.max(0, br.untilv - now)), num(now), num(cooldown), br.why,
    ok_age(br.state, br.since, br.reset, now)}
end
local why = why_of(ARGV[6])
redis.call('HSET', KEYS[1], 'state', 'open', 'failures', 0, 'cooldown', num(cooldown), 'until', num(now + cooldown),
  'since', num(now), 'ft', '', 'why', why, 'whyat', num(now))
expire(KEYS[1], TTL_MS, now, now + cooldown)
return {1, 'open', 0, num(cooldown), num(now), num(cooldown), why, ok_age('open', br.since, br.reset, now)}
`).answers("nsnnnn.n")

// breakerSnapshotScript reads a breaker, and changes nothing: not its
// value, not its TTL, not an invalid one (load_breaker's ro). Reply:
// {state, failures, cooldown_us, wait_us, now_us, why, ok_age_us}.
var breakerSnapshotScript = newScript(breakerPrelude + `
local now = now_us()
local br = load_breaker(KEYS[1], now, true)
return reading(br, now)
`).answers("snnnn.n")

// breakerLearnedScript writes back what a process's local breaker learned
// while Redis did not answer it: ARGV[6] its state, ARGV[7] its cooldown
// and ARGV[8] its wait (microseconds; the end of the cooldown, or of the
// probe's lease), ARGV[9] how long ago (in microseconds) its state last
// changed (-1: it did not), ARGV[10] how long ago a success last reset its
// count of failures (-1: none did), counted from the latest the script
// may run (the process's operation timeout after it sent it), so that the
// success reads no later than it came (the other ages, counted from when
// it was sent, read up to that timeout late: a failure or a change of
// state no earlier than it came), and the failures it counted since
// then that it alone counted (none whose count Redis may have seen): from
// ARGV[16] on how long ago each of the latest was (oldest first, at most
// FT_MAX), and ARGV[11] the count of those before them, the first of which
// came ARGV[12] and the last ARGV[13] microseconds ago (-1: none), as the
// breaker's ft keeps its own. Those before the latest count when the
// first of them came after what they are ordered against (a reset, a
// change of state), none of them otherwise (which of them came after it
// is not known), each as of the last of them at the latest.
//
// The newer knowledge of the scope wins. The local state replaces the
// fleet's when it changed after the fleet's last did (since; a breaker that
// never changed, or that Redis lost, is older than any), its failures
// those counted after its change. Otherwise, when the fleet's breaker is
// closed, the failures of both are merged as one run of consecutive
// failures, as if each had been counted in Redis when it happened: the
// fleet's run without those that came before the local success, and the
// local failures without those that came before the fleet's last reset (a
// success, or a change of its state). The failures of several processes
// add up: each counted its own. A merged run that reaches the threshold
// opens the breaker at the time of its threshold-th failure, its cooldown
// running from then; when that failure is one of unknown time, at the
// latest time it may have come (the last of the process's failures before
// its latest, the fleet's oldest failure of known time), as the process's
// local breaker does, so that the cooldown is never cut short.
//
// A write-back is applied at most once: ARGV[14] names the process's
// breaker (a field of the breaker's hash, "wb:" and the store's and the
// breaker's numbers) and ARGV[15] numbers its write-backs; the field holds
// the number of the last one applied and when (Redis's clock), and one
// numbered no higher (sent again, as the process does when the answer to
// the first was lost) changes nothing but the key's TTL when it has none.
// Each write-back drops the fields older than the key's TTL (and the
// clock skew allowed), and the field goes with the key, which each
// write-back recorded gives the TTL from then, whether it changed the
// breaker or not: a process sends no write-back again after that long. Reply: as breakerSnapshotScript's,
// what the breaker is now.
var breakerLearnedScript = newScript(breakerPrelude + `
local now = now_us()
local br = load_breaker(KEYS[1], now)
-- A write-back Redis applied already (sent again, its first answer lost)
-- changes nothing.
local wbf, seq = wb_of(ARGV[14], ARGV[15])
if wbf and applied(KEYS[1], wbf, seq) then
  touch(KEYS[1], TTL_MS, now, br.untilv)
  return reading(br, now)
end
local st, cooldown, wait = ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8])
local age, okage = tonumber(ARGV[9]), tonumber(ARGV[10])
local fails = {}
for i = 16, math.min(#ARGV, 15 + FT_MAX) do
  local a = tonumber(ARGV[i])
  if finite(a) and a >= 0 then fails[#fails + 1] = now - a end
end
local older, ofirst, olast = tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
if finite(older) and older >= 1 and finite(ofirst) and ofirst >= 0 and finite(olast) and olast >= 0 then
  older, ofirst, olast = math.min(math.floor(older), THRESHOLD), now - ofirst, now - math.min(olast, ofirst)
else
  older = 0
end
-- add_older adds to the failures t, sorted, those before the latest the
-- process sent, when the first of them came after from: the latest
-- FT_MAX of them as of the last, the rest to unknown (their count). It
-- returns unknown and latest, raised to the last of them when some went
-- to unknown: the latest time any failure of unknown time may have come.
local function add_older(t, unknown, from, latest)
  if older == 0 or ofirst <= from then return unknown, latest end
  local timed = math.min(older, FT_MAX)
  for _ = 1, timed do t[#t + 1] = olast end
  table.sort(t)
  if older > timed then return unknown + older - timed, math.max(latest or 0, olast) end
  return unknown, latest
end
local write = false
-- save writes the breaker's run of failures (unknown of unknown times,
-- as old as can be, then those of times t, sorted), opening it at the
-- threshold-th; it keeps the latest FT_MAX times. When the threshold-th is
-- one of unknown time, it opens at latest, the latest time any of them may
-- have come (the threshold-th came at that time or before it): as of the
-- first of them, a scope opened in the past, its cooldown ended early.
local function save(t, unknown, latest)
  unknown = unknown or 0
  if unknown + #t >= THRESHOLD then
    local at = math.max(t[THRESHOLD - unknown] or math.min(latest or now, now), br.since, br.reset)
    br.state, br.failures, br.since, br.untilv, br.ft, br.why = 'open', 0, at, at + br.cooldown, '', ''
  else
    local ft = {}
    for i = math.max(1, #t - FT_MAX + 1), #t do ft[#ft + 1] = num(t[i]) end
    br.failures, br.ft = unknown + #t, table.concat(ft, ' ')
  end
  write = true
end
local at = now - (age or -1)
if (st == 'closed' or st == 'open' or st == 'half_open') and finite(cooldown) and cooldown > 0 and cooldown <= MAX_US and
    finite(wait) and wait >= 0 and wait <= MAX_US and finite(age) and age >= 0 and at > br.since then
  local why = br.why
  if st == 'open' and br.state ~= 'open' then why = '' end -- the write-back does not say why
  br = {state = st, failures = 0, cooldown = cooldown, untilv = 0, since = at, reset = br.reset, ft = '', why = why}
  if st == 'closed' then
    local t = {}
    for _, x in ipairs(fails) do if x > at then t[#t + 1] = x end end
    table.sort(t)
    save(t, add_older(t, 0, at, nil))
  else
    br.untilv = now + wait
    write = true
  end
elseif br.state == 'closed' then
  local ok = nil
  if finite(okage) and okage >= 0 then ok = now - okage end
  local last = math.max(br.since, br.reset)
  local unknown, known = run_times(br, now)
  -- Those of unknown times came after the fleet's last reset (last), and
  -- before the oldest of known time: a local success before last ends
  -- none of them, one after it all (which came after it is not known).
  if ok and ok > last then unknown = 0 end
  local latest = nil
  if unknown > 0 then latest = known[1] or now end
  local t = {}
  for _, x in ipairs(known) do
    if not ok or x > ok then t[#t + 1] = x end
  end
  for _, x in ipairs(fails) do
    if x > last then t[#t + 1] = x end
  end
  if ok and ok > br.reset then br.reset = ok end
  table.sort(t)
  unknown, latest = add_older(t, unknown, last, latest)
  if ok or unknown + #t ~= br.failures then save(t, unknown, latest) end
end
if wbf then record(KEYS[1], wbf, seq, now, TTL_MS, SKEW_US) end
if write then
  redis.call('HSET', KEYS[1], 'state', br.state, 'failures', num(br.failures), 'cooldown', num(br.cooldown),
    'until', num(br.untilv), 'since', num(br.since), 'reset', num(br.reset), 'ft', br.ft, 'why', br.why,
    'whyat', num(br.since))
end
-- The key, and with it the record, lives the TTL from now when the
-- write-back is recorded, whether it changed the breaker or not: the
-- process may send it again up to that long after (less the timeout).
if write or wbf then
  expire(KEYS[1], TTL_MS, now, br.untilv)
else
  touch(KEYS[1], TTL_MS, now, br.untilv)
end
return reading(br, now)
`).answers("snnnn.n")

// budgetScript refunds ARGV[3] units (budget.Unit per token) and, when
// ARGV[4] is 1, takes one retry's cost if the budget can pay; the budget
// holds ARGV[1] units when new, or when what it holds is not a number of
// units from 0 up. Reply: {taken, units}.
var budgetScript = newScript(common + fmt.Sprintf(`
local cost = %d
local max = tonumber(ARGV[1])
local v = tonumber(call('GET', KEYS[1]))
if not finite(v) or v < 0 then v = max end
v = math.floor(math.min(max, v + math.max(0, tonumber(ARGV[3]) or 0)))
local taken = 0
if ARGV[4] == '1' and v >= cost then
  v = v - cost
  taken = 1
end
redis.call('SET', KEYS[1], num(v), 'PX', ARGV[2])
return {taken, v}
`, budget.RetryCost*budget.Unit)).answers("nn")

// probeScript reads nothing and writes nothing: Redis routes it by its
// key, as it does the store's scripts, and a node of a cluster that does
// not hold the key redirects it (see Store.servesRedirected). Reply: {1}.
var probeScript = newScript(`return {1}`).answers("n")

// heartbeatScript records this process (ARGV[1]) as live for ARGV[2] ms,
// forgets the processes whose heartbeat ran out (or that claim to live
// past the longest of this process's claim, its key TTL, ARGV[3] ms, and
// the set's own expiry), and counts the live ones. The set lives at least
// this process's claim and key TTL: a heartbeat extends its expiry, never
// shortens it, so that a process whose heartbeat or TTL is shorter does
// not forget one whose claim is longer (the set's expiry holds that
// claim). Reply: {live, ARGV[1]}: the process's id, echoed, tells the
// script's answer from a server's that only looks like it (see Store's
// unreadable).
var heartbeatScript = newScript(common + `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local want = math.max(tonumber(ARGV[2]), tonumber(ARGV[3]))
call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local left = redis.call('PTTL', KEYS[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '(' .. (now + math.max(want, left)), '+inf')
if left < want then redis.call('PEXPIRE', KEYS[1], want) end
return {redis.call('ZCARD', KEYS[1]), ARGV[1]}
`).answers("n.")
