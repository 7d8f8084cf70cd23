package fleet

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/cloudg/cloudg/internal/bucket"
	"github.com/cloudg/cloudg/internal/budget"
)

// The Lua scripts that update the shared state. Each runs atomically in
// Redis and reads the time from Redis (TIME), so that every process of the
// fleet agrees on it; times are microseconds since the Unix epoch. Numbers
// that must survive Lua's conversion of replies to integers are returned as
// strings.
//
// A bucket is a hash {t0, paused, rate, ldec, lthr, linc}: the balance at
// time t is (t - t0) / interval tokens, capped at the capacity, the same
// representation as the in-process bucket, and the same AIMD rule, whose
// constants are written into the scripts from package bucket's. Bucket
// arguments: ARGV[1] ceiling (tokens/s), ARGV[2] capacity/rate ratio,
// ARGV[3] floor, ARGV[4] adaptive (0/1), ARGV[5] key TTL in ms.

var luaPrelude = fmt.Sprintf(`
local DECREASE_FACTOR = %s
local DECREASE_INTERVAL_US = %d
local INCREASE_INTERVAL_US = %d
local INCREASE_STEP = %s
local MIN_INCREASE = %s
`, ftoa(bucket.DecreaseFactor), bucket.DecreaseInterval.Microseconds(),
	bucket.IncreaseInterval.Microseconds(), ftoa(bucket.IncreaseStep), ftoa(bucket.MinIncrease)) + `
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function num(s) return string.format('%.0f', s) end
local function load_bucket(key, now)
  local h = redis.call('HMGET', key, 't0', 'paused', 'rate', 'ldec', 'lthr', 'linc')
  local b = {}
  b.rate = tonumber(h[3]) or tonumber(ARGV[1])
  b.ratio = tonumber(ARGV[2])
  b.interval = 1000000 / b.rate
  b.capus = math.max(1, b.ratio * b.rate) * b.interval
  b.paused = tonumber(h[2]) or 0
  b.t0 = tonumber(h[1]) or (now - b.capus)
  b.ldec = tonumber(h[4]) or -1e18
  b.lthr = tonumber(h[5]) or -1e18
  b.linc = tonumber(h[6]) or -1e18
  return b
end
-- set_rate keeps stored tokens (capped; dropped when draining) and keeps a
-- queue of callers as a time: those waiting go when they were told.
local function set_rate(b, now, r, drain)
  local eff = math.max(now, b.paused)
  b.t0 = math.max(b.t0, eff - b.capus)
  local bal = (eff - b.t0) / b.interval
  b.rate = r
  b.interval = 1000000 / r
  local cap = math.max(1, b.ratio * r)
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
-- the new part of the pause.
local function pause(b, now, d)
  if d <= 0 then return end
  local untilp = now + d
  if untilp <= b.paused then return end
  local start = math.max(now, b.paused)
  b.t0 = math.max(b.t0 + (untilp - start), untilp)
  b.paused = untilp
end
local function save_bucket(key, b)
  redis.call('HSET', key, 't0', num(b.t0), 'paused', num(b.paused), 'rate', tostring(b.rate),
    'ldec', num(b.ldec), 'lthr', num(b.lthr), 'linc', num(b.linc))
  redis.call('PEXPIRE', key, ARGV[5])
end
`

// takeScript reserves a lease of up to ARGV[6] tokens, after giving back
// ARGV[7] unused ones: the tokens usable now and, in order, the next ones,
// as far as ARGV[9] microseconds ahead (at least one token). With ARGV[8]
// (try only) set to 1 it takes one token, and only if it is usable now.
// KEYS[2] is the scope's breaker, whose state comes back with the answer,
// so that lease misses refresh every process's view of it.
// Reply: {granted, first_wait_us, interval_us, rate, breaker_state,
// breaker_wait_us, breaker_failures}: token i (from 0) of the lease is
// usable first_wait + i*interval after now.
var takeScript = redis.NewScript(luaPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now)
local want = tonumber(ARGV[6])
local give = tonumber(ARGV[7])
local eff = math.max(now, b.paused)
if give > 0 then b.t0 = b.t0 - give * b.interval end
b.t0 = math.max(b.t0, eff - b.capus)
local k, wait = 0, 0
if ARGV[8] == '1' then
  if now >= b.paused and now - b.t0 >= b.interval then
    k = 1
    b.t0 = b.t0 + b.interval
  end
else
  local ahead = math.floor((now + tonumber(ARGV[9]) - b.t0) / b.interval)
  k = math.max(1, math.min(want, ahead))
  wait = math.max(0, b.t0 + b.interval - now, b.paused - now)
  b.t0 = b.t0 + k * b.interval
end
save_bucket(KEYS[1], b)
local br = redis.call('HMGET', KEYS[2], 'state', 'until', 'failures')
local bwait = 0
if br[2] then bwait = math.max(0, tonumber(br[2]) - now) end
return {k, num(wait), num(b.interval), tostring(b.rate), br[1] or 'closed', num(bwait), tonumber(br[3]) or 0}
`)

// giveScript gives back ARGV[6] tokens reserved and not used (a caller
// whose wait would have passed its deadline): the balance goes up by that
// many, never above the capacity.
var giveScript = redis.NewScript(luaPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now)
local eff = math.max(now, b.paused)
b.t0 = math.max(b.t0 - tonumber(ARGV[6]) * b.interval, eff - b.capus)
save_bucket(KEYS[1], b)
return {1}
`)

// throttleScript records a throttling answer: an adaptive bucket
// multiplies its rate by DECREASE_FACTOR (not below ARGV[3]) and drains
// its burst, at most once per DECREASE_INTERVAL across the fleet; ARGV[6]
// > 0 pauses it that many microseconds. Reply: {decreased, rate}.
var throttleScript = redis.NewScript(luaPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now)
local dec = 0
b.lthr = now
if ARGV[4] == '1' and now - b.ldec >= DECREASE_INTERVAL_US then
  b.ldec = now
  local r = math.max(tonumber(ARGV[3]), b.rate * DECREASE_FACTOR)
  if r < b.rate then dec = 1 end
  set_rate(b, now, r, true)
end
pause(b, now, tonumber(ARGV[6]))
save_bucket(KEYS[1], b)
return {dec, tostring(b.rate)}
`)

// successScript gives an adaptive bucket below its ceiling INCREASE_STEP
// of the ceiling back (at least MIN_INCREASE), after INCREASE_INTERVAL
// without a throttle, at most once per INCREASE_INTERVAL across the fleet.
// Reply: {increased, rate}.
var successScript = redis.NewScript(luaPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now)
local ceiling = tonumber(ARGV[1])
if ARGV[4] ~= '1' or b.rate >= ceiling or now - b.lthr < INCREASE_INTERVAL_US or now - b.linc < INCREASE_INTERVAL_US then
  return {0, tostring(b.rate)}
end
set_rate(b, now, math.min(ceiling, b.rate + math.max(INCREASE_STEP * ceiling, MIN_INCREASE)), false)
b.linc = now
save_bucket(KEYS[1], b)
return {1, tostring(b.rate)}
`)

// pauseScript holds every caller of the bucket for ARGV[6] microseconds.
var pauseScript = redis.NewScript(luaPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now)
pause(b, now, tonumber(ARGV[6]))
save_bucket(KEYS[1], b)
return {1}
`)

// bucketSnapshotScript reads a bucket. Reply: {rate, tokens, paused_us}.
var bucketSnapshotScript = redis.NewScript(luaPrelude + `
local now = now_us()
local b = load_bucket(KEYS[1], now)
local eff = math.max(now, b.paused)
local t0 = math.max(b.t0, eff - b.capus)
return {tostring(b.rate), tostring((eff - t0) / b.interval), num(math.max(0, b.paused - now))}
`)

// A breaker is a hash {state, failures, cooldown, until}; ARGV[1] is the
// base cooldown in microseconds, ARGV[2] the key TTL in ms.
const breakerPrelude = `
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function num(s) return string.format('%.0f', s) end
`

// allowScript lets a call through a closed breaker; an open breaker whose
// cooldown ended (or a half-open one whose probe's lease ran out) lets this
// caller through as the fleet's one probe, with a lease of one cooldown.
// Reply: {ok, wait_us, state, failures}.
var allowScript = redis.NewScript(breakerPrelude + `
local now = now_us()
local h = redis.call('HMGET', KEYS[1], 'state', 'until', 'cooldown', 'failures')
local state = h[1] or 'closed'
local failures = tonumber(h[4]) or 0
if state == 'closed' then return {1, '0', 'closed', failures} end
local untilv = tonumber(h[2]) or 0
local cooldown = tonumber(h[3]) or tonumber(ARGV[1])
if now < untilv then return {0, num(untilv - now), state, failures} end
redis.call('HSET', KEYS[1], 'state', 'half_open', 'until', num(now + cooldown), 'cooldown', num(cooldown))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, '0', 'half_open', failures}
`)

// breakerSuccessScript resets the failures and closes a half-open breaker
// with the base cooldown. Reply: {closed, state}.
var breakerSuccessScript = redis.NewScript(breakerPrelude + `
local h = redis.call('HMGET', KEYS[1], 'state', 'failures')
local state = h[1] or 'closed'
if state == 'closed' and (tonumber(h[2]) or 0) == 0 then return {0, state} end
if state == 'half_open' then
  redis.call('HSET', KEYS[1], 'state', 'closed', 'failures', 0, 'cooldown', ARGV[1], 'until', 0)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, 'closed'}
end
redis.call('HSET', KEYS[1], 'failures', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {0, state}
`)

// breakerFailureScript counts a failed call: ARGV[3] consecutive failures
// open a closed breaker; a failed probe reopens a half-open one with the
// cooldown doubled up to ARGV[4]. Reply: {opened, state, failures, wait_us}.
var breakerFailureScript = redis.NewScript(breakerPrelude + `
local now = now_us()
local h = redis.call('HMGET', KEYS[1], 'state', 'failures', 'cooldown', 'until')
local state = h[1] or 'closed'
local failures = tonumber(h[2]) or 0
local cooldown = tonumber(h[3]) or tonumber(ARGV[1])
if state == 'closed' then
  failures = failures + 1
  if failures < tonumber(ARGV[3]) then
    redis.call('HSET', KEYS[1], 'state', 'closed', 'failures', failures)
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {0, 'closed', failures, '0'}
  end
elseif state == 'half_open' then
  cooldown = math.min(2 * cooldown, tonumber(ARGV[4]))
else
  return {0, state, failures, num(math.max(0, (tonumber(h[4]) or 0) - now))}
end
redis.call('HSET', KEYS[1], 'state', 'open', 'failures', 0, 'cooldown', num(cooldown), 'until', num(now + cooldown))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, 'open', 0, num(cooldown)}
`)

// breakerSnapshotScript reads a breaker. Reply: {state, failures, cooldown_us, wait_us}.
var breakerSnapshotScript = redis.NewScript(breakerPrelude + `
local now = now_us()
local h = redis.call('HMGET', KEYS[1], 'state', 'failures', 'cooldown', 'until')
local wait = 0
if h[4] then wait = math.max(0, tonumber(h[4]) - now) end
return {h[1] or 'closed', tonumber(h[2]) or 0, h[3] or ARGV[1], num(wait)}
`)

// budgetScript refunds ARGV[3] units (budget.Unit per token) and, when
// ARGV[4] is 1, takes one retry's cost if the budget can pay; the budget
// holds ARGV[1] units when new. Reply: {taken, units}.
var budgetScript = redis.NewScript(fmt.Sprintf(`
local cost = %d
local max = tonumber(ARGV[1])
local v = tonumber(redis.call('GET', KEYS[1])) or max
v = math.min(max, v + tonumber(ARGV[3]))
local taken = 0
if ARGV[4] == '1' and v >= cost then
  v = v - cost
  taken = 1
end
redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
return {taken, v}
`, budget.RetryCost*budget.Unit))

// heartbeatScript records this process as live for ARGV[2] ms, forgets the
// processes whose heartbeat ran out, and counts the live ones.
var heartbeatScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {redis.call('ZCARD', KEYS[1])}
`)
