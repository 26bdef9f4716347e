#!lua
-- migrate_jobs: convert a batch of layout-1 jobs (one hash per job, sorted-set ready
-- and listing indexes) to layout 2 (lib/job.lua), under Migrate's lock.
--
-- KEYS[1] meta <prefix>:{<ns>}:meta   KEYS[2] lock <prefix>:{<ns>}:migrate_lock
-- KEYS[3..] (mode "ready") a layout-1 ready set <prefix>:{<ns>}:qr:<queue>;
--         (mode "drop") the layout-1 keys to unlink (listing sets, emptied ready sets)
-- ARGV[1] token: lock token   ARGV[2] dry_run: "1" = dry run (write nothing)
-- ARGV[3] mode: the step (below)
-- ARGV[4..11] job_prefixes: job key prefixes (lib/job.lua job_keys): job, payload,
--            ready, priorities, delayed, leased, listing, dedup
-- ARGV[12..] take, ids: mode "ready": one value, the most members to take (not used by dry runs,
--          which count in mode "records"); modes "records", "recount" and "listed": the job
--          ids; other modes: none
-- Modes:
--   "ready"   take the first members of the ready set in claim order (priority, then
--             enqueue sequence), convert their jobs and append the pending ones to
--             their layout-2 ready lists in that order, so FIFO survives the move
--   "records" convert the given jobs (found by SCAN of layout-1 job hashes); a
--             pending job that had no ready entry is appended to its ready list
--   "recount" (meta lost) raise meta `n:<queue>` and `gseq` to the highest job
--             number and sequence among the given layout-2 jobs, so jobs enqueued
--             after the repair take numbers no stored job holds
--   "listed"  (read-only; a dry run of a current namespace) report each of the given
--             layout-2 jobs that the listing does not name under its number (issue
--             29: two redis-servers on one AOF, a partial restore): such a job is
--             counted but never listed nor claimed
--   "drop"    UNLINK the given keys (O(1) on the main thread)
--   "finish"  record job layout 2 in meta (`jobs`) and in the jobs marker, carry the
--             layout-1 sequence over as `gseq`, and remove `job_seq`
-- Returns { "ok", converted, pushed, remaining, then per problem: id, reason }
--       | { "lost" }
--   remaining: members left in the ready set (mode "ready"), else 0
--
-- Invariants kept (numbered in docs/DESIGN.md):
-- * 5 (explicit migration): job scripts refuse the namespace until "finish" runs,
--   which Migrate calls last, so a Migrate killed half-way leaves jobs refused, never
--   half-read; every step is idempotent (a converted job is a string and is skipped),
--   so the next Migrate completes it.
-- * 3: at most ARGV[12] members or the given ids per call (Migrate sends 50).
-- * 1: a job's record, listing entry and ready entry are written in one script.
-- Records that cannot be converted (unknown state, missing fields) are reported and
-- left exactly as they were.

local dry, mode = ARGV[2] == '1', ARGV[3]
-- A dry run takes no lock (it writes nothing).
if not dry and redis.call('GET', KEYS[2]) ~= ARGV[1] then return { 'lost' } end
local meta = KEYS[1]
local K = job_keys(ARGV, 4)
local converted, pushed, problems = 0, 0, {}

local function text_or(v, default)
  if v == nil or v == false then return default end
  return v
end

-- Converts job `id` if it is still a layout-1 hash. Returns the layout-2 record (nil
-- when absent or already converted) and whether it was converted just now.
local function convert(id)
  local key = K.job .. id
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' or kind == 'string' then return nil end
  if kind ~= 'hash' then
    problems[#problems + 1] = id
    problems[#problems + 1] = 'wrong type: ' .. kind .. ', expected a hash'
    return nil
  end
  local flat = redis.call('HGETALL', key)
  local h = {}
  for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
  local seq, created = tonumber(h.seq), tonumber(h.created_ms)
  local state = h.state
  if STATE_CODE[state or ''] == nil or not seq or not created or not h.queue
      or not tonumber(h.priority) then
    problems[#problems + 1] = id
    problems[#problems + 1] = 'not a layout-1 job record (state, seq, created_ms, queue or priority)'
    return nil
  end
  local function time(field)
    local v = tonumber(h[field])
    if v then return v end
    return ''
  end
  local headers = text_or(h.headers, '')
  if headers == '{}' then headers = '' end
  local errors = text_or(h.errors, '')
  if errors == '[]' or errors == '{}' then errors = '' end
  local backoff = 'e'
  if h.backoff == 'fixed' then backoff = 'f' end
  local r = {
    queue = h.queue, name = text_or(h.name, ''), payload = '', px = '',
    headers = headers, priority = tonumber(h.priority), gseq = seq, n = seq,
    state = state, attempts = tonumber(h.attempts) or 0,
    max_attempts = tonumber(h.max_attempts) or 1, backoff = backoff,
    base = tonumber(h.backoff_base_ms) or 0, cap = tonumber(h.backoff_cap_ms) or 0,
    jitter = text_or(h.backoff_jitter, '0'), lease_ms = tonumber(h.lease_ms) or 0,
    created = created, run_at = time('run_at_ms'), updated = time('updated_ms'),
    token = text_or(h.token, ''), lease_until = time('lease_until'),
    worker = text_or(h.worker, ''), finished = time('finished_ms'), errors = errors,
    dedup = text_or(h.dedup_key, '') }
  if r.run_at == '' then r.run_at = created end
  if r.updated == '' then r.updated = created end
  converted = converted + 1
  if not dry then
    set_payload(K, id, r, text_or(h.payload, ''))
    job_save(key, r)
    -- Layout-1 sequences are namespace-wide, so they serve as job numbers within the
    -- queue too; the queue's counter moves past the highest one seen.
    listing_add(K, r.queue, seq, id)
    local field = 'n:' .. r.queue
    if (tonumber(redis.call('HGET', meta, field)) or 0) < seq then
      redis.call('HSET', meta, field, seq)
    end
  end
  return r, h.rmember
end

local remaining = 0
if mode == 'ready' then
  local members = redis.call('ZRANGE', KEYS[3], 0, tonumber(ARGV[12]) - 1)
  for _, member in ipairs(members) do
    local id = string.sub(member, 17)
    local r, rmember = convert(id)
    if r and r.state == 'pending' and rmember == member then
      pushed = pushed + 1
      if not dry then flow.ready(K, meta, r, false) end
    end
  end
  if not dry and #members > 0 then redis.call('ZREM', KEYS[3], unpack(members)) end
  remaining = redis.call('ZCARD', KEYS[3])
elseif mode == 'records' then
  for i = 12, #ARGV do
    local r = convert(ARGV[i])
    if r and r.state == 'pending' then
      pushed = pushed + 1
      if not dry then flow.ready(K, meta, r, false) end
    end
  end
elseif mode == 'recount' then
  for i = 12, #ARGV do
    local r = job_load(K.job .. ARGV[i])
    if type(r) == 'table' and not is_error(r) then
      converted = converted + 1
      if not dry then
        local field = 'n:' .. r.queue
        if (tonumber(redis.call('HGET', meta, field)) or 0) < r.n then
          redis.call('HSET', meta, field, r.n)
        end
        if (tonumber(redis.call('HGET', meta, 'gseq')) or 0) < r.gseq then
          redis.call('HSET', meta, 'gseq', r.gseq)
        end
      end
    elseif is_error(r) then
      problems[#problems + 1] = ARGV[i]
      problems[#problems + 1] = 'not a job record of this layout'
    end
  end
elseif mode == 'listed' then
  for i = 12, #ARGV do
    local id = ARGV[i]
    local r = job_load(K.job .. id)
    if type(r) == 'table' and not is_error(r) then
      local listed = listing_id(K, r.queue, r.n)
      if listed ~= id then
        problems[#problems + 1] = id
        problems[#problems + 1] = 'stored but not listed: job number ' .. r.n .. ' of queue '
          .. r.queue .. ' lists ' .. (listed and ('job ' .. listed) or 'nothing')
          .. ' (two stores written into one, or a partial restore?): ListJobs, claims'
          .. ' and the queue counts cannot agree on it'
      end
    elseif is_error(r) then
      problems[#problems + 1] = id
      problems[#problems + 1] = 'not a job record of this layout'
    end
  end
elseif mode == 'drop' then
  if not dry then
    for i = 3, #KEYS do redis.call('UNLINK', KEYS[i]) end
  end
elseif mode == 'finish' then
  if not dry then
    local seq = redis.call('HGET', meta, 'job_seq')
    if seq then redis.call('HSET', meta, 'gseq', seq) end
    redis.call('HDEL', meta, 'job_seq')
    redis.call('HSET', meta, 'jobs', JOBS_LAYOUT)
    redis.call('SET', jobs_marker(meta), JOBS_LAYOUT)
  end
end

local out = { 'ok', converted, pushed, remaining }
for i = 1, #problems do out[#out + 1] = problems[i] end
return out
