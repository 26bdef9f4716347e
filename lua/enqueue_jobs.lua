-- enqueue_jobs: store a batch of jobs (a single Enqueue is a batch of one).
--
-- KEYS[1] namespace meta (hash: schema, jobs, n:<queue>)   <prefix>:{<ns>}:meta
-- ARGV[1..8] key prefixes (lib/job.lua job_keys): job, payload, ready, priorities,
--            delayed, leased, listing, dedup
-- ARGV[9] schema version   ARGV[10] number of jobs n
-- ARGV[11..] 17 values per job:
--   id, queue, name, payload, headers (JSON), priority,
--   when ("" now | "at" | "delay"), when value (ms), max_attempts,
--   backoff kind ("fixed" | "exp"), backoff base ms, backoff cap ms, jitter (0..1),
--   lease ms, dedup key ("" none), dedup ttl ms, dedup mode ("skip"|"replace"|"extend")
-- Returns one triple per job, in order: { outcome, job id, state }
--   outcome: "created" | "duplicate" | "replaced" | "extended"
--
-- Invariants kept (numbered in docs/DESIGN.md):
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
local K = job_keys(ARGV, 1)
if layout == nil then
  -- The namespace's first jobs: record the layouts they are written in.
  redis.call('HSETNX', meta, 'schema', ARGV[9])
  redis.call('HSET', meta, 'jobs', JOBS_LAYOUT)
end
local n = tonumber(ARGV[10])
-- The 17 values of job i (0-based), by name: the one place their order is read.
local FIELDS = 17
local function spec(i)
  local b = 10 + i * FIELDS
  return { id = ARGV[b + 1], queue = ARGV[b + 2], name = ARGV[b + 3], payload = ARGV[b + 4],
    headers = ARGV[b + 5], priority = tonumber(ARGV[b + 6]), when = ARGV[b + 7],
    when_ms = tonumber(ARGV[b + 8]), max_attempts = tonumber(ARGV[b + 9]),
    backoff = ARGV[b + 10], base = tonumber(ARGV[b + 11]), cap = tonumber(ARGV[b + 12]),
    jitter = ARGV[b + 13], lease_ms = tonumber(ARGV[b + 14]), dedup_key = ARGV[b + 15],
    dedup_ttl = ARGV[b + 16], dedup_mode = ARGV[b + 17] }
end
local out = {}
-- One counter step per queue per batch: the batch's jobs of a queue take consecutive
-- numbers. A duplicate leaves a gap, which is harmless (numbers only order jobs).
local per_queue, next_n = {}, {}
for i = 0, n - 1 do
  local q = ARGV[10 + i * FIELDS + 2]
  per_queue[q] = (per_queue[q] or 0) + 1
end
for q, count in pairs(per_queue) do
  next_n[q] = redis.call('HINCRBY', meta, 'n:' .. q, count) - count + 1
end
-- The namespace-wide order of jobs, for claims across queues of equal priority.
local gseq = redis.call('HINCRBY', meta, 'gseq', n) - n

local function no_headers(headers)
  if headers == '{}' then return '' end
  return headers
end

-- A live dedup key's holder takes the job's place: { outcome, holder id, state } or
-- nil when the key is free (or names a job that is gone).
local function deduplicate(j)
  local dkey = K.dedup .. j.dedup_key
  local holder = redis.call('GET', dkey)
  if not holder or redis.call('EXISTS', K.job .. holder) == 0 then return nil end
  if j.dedup_mode == 'replace' then
    local hkey = K.job .. holder
    local r = job_load(hkey)
    if is_error(r) then return r end
    if r.state == 'pending' or r.state == 'delayed' then
      set_payload(K, holder, r, j.payload)
      r.headers, r.updated = no_headers(j.headers), now
      job_save(hkey, r)
      return { 'replaced', holder, r.state }
    end
    return { 'duplicate', holder, r.state }
  elseif j.dedup_mode == 'extend' then
    redis.call('PEXPIRE', dkey, j.dedup_ttl)
    return { 'extended', holder }
  end
  return { 'duplicate', holder }
end

-- Writes a new job: record, listing entry, ready or delayed entry, dedup key.
local function create(j, job_n, job_gseq)
  local run_at = now
  if j.when == 'at' then
    run_at = math.max(j.when_ms, now)
  elseif j.when == 'delay' then
    run_at = now + j.when_ms
  end
  local state = 'pending'
  if run_at > now then state = 'delayed' end
  local backoff = 'e'
  if j.backoff == 'fixed' then backoff = 'f' end
  local record = {
    queue = j.queue, name = j.name, payload = '', headers = no_headers(j.headers),
    priority = j.priority, gseq = job_gseq, n = job_n, state = state,
    attempts = 0, max_attempts = j.max_attempts, backoff = backoff,
    base = j.base, cap = j.cap, jitter = j.jitter,
    lease_ms = j.lease_ms, created = now, run_at = run_at, updated = now,
    token = '', lease_until = '', worker = '', finished = '', errors = '',
    dedup = j.dedup_key, px = '' }
  set_payload(K, j.id, record, j.payload)
  job_save(K.job .. j.id, record)
  listing_add(K, j.queue, job_n, j.id)
  if state == 'delayed' then
    redis.call('ZADD', K.delayed .. j.queue, run_at, j.id)
  else
    ready_push(K, j.queue, j.priority, job_n, false)
  end
  if j.dedup_key ~= '' then
    redis.call('SET', K.dedup .. j.dedup_key, j.id, 'PX', j.dedup_ttl)
  end
  return state
end

for i = 0, n - 1 do
  local j = spec(i)
  local job_n = next_n[j.queue]
  next_n[j.queue] = job_n + 1
  local result
  if redis.call('EXISTS', K.job .. j.id) == 1 then
    result = { 'duplicate', j.id }
  elseif j.dedup_key ~= '' then
    result = deduplicate(j)
    if is_error(result) then return result end
  end
  if result == nil then result = { 'created', j.id, create(j, job_n, gseq + i + 1) } end
  if result[3] == nil then
    local r = job_load(K.job .. result[2])
    if is_error(r) then return r end
    result[3] = r and r.state or ''
  end
  out[#out + 1] = result[1]
  out[#out + 1] = result[2]
  out[#out + 1] = result[3]
end
return out
