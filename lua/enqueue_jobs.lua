-- enqueue_jobs: store a batch of jobs (a single Enqueue is a batch of one).
--
-- KEYS[1] namespace meta (hash: schema, job_seq)   <prefix>:{<ns>}:meta
-- ARGV[1..6] key prefixes: job, ready, delayed, leased, listing, dedup
--            (<prefix>:{<ns>}:j: qr: qd: ql: qj: dd:)
-- ARGV[7] schema version   ARGV[8] number of jobs n
-- then 17 values per job:
--   id, queue, name, payload, headers (JSON), priority,
--   when ("" now | "at" | "delay"), when value (ms), max_attempts,
--   backoff kind ("fixed" | "exp"), backoff base ms, backoff cap ms, jitter (0..1),
--   lease ms, dedup key ("" none), dedup ttl ms, dedup mode ("skip"|"replace"|"extend")
-- Returns one triple per job, in order: { outcome, job id, state }
--   outcome: "created" | "duplicate" | "replaced" | "extended"
--
-- Invariants kept:
-- * 1 (canonical record, derived indexes): the job hash and its ready/delayed entry
--   and its listing entry are written together, here.
-- * 2 (one script): the idempotency check (job id exists), the dedup check and the
--   write are one atomic step, so concurrent enqueues with one id or one dedup key
--   create one job.
-- * 3 (no O(N)): per created job four calls (EXISTS, HSET, two ZADDs), O(log N). Ready order: score -priority, member
--   a fixed-width sequence number followed by the id, so equal priorities pop in
--   enqueue (FIFO) order by ZPOPMIN's lexicographic tie-break.
-- * 7 (one clock): run times are computed from Redis TIME.

local now_t = redis.call('TIME')
local now = tonumber(now_t[1]) * 1000 + math.floor(tonumber(now_t[2]) / 1000)
local P_JOB, P_READY, P_DELAYED, P_LISTING, P_DEDUP = ARGV[1], ARGV[2], ARGV[3], ARGV[5], ARGV[6]
local meta = KEYS[1]
redis.call('HSETNX', meta, 'schema', ARGV[7])
local n = tonumber(ARGV[8])
local FIELDS = 17
local out = {}
-- One sequence step per batch: job i takes first_seq + i. A duplicate leaves a gap,
-- which is harmless (sequence numbers only order jobs).
local first_seq = redis.call('HINCRBY', meta, 'job_seq', n) - n + 1

for i = 0, n - 1 do
  local b = 8 + i * FIELDS
  local id, queue = ARGV[b + 1], ARGV[b + 2]
  local key = P_JOB .. id
  local dedup_key, dedup_ttl, dedup_mode = ARGV[b + 15], ARGV[b + 16], ARGV[b + 17]
  local outcome, result_id, state = nil, id, nil

  if redis.call('EXISTS', key) == 1 then
    outcome = 'duplicate'
  elseif dedup_key ~= '' then
    local dkey = P_DEDUP .. dedup_key
    local holder = redis.call('GET', dkey)
    if holder and redis.call('EXISTS', P_JOB .. holder) == 1 then
      result_id = holder
      local hkey = P_JOB .. holder
      if dedup_mode == 'replace' then
        state = redis.call('HGET', hkey, 'state')
        if state == 'pending' or state == 'delayed' then
          redis.call('HSET', hkey, 'payload', ARGV[b + 4], 'headers', ARGV[b + 5], 'updated_ms', now)
          outcome = 'replaced'
        else
          outcome = 'duplicate'
        end
      elseif dedup_mode == 'extend' then
        redis.call('PEXPIRE', dkey, dedup_ttl)
        outcome = 'extended'
      else
        outcome = 'duplicate'
      end
    end
  end

  if outcome == nil then
    outcome = 'created'
    local seq = first_seq + i
    local run_at = now
    if ARGV[b + 7] == 'at' then
      run_at = math.max(tonumber(ARGV[b + 8]), now)
    elseif ARGV[b + 7] == 'delay' then
      run_at = now + tonumber(ARGV[b + 8])
    end
    local rmember = string.format('%016d', seq) .. id
    state = 'pending'
    if run_at > now then
      state = 'delayed'
    end
    redis.call('HSET', key,
      'id', id, 'queue', queue, 'name', ARGV[b + 3], 'payload', ARGV[b + 4],
      'headers', ARGV[b + 5], 'priority', ARGV[b + 6], 'seq', seq,
      'rmember', rmember, 'state', state,
      'attempts', 0, 'max_attempts', ARGV[b + 9],
      'backoff', ARGV[b + 10], 'backoff_base_ms', ARGV[b + 11], 'backoff_cap_ms', ARGV[b + 12],
      'backoff_jitter', ARGV[b + 13], 'lease_ms', ARGV[b + 14],
      'run_at_ms', run_at, 'created_ms', now, 'updated_ms', now,
      'token', '', 'lease_until', '', 'worker', '', 'finished_ms', '', 'errors', '[]',
      'dedup_key', dedup_key)
    redis.call('ZADD', P_LISTING .. queue, seq, id)
    if state == 'delayed' then
      redis.call('ZADD', P_DELAYED .. queue, run_at, id)
    else
      redis.call('ZADD', P_READY .. queue, -tonumber(ARGV[b + 6]), rmember)
    end
    if dedup_key ~= '' then
      redis.call('SET', P_DEDUP .. dedup_key, id, 'PX', dedup_ttl)
    end
  end

  out[#out + 1] = outcome
  out[#out + 1] = result_id
  out[#out + 1] = state or redis.call('HGET', P_JOB .. result_id, 'state') or ''
end

return out
