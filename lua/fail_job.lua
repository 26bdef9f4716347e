-- fail_job: record a failed attempt of a claimed job; retry it after its backoff, or
-- make it dead when it is out of attempts (or the failure is non-retryable).
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- ARGV[1..6] key prefixes: job, ready, delayed, leased, listing, dedup
-- ARGV[7] job id   ARGV[8] lease token   ARGV[9] error text
-- ARGV[10] retry after ms ("" = use the job's backoff)
-- ARGV[11] "1" = non-retryable
-- ARGV[12] a uniform random number in [0, 1) from the caller, for jitter
-- Returns { "ok", now, new state, run_at ms ("" when dead) }
--       | { "missing" } | { "stale", state } | { "expired" }
--
-- Invariants kept:
-- * 4 (a lease is the only authority): as ack_job, a stale token or an expired lease
--   changes nothing.
-- * 1: state, error history and the lease/delayed/ready/finished entries change
--   together. O(log N).

local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
local P_JOB, P_READY, P_DELAYED, P_LEASED = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local id, token = ARGV[7], ARGV[8]
local key = P_JOB .. id
local MAX_ERRORS = 50
local h = redis.call('HMGET', key, 'state', 'token', 'lease_until', 'queue', 'attempts',
  'max_attempts', 'backoff', 'backoff_base_ms', 'backoff_cap_ms', 'backoff_jitter',
  'priority', 'rmember', 'errors')
if not h[1] then return { 'missing' } end
if h[1] ~= 'active' or h[2] ~= token then return { 'stale', h[1] } end
if (tonumber(h[3]) or 0) <= now then return { 'expired' } end

local queue, attempts = h[4], tonumber(h[5])
local ok, errors = pcall(cjson.decode, h[13] or '[]')
if not ok or type(errors) ~= 'table' then errors = {} end
errors[#errors + 1] = { attempt = attempts, message = ARGV[9], at = now }
while #errors > MAX_ERRORS do table.remove(errors, 1) end
redis.call('HSET', key, 'errors', cjson.encode(errors), 'lease_until', '', 'updated_ms', now)
redis.call('ZREM', P_LEASED .. queue, id)

if ARGV[11] == '1' or attempts >= tonumber(h[6]) then
  redis.call('HSET', key, 'state', 'dead', 'finished_ms', now)
  redis.call('ZADD', KEYS[1], now, id)
  return { 'ok', now, 'dead', '' }
end

local delay = tonumber(ARGV[10])
if delay == nil then
  local base, cap = tonumber(h[8]), tonumber(h[9])
  if h[7] == 'fixed' then
    delay = base
  else
    -- base * 2^(attempts-1), capped; the exponent is bounded so it cannot overflow.
    delay = math.min(cap, base * math.pow(2, math.min(attempts - 1, 60)))
  end
  delay = math.floor(delay * (1 - (tonumber(h[10]) or 0) * tonumber(ARGV[12])))
end

local run_at = now + delay
if delay <= 0 then
  redis.call('HSET', key, 'state', 'pending', 'run_at_ms', now)
  redis.call('ZADD', P_READY .. queue, -tonumber(h[11]), h[12])
  return { 'ok', now, 'pending', now }
end
redis.call('HSET', key, 'state', 'delayed', 'run_at_ms', run_at)
redis.call('ZADD', P_DELAYED .. queue, run_at, id)
return { 'ok', now, 'delayed', run_at }
