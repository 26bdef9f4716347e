-- enqueue_jobs: store a batch of jobs (a single Enqueue is a batch of one).
--
-- KEYS[1] namespace meta (hash: schema, jobs, n:<queue>)   <prefix>:{<ns>}:meta
-- ARGV[1..6] key prefixes: job, ready, delayed, leased, listing, dedup
--            (<prefix>:{<ns>}:j: r qd: ql: lb: dd:; see lib/job.lua)
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
-- * 1 (canonical record, derived indexes): the job record, its ready-list or delayed
--   entry and its listing entry are written together, here.
-- * 2 (one script): the idempotency check (job id exists), the dedup check and the
--   write are one atomic step, so concurrent enqueues with one id or one dedup key
--   create one job.
-- * 3 (no O(N)): per created job four calls (EXISTS, SET, HSET into a listing bucket
--   of at most 64, RPUSH or ZADD), one more SET for a payload over 1 KiB, plus one
--   HINCRBY per queue and one ZADD per new ready list. FIFO: a ready list is pushed at the tail and popped at the head.
-- * 5: refused while the namespace's jobs are in an older layout.
-- * 7 (one clock): run times are computed from Redis TIME.

local meta = KEYS[1]
local refused, layout = jobs_guard(meta)
if refused then return refused end
local now = now_ms()
local P_JOB, P_READY, P_DELAYED, P_LISTING, P_DEDUP = ARGV[1], ARGV[2], ARGV[3], ARGV[5], ARGV[6]
if layout == nil then
  -- The namespace's first jobs: record the layouts they are written in.
  redis.call('HSETNX', meta, 'schema', ARGV[7])
  redis.call('HSET', meta, 'jobs', JOBS_LAYOUT)
end
local n = tonumber(ARGV[8])
local FIELDS = 17
local out = {}

-- One counter step per queue per batch: the batch's jobs of a queue take consecutive
-- numbers. A duplicate leaves a gap, which is harmless (numbers only order jobs).
local per_queue, next_n = {}, {}
for i = 0, n - 1 do
  local q = ARGV[8 + i * FIELDS + 2]
  per_queue[q] = (per_queue[q] or 0) + 1
end
for q, count in pairs(per_queue) do
  next_n[q] = redis.call('HINCRBY', meta, 'n:' .. q, count) - count + 1
end
-- The namespace-wide order of jobs, for claims across queues of equal priority.
local gseq = redis.call('HINCRBY', meta, 'gseq', n) - n

for i = 0, n - 1 do
  local b = 8 + i * FIELDS
  local id, queue = ARGV[b + 1], ARGV[b + 2]
  local key = P_JOB .. id
  local dedup_key, dedup_ttl, dedup_mode = ARGV[b + 15], ARGV[b + 16], ARGV[b + 17]
  local outcome, result_id, state = nil, id, nil
  local job_n = next_n[queue]
  next_n[queue] = job_n + 1

  if redis.call('EXISTS', key) == 1 then
    outcome = 'duplicate'
  elseif dedup_key ~= '' then
    local dkey = P_DEDUP .. dedup_key
    local holder = redis.call('GET', dkey)
    if holder and redis.call('EXISTS', P_JOB .. holder) == 1 then
      result_id = holder
      if dedup_mode == 'replace' then
        local hkey = P_JOB .. holder
        local r = job_load(hkey)
        if is_error(r) then return r end
        state = r.state
        if state == 'pending' or state == 'delayed' then
          local headers = ARGV[b + 5]
          if headers == '{}' then headers = '' end
          set_payload(P_JOB, holder, r, ARGV[b + 4])
          r.headers, r.updated = headers, now
          job_save(hkey, r)
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
    local run_at = now
    if ARGV[b + 7] == 'at' then
      run_at = math.max(tonumber(ARGV[b + 8]), now)
    elseif ARGV[b + 7] == 'delay' then
      run_at = now + tonumber(ARGV[b + 8])
    end
    state = 'pending'
    if run_at > now then state = 'delayed' end
    local priority = tonumber(ARGV[b + 6])
    local headers = ARGV[b + 5]
    if headers == '{}' then headers = '' end
    local backoff = 'e'
    if ARGV[b + 10] == 'fixed' then backoff = 'f' end
    local record = {
      queue = queue, name = ARGV[b + 3], payload = '', headers = headers,
      priority = priority, gseq = gseq + i + 1, n = job_n, state = state,
      attempts = 0, max_attempts = tonumber(ARGV[b + 9]), backoff = backoff,
      base = tonumber(ARGV[b + 11]), cap = tonumber(ARGV[b + 12]), jitter = ARGV[b + 13],
      lease_ms = tonumber(ARGV[b + 14]), created = now, run_at = run_at, updated = now,
      token = '', lease_until = '', worker = '', finished = '', errors = '',
      dedup = dedup_key, px = '' }
    set_payload(P_JOB, id, record, ARGV[b + 4])
    job_save(key, record)
    listing_add(P_LISTING, queue, job_n, id)
    if state == 'delayed' then
      redis.call('ZADD', P_DELAYED .. queue, run_at, id)
    else
      ready_push(P_READY, queue, priority, job_n, false)
    end
    if dedup_key ~= '' then
      redis.call('SET', P_DEDUP .. dedup_key, id, 'PX', dedup_ttl)
    end
  end

  if state == nil then
    local r = job_load(P_JOB .. result_id)
    if is_error(r) then return r end
    state = r and r.state or ''
  end
  out[#out + 1] = outcome
  out[#out + 1] = result_id
  out[#out + 1] = state
end

return out
