#!lua flags=allow-oom
-- fail_job: record a failed attempt of a claimed job; retry it after its backoff, or
-- make it dead when it is out of attempts (or the failure is non-retryable).
--
-- KEYS[1] finished jobs (zset id -> finish ms)   <prefix>:{<ns>}:jdone
-- KEYS[2] namespace meta                          <prefix>:{<ns>}:meta
-- ARGV[1..8] job_prefixes: key prefixes (lib/job.lua job_keys): job, payload, ready,
--            priorities, delayed, leased, listing, dedup
-- ARGV[9] id: job id   ARGV[10] token: lease token   ARGV[11] error: error text
-- ARGV[12] retry_after_ms: retry after ms ("" = use the job's backoff)
-- ARGV[13] non_retryable: "1" = non-retryable
-- ARGV[14] random: a uniform random number in [0, 1) from the caller, for jitter
-- Returns { "ok", now, new state, run_at ms ("" when dead or cancelled),
--           register (1: put the namespace in the prune due-set), the job's queue }
--       | { "missing" } | { "stale", state } | { "expired" }
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 4 (a lease is the only authority): as ack_job, a stale token or an expired lease
--   changes nothing.
-- * 1: state, error history and the lease/delayed/ready/finished entries change
--   together. O(log N).
-- * queue state (lib/job.lua): pending count and dead set follow the new state.
-- * issue 30: a job whose cancel was requested (CancelJob while active) ends
--   cancelled, not retried and not dead: finished, its error recorded, in the
--   finished set as any cancelled job.
-- * 5: refused while the namespace's jobs are in an older layout.

local refused = jobs_guard(KEYS[2])
if refused then return refused end
local now = now_ms()
local K = job_keys(ARGV, 1)
local id = ARGV[9]
local key, r = leased_job(K, id, ARGV[10], now)
if not key then return r end

push_error(r, r.attempts, ARGV[11], now)
-- The queue's failed-attempts total (issue 33: the console's failure rate).
redis.call('HINCRBY', queue_state(KEYS[2], r.queue), 'failed', 1)
r.lease_until, r.updated = '', now
redis.call('ZREM', K.leased .. r.queue, id)
flow.finish(KEYS[2], r.queue, r.ckey)

if r.cancel == 1 then
  r.state, r.finished = 'cancelled', now
  job_save(key, r)
  return { 'ok', now, 'cancelled', '', retention.finish(K, KEYS[2], KEYS[1], id, r, now), r.queue }
end

if ARGV[13] == '1' or r.attempts >= r.max_attempts then
  r.state, r.finished = 'dead', now
  job_save(key, r)
  dead_add(KEYS[2], id, r, now)
  return { 'ok', now, 'dead', '', retention.finish(K, KEYS[2], KEYS[1], id, r, now), r.queue }
end

local delay = tonumber(ARGV[12])
if delay == nil then
  if r.backoff == 'f' then
    delay = r.base
  else
    -- base * 2^(attempts-1), capped; the exponent is bounded so it cannot overflow.
    delay = math.min(r.cap, r.base * math.pow(2, math.min(r.attempts - 1, 60)))
  end
  delay = math.floor(delay * (1 - (tonumber(r.jitter) or 0) * tonumber(ARGV[14])))
end

if delay <= 0 then
  r.state, r.run_at = 'pending', now
  job_save(key, r)
  flow.ready(K, KEYS[2], r, true)
  count_pending(KEYS[2], r, 1)
  return { 'ok', now, 'pending', now, 0, r.queue }
end
local run_at = now + delay
r.state, r.run_at = 'delayed', run_at
job_save(key, r)
redis.call('ZADD', K.delayed .. r.queue, run_at, id)
return { 'ok', now, 'delayed', run_at, 0, r.queue }
